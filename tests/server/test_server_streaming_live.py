"""A streaming answer on the public surface passes through the one ASGI layer (request log, faults,
idempotency, body bounds) without being buffered, and the request log records it when it ends, with
its duration. Over a real socket: an in-process ASGI transport buffers whole answers."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import StreamingResponse

from paysdk.server import create_app
from paysdk.testing._ready import serve_in_thread

PROBE = "/api/_probe/stream"
EVENTS_PROBE = "/api/_probe/events"


@pytest.fixture
def probe_server(db_url: str) -> Iterator[tuple[str, threading.Event]]:
    """The reference server with one extra public streaming route: a chunk, then (once the gate is
    set) a second chunk and the end."""
    app: FastAPI = create_app(db_url, start_ticker=False)
    gate = threading.Event()

    async def stream(request: Request) -> StreamingResponse:
        await request.body()

        async def chunks() -> AsyncIterator[bytes]:
            yield b"first\n"
            await asyncio.to_thread(gate.wait)
            yield b"second\n"

        return StreamingResponse(chunks(), media_type="text/plain")

    app.router.add_route(PROBE, stream, methods=["GET", "POST"])
    runs: list[int] = []

    async def events(request: Request) -> StreamingResponse:
        await request.body()
        runs.append(1)

        async def chunks() -> AsyncIterator[bytes]:
            yield b"data: %d\n\n" % len(runs)

        return StreamingResponse(chunks(), media_type="text/event-stream")

    app.router.add_route(EVENTS_PROBE, events, methods=["POST"])
    try:
        with serve_in_thread(app, what="the live server") as served:
            try:
                yield served.url, gate
            finally:
                gate.set()
    finally:
        app.state.paysdk.db.dispose()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("method", "headers"),
    [("GET", {}), ("POST", {"Idempotency-Key": "stream-1", "Content-Type": "application/json"})],
    ids=["get", "post-with-idempotency-key"],
)
def test_a_public_stream_is_not_buffered_and_is_logged_when_it_ends(
    probe_server: tuple[str, threading.Event], method: str, headers: dict[str, str]
) -> None:
    url, gate = probe_server
    with httpx.Client(base_url=url, timeout=10) as client:
        # A latency fault on the route: the stream still flows once it starts.
        client.post("/_sandbox/faults", json={"kind": "latency", "route": PROBE, "latencyMs": 10})
        content = b"{}" if method == "POST" else None
        with client.stream(method, PROBE, headers=headers, content=content) as response:
            chunks = response.iter_raw()
            first = next(chunks)
            assert first == b"first\n"  # arrived while the handler still holds the second chunk
            assert client.get("/_sandbox/requests").json() == []  # not logged before it ends
            time.sleep(0.3)
            gate.set()
            rest = b"".join(chunks)
            assert rest == b"second\n"
        (entry,) = client.get("/_sandbox/requests").json()
    assert (entry["method"], entry["path"], entry["statusCode"]) == (method, PROBE, 200)
    assert entry["durationMs"] >= 300


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_an_event_stream_is_never_stored_for_idempotent_replay(
    probe_server: tuple[str, threading.Event],
) -> None:
    """The idempotency layer keeps no copy of an event stream (it could be endless): a POST with the
    same key runs again instead of replaying it."""
    url, _ = probe_server
    headers = {"Idempotency-Key": "events-1", "Content-Type": "application/json"}
    with httpx.Client(base_url=url, timeout=10) as client:
        first = client.post(EVENTS_PROBE, content=b"{}", headers=headers)
        second = client.post(EVENTS_PROBE, content=b"{}", headers=headers)
    assert (first.text, second.text) == ("data: 1\n\n", "data: 2\n\n")
    assert "idempotent-replayed" not in second.headers


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_an_open_event_stream_does_not_hold_the_servers_shutdown(db_url: str) -> None:
    """uvicorn waits for open answers when it stops; the feed drops its connection instead (clients
    reconnect once the server is back), so a tail left open never blocks Ctrl-C on the server."""
    app: FastAPI = create_app(db_url, start_ticker=False)
    try:
        with serve_in_thread(app, log_level="critical", what="the live server") as served:
            url = f"{served.url}/_sandbox/events"
            with httpx.Client(timeout=httpx.Timeout(10.0)) as client, client.stream("GET", url) as response:
                chunks = response.iter_raw()
                assert next(chunks) == b"retry: 1000\n\n"
                served.server.should_exit = True
                with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
                    b"".join(chunks)  # dropped, not a clean end: a client reconnects later
            served.thread.join(timeout=10)
            assert not served.thread.is_alive(), "the server still waits for the stream"
    finally:
        app.state.paysdk.db.dispose()
