"""User login, refresh with TTL overrides, logout, OTP and password reset (D34, D37-D39)."""

from __future__ import annotations

from typing import Any

import jwt
import pytest

from .kit import PASSWORD, Kit, body, own_code


async def _otp(kit: Kit, email: str, purpose: str = "password_reset") -> str:
    response = await kit.post("/users/auth/otp", {"email": email, "purpose": purpose}, await kit.app())
    assert response.status_code == 200
    assert body(response) == {"data": {"sent": True}}
    outbox = body(await kit.client.get("/_sandbox/outbox", params={"to": email}))
    code: str = outbox[-1]["data"]["otp"]
    assert len(code) == 6
    assert code in outbox[-1]["body"]
    return code


async def test_user_login_refresh_and_ttl_overrides(kit: Kit) -> None:
    user = await kit.user()
    pair = await kit.user_login(user["username"])
    assert pair["expiresIn"] == 900
    assert pair["refreshExpiresIn"] == 30 * 86400
    claims = jwt.decode(pair["accessToken"], options={"verify_signature": False})
    assert claims["kind"] == "user"
    assert claims["sub"] == user["authUserId"]
    response = await kit.post(
        "/users/refresh",
        {"refreshToken": pair["refreshToken"], "accessTokenTtl": 120, "refreshTokenTtl": 600},
        await kit.app(),
    )
    assert response.status_code == 200, response.text
    new = body(response)["data"]
    assert (new["expiresIn"], new["refreshExpiresIn"]) == (120, 600)
    again = await kit.post("/users/refresh", {"refreshToken": pair["refreshToken"]}, await kit.app())
    assert (again.status_code, own_code(again)) == (401, 7105)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"accessTokenTtl": 59}, "accessTokenTtl"),
        ({"accessTokenTtl": 86401}, "accessTokenTtl"),
        ({"refreshTokenTtl": 299}, "refreshTokenTtl"),
        ({"refreshTokenTtl": 90 * 86400 + 1}, "refreshTokenTtl"),
        ({"accessTokenTtl": 3600, "refreshTokenTtl": 600}, "refreshTokenTtl"),
        ({"accessTokenTtl": "900"}, "accessTokenTtl"),
        ({"accessTokenTtl": 10**40}, "accessTokenTtl"),
        ({"accessTokenTtl": True}, "accessTokenTtl"),
        ({"merchant": "someone-else"}, "merchant"),
    ],
)
async def test_user_refresh_bounds(kit: Kit, overrides: dict[str, Any], field: str) -> None:
    user = await kit.user()
    pair = await kit.user_login(user["username"])
    response = await kit.post(
        "/users/refresh", {"refreshToken": pair["refreshToken"], **overrides}, await kit.app()
    )
    assert response.status_code == 400, response.text
    assert own_code(response) == 7001
    assert body(response)["details"][0]["field"] == field
    # the refused refresh did not burn the token
    ok = await kit.post("/users/refresh", {"refreshToken": pair["refreshToken"]}, await kit.app())
    assert ok.status_code == 200


async def test_wrong_credentials_and_merchant(kit: Kit) -> None:
    user = await kit.user()
    app = await kit.app()
    for payload in (
        {"username": user["username"], "password": "wrong password"},
        {"username": "nobody", "password": PASSWORD},
    ):
        response = await kit.post("/users/login", payload, app)
        assert (response.status_code, own_code(response)) == (401, 7101)
    mismatch = await kit.post(
        "/users/login", {"username": user["username"], "password": PASSWORD, "merchant": "x"}, app
    )
    assert (mismatch.status_code, own_code(mismatch)) == (400, 7001)
    same = await kit.post(
        "/users/login",
        {"username": user["username"], "password": PASSWORD, "merchant": kit.merchant.slug},
        app,
    )
    assert same.status_code == 200
    no_bearer = await kit.post("/users/login", {"username": user["username"], "password": PASSWORD})
    assert (no_bearer.status_code, own_code(no_bearer)) == (401, 7102)


async def test_logout_ends_the_session_at_once(kit: Kit) -> None:
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    pair = await kit.user_login(user["username"])
    other = await kit.user_login(user["username"])
    assert (await kit.call("GET", f"/cards/{card['cardId']}", pair["accessToken"])).status_code == 200
    missing = await kit.post("/users/logout", None, await kit.app())
    assert (missing.status_code, own_code(missing)) == (401, 7102)
    response = await kit.post(
        "/users/logout", None, await kit.app(), headers={"X-User-Token": pair["accessToken"]}
    )
    assert response.status_code == 200
    assert body(response) == {"data": {"loggedOut": True}}
    after = await kit.call("GET", f"/cards/{card['cardId']}", pair["accessToken"])
    assert (after.status_code, own_code(after)) == (401, 7104)
    refresh = await kit.post("/users/refresh", {"refreshToken": pair["refreshToken"]}, await kit.app())
    assert (refresh.status_code, own_code(refresh)) == (401, 7104)
    # another session of the same user is untouched
    assert (await kit.call("GET", f"/cards/{card['cardId']}", other["accessToken"])).status_code == 200


async def test_otp_and_password_reset(kit: Kit) -> None:
    user = await kit.user()
    session = await kit.user_login(user["username"])
    app = await kit.app()
    unknown = await kit.post(
        "/users/auth/otp", {"email": "nobody@example.com", "purpose": "password_reset"}, app
    )
    assert body(unknown) == {"data": {"sent": True}}
    code = await _otp(kit, user["email"])
    wrong_purpose = await kit.call(
        "PUT", "/users/auth/otp", app, {"email": user["email"], "otp": code, "purpose": "x"}
    )
    assert (wrong_purpose.status_code, own_code(wrong_purpose)) == (400, 7202)
    verified = await kit.call(
        "PUT", "/users/auth/otp", app, {"email": user["email"], "otp": code, "purpose": "password_reset"}
    )
    assert verified.status_code == 200, verified.text
    token = body(verified)["data"]["token"]
    reused = await kit.call(
        "PUT", "/users/auth/otp", app, {"email": user["email"], "otp": code, "purpose": "password_reset"}
    )
    assert (reused.status_code, own_code(reused)) == (400, 7203)
    reset = {
        "email": user["email"],
        "newPassword": "a new password",
        "confirmPassword": "a new password",
        "token": token,
    }
    mismatch = await kit.post("/users/auth/password/reset", {**reset, "confirmPassword": "other one"}, app)
    assert (mismatch.status_code, own_code(mismatch)) == (400, 7206)
    weak = await kit.post(
        "/users/auth/password/reset", {**reset, "newPassword": "short", "confirmPassword": "short"}, app
    )
    assert (weak.status_code, own_code(weak)) == (400, 7207)
    done = await kit.post("/users/auth/password/reset", reset, app)
    assert done.status_code == 200, done.text
    again = await kit.post("/users/auth/password/reset", reset, app)
    assert (again.status_code, own_code(again)) == (400, 7205)
    # every session of the user ended; the new password works, the old one does not
    revoked = await kit.call("GET", f"/users/{user['authUserId']}/cards", session["accessToken"])
    assert (revoked.status_code, own_code(revoked)) == (401, 7104)
    old = await kit.post("/users/login", {"username": user["username"], "password": PASSWORD}, app)
    assert own_code(old) == 7101
    await kit.user_login(user["username"], "a new password")


async def test_otp_expiry_and_attempts(kit: Kit) -> None:
    user = await kit.user()
    app = await kit.app()
    code = await _otp(kit, user["email"], "login")
    await kit.advance(601)
    expired = await kit.call(
        "PUT", "/users/auth/otp", app, {"email": user["email"], "otp": code, "purpose": "login"}
    )
    assert (expired.status_code, own_code(expired)) == (400, 7203)
    code = await _otp(kit, user["email"], "login")
    wrong = "000000" if code != "000000" else "111111"
    for _ in range(5):
        response = await kit.call(
            "PUT", "/users/auth/otp", app, {"email": user["email"], "otp": wrong, "purpose": "login"}
        )
        assert (response.status_code, own_code(response)) == (400, 7202)
    dead = await kit.call(
        "PUT", "/users/auth/otp", app, {"email": user["email"], "otp": code, "purpose": "login"}
    )
    assert (dead.status_code, own_code(dead)) == (429, 7204)
    code = await _otp(kit, user["email"], "login")
    ok = await kit.call(
        "PUT", "/users/auth/otp", app, {"email": user["email"], "otp": code, "purpose": "login"}
    )
    assert body(ok) == {"data": {"verified": True}}
    bad_shape = await kit.call(
        "PUT", "/users/auth/otp", app, {"email": user["email"], "otp": "12345", "purpose": "login"}
    )
    assert (bad_shape.status_code, own_code(bad_shape)) == (400, 7001)
    assert body(bad_shape)["details"][0]["field"] == "otp"
