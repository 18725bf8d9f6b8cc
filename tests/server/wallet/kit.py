"""Helpers of the wallet server tests: a merchant with its signing key, tokens, users and cards."""

from __future__ import annotations

import base64
import json
import secrets
from decimal import Decimal
from typing import Any

import httpx
import nacl.signing

from paysdk import _json
from paysdk._jwt import b64url_encode, sign_merchant
from paysdk.contracts.sandbox import SandboxClient

#: The control plane takes JSON bodies only (D92).
JSON_TYPE = {"Content-Type": "application/json"}

W = "/rest"
PASSWORD = "correct horse battery"


def dumps(value: Any) -> bytes:
    """Exact JSON."""
    return _json.dumps(value)


def body(response: httpx.Response) -> Any:
    """The answer parsed Decimal-exact."""
    return _json.loads(response.content)


def own_code(response: httpx.Response) -> int | None:
    """The D1 ``ownCode`` of an error answer."""
    code = body(response)["ownCode"]
    assert code is None or isinstance(code, int)
    return code


def bearer(token: str) -> dict[str, str]:
    """``Authorization: Bearer <token>``."""
    return {"Authorization": f"Bearer {token}"}


def forge(header: dict[str, Any], claims: dict[str, Any], key: nacl.signing.SigningKey | None = None) -> str:
    """A compact JWS with any header; signed with ``key`` (EdDSA) or with an empty signature."""
    signing_input = (
        b64url_encode(json.dumps(header).encode()) + "." + b64url_encode(json.dumps(claims).encode())
    )
    signature = key.sign(signing_input.encode()).signature if key is not None else b""
    return signing_input + "." + b64url_encode(signature)


class Kit:
    """Drives one merchant's wallet through the HTTP API (in process)."""

    def __init__(self, client: httpx.AsyncClient, merchant: SandboxClient) -> None:
        self.client = client
        self.merchant = merchant
        assert merchant.signing_private_key is not None
        self.key = nacl.signing.SigningKey(base64.b64decode(merchant.signing_private_key))
        self._app: dict[str, Any] | None = None

    async def post(
        self, path: str, payload: Any = None, token: str | None = None, **kw: Any
    ) -> httpx.Response:
        """POST ``payload`` as exact JSON to ``/rest{path}``."""
        headers = {**(bearer(token) if token else {}), **kw.pop("headers", {})}
        content = dumps(payload) if payload is not None else b""
        return await self.client.post(W + path, content=content, headers=headers, **kw)

    async def call(
        self, method: str, path: str, token: str | None = None, payload: Any = None, **kw: Any
    ) -> httpx.Response:
        """Any method."""
        headers = {**(bearer(token) if token else {}), **kw.pop("headers", {})}
        content = dumps(payload) if payload is not None else None
        return await self.client.request(method, W + path, content=content, headers=headers, **kw)

    async def login(self) -> dict[str, Any]:
        """A new application token pair."""
        signature = sign_merchant(self.key, self.merchant.slug)
        response = await self.post("/auth/login", {"merchant": self.merchant.slug, "signature": signature})
        assert response.status_code == 200, response.text
        pair: dict[str, Any] = body(response)["data"]
        return pair

    async def app(self) -> str:
        """The (cached) application access token."""
        if self._app is None:
            self._app = await self.login()
        token: str = self._app["accessToken"]
        return token

    async def user(self, username: str | None = None, password: str = PASSWORD) -> dict[str, Any]:
        """A new cardholder (control plane)."""
        name = username or "user-" + secrets.token_hex(4)
        response = await self.client.post(
            "/_sandbox/users",
            content=dumps(
                {
                    "merchant": self.merchant.slug,
                    "username": name,
                    "email": f"{name}@example.com",
                    "password": password,
                }
            ),
            headers=JSON_TYPE,
        )
        assert response.status_code == 201, response.text
        created: dict[str, Any] = body(response)
        return created

    async def user_login(self, username: str, password: str = PASSWORD) -> dict[str, Any]:
        """A user token pair."""
        response = await self.post(
            "/users/login", {"username": username, "password": password}, await self.app()
        )
        assert response.status_code == 200, response.text
        pair: dict[str, Any] = body(response)["data"]
        return pair

    async def virtual_card(self, user_id: str, currency: str | None = None) -> dict[str, Any]:
        """A new virtual card of the user."""
        payload = {"currency": currency} if currency else {}
        response = await self.post(f"/users/{user_id}/cards/virtuals", payload, await self.app())
        assert response.status_code == 201, response.text
        card: dict[str, Any] = body(response)["data"]
        return card

    async def fund(self, card_id: str, amount: Decimal | str, operation: str = "add") -> httpx.Response:
        """``POST /cards/{id}/funds``."""
        return await self.post(
            f"/cards/{card_id}/funds", {"operation": operation, "amount": Decimal(amount)}, await self.app()
        )

    async def card(self, card_id: str) -> dict[str, Any]:
        """The card as the application sees it."""
        response = await self.call("GET", f"/cards/{card_id}", await self.app())
        assert response.status_code == 200, response.text
        card: dict[str, Any] = body(response)["data"]
        return card

    async def movements(self, card_id: str) -> list[dict[str, Any]]:
        """Every movement of the card."""
        response = await self.call("GET", f"/cards/{card_id}/movements", await self.app())
        assert response.status_code == 200, response.text
        found: list[dict[str, Any]] = body(response)["data"]
        return found

    async def advance(self, seconds: int) -> None:
        """Move the virtual clock (the cached application token is dropped: it may have expired)."""
        self._app = None
        response = await self.client.post(
            "/_sandbox/clock/advance", content=dumps({"seconds": seconds}), headers=JSON_TYPE
        )
        assert response.status_code == 200, response.text
