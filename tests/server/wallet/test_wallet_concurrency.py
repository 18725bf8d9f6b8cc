"""Atomic funds under real concurrency: 25 withdrawals of 10 from 100 over a socket (D41, D43)."""

from __future__ import annotations

import asyncio
import base64
from decimal import Decimal
from typing import Any

import httpx
import nacl.signing

from paysdk import _json
from paysdk._jwt import sign_merchant

from .kit import bearer


async def _post(
    client: httpx.AsyncClient, path: str, payload: Any, headers: dict[str, str] | None = None
) -> Any:
    json_type = {"Content-Type": "application/json"}  # the control plane takes JSON bodies only (D92)
    response = await client.post(path, content=_json.dumps(payload), headers={**json_type, **(headers or {})})
    assert response.status_code in (200, 201), response.text
    return _json.loads(response.content)


async def test_25_concurrent_withdrawals_of_10_from_100(live_server: str) -> None:
    limits = httpx.Limits(max_connections=30, max_keepalive_connections=30)
    async with httpx.AsyncClient(base_url=live_server, timeout=60, limits=limits) as client:
        merchant = await _post(client, "/_sandbox/clients", {})
        key = nacl.signing.SigningKey(base64.b64decode(merchant["signingPrivateKey"]))
        login = await _post(
            client,
            "/rest/auth/login",
            {"merchant": merchant["slug"], "signature": sign_merchant(key, merchant["slug"])},
        )
        app = bearer(login["data"]["accessToken"])
        user = await _post(
            client,
            "/_sandbox/users",
            {
                "merchant": merchant["slug"],
                "username": "racer",
                "email": "racer@example.com",
                "password": "12345678",
            },
        )
        card = (await _post(client, f"/rest/users/{user['authUserId']}/cards/virtuals", {}, app))["data"]
        path = f"/rest/cards/{card['cardId']}/funds"
        await _post(client, path, {"operation": "add", "amount": Decimal(100)}, app)
        raw = _json.dumps({"operation": "withdraw", "amount": Decimal(10)})
        start = asyncio.Event()

        async def withdraw() -> httpx.Response:
            await start.wait()
            return await client.post(path, content=raw, headers=app)

        tasks = [asyncio.create_task(withdraw()) for _ in range(25)]
        await asyncio.sleep(0.05)
        start.set()
        responses = await asyncio.gather(*tasks)
        statuses = sorted(response.status_code for response in responses)
        assert statuses == [200] * 10 + [422] * 15, [
            r.text for r in responses if r.status_code not in (200, 422)
        ]
        assert all(_json.loads(r.content)["ownCode"] == 7303 for r in responses if r.status_code == 422)
        after = _json.loads((await client.get(f"/rest/cards/{card['cardId']}", headers=app)).content)["data"]
        assert after["balance"] == 0
        moves = _json.loads(
            (await client.get(f"/rest/cards/{card['cardId']}/movements", headers=app)).content
        )["data"]
        withdrawals = [m for m in moves if m["type"] == "withdrawal"]
        assert len(withdrawals) == 10
        assert sorted(m["balanceAfter"] for m in withdrawals) == [Decimal(10 * i) for i in range(10)]
        # every request was logged
        log = _json.loads(
            (await client.get("/_sandbox/requests", params={"path": path, "limit": 1000})).content
        )
        assert len([entry for entry in log if entry["method"] == "POST"]) == 26
