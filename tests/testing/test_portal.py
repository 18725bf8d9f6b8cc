"""ASGIPortal: the sync and async transports run an ASGI app in process, streaming answers as they come."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

import paysdk
from paysdk.contracts.sandbox import SandboxClient
from paysdk.testing import ASGIPortal, SandboxServer

PHONE = "+50255550123"


class GatedApp:
    """Sends ``first``, waits until the test opens the gate, then sends ``second``; records disconnects."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gone = threading.Event()
        self.finished = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/forever":
            await self._forever(receive, send)
            return
        if scope["path"] == "/silent":
            await asyncio.sleep(30)
            return
        body = (await receive())["body"]
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-echo", body)]})
        await send({"type": "http.response.body", "body": b"first", "more_body": True})
        await asyncio.to_thread(self.gate.wait, 10)
        await send({"type": "http.response.body", "body": b"second", "more_body": False})
        self.finished.set()

    async def _forever(self, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            while True:
                await send({"type": "http.response.body", "body": b"tick\n", "more_body": True})
                await asyncio.sleep(0.01)
        finally:
            self.gone.set()


@pytest.fixture
def gated() -> Iterator[tuple[GatedApp, ASGIPortal]]:
    app = GatedApp()
    with ASGIPortal(app) as portal:
        yield app, portal
    app.gate.set()


def test_sync_transport_streams_the_body_before_the_app_finishes(gated: tuple[GatedApp, ASGIPortal]) -> None:
    app, portal = gated
    with (
        httpx.Client(transport=portal.transport(), base_url="http://testserver") as client,
        client.stream("POST", "/download", content=b"hello") as response,
    ):
        assert response.status_code == 200
        assert response.headers["x-echo"] == "hello"
        chunks = response.iter_bytes()
        assert next(chunks) == b"first"
        assert not app.finished.is_set()  # the app is still running: nothing was buffered
        app.gate.set()
        assert b"".join(chunks) == b"second"
    assert app.finished.wait(5)


async def test_async_transport_streams_the_body_before_the_app_finishes(
    gated: tuple[GatedApp, ASGIPortal],
) -> None:
    app, portal = gated
    async with (
        httpx.AsyncClient(transport=portal.async_transport(), base_url="http://testserver") as client,
        client.stream("POST", "/download", content=b"hi") as response,
    ):
        chunks = response.aiter_bytes()
        assert await anext(chunks) == b"first"
        assert not app.finished.is_set()
        app.gate.set()
        rest = [chunk async for chunk in chunks]
        assert b"".join(rest) == b"second"


def test_closing_an_endless_answer_disconnects_the_app(gated: tuple[GatedApp, ASGIPortal]) -> None:
    app, portal = gated
    with httpx.Client(transport=portal.transport(), base_url="http://testserver") as client:
        with client.stream("GET", "/forever") as response:
            lines = response.iter_lines()
            assert next(lines) == "tick"
            assert next(lines) == "tick"
        assert app.gone.wait(5)


def test_an_answer_that_never_starts_is_a_read_timeout(gated: tuple[GatedApp, ASGIPortal]) -> None:
    _, portal = gated
    with (
        httpx.Client(transport=portal.transport(), base_url="http://testserver", timeout=0.3) as client,
        pytest.raises(httpx.ReadTimeout),
    ):
        client.get("/silent")


def test_the_async_transport_works_from_several_event_loops(paysdk_server: SandboxServer) -> None:
    async def health() -> str:
        async with paysdk_server.async_client() as client:
            return (await client.sandbox.health()).status

    assert asyncio.run(health()) == "ok"
    assert asyncio.run(health()) == "ok"  # a new loop: the app still runs on the portal's own


def test_sync_client_in_process(
    paysdk_server: SandboxServer, paysdk_client: paysdk.Client, paysdk_merchant: SandboxClient
) -> None:
    assert paysdk_server.url == "http://testserver"  # no socket answers there: only the portal can
    link = paysdk_client.payment_links.create(
        amount=Decimal("12.34"), user_id=PHONE, channel="wa", client=paysdk_merchant.slug
    )
    assert paysdk_client.sandbox.pay(link.uid, "4242424242424242").status == "approved"
    held = paysdk_client.sandbox.transaction(link.uid)
    assert (held.status, held.amount) == ("approved", Decimal("12.34"))


def test_server_sent_events_stream_live_through_the_sync_transport(
    paysdk_server: SandboxServer, paysdk_merchant: SandboxClient
) -> None:
    """The live feed (an endless SSE answer) is read while the server keeps it open, with a blocking
    client: the request made after the stream opened shows up on it."""
    with (
        httpx.Client(transport=paysdk_server.transport(), base_url=paysdk_server.url, timeout=10) as raw,
        raw.stream("GET", "/_sandbox/events") as feed,
    ):
        assert feed.headers["content-type"].startswith("text/event-stream")
        lines = feed.iter_lines()
        assert next(lines).startswith("retry:")
        with paysdk_server.client(paysdk_merchant.sandbox_token) as client:
            link = client.payment_links.create(
                amount=Decimal("1.00"), user_id=PHONE, channel="wa", client=paysdk_merchant.slug
            )
        seen: list[str] = []
        for line in lines:
            seen.append(line)
            if line.startswith("data:") and '"path":"/transactions"' in line:
                break
    assert "event: request" in seen
    assert link.uid


def test_server_sent_events_through_the_sync_sdk(
    paysdk_client: paysdk.Client, paysdk_merchant: SandboxClient
) -> None:
    """The SDK's blocking event stream (``client.sandbox.events()``) in process: events arrive while the
    stream stays open; another thread makes the requests."""
    stop = threading.Event()

    def traffic() -> None:
        while not stop.is_set():
            paysdk_client.payment_links.create(
                amount=Decimal("2.00"), user_id=PHONE, channel="wa", client=paysdk_merchant.slug
            )
            stop.wait(0.2)

    worker = threading.Thread(target=traffic, daemon=True)
    worker.start()
    try:
        with paysdk_client.sandbox.events(path="/transactions", read_timeout=10, max_reconnects=0) as stream:
            events = [event for _, event in zip(range(2), stream, strict=False)]
    finally:
        stop.set()
        worker.join(10)
    assert [event.event for event in events] == ["request", "request"]


async def test_server_sent_events_through_the_async_sdk(
    paysdk_async_client: paysdk.AsyncClient, paysdk_merchant: SandboxClient
) -> None:
    stream = paysdk_async_client.sandbox.events(path="/transactions", read_timeout=10, max_reconnects=0)
    async with stream:
        reader = asyncio.ensure_future(anext(aiter(stream)))
        for _ in range(40):  # requests until the open stream shows one (it subscribes when first read)
            await paysdk_async_client.payment_links.create(
                amount=Decimal("2.00"), user_id=PHONE, channel="wa", client=paysdk_merchant.slug
            )
            await asyncio.wait({reader}, timeout=0.25)
            if reader.done():
                break
        event = await reader
    assert event.event == "request"
