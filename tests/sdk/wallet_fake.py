"""A small in-memory wallet server for httpx.MockTransport: real EdDSA tokens, rotation, counters.

It follows docs/wallet.md and D32-D38 closely enough to drive the SDK's token machinery: its own
clock (``now``), single-use refresh tokens (reuse: 7105), expiry (7103), unknown tokens (7102),
injectable login refusals, and a count of every request by ``METHOD path``.
"""

from __future__ import annotations

import base64
import secrets
import threading
import time
from collections import Counter
from typing import Any

import httpx
import nacl.signing

from paysdk import _json
from paysdk._jwt import encode_jwt, public_jwk, verify_merchant_signature

MERCHANT = "wallet-shop"
PREFIX = "/rest"


def card_json(card_id: str) -> dict[str, Any]:
    return {
        "cardId": card_id,
        "maskedPan": "400000******0001",
        "type": "virtual",
        "status": "active",
        "currency": "GTQ",
        "balance": 10,
        "availableBalance": 10,
        "pendingDebits": 0,
        "pendingCredits": 0,
        "holderId": "u_1",
        "merchant": MERCHANT,
        "alias": None,
        "createdAt": "2026-01-01T00:00:00Z",
    }


class FakeWallet:
    """The fake. ``handler`` is the MockTransport handler; ``calls`` counts ``"POST /auth/refresh"``..."""

    def __init__(self, *, access_ttl: int = 1800, refresh_ttl: int = 7 * 86400) -> None:
        self.signing = nacl.signing.SigningKey.generate()
        self.client_key = nacl.signing.SigningKey.generate()
        self.kid = public_jwk(self.signing)["kid"]
        self.now = 1_750_000_000.0
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.access: dict[str, tuple[str, float]] = {}  # token -> (kind, exp)
        self.refresh: dict[str, dict[str, Any]] = {}  # token -> {kind, sub, exp, used}
        self.login_error: int | None = None
        self.refresh_delay = 0.0
        self.seen_bearers: list[str] = []
        self.seen_headers: list[httpx.Headers] = []

    @property
    def private_key_b64(self) -> str:
        return base64.b64encode(bytes(self.client_key)).decode()

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds

    def count(self, route: str) -> int:
        with self.lock:
            return self.calls[route]

    def _issue(self, kind: str, sub: str, access_ttl: int | None = None) -> dict[str, Any]:
        iat = int(self.now)
        a_ttl = access_ttl or self.access_ttl
        base = {"iss": "paysdk-wallet:test", "aud": "wallet", "sub": sub, "kind": kind, "iat": iat}
        access = encode_jwt(
            self.signing,
            {**base, "token_use": "access", "exp": iat + a_ttl, "jti": secrets.token_hex(8)},
            typ="at+jwt",
            kid=self.kid,
        )
        refresh = encode_jwt(
            self.signing,
            {**base, "token_use": "refresh", "exp": iat + self.refresh_ttl, "jti": secrets.token_hex(8)},
            typ="rt+jwt",
            kid=self.kid,
        )
        self.access[access] = (kind, iat + a_ttl)
        self.refresh[refresh] = {"kind": kind, "sub": sub, "exp": iat + self.refresh_ttl, "used": False}
        return {
            "data": {
                "accessToken": access,
                "refreshToken": refresh,
                "tokenType": "Bearer",
                "expiresIn": a_ttl,
                "refreshExpiresIn": self.refresh_ttl,
            }
        }

    @staticmethod
    def error(status: int, code: int | None, message: str = "refused") -> httpx.Response:
        return httpx.Response(status, json={"ownCode": code, "message": message, "details": []})

    def _bearer(self, request: httpx.Request, kind: str) -> httpx.Response | None:
        header = request.headers.get("authorization", "")
        if not header.startswith("Bearer "):
            return self.error(401, 7102, "no token")
        token = header.removeprefix("Bearer ")
        self.seen_bearers.append(token)
        found = self.access.get(token)
        if found is None:
            return self.error(401, 7102, "unknown token")
        if found[1] <= self.now:
            return self.error(401, 7103, "expired")
        if kind != "any" and found[0] != kind:
            return self.error(401, 7106, "wrong kind")
        return None

    def _refresh(self, body: dict[str, Any], kind: str) -> httpx.Response:
        token = body.get("refreshToken")
        entry = self.refresh.get(token) if isinstance(token, str) else None
        if entry is None or entry["kind"] != kind:
            return self.error(401, 7102, "unknown refresh token")
        if entry["used"]:
            return self.error(401, 7105, "reused")
        if entry["exp"] <= self.now:
            return self.error(401, 7103, "expired")
        entry["used"] = True
        return httpx.Response(200, json=self._issue(kind, entry["sub"]))

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix(PREFIX)
        route = f"{request.method} {path}"
        with self.lock:
            self.calls[route] += 1
            self.seen_headers.append(request.headers)
        body = _json.loads(request.content) if request.content else {}
        if route in ("POST /auth/refresh", "POST /users/refresh") and self.refresh_delay:
            time.sleep(self.refresh_delay)
        with self.lock:
            if route == "POST /auth/login":
                if self.login_error is not None:
                    return self.error(401, self.login_error)
                if body.get("merchant") != MERCHANT or not verify_merchant_signature(
                    self.client_key.verify_key, MERCHANT, str(body.get("signature"))
                ):
                    return self.error(401, 7604, "bad signature")
                return httpx.Response(200, json=self._issue("application", MERCHANT))
            if route == "POST /auth/refresh":
                return self._refresh(body, "application")
            if route == "GET /.well-known/jwks.json":
                return httpx.Response(200, json={"keys": [public_jwk(self.signing)]})
            if route == "POST /users/login":
                refused = self._bearer(request, "application")
                if refused is not None:
                    return refused
                if body.get("password") != "correct horse":
                    return self.error(401, 7101, "wrong password")
                return httpx.Response(
                    200, json=self._issue("user", "u_" + body["username"], body.get("accessTokenTtl"))
                )
            if route == "POST /users/refresh":
                refused = self._bearer(request, "application")
                return refused if refused is not None else self._refresh(body, "user")
            if route == "POST /users/logout":
                refused = self._bearer(request, "application")
                if refused is not None:
                    return refused
                self.access.pop(request.headers.get("x-user-token", ""), None)
                return httpx.Response(200, json={"data": {"loggedOut": True}})
            if route.startswith("GET /cards/") and route.count("/") == 2:
                refused = self._bearer(request, "any")
                if refused is not None:
                    return refused
                return httpx.Response(200, json={"data": card_json(path.rsplit("/", 1)[1])})
            if route.startswith("POST /cards/") and route.endswith("/funds"):
                refused = self._bearer(request, "application")
                if refused is not None:
                    return refused
                if body.get("operation") == "withdraw":
                    return self.error(422, 7303, "insufficient funds")
                return self.error(400, 7001, "unsupported here")
        return self.error(404, None, f"no route {route}")
