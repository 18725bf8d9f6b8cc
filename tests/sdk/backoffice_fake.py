"""A fake backoffice for httpx.MockTransport (the reference server has no backoffice routes until
issue 11; then real-server tests replace this): the token routes of spec 4.4 and D105/D106 on the
``{cms}`` address, and two probe routes, one per token (5.3.7).

It reuses :class:`FakeWallet`'s token machinery (real EdDSA tokens, single-use refresh tokens, 7102,
7103, 7105, counters): ``application`` tokens come from ``POST /app/auth/login``, ``user`` tokens
from ``POST /app/users/login {email, password}`` with an application bearer.
"""

from __future__ import annotations

import time

import httpx

from paysdk import _json
from paysdk._jwt import verify_merchant_signature

from .wallet_fake import MERCHANT, FakeWallet

PREFIX = "/cms/rest"
EMAIL = "ops@shop.example"
PASSWORD = "backoffice horse"
#: Application-scoped and user-scoped probe routes.
APP_ROUTE = "/app/partners/p1/settings"
USER_ROUTE = "/app/partners/p1/cardholders"


class FakeBackoffice(FakeWallet):
    """``calls`` counts ``"POST /app/auth/login"``...; ``seen`` records ``(route, bearer kind)``."""

    def __init__(self, *, access_ttl: int = 1800, refresh_ttl: int = 7 * 86400) -> None:
        super().__init__(access_ttl=access_ttl, refresh_ttl=refresh_ttl)
        self.seen: list[tuple[str, str]] = []
        self.revoked: set[str] = set()

    def _bearer(self, request: httpx.Request, kind: str) -> httpx.Response | None:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token in self.revoked:
            return self.error(401, 7104, "revoked")
        return super()._bearer(request, kind)

    def _kind(self, request: httpx.Request) -> str:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        found = self.access.get(token)
        return found[0] if found is not None else "-"

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix(PREFIX)
        route = f"{request.method} {path}"
        with self.lock:
            self.calls[route] += 1
            self.seen_headers.append(request.headers)
            self.seen.append((route, self._kind(request)))
        body = _json.loads(request.content) if request.content else {}
        if route.endswith("/refresh") and self.refresh_delay:
            time.sleep(self.refresh_delay)
        with self.lock:
            if route == "POST /app/auth/login":
                if self.login_error is not None:
                    return self.error(401, self.login_error)
                if body.get("merchant") != MERCHANT or not verify_merchant_signature(
                    self.client_key.verify_key, MERCHANT, str(body.get("signature"))
                ):
                    return self.error(401, 7604, "bad signature")
                return httpx.Response(200, json=self._issue("application", MERCHANT))
            if route == "POST /app/auth/refresh":
                return self._refresh(body, "application")
            if route == "POST /app/users/login":
                refused = self._bearer(request, "application")
                if refused is not None:
                    return refused
                if body.get("email") != EMAIL or body.get("password") != PASSWORD:
                    return self.error(401, 7101, "wrong email or password")
                return httpx.Response(200, json=self._issue("user", "bo_" + EMAIL))
            if route == "POST /app/users/refresh":
                refused = self._bearer(request, "application")
                return refused if refused is not None else self._refresh(body, "user")
            if route == f"GET {APP_ROUTE}":
                refused = self._bearer(request, "application")
                return refused or httpx.Response(200, json={"data": {"scope": "application"}})
            if route == f"GET {USER_ROUTE}":
                refused = self._bearer(request, "user")
                return refused or httpx.Response(200, json={"data": {"scope": "user"}})
        return self.error(404, None, f"no route {route}")

    def revoke_users(self) -> None:
        """End every backoffice user session (its tokens answer 7104 from now on)."""
        with self.lock:
            for token, (kind, _exp) in list(self.access.items()):
                if kind == "user":
                    self.access.pop(token)
                    self.revoked.add(token)
