"""Concurrent requests: a transaction finishes once; one idempotency key runs once."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from server_helpers import attempts, auth, body, create_link, dumps, link_body

from paysdk.contracts.sandbox import SandboxClient


async def test_concurrent_payments_finish_a_link_once(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await merchant_factory(callback_url=callback_sink.url)
    link = await create_link(asgi_client, merchant)
    cards = ["4242424242424242", "4000000000000002"] * 3
    responses = await asyncio.gather(
        *(
            asgi_client.post(f"/_sandbox/transactions/{link['uid']}/pay", json={"cardNumber": card})
            for card in cards
        )
    )
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200, 409, 409, 409, 409, 409]
    assert len(await attempts(asgi_client, link["uid"])) == 1
    assert len(callback_sink.received) == 1


async def test_concurrent_requests_with_one_idempotency_key_create_one_link(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    headers = {**auth(merchant), "Idempotency-Key": "race"}
    raw = dumps(link_body(merchant))
    responses = await asyncio.gather(
        *(asgi_client.post("/transactions", content=raw, headers=headers) for _ in range(5))
    )
    created = {body(response)["uid"] for response in responses if response.status_code == 200}
    assert len(created) == 1
    assert all(response.status_code in (200, 409) for response in responses)
    log = body(await asgi_client.get("/_sandbox/requests"))
    assert len(log) == 5
