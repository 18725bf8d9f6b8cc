"""Application login, JWKS, token verification attacks, refresh rotation and reuse (D33-D36)."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt
import nacl.signing
import pytest
from cryptography.hazmat.primitives.asymmetric import ed448, rsa
from fastapi import FastAPI
from sqlalchemy.orm import Session

from paysdk._jwt import b64url_decode, b64url_encode, sign_merchant
from paysdk.server import create_app
from paysdk.server.services import wallet_tokens

from .kit import JSON_TYPE, Kit, W, bearer, body, dumps, forge, own_code


def _server_key(app: FastAPI) -> tuple[nacl.signing.SigningKey, str]:
    context = app.state.paysdk

    def keys(session: Session) -> wallet_tokens.ServerKeys:
        return wallet_tokens.server_keys(session, context)

    found = context.call(keys)
    return found.signing, found.kid


async def _jwks(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get(W + "/.well-known/jwks.json")
    assert response.status_code == 200
    result: dict[str, Any] = response.json()
    return result


async def test_login_issues_eddsa_tokens_that_pyjwt_verifies(kit: Kit) -> None:
    pair = await kit.login()
    assert pair["tokenType"] == "Bearer"
    assert pair["expiresIn"] == 1800
    assert pair["refreshExpiresIn"] == 7 * 86400
    jwks = await _jwks(kit.client)
    assert len(jwks["keys"]) == 1
    jwk = jwks["keys"][0]
    key = jwt.algorithms.OKPAlgorithm.from_jwk(json.dumps(jwk))
    claims = jwt.decode(pair["accessToken"], key, algorithms=["EdDSA"], audience="wallet")  # type: ignore[arg-type]
    assert claims["iss"] == "paysdk-wallet:sandbox"
    assert claims["sub"] == kit.merchant.slug
    assert claims["merchant"] == kit.merchant.slug
    assert claims["kind"] == "application"
    assert claims["token_use"] == "access"
    assert {"sid", "fam", "jti", "iat", "exp"} <= set(claims)
    assert claims["exp"] - claims["iat"] == 1800
    header = jwt.get_unverified_header(pair["accessToken"])
    assert header == {"alg": "EdDSA", "typ": "at+jwt", "kid": jwk["kid"]}
    assert jwt.get_unverified_header(pair["refreshToken"])["typ"] == "rt+jwt"
    refresh = jwt.decode(pair["refreshToken"], key, algorithms=["EdDSA"], audience="wallet")  # type: ignore[arg-type]
    assert refresh["token_use"] == "refresh"
    assert refresh["fam"] == claims["fam"]


async def test_jwks_is_stable_per_environment_across_instances(app: FastAPI, db_url: str, kit: Kit) -> None:
    first = await _jwks(kit.client)
    other = create_app(db_url, start_ticker=False)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=other), base_url="http://t") as client:
            assert await _jwks(client) == first
            # and a token issued by one instance works on the other
            token = await kit.app()
            response = await client.get(W + "/cards/crd_unknown", headers=bearer(token))
            assert response.status_code == 404
            assert own_code(response) == 7301
    finally:
        other.state.paysdk.db.dispose()
    reset = await kit.client.post("/_sandbox/reset")
    assert reset.status_code == 200
    assert await _jwks(kit.client) == first


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("other-bytes", 7604),
        ("not-base64", 7604),
        ("short", 7604),
        ("other-key", 7604),
        ("unknown-merchant", 7601),
    ],
)
async def test_login_refusals(kit: Kit, case: str, code: int) -> None:
    merchant = kit.merchant.slug
    signature = sign_merchant(kit.key, merchant)
    if case == "other-bytes":
        signature = sign_merchant(kit.key, json.dumps({"merchant": merchant}))
    elif case == "not-base64":
        signature = "!!!not base64!!!"
    elif case == "short":
        signature = base64.b64encode(base64.b64decode(signature)[:63]).decode()
    elif case == "other-key":
        signature = sign_merchant(nacl.signing.SigningKey.generate(), merchant)
    elif case == "unknown-merchant":
        merchant = "no-such-merchant"
    response = await kit.post("/auth/login", {"merchant": merchant, "signature": signature})
    assert response.status_code == 401
    assert own_code(response) == code
    assert "WWW-Authenticate" in response.headers


async def test_login_signature_without_padding_and_urlsafe_is_accepted(kit: Kit) -> None:
    signature = sign_merchant(kit.key, kit.merchant.slug).rstrip("=")
    response = await kit.post("/auth/login", {"merchant": kit.merchant.slug, "signature": signature})
    assert response.status_code == 200


async def test_keys_expire_on_the_virtual_clock_and_rotation_fixes_it(kit: Kit) -> None:
    expires = datetime.now(UTC) + timedelta(hours=1)
    rotated = await kit.client.post(
        f"/_sandbox/clients/{kit.merchant.slug}/keys",
        content=dumps({"expiresAt": expires.isoformat()}),
        headers=JSON_TYPE,
    )
    assert rotated.status_code == 201
    keys = body(rotated)
    new_key = nacl.signing.SigningKey(base64.b64decode(keys["privateKey"]))
    # the old key no longer verifies
    old = await kit.post(
        "/auth/login", {"merchant": kit.merchant.slug, "signature": sign_merchant(kit.key, kit.merchant.slug)}
    )
    assert own_code(old) == 7604
    good = {"merchant": kit.merchant.slug, "signature": sign_merchant(new_key, kit.merchant.slug)}
    assert (await kit.post("/auth/login", good)).status_code == 200
    await kit.advance(3601)
    expired = await kit.post("/auth/login", good)
    assert expired.status_code == 401
    assert own_code(expired) == 7616
    # register a public key of our own, no expiry
    mine = nacl.signing.SigningKey.generate()
    public = base64.b64encode(bytes(mine.verify_key)).decode()
    registered = await kit.client.post(
        f"/_sandbox/clients/{kit.merchant.slug}/keys", content=dumps({"publicKey": public}), headers=JSON_TYPE
    )
    assert registered.status_code == 201
    assert body(registered)["privateKey"] is None
    ok = await kit.post(
        "/auth/login", {"merchant": kit.merchant.slug, "signature": sign_merchant(mine, kit.merchant.slug)}
    )
    assert ok.status_code == 200


async def test_client_with_registered_public_key(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    mine = nacl.signing.SigningKey.generate()
    public = base64.b64encode(bytes(mine.verify_key)).decode()
    merchant = await merchant_factory(signing_public_key=public, user_access_token_ttl=120)
    assert merchant.signing_private_key is None
    assert merchant.signing_public_key == public
    assert merchant.user_access_token_ttl == 120
    again = await asgi_client.get(f"/_sandbox/clients/{merchant.slug}")
    assert body(again)["signingPublicKey"] == public
    assert body(again)["signingPrivateKey"] is None
    response = await asgi_client.post(
        W + "/auth/login",
        content=dumps({"merchant": merchant.slug, "signature": sign_merchant(mine, merchant.slug)}),
    )
    assert response.status_code == 200
    bad = await asgi_client.post(
        "/_sandbox/clients", content=dumps({"signingPublicKey": "AAAA"}), headers=JSON_TYPE
    )
    assert bad.status_code == 409
    assert body(bad)["details"][0]["field"] == "signingPublicKey"


async def test_refresh_rotates_and_reuse_revokes_the_family(kit: Kit) -> None:
    first = await kit.login()
    response = await kit.post("/auth/refresh", {"refreshToken": first["refreshToken"]})
    assert response.status_code == 200
    second = body(response)["data"]
    assert second["refreshToken"] != first["refreshToken"]
    assert second["accessToken"] != first["accessToken"]
    # the new access token works
    assert (await kit.call("GET", "/cards/crd_x", second["accessToken"])).status_code == 404
    # presenting the rotated token again: reuse
    reuse = await kit.post("/auth/refresh", {"refreshToken": first["refreshToken"]})
    assert reuse.status_code == 401
    assert own_code(reuse) == 7105
    # the whole family is gone: the newest refresh token and every access token of it
    for refresh in (second["refreshToken"], first["refreshToken"]):
        later = await kit.post("/auth/refresh", {"refreshToken": refresh})
        assert (later.status_code, own_code(later)) == (401, 7104)
    for access in (first["accessToken"], second["accessToken"]):
        denied = await kit.call("GET", "/cards/crd_x", access)
        assert (denied.status_code, own_code(denied)) == (401, 7104)
    # another login is a new family and works
    third = await kit.login()
    assert (await kit.call("GET", "/cards/crd_x", third["accessToken"])).status_code == 404


async def test_refresh_token_expires_after_seven_days(kit: Kit) -> None:
    pair = await kit.login()
    await kit.advance(7 * 86400 + 1)
    response = await kit.post("/auth/refresh", {"refreshToken": pair["refreshToken"]})
    assert (response.status_code, own_code(response)) == (401, 7103)


def _claims(kit: Kit, kid_claims: dict[str, Any], **over: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": "paysdk-wallet:sandbox",
        "aud": "wallet",
        "sub": kit.merchant.slug,
        "merchant": kit.merchant.slug,
        "kind": "application",
        "token_use": "access",
        "sid": kid_claims["sid"],
        "fam": kid_claims["fam"],
        "jti": "x" * 20,
        "iat": now,
        "exp": now + 600,
    }
    claims.update(over)
    return {k: v for k, v in claims.items() if v is not None}


ATTACKS = [
    "alg-none",
    "hs256-public-key",
    "ed448",
    "rs256",
    "no-alg",
    "unknown-crit",
    "tampered-payload",
    "tampered-signature",
    "missing-exp",
    "missing-sid",
    "wrong-aud",
    "wrong-iss",
    "unknown-kid",
    "garbage",
    "two-parts",
    "non-ascii",
    "huge",
    "empty",
]


@pytest.mark.parametrize("attack", ATTACKS)
async def test_forged_tokens_are_refused_with_401(kit: Kit, app: FastAPI, attack: str) -> None:
    real = (await kit.login())["accessToken"]
    claims = json.loads(b64url_decode(real.split(".")[1]))
    key, kid = _server_key(app)
    base = _claims(kit, claims)
    ed_header = {"alg": "EdDSA", "typ": "at+jwt", "kid": kid}
    raw_headers: dict[bytes, bytes] | None = None
    token: str
    if attack == "alg-none":
        token = forge({"alg": "none", "typ": "at+jwt", "kid": kid}, base)
    elif attack == "hs256-public-key":
        token = jwt.encode(
            base, bytes(key.verify_key), algorithm="HS256", headers={"typ": "at+jwt", "kid": kid}
        )
    elif attack == "ed448":
        token = jwt.encode(
            base, ed448.Ed448PrivateKey.generate(), algorithm="EdDSA", headers={"typ": "at+jwt", "kid": kid}
        )
    elif attack == "rs256":
        rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        token = jwt.encode(base, rsa_key, algorithm="RS256", headers={"typ": "at+jwt", "kid": kid})
    elif attack == "no-alg":
        token = forge({"typ": "at+jwt", "kid": kid}, base, key)
    elif attack == "unknown-crit":
        token = forge({**ed_header, "crit": ["x-bank"], "x-bank": 1}, base, key)
    elif attack == "tampered-payload":
        parts = real.split(".")
        claims["sub"] = "someone-else"
        token = parts[0] + "." + b64url_encode(json.dumps(claims).encode()) + "." + parts[2]
    elif attack == "tampered-signature":
        parts = real.split(".")
        signature = bytearray(b64url_decode(parts[2]))
        signature[0] ^= 1
        token = parts[0] + "." + parts[1] + "." + b64url_encode(bytes(signature))
    elif attack == "missing-exp":
        token = forge(ed_header, _claims(kit, claims, exp=None), key)
    elif attack == "missing-sid":
        token = forge(ed_header, _claims(kit, claims, sid=None), key)
    elif attack == "wrong-aud":
        token = forge(ed_header, _claims(kit, claims, aud="backoffice"), key)
    elif attack == "wrong-iss":
        token = forge(ed_header, _claims(kit, claims, iss="someone"), key)
    elif attack == "unknown-kid":
        token = forge({**ed_header, "kid": "nope"}, base, nacl.signing.SigningKey.generate())
    elif attack == "garbage":
        token = "not.a.jwt"
    elif attack == "two-parts":
        token = "abc.def"
    elif attack == "huge":
        token = "a" * 20000
    elif attack == "empty":
        token = ""
    else:  # non-ascii
        token = ""
        raw_headers = {b"authorization": "Bearer tökén".encode("latin-1")}
    if raw_headers is not None:
        response = await kit.client.get(W + "/cards/crd_x", headers=raw_headers)
    else:
        response = await kit.client.get(W + "/cards/crd_x", headers=bearer(token) if token else {})
    assert response.status_code == 401, (attack, response.text)
    assert own_code(response) == 7102, (attack, response.text)
    # and the genuine token still works (the forged ones changed nothing)
    assert (await kit.client.get(W + "/cards/crd_x", headers=bearer(real))).status_code == 404


async def test_a_correctly_signed_token_with_all_claims_is_accepted(kit: Kit, app: FastAPI) -> None:
    """The control of the attack test: our forging helper makes valid tokens when nothing is wrong."""
    real = (await kit.login())["accessToken"]
    claims = json.loads(b64url_decode(real.split(".")[1]))
    key, kid = _server_key(app)
    token = forge({"alg": "EdDSA", "typ": "at+jwt", "kid": kid}, _claims(kit, claims), key)
    assert (await kit.client.get(W + "/cards/crd_x", headers=bearer(token))).status_code == 404


async def test_expired_access_token_on_the_virtual_clock(kit: Kit) -> None:
    token = (await kit.login())["accessToken"]
    await kit.advance(1801)
    response = await kit.call("GET", "/cards/crd_x", token)
    assert (response.status_code, own_code(response)) == (401, 7103)


async def test_token_type_confusion_is_7106(kit: Kit) -> None:
    pair = await kit.login()
    as_bearer = await kit.call("GET", "/cards/crd_x", pair["refreshToken"])
    assert (as_bearer.status_code, own_code(as_bearer)) == (401, 7106)
    to_refresh = await kit.post("/auth/refresh", {"refreshToken": pair["accessToken"]})
    assert (to_refresh.status_code, own_code(to_refresh)) == (401, 7106)
    user = await kit.user()
    user_pair = await kit.user_login(user["username"])
    # a user token where the application's is needed
    wrong = await kit.post(
        "/users/login", {"username": user["username"], "password": "x"}, user_pair["accessToken"]
    )
    assert (wrong.status_code, own_code(wrong)) == (401, 7106)
    funds = await kit.post("/cards/crd_x/funds", {"operation": "add", "amount": 1}, user_pair["accessToken"])
    assert (funds.status_code, own_code(funds)) == (401, 7106)
    # a user refresh token on the application refresh endpoint, and the reverse
    app_refresh = await kit.post("/auth/refresh", {"refreshToken": user_pair["refreshToken"]})
    assert (app_refresh.status_code, own_code(app_refresh)) == (401, 7106)
    user_refresh = await kit.post("/users/refresh", {"refreshToken": pair["refreshToken"]}, await kit.app())
    assert (user_refresh.status_code, own_code(user_refresh)) == (401, 7106)
    # the application token where a user session is needed
    logout = await kit.post("/users/logout", None, await kit.app(), headers={"X-User-Token": await kit.app()})
    assert (logout.status_code, own_code(logout)) == (401, 7106)


async def test_production_token_on_a_sandbox_server_is_7107(app: FastAPI, db_url: str, kit: Kit) -> None:
    production = create_app(db_url, "production", start_ticker=False)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=production), base_url="http://p"
        ) as client:
            signature = sign_merchant(kit.key, kit.merchant.slug)
            response = await client.post(
                W + "/auth/login", content=dumps({"merchant": kit.merchant.slug, "signature": signature})
            )
            assert response.status_code == 200
            pair = body(response)["data"]
            assert jwt.decode(pair["accessToken"], options={"verify_signature": False})["iss"] == (
                "paysdk-wallet:production"
            )
            assert await _jwks(client) != await _jwks(kit.client)
            # the sandbox token on the production server, and the reverse
            sandbox_token = await kit.app()
            on_production = await client.get(W + "/cards/crd_x", headers=bearer(sandbox_token))
            assert (on_production.status_code, own_code(on_production)) == (401, 7107)
        on_sandbox = await kit.call("GET", "/cards/crd_x", pair["accessToken"])
        assert (on_sandbox.status_code, own_code(on_sandbox)) == (401, 7107)
        refresh = await kit.post("/auth/refresh", {"refreshToken": pair["refreshToken"]})
        assert (refresh.status_code, own_code(refresh)) == (401, 7107)
    finally:
        production.state.paysdk.db.dispose()


async def test_token_of_a_server_on_another_database_is_refused(kit: Kit, tmp_path: Any) -> None:
    other = create_app(f"sqlite:///{tmp_path / 'other.db'}", "production", start_ticker=False)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=other), base_url="http://o") as client:
            created = await client.post(
                "/_sandbox/clients", content=dumps({"slug": kit.merchant.slug}), headers=JSON_TYPE
            )
            key = nacl.signing.SigningKey(base64.b64decode(body(created)["signingPrivateKey"]))
            response = await client.post(
                W + "/auth/login",
                content=dumps(
                    {"merchant": kit.merchant.slug, "signature": sign_merchant(key, kit.merchant.slug)}
                ),
            )
            token = body(response)["data"]["accessToken"]
    finally:
        other.state.paysdk.db.dispose()
    refused = await kit.call("GET", "/cards/crd_x", token)
    assert refused.status_code == 401
    assert own_code(refused) in (7102, 7107)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"{",
        b"[]",
        b"null",
        b'{"merchant": 5, "signature": "x"}',
        b'{"merchant": "a"}',
        b"\xff\xfe",
        b'{"merchant": "a", "signature": NaN}',
        b'{"merchant": "a\\u0000", "signature": "x"}',
        b'{"merchant": "' + b"a" * 5000 + b'", "signature": "x"}',
    ],
)
async def test_malformed_login_bodies_are_400_7001(kit: Kit, payload: bytes) -> None:
    for path in ("/auth/login", "/auth/refresh"):
        response = await kit.client.post(W + path, content=payload)
        assert response.status_code == 400, (path, payload, response.text)
        assert own_code(response) == 7001
