"""The backoffice through the SDK against the REAL reference server (spec 4.4, 5.3.5-5.3.7; D105-D107,
D184, D185, D189): async in process (ASGITransport) and sync over a uvicorn socket (the ``make`` fixture),
plus async over a socket for the concurrent refresh, on SQLite and PostgreSQL.

Two tokens at once (D184): the application token for the user login and refresh, the operator's token
for the partner routes; the token managers log in lazily, refresh single-flight, rotate and, with the
password the client holds, log the operator in again when the user session is dead (D107). The wrong
backoffice token is ``401 / 7106``; a wallet token on the backoffice and a backoffice token on the
wallet are ``401 / 7102``.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import paysdk
from paysdk.contracts.sandbox import SandboxClient

from .conftest import Maker, call

CMS = "/cms/rest"


async def _setup(sandbox: Any) -> tuple[SandboxClient, str, str, str, str]:
    """A merchant with an operator (generated password), a partner, an enrolled cardholder and an
    unassigned card: ``(merchant, email, password, cardholder id, card id)``."""
    merchant = await call(sandbox.sandbox.create_client())
    email = f"ops-{secrets.token_hex(3)}@acme.io"
    operator = await call(sandbox.sandbox.backoffice.create_operator(merchant.slug, email))
    assert operator.password
    assert operator.password not in repr(operator)
    listed = await call(sandbox.sandbox.backoffice.operators(merchant.slug))
    assert [o.email for o in listed] == [email]
    assert listed[0].password is None
    partner = await call(sandbox.sandbox.backoffice.create_partner(merchant.slug, "Acme Payroll", "acme"))
    assert (partner.partner_id, partner.merchant) == ("acme", merchant.slug)
    assert [p.partner_id for p in await call(sandbox.sandbox.backoffice.partners(merchant.slug))] == ["acme"]
    user = await call(
        sandbox.sandbox.create_user(merchant.slug, "ana", f"ana-{secrets.token_hex(3)}@x.io", "password-1")
    )
    enrolled = await call(sandbox.sandbox.backoffice.enroll_cardholder(merchant.slug, "acme", user.user_id))
    assert enrolled["cardholderId"] == user.user_id
    card = await call(sandbox.sandbox.create_stock_card(merchant.slug))
    assert card.holder_id is None
    return merchant, email, operator.password, user.user_id, card.card_id


def _credentials(merchant: SandboxClient, email: str, password: str) -> paysdk.BackofficeCredentials:
    assert merchant.signing_private_key is not None
    return paysdk.BackofficeCredentials(
        merchant.slug, merchant.signing_private_key, user=paysdk.BackofficeUser(email, password)
    )


def _paths(entries: list[Any]) -> list[str]:
    return [e.path for e in entries if e.path.startswith(CMS + "/app/")]


@pytest.mark.covers(
    "sandbox.backoffice.create_operator",
    "sandbox.backoffice.operators",
    "sandbox.backoffice.create_partner",
    "sandbox.backoffice.partners",
    "sandbox.backoffice.enroll_cardholder",
    "backoffice.associate_card",
    "backoffice.login",
    "backoffice.login_user",
    "backoffice.forget_tokens",
)
async def test_backoffice_association_end_to_end(make: Maker) -> None:
    sandbox = make()
    merchant, email, password, cardholder_id, card_id = await _setup(sandbox)
    client = make(backoffice=_credentials(merchant, email, password))

    # Lazy login: the first user-scoped call logs the application in, then the operator.
    card = await call(client.backoffice.associate_card("acme", cardholder_id, card_id))
    assert (card.card_id, card.holder_id) == (card_id, cardholder_id)
    assert _paths(await call(sandbox.sandbox.requests())) == [
        f"{CMS}/app/auth/login",
        f"{CMS}/app/users/login",
        f"{CMS}/app/partners/acme/cardholders/{cardholder_id}/cards/association",
    ]
    # The card shows in the wallet's card list of that user (D189).
    assert merchant.signing_private_key is not None
    wallet = make(wallet=paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key))
    assert [c.card_id for c in await call(wallet.wallet.cards.list(cardholder_id))] == [card_id]

    # Again: answered unchanged (200). Another cardholder's card: 409; unknown ids: 404 naming them.
    again = await call(client.backoffice.associate_card("acme", cardholder_id, card_id))
    assert again.card_id == card_id
    other = await call(
        sandbox.sandbox.create_user(merchant.slug, "ben", f"b-{secrets.token_hex(3)}@x.io", "pw-123456")
    )
    await call(sandbox.sandbox.backoffice.enroll_cardholder(merchant.slug, "acme", other.user_id))
    with pytest.raises(paysdk.ConflictError) as taken:
        await call(client.backoffice.associate_card("acme", other.user_id, card_id))
    assert taken.value.body["details"][0]["field"] == "cardId"
    for args, field in (
        (("nope", cardholder_id, card_id), "partnerId"),
        (("acme", "usr_unknown", card_id), "cardholderId"),
        (("acme", cardholder_id, "crd_unknown"), "cardId"),
    ):
        with pytest.raises(paysdk.NotFoundError) as missing:
            await call(client.backoffice.associate_card(*args))
        assert missing.value.body["details"][0]["field"] == field
    # Another merchant's partner and card look unknown (D185, D189).
    stranger, s_email, s_password, _, s_card = await _setup(sandbox)
    with pytest.raises(paysdk.NotFoundError) as foreign:
        await call(client.backoffice.associate_card("acme", cardholder_id, s_card))
    assert foreign.value.body["details"][0]["field"] == "cardId"
    s_client = make(backoffice=_credentials(stranger, s_email, s_password))
    with pytest.raises(paysdk.NotFoundError) as foreign_holder:
        await call(s_client.backoffice.associate_card("acme", cardholder_id, s_card))
    assert foreign_holder.value.body["details"][0]["field"] == "cardholderId"

    # Explicit logins return masked pairs; forgetting makes the next call log in again.
    pair = await call(client.backoffice.login())
    assert pair.access_token not in repr(pair)
    user_pair = await call(client.backoffice.login_user())
    assert user_pair.expires_in == 900
    assert user_pair.refresh_expires_in == 12 * 3600
    assert await call(client.backoffice.forget_tokens()) is True
    assert await call(client.backoffice.forget_tokens()) is False

    # A wrong password: InvalidCredentialsError (7101), nothing else sent.
    wrong = make(backoffice=_credentials(merchant, email, "not-the-password"))
    with pytest.raises(paysdk.InvalidCredentialsError):
        await call(wrong.backoffice.associate_card("acme", cardholder_id, card_id))


@pytest.mark.covers("backoffice.associate_card")
async def test_backoffice_tokens_refresh_rotate_and_log_in_again(make: Maker) -> None:
    sandbox = make()
    merchant, email, password, cardholder_id, card_id = await _setup(sandbox)
    client = make(backoffice=_credentials(merchant, email, password))
    associate: Callable[[], Any] = lambda: client.backoffice.associate_card("acme", cardholder_id, card_id)  # noqa: E731
    await call(associate())
    first = len(await call(sandbox.sandbox.requests()))

    # 16 minutes: the user token expired (15 min), the application's did not (30 min): one user refresh.
    await call(sandbox.sandbox.advance_clock(16 * 60))
    await call(associate())
    after = _paths((await call(sandbox.sandbox.requests()))[first:])
    assert after == [
        f"{CMS}/app/partners/acme/cardholders/{cardholder_id}/cards/association",
        f"{CMS}/app/users/refresh",
        f"{CMS}/app/partners/acme/cardholders/{cardholder_id}/cards/association",
    ]
    # 13 hours: both access tokens expired and the user's refresh token too (12 h): the application
    # refreshes, the operator logs in again with the password the client holds (D107).
    await call(sandbox.sandbox.advance_clock(13 * 3600))
    mark = len(await call(sandbox.sandbox.requests()))
    await call(associate())
    paths = _paths((await call(sandbox.sandbox.requests()))[mark:])
    assert f"{CMS}/app/auth/refresh" in paths
    assert f"{CMS}/app/users/login" in paths
    assert paths[-1].endswith("/cards/association")


async def _tokens(client: Any) -> tuple[str, str]:
    app_pair = await call(client.backoffice.login())
    user_pair = await call(client.backoffice.login_user())
    return app_pair.access_token, user_pair.access_token


@pytest.mark.covers("backoffice.login", "backoffice.login_user", "wallet.login")
async def test_backoffice_wrong_token_kinds_and_surfaces(
    make: Maker, kind: str, request: pytest.FixtureRequest
) -> None:
    sandbox = make()
    merchant, email, password, cardholder_id, card_id = await _setup(sandbox)
    client = make(backoffice=_credentials(merchant, email, password))
    app_token, user_token = await _tokens(client)
    assert merchant.signing_private_key is not None
    wallet = make(wallet=paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key))
    wallet_token = (await call(wallet.wallet.login())).access_token

    if kind == "async-asgi":
        http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=request.getfixturevalue("app")), base_url="http://testserver"
        )
    else:
        http = httpx.AsyncClient(base_url=request.getfixturevalue("live_server"), timeout=60)
    association = f"{CMS}/app/partners/acme/cardholders/{cardholder_id}/cards/association"
    login = f"{CMS}/app/users/login"
    async with http:

        async def post(path: str, token: str, body: dict[str, Any]) -> tuple[int, Any]:
            answer = await http.post(path, json=body, headers={"Authorization": f"Bearer {token}"})
            return answer.status_code, answer.json().get("ownCode")

        user_login = {"email": email, "password": password}
        # Within the backoffice: the other token is 7106 (both ways), naming Authorization.
        assert await post(login, user_token, user_login) == (401, 7106)
        assert await post(association, app_token, {"cardId": card_id}) == (401, 7106)
        # Across surfaces: 7102 both ways.
        assert await post(login, wallet_token, user_login) == (401, 7102)
        assert await post(association, wallet_token, {"cardId": card_id}) == (401, 7102)
        for token in (app_token, user_token):
            answer = await http.get(
                f"/rest/users/{cardholder_id}/cards", headers={"Authorization": f"Bearer {token}"}
            )
            assert (answer.status_code, answer.json()["ownCode"]) == (401, 7102)
        # ... and on a subscription route (the wallet application token's, D138).
        answer = await http.get(
            "/v1/subscriptions/payment-history", headers={"Authorization": f"Bearer {app_token}"}
        )
        assert (answer.status_code, answer.json()["ownCode"]) == (401, 7102)
        # A backoffice refresh token is no wallet refresh token, and the reverse.
        stored = await call(client.backoffice.login())
        answer = await http.post("/rest/auth/refresh", json={"refreshToken": stored.refresh_token})
        assert (answer.status_code, answer.json()["ownCode"]) == (401, 7102)
        w_pair = await call(wallet.wallet.login())
        answer = await http.post(f"{CMS}/app/auth/refresh", json={"refreshToken": w_pair.refresh_token})
        assert (answer.status_code, answer.json()["ownCode"]) == (401, 7102)
        # A bad body is 400 with ownCode null naming the field (D183).
        answer = await http.post(
            login, json={"email": email}, headers={"Authorization": f"Bearer {app_token}"}
        )
        assert answer.status_code == 400
        assert answer.json()["ownCode"] is None
        assert answer.json()["details"][0]["field"] == "password"
        # A reused application refresh token revokes its family (7105).
        fresh = await http.post(f"{CMS}/app/auth/refresh", json={"refreshToken": stored.refresh_token})
        assert fresh.status_code == 200
        reused = await http.post(f"{CMS}/app/auth/refresh", json={"refreshToken": stored.refresh_token})
        assert (reused.status_code, reused.json()["ownCode"]) == (401, 7105)


async def test_backoffice_concurrent_refresh_is_single_flight_over_a_socket(live_server: str) -> None:
    """Async over a real socket: eight concurrent calls after the user token expired refresh it once."""
    env = paysdk.Environment.local(live_server)
    async with paysdk.AsyncClient(environment=env) as sandbox:
        merchant, email, password, cardholder_id, card_id = await _setup(sandbox)
        async with paysdk.AsyncClient(
            environment=env, backoffice=_credentials(merchant, email, password)
        ) as client:
            await client.backoffice.associate_card("acme", cardholder_id, card_id)
            await sandbox.sandbox.advance_clock(16 * 60)
            mark = len(await sandbox.sandbox.requests())
            cards = await asyncio.gather(
                *(client.backoffice.associate_card("acme", cardholder_id, card_id) for _ in range(8))
            )
            assert {c.card_id for c in cards} == {card_id}
            paths = _paths((await sandbox.sandbox.requests())[mark:])
            assert paths.count(f"{CMS}/app/users/refresh") == 1
            assert f"{CMS}/app/users/login" not in paths
            assert f"{CMS}/app/auth/login" not in paths
