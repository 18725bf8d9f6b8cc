"""Identity at the edges (issue 20, items 13 and 14), on SQLite and PostgreSQL (``db_url``):

* emails are one address in every form a person or a mail client may type it (D380): case, fullwidth
  letters, a composed or combining accent, a punycode domain; wallet users, backoffice operators, the
  cardholder file and onboarding leads all store and compare the one form;
* password logins back off (D381): 5 wrong passwords lock the login name on the virtual clock, for wallet
  users and backoffice operators alike, whatever the password tried while locked;
* secrets never come back in a validation error (the server's answers), and lead document names refuse
  invisible and bidirectional characters as usernames do.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import httpx
import nacl.signing
import pytest
from fastapi import FastAPI

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server.clock import Clock

from .kit import JSON_TYPE, PASSWORD, Kit, body, dumps, own_code

#: One address, six ways (D380): as given, upper case, fullwidth letters, a combining accent (NFD),
#: a punycode domain, and a punycode domain in upper case.
VARIANTS = [
    "josé@exámple.com",
    "JOSÉ@EXÁMPLE.COM",
    "ｊｏｓé@ｅｘáｍｐｌｅ.ｃｏｍ",
    "jose\u0301@exa\u0301mple.com",
    "josé@xn--exmple-qta.com",
    "JosÉ@XN--EXMPLE-QTA.Com",
]
CANONICAL = "josé@exámple.com"
CMS = "/cms/rest"


async def _user(kit: Kit, username: str, email: str) -> httpx.Response:
    payload = {"merchant": kit.merchant.slug, "username": username, "email": email, "password": PASSWORD}
    return await kit.client.post("/_sandbox/users", content=dumps(payload), headers=JSON_TYPE)


async def test_six_forms_of_one_email_are_one_wallet_user(kit: Kit) -> None:
    first = await _user(kit, "jose-0", VARIANTS[0])
    assert first.status_code == 201, first.text
    assert body(first)["email"] == CANONICAL
    for index, email in enumerate(VARIANTS[1:], 1):
        clash = await _user(kit, f"jose-{index}", email)
        assert clash.status_code == 409, (email, clash.text)
        assert body(clash)["details"][0]["field"] == "email"
    # Full stops as a CJK keyboard types them are dots too (IDNA's separators).
    for email in ("josé@ｅｘáｍｐｌｅ．ｃｏｍ", "josé@exámple。com"):
        clash = await _user(kit, "jose-dots", email)
        assert (clash.status_code, body(clash)["details"][0]["field"]) == (409, "email"), clash.text
    # Any form reaches the one user: the OTP goes to the stored address.
    sent = await kit.post("/users/auth/otp", {"email": VARIANTS[5], "purpose": "login"}, await kit.app())
    assert sent.status_code == 200
    outbox = await kit.client.get("/_sandbox/outbox", params={"to": VARIANTS[2]})
    assert [message["to"] for message in outbox.json()] == [CANONICAL]


async def test_a_punycode_label_that_does_not_decode_is_refused(kit: Kit) -> None:
    refused = await _user(kit, "jose", "jose@xn--99999999999.com")
    assert (refused.status_code, own_code(refused)) == (409, 5000)
    assert "punycode" in body(refused)["details"][0]["message"]


async def _merchant(client: httpx.AsyncClient) -> tuple[str, str]:
    answer = await client.post("/_sandbox/clients", json={})
    assert answer.status_code == 201
    created = answer.json()
    key = nacl.signing.SigningKey(base64.b64decode(created["signingPrivateKey"]))
    return created["slug"], base64.b64encode(key.sign(created["slug"].encode()).signature).decode()


async def _app_login(client: httpx.AsyncClient, slug: str, signature: str) -> dict[str, str]:
    app = await client.post(f"{CMS}/app/auth/login", json={"merchant": slug, "signature": signature})
    assert app.status_code == 200, app.text
    return {"Authorization": "Bearer " + app.json()["data"]["accessToken"]}


async def _backoffice_app(client: httpx.AsyncClient) -> tuple[str, dict[str, str]]:
    slug, signature = await _merchant(client)
    return slug, await _app_login(client, slug, signature)


async def test_six_forms_of_one_email_are_one_backoffice_operator(asgi_client: httpx.AsyncClient) -> None:
    slug, app = await _backoffice_app(asgi_client)
    base = "/_sandbox/backoffice/operators"
    first = await asgi_client.post(base, json={"merchant": slug, "email": VARIANTS[3], "password": PASSWORD})
    assert first.status_code == 201, first.text
    assert first.json()["email"] == CANONICAL
    for email in VARIANTS:
        clash = await asgi_client.post(base, json={"merchant": slug, "email": email, "password": PASSWORD})
        assert clash.status_code == 409, (email, clash.text)
        login = await asgi_client.post(
            f"{CMS}/app/users/login", json={"email": email, "password": PASSWORD}, headers=app
        )
        assert login.status_code == 200, (email, login.text)


async def test_a_lead_keeps_its_contact_email_in_the_one_form(asgi_client: httpx.AsyncClient) -> None:
    partner = (await asgi_client.post("/_sandbox/clients", json={})).json()
    created = await asgi_client.post(
        "/leads",
        json={
            "business": {"legalName": "Sol", "taxId": "1-2"},
            "contact": {"name": "José", "email": VARIANTS[4]},
            "country": "SV",
            "channels": ["web"],
            "currencies": ["USD"],
        },
        headers={"Authorization": partner["sandboxToken"]},
    )
    assert created.status_code == 201, created.text
    assert created.json()["contact"]["email"] == CANONICAL


# ------------------------------------------------------------------------------------ back-off


@pytest.fixture
def pinned(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wall clock under the virtual one stands still: only ``/_sandbox/clock/advance`` moves time."""
    moment = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    monkeypatch.setattr(app.state.paysdk, "clock", Clock(wall=lambda: moment))


async def _wrong_then_right(login: Any, wrong: int) -> tuple[list[tuple[int, int | None]], httpx.Response]:
    answers = []
    for _ in range(wrong):
        answer = await login("wrong-password")
        answers.append((answer.status_code, answer.json()["ownCode"]))
    return answers, await login(PASSWORD)


async def test_wallet_logins_back_off_on_the_virtual_clock(kit: Kit, pinned: None) -> None:
    await kit.user("Ana")
    token = await kit.app()

    async def login(password: str, username: str = "ANA") -> httpx.Response:
        return await kit.post("/users/login", {"username": username, "password": password}, token)

    answers, right = await _wrong_then_right(login, 300)
    assert answers[:5] == [(401, 7101)] * 5
    assert set(answers[5:]) == {(429, 7108)}
    assert (right.status_code, own_code(right)) == (429, 7108)  # the right password is refused too
    assert right.headers["Retry-After"] == "60"
    assert body(right)["details"][0]["field"] == "password"
    # Another name of the merchant is not locked; the lock is by name, known or not.
    other = await kit.user("Bea")
    assert (await login(PASSWORD, "bea")).status_code == 200
    assert other["username"] == "Bea"
    ghosts = [(await login("x", "ghost")).status_code for _ in range(6)]
    assert ghosts == [401] * 5 + [429]

    await kit.advance(59)
    token = await kit.app()
    late = await login(PASSWORD)
    assert (late.status_code, late.headers["Retry-After"]) == (429, "1")
    await kit.advance(1)
    token = await kit.app()
    # Free again; five more wrong passwords lock it twice as long.
    answers, right = await _wrong_then_right(login, 5)
    assert answers == [(401, 7101)] * 5
    assert (right.status_code, right.headers["Retry-After"]) == (429, "120")
    await kit.advance(120)
    token = await kit.app()
    assert (await login(PASSWORD)).status_code == 200
    # A success starts the count again: four wrong passwords do not lock.
    answers, right = await _wrong_then_right(login, 4)
    assert answers == [(401, 7101)] * 4
    assert right.status_code == 200


async def test_a_password_reset_ends_the_lock(kit: Kit, pinned: None) -> None:
    """Whoever proves the mailbox (OTP, then reset) may log in at once with the new password."""
    user = await kit.user("Ana")
    app = await kit.app()
    for _ in range(5):
        await kit.post("/users/login", {"username": "ana", "password": "wrong-password"}, app)
    locked = await kit.post("/users/login", {"username": "ana", "password": PASSWORD}, app)
    assert locked.status_code == 429
    sent = await kit.post("/users/auth/otp", {"email": user["email"], "purpose": "password_reset"}, app)
    assert sent.status_code == 200
    code = body(await kit.client.get("/_sandbox/outbox", params={"to": user["email"]}))[-1]["data"]["otp"]
    verified = await kit.call(
        "PUT", "/users/auth/otp", app, {"email": user["email"], "otp": code, "purpose": "password_reset"}
    )
    token = body(verified)["data"]["token"]
    new = {"email": user["email"], "newPassword": "a new password", "confirmPassword": "a new password"}
    reset = await kit.post("/users/auth/password/reset", {**new, "token": token}, app)
    assert reset.status_code == 200, reset.text
    logged_in = await kit.post("/users/login", {"username": "ana", "password": "a new password"}, app)
    assert logged_in.status_code == 200, logged_in.text


async def test_the_sdk_raises_login_throttled_at_once(app: FastAPI, kit: Kit, pinned: None) -> None:
    """The SDK never replays a login (D381): a locked name raises :class:`paysdk.LoginThrottledError`
    (a ``RateLimitError``) at once, with the wait in ``Retry-After``."""
    import paysdk

    await kit.user("Ana")
    assert kit.merchant.signing_private_key is not None
    async with paysdk.AsyncClient(
        environment=paysdk.Environment.local("http://testserver"),
        transport=httpx.ASGITransport(app=app),
        wallet=paysdk.WalletCredentials(kit.merchant.slug, kit.merchant.signing_private_key),
    ) as client:
        for _ in range(5):
            with pytest.raises(paysdk.InvalidCredentialsError):
                await client.wallet.users.login("ana", "wrong-password")
        with pytest.raises(paysdk.LoginThrottledError) as caught:
            await client.wallet.users.login("ana", PASSWORD)
    assert isinstance(caught.value, paysdk.RateLimitError)
    assert (caught.value.status_code, caught.value.own_code) == (429, 7108)
    assert caught.value.headers["retry-after"] == "60"
    assert PASSWORD not in str(caught.value) + repr(caught.value)


async def test_backoffice_logins_back_off_on_the_virtual_clock(
    asgi_client: httpx.AsyncClient, pinned: None
) -> None:
    slug, signature = await _merchant(asgi_client)
    app = await _app_login(asgi_client, slug, signature)
    created = await asgi_client.post(
        "/_sandbox/backoffice/operators",
        json={"merchant": slug, "email": "ops@acme.io", "password": PASSWORD},
    )
    assert created.status_code == 201

    async def login(password: str) -> httpx.Response:
        return await asgi_client.post(
            f"{CMS}/app/users/login", json={"email": "OPS@acme.io", "password": password}, headers=app
        )

    answers, right = await _wrong_then_right(login, 300)
    assert answers[:5] == [(401, 7101)] * 5
    assert set(answers[5:]) == {(429, 7108)}
    assert (right.status_code, right.json()["ownCode"], right.headers["Retry-After"]) == (429, 7108, "60")
    advanced = await asgi_client.post("/_sandbox/clock/advance", json={"seconds": 60})
    assert advanced.status_code == 200
    app = await _app_login(asgi_client, slug, signature)
    assert (await login(PASSWORD)).status_code == 200


# ------------------------------------------------------------------------------------ secrets


@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("/users/login", {"username": "ana", "password": "S3CRET-" * 200}),
        ("/users/login", {"username": "ana", "password": ["S3CRET-pw"]}),
        (
            "/users/auth/password/reset",
            {"email": "a@b.io", "token": "t", "newPassword": "S3CRET-" * 200, "confirmPassword": "x"},
        ),
    ],
)
async def test_validation_errors_never_echo_a_password(kit: Kit, path: str, payload: Any) -> None:
    answer = await kit.post(path, payload, await kit.app())
    assert answer.status_code == 400, answer.text
    assert "S3CRET" not in answer.text


async def test_a_bad_pin_is_not_echoed(kit: Kit) -> None:
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    answer = await kit.call("PUT", f"/cards/{card['cardId']}/pin", await kit.app(), {"pin": "12a4S3CRET"})
    assert answer.status_code == 400, answer.text
    assert "S3CRET" not in answer.text


SECRET_BODIES = [
    ("paysdk.contracts.wallet", "UserLoginRequest", {"username": "ana", "password": "S3CRET-" * 200}),
    ("paysdk.contracts.wallet", "PinRequest", {"pin": "12a4S3CRET"}),
    (
        "paysdk.contracts.wallet",
        "PasswordResetRequest",
        {"email": "a@b.io", "token": "t", "newPassword": "S3CRET-" * 200, "confirmPassword": "x"},
    ),
    (
        "paysdk.contracts.wallet",
        "SandboxUserCreate",
        {"merchant": "m", "username": "ana", "email": "a@b.io", "password": "S3CRET"},
    ),
    (
        "paysdk.contracts.backoffice",
        "BackofficeUserLoginRequest",
        {"email": "a@b.io", "password": "S3CRET-" * 200},
    ),
    (
        "paysdk.contracts.backoffice",
        "SandboxOperatorCreate",
        {"merchant": "m", "email": "a@b.io", "password": "S3CRET"},
    ),
]


@pytest.mark.parametrize(("module", "name", "payload"), SECRET_BODIES)
def test_contract_validation_errors_never_show_a_secret(
    module: str, name: str, payload: dict[str, Any]
) -> None:
    """``str()`` of a contract model's validation error (what logs and tracebacks show) names the field
    and the rule, not the value (D382)."""
    import importlib

    import pydantic

    model = getattr(importlib.import_module(module), name)
    with pytest.raises(pydantic.ValidationError) as caught:
        model.model_validate(payload)
    assert "S3CRET" not in str(caught.value)
    assert "S3CRET" not in repr(caught.value)
    assert "password" in str(caught.value).lower() or "pin" in str(caught.value)


def test_a_seed_users_password_is_not_shown() -> None:
    from paysdk.contracts.seed import SeedError, parse_seed

    seed = {
        "merchants": [{"slug": "shop"}],
        "users": [{"merchant": "shop", "username": "ana", "email": "a@b.io", "password": "S3CRET"}],
    }
    with pytest.raises(SeedError) as caught:
        parse_seed(seed)
    assert "S3CRET" not in str(caught.value)
    assert "password" in str(caught.value)


# ------------------------------------------------------------------------------ lead documents

#: ``cv<U+202E>fdp.jpg`` shows as ``cvgpj.pdf``; the other way round a ``.pdf`` passes for a ``.jpg``.
BIDI_NAMES = ["cv\u202egpj.pdf", "cv\u2066.jpg\u2069.pdf", "c\u200bv.pdf", "cv\x85.pdf", "cv\ufeff.pdf"]


@pytest.mark.parametrize("name", BIDI_NAMES)
async def test_lead_document_names_refuse_invisible_and_bidi_characters(
    asgi_client: httpx.AsyncClient, name: str
) -> None:
    from urllib.parse import quote

    partner = (await asgi_client.post("/_sandbox/clients", json={})).json()
    token = {"Authorization": partner["sandboxToken"]}
    created = await asgi_client.post(
        "/leads",
        json={
            "business": {"legalName": "Sol", "taxId": "1-2"},
            "contact": {"name": "Ana", "email": "ana@sol.gt"},
            "country": "SV",
            "channels": ["web"],
            "currencies": ["USD"],
        },
        headers=token,
    )
    lead_id = created.json()["leadId"]
    answer = await asgi_client.post(
        f"/leads/files/upload/{quote(name)}?leadId={lead_id}",
        content=b"%PDF-1.4\n%fake\n",
        headers={**token, "Content-Type": "application/pdf"},
    )
    assert (answer.status_code, answer.json()["details"][0]["field"]) == (409, "fileName"), answer.text
    assert "U+" in answer.json()["details"][0]["message"]
    shown = await asgi_client.get(f"/_sandbox/leads/{lead_id}")
    assert shown.json()["documents"] == []


def test_the_sdk_refuses_such_a_document_name_before_sending() -> None:
    import paysdk
    from paysdk.resources.onboarding import upload_document_operation

    with pytest.raises(paysdk.ValidationError) as caught:
        upload_document_operation("lead_x", b"%PDF-1.4\n", file_name="cv\u202egpj.pdf")
    assert caught.value.field == "file_name"
    assert "U+202E" in str(caught.value)


async def test_a_cardholder_file_meets_the_six_forms_as_one_email(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, db_url: str
) -> None:
    """A file's emails are keyed as the API's are (D380): each row whose email is another form of a
    stored one fails ``email: already exists``; the first row is created under the one form."""
    from cardholder_kit import HEADER, Backoffice, cardholders, csv_file, failures, person

    bo = Backoffice(asgi_client, merchant)
    partner = await bo.partner()
    rows = []
    for index, email in enumerate(VARIANTS, 1):
        row = person(index)
        row[HEADER.index("email")] = email
        rows.append(row)
    answer = await bo.upload(partner, csv_file(rows), "people.csv")
    assert answer.status_code == 202, answer.text
    events = await bo.progress(partner, answer.json()["data"]["batchId"])
    assert failures(events) == {row: ("email", "already exists") for row in range(3, 8)}
    assert cardholders(db_url, merchant.slug) == {"u1": 1}
