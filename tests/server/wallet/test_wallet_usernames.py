"""Wallet usernames are unique after NFKC and case folding; invisible and bidirectional characters are
refused; emails are checked for form (8.12, D96). Both databases (``db_url``)."""

from __future__ import annotations

from typing import Any

import pytest

from .kit import JSON_TYPE, PASSWORD, Kit, body, dumps, own_code


async def _create(kit: Kit, username: str, email: str | None = None) -> Any:
    payload = {
        "merchant": kit.merchant.slug,
        "username": username,
        "email": email if email is not None else f"u{abs(hash(username))}@example.com",
        "password": PASSWORD,
    }
    return await kit.client.post("/_sandbox/users", content=dumps(payload), headers=JSON_TYPE)


def _problem(response: Any, status: int, code: int, field: str) -> str:
    assert response.status_code == status, response.text
    assert own_code(response) == code
    [detail] = body(response)["details"]
    assert detail["field"] == field
    message: str = detail["message"]
    return message


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Ana", "ana"),
        ("Ana", "ＡＮＡ"),  # fullwidth
        ("Straße", "STRASSE"),  # case folding, not lower()
        ("ﬁle", "FILE"),  # the fi ligature
        ("Ana", " ANA "),  # surrounding spaces are stripped
    ],
)
async def test_usernames_clash_after_nfkc_and_case_folding(kit: Kit, first: str, second: str) -> None:
    created = await _create(kit, first)
    assert created.status_code == 201, created.text
    assert body(created)["username"] == first  # kept as given
    clash = await _create(kit, second)
    assert clash.status_code == 409, clash.text
    assert body(clash)["details"][0]["field"] == "username"
    # another merchant may use it
    other = Kit(kit.client, kit.merchant)
    response = await kit.client.post("/_sandbox/clients", content=dumps({}), headers=JSON_TYPE)
    other.merchant = other.merchant.model_validate(body(response))
    assert (await _create(other, second)).status_code == 201


async def test_login_takes_the_username_in_any_equivalent_form(kit: Kit) -> None:
    user = await kit.user("Ana")
    for name in ("Ana", "ana", "ＡＮＡ"):
        pair = await kit.user_login(name)
        assert pair["accessToken"]
    refused = await kit.post("/users/login", {"username": "Anna", "password": PASSWORD}, await kit.app())
    assert (refused.status_code, own_code(refused)) == (401, 7101)
    assert user["username"] == "Ana"


@pytest.mark.parametrize(
    ("username", "code_point"),
    [
        ("an\u200ba", "U+200B"),  # zero-width space
        ("ana\u202egnp.exe", "U+202E"),  # right-to-left override
        ("\u2066ana", "U+2066"),  # left-to-right isolate
        ("\ufeffana", "U+FEFF"),  # byte order mark
        ("an\u00ada", "U+00AD"),  # soft hyphen
        ("an\x07a", "U+0007"),  # a control character
        ("an\u2028a", "U+2028"),  # line separator
    ],
)
async def test_invisible_and_bidi_characters_are_refused(kit: Kit, username: str, code_point: str) -> None:
    message = _problem(await _create(kit, username), 409, 5000, "username")
    assert "invisible" in message
    assert code_point in message
    login = await kit.post("/users/login", {"username": username, "password": PASSWORD}, await kit.app())
    assert code_point in _problem(login, 400, 7001, "username")


BAD_EMAILS = [
    "no-at.example.com",
    "two@@example.com",
    "a@b@example.com",
    "a@localhost",
    "a b@example.com",
    "a@example..com",
    "a@.example.com",
    "@example.com",
    "x" * 65 + "@example.com",
    "a@" + "d" * 64 + ".com",
    "a@" + "d." * 130 + "com",
    '"quoted"@example.com',
    "a@exa\u200bmple.com",
    "<a@example.com>",
]


@pytest.mark.parametrize("email", BAD_EMAILS)
async def test_emails_are_checked_for_form(kit: Kit, email: str) -> None:
    _problem(await _create(kit, "user-x", email), 409, 5000, "email")
    otp = await kit.post("/users/auth/otp", {"email": email, "purpose": "password_reset"}, await kit.app())
    _problem(otp, 400, 7001, "email")


async def test_good_emails_and_an_email_clash(kit: Kit) -> None:
    for index, email in enumerate(["ana@example.com", "ana.b+tag@mail.example.co", "josé@correo.example.gt"]):
        created = await _create(kit, f"user-{index}", email)
        assert created.status_code == 201, created.text
    clash = await _create(kit, "user-9", "ANA@example.com")
    assert clash.status_code == 409
    assert body(clash)["details"][0]["field"] == "email"
