"""The server over a real socket (uvicorn, lifespan, ticker): smoke test, drop fault, ticker deliveries."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from server_helpers import JSON_TYPE, body, dumps, form_token, link_body

from paysdk.contracts.sandbox import SandboxClient


async def test_smoke_over_a_real_socket(live_server: str, callback_sink: Any) -> None:
    async with httpx.AsyncClient(base_url=live_server, timeout=10) as client:
        assert body(await client.get("/_sandbox/health"))["status"] == "ok"
        created = await client.post(
            "/_sandbox/clients", content=dumps({"callbackUrl": callback_sink.url}), headers=JSON_TYPE
        )
        merchant = SandboxClient.model_validate(body(created))
        link = await client.post(
            "/transactions",
            content=dumps(link_body(merchant)),
            headers={"Authorization": merchant.sandbox_token},
        )
        assert link.status_code == 200
        url = body(link)["URL"]
        assert url.startswith(f"{live_server}/checkout/?orderId=")
        page = await client.get(url)
        assert "data-testid='pay-button'" in page.text
        submitted = await client.post(
            "/checkout/pay",
            data={
                "orderId": body(link)["uid"],
                "formToken": form_token(page.text),
                "cardNumber": "4242424242424242",
                "expiry": "12/39",
                "cvc": "123",
                "name": "A",
            },
            follow_redirects=True,
        )
        assert "data-testid='status' data-status='approved'" in submitted.text
        received = await asyncio.to_thread(callback_sink.wait_for, 1)
        assert received[0].json()["status"] == "approved"
        key = {"Authorization": merchant.sandbox_token, "Idempotency-Key": "live-1"}
        first = await client.post("/transactions", content=dumps(link_body(merchant)), headers=key)
        again = await client.post("/transactions", content=dumps(link_body(merchant)), headers=key)
        assert again.content == first.content
        assert again.headers["idempotent-replayed"] == "true"
        openapi = await client.get("/openapi.json")
        assert "/transactions" in openapi.json()["paths"]


async def test_drop_fault_closes_the_connection(live_server: str) -> None:
    async with httpx.AsyncClient(base_url=live_server, timeout=10) as client:
        merchant = SandboxClient.model_validate(body(await client.post("/_sandbox/clients")))
        await client.post(
            "/_sandbox/faults",
            content=dumps({"kind": "drop", "route": "POST /transactions"}),
            headers=JSON_TYPE,
        )
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            await client.post(
                "/transactions",
                content=dumps(link_body(merchant)),
                headers={"Authorization": merchant.sandbox_token},
            )
        ok = await client.post(
            "/transactions",
            content=dumps(link_body(merchant)),
            headers={"Authorization": merchant.sandbox_token},
        )
        assert ok.status_code == 200
        log = body(await client.get("/_sandbox/requests"))
        assert [entry["statusCode"] for entry in log] == [0, 200]


async def test_ticker_delivers_retries_when_their_time_comes(
    live_server: str, callback_sink: Any, app: FastAPI
) -> None:
    async with httpx.AsyncClient(base_url=live_server, timeout=10) as client:
        merchant = SandboxClient.model_validate(
            body(
                await client.post(
                    "/_sandbox/clients", content=dumps({"callbackUrl": callback_sink.url}), headers=JSON_TYPE
                )
            )
        )
        callback_sink.down()
        link = body(
            await client.post(
                "/transactions",
                content=dumps(link_body(merchant)),
                headers={"Authorization": merchant.sandbox_token},
            )
        )
        paid = await client.post(
            f"/_sandbox/transactions/{link['uid']}/pay", json={"cardNumber": "4242424242424242"}
        )
        assert paid.status_code == 200
        assert [row["statusCode"] for row in body(await client.get("/_sandbox/callbacks"))] == [None]
        callback_sink.up()
        # Move the shared virtual clock past the retry without running jobs: the live ticker must do it.
        context = app.state.paysdk
        offset = context.call(context.clock.offset_us)
        context.call(context.clock.set_offset_at_least, offset + 61_000_000)
        received = await asyncio.to_thread(callback_sink.wait_for, 1, 10.0)
        assert received[0].json()["uid"] == link["uid"]
        # The attempt is recorded once the receiver's answer is in: poll briefly.
        for _ in range(100):
            rows = body(await client.get("/_sandbox/callbacks"))
            if len(rows) == 2:
                break
            await asyncio.sleep(0.05)
        assert [row["statusCode"] for row in rows] == [None, 200]
