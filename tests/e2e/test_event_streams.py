"""Server-Sent Events end to end, over real sockets (an in-process ASGI transport buffers streams).

The SDK's event streams (``paysdk._streaming``) against the reference server's live feed
(``GET /_sandbox/events``) and against a scripted SSE server: a stream cut by the ``stream_cut`` fault
and resumed with ``Last-Event-ID`` with no event lost or repeated, the server's ``retry:`` honoured,
comments ignored, a stream that ends cleanly not reopened, a 4xx on reconnect raised, no read timeout
between events, and closing the iterator closing the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

import paysdk
from paysdk._pipeline import Operation, no_result
from paysdk._sse import ServerSentEvent, StreamOperation, UnknownEvent
from paysdk._streaming import AsyncEventStream, EventStream
from paysdk.contracts.sandbox_events import CallbackEvent, GapEvent, JobEvent, RequestEvent
from paysdk.server import create_app
from paysdk.server.adapters.uvicorn import abort_connection, remember_connection
from paysdk.server.events import EventFeed
from paysdk.testing._ready import ServedThread, serve_in_thread

sqlite_only = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def _serve(app: Any) -> contextlib.AbstractContextManager[ServedThread]:
    return serve_in_thread(app, log_level="critical", what="the live server")


@dataclass
class FeedServer:
    """The reference server over a socket, with its app at hand (its feed, its heartbeat)."""

    url: str
    app: FastAPI

    @property
    def feed(self) -> EventFeed:
        feed: EventFeed = self.app.state.paysdk.events
        return feed

    def wait_for_subscribers(self, count: int = 1, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while self.feed.subscribers < count:
            assert time.monotonic() < deadline, f"{self.feed.subscribers} subscribers, expected {count}"
            time.sleep(0.01)

    def hit(self, path: str, **headers: str) -> None:
        """A public request (a 404 is logged like any other)."""
        httpx.get(self.url + path, headers=headers, timeout=10)

    def control(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        """A control-plane request."""
        return httpx.request(method, self.url + path, json=body, timeout=10)


def _listen_once(url: str) -> None:
    """Open the feed and close it after its first line (``retry: 1000``), as a client would."""
    with httpx.stream("GET", url + "/_sandbox/events", timeout=10) as answer:
        assert answer.status_code == 200
        next(answer.iter_lines())


@pytest.fixture
def feed_server(db_url: str) -> Iterator[FeedServer]:
    app = create_app(db_url, start_ticker=False)
    try:
        with _serve(app) as served:
            _listen_once(served.url)  # the feed keeps events from its first stream on (D116): as after a tail
            yield FeedServer(served.url, app)
    finally:
        app.state.paysdk.db.dispose()


@pytest.fixture(params=["sync-socket", "async-socket"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _client(kind: str, url: str, **options: Any) -> paysdk.Client | paysdk.AsyncClient:
    environment = paysdk.Environment.local(url)
    if kind.startswith("async"):
        return paysdk.AsyncClient(environment=environment, **options)
    return paysdk.Client(environment=environment, **options)


async def _take(stream: Any, count: int, during: Callable[[], None] | None = None) -> list[Any]:
    """The first ``count`` events of a sync or async stream; ``during`` runs in a thread meanwhile."""
    worker = threading.Thread(target=during, daemon=True) if during is not None else None
    if worker is not None:
        worker.start()
    events: list[Any] = []
    try:
        if isinstance(stream, AsyncEventStream):
            async with stream:
                async for event in stream:
                    events.append(event)
                    if len(events) == count:
                        break
        else:

            def read() -> None:
                with stream:
                    for event in stream:
                        events.append(event)
                        if len(events) == count:
                            break

            await asyncio.to_thread(read)
    finally:
        if worker is not None:
            worker.join(timeout=30)
    return events


async def _close(client: paysdk.Client | paysdk.AsyncClient) -> None:
    if isinstance(client, paysdk.AsyncClient):
        await client.aclose()
    else:
        client.close()


# ------------------------------------------------------------------------------- the live feed


@sqlite_only
@pytest.mark.covers("sandbox.events")
async def test_the_feed_streams_each_request_as_it_ends_masked_and_not_itself(
    kind: str, feed_server: FeedServer
) -> None:
    client = _client(kind, feed_server.url)

    def traffic() -> None:
        feed_server.wait_for_subscribers()
        feed_server.hit("/transactions/first", authorization="Bearer sk-very-secret")
        feed_server.hit("/api/second?token=abc123&page=2")

    try:
        events = await _take(client.sandbox.events(), 2, traffic)
    finally:
        await _close(client)
    assert all(isinstance(event, RequestEvent) for event in events)
    first, second = (event.data for event in events)
    assert (first.method, first.path, first.status_code) == ("GET", "/transactions/first", 404)
    assert first.headers["authorization"] == "****"
    assert "sk-very-secret" not in str(events)
    assert second.path == "/api/second?token=****&page=2"
    assert first.duration_ms is not None
    assert first.duration_ms >= 0
    assert int(str(events[0].id)) + 1 == int(str(events[1].id))
    # The feed never reports itself, and the request log holds what the feed showed.
    logged = feed_server.control("GET", "/_sandbox/requests").json()
    assert [entry["path"] for entry in logged] == [first.path, second.path]
    assert logged[0]["durationMs"] == first.duration_ms
    await _wait(lambda: feed_server.feed.subscribers == 0)


@sqlite_only
async def test_a_cut_stream_resumes_with_last_event_id_nothing_lost_or_repeated(
    kind: str, feed_server: FeedServer
) -> None:
    start = feed_server.feed.last_id
    paths = [f"/transactions/cut-{index}" for index in range(6)]
    for path in paths:
        feed_server.hit(path)
    fault = feed_server.control(
        "POST",
        "/_sandbox/faults",
        {"kind": "stream_cut", "route": "GET /_sandbox/events", "afterEvents": 2, "count": 2},
    ).json()
    assert (fault["kind"], fault["afterEvents"]) == ("stream_cut", 2)
    client = _client(kind, feed_server.url)
    delays: list[float] = []
    real_sleep = client._sleep

    def record(seconds: float) -> Any:
        delays.append(seconds)
        return real_sleep(seconds)

    client._sleep = record  # type: ignore[assignment]
    try:
        stream = client.sandbox.events(last_event_id=str(start))
        events = await _take(stream, 6)
    finally:
        await _close(client)
    assert [event.data.path for event in events] == paths
    ids = [int(str(event.id)) for event in events]
    assert ids == list(range(start + 1, start + 7))
    assert stream.reconnects == 2  # cut after events 2 and 4, each resumed where it stopped
    assert delays == [1.0, 1.0]  # the server's `retry: 1000`, not the SDK's default of 3 s
    faults = feed_server.control("GET", "/_sandbox/faults").json()
    assert faults[0]["remaining"] == 0


@sqlite_only
async def test_resuming_from_an_id_older_than_the_buffer_says_so(kind: str, feed_server: FeedServer) -> None:
    feed_server.hit("/transactions/kept")
    client = _client(kind, feed_server.url)
    try:
        events = await _take(client.sandbox.events(last_event_id="1"), 2)
    finally:
        await _close(client)
    gap, kept = events
    assert isinstance(gap, GapEvent)
    assert gap.data.last_event_id == "1"
    assert "no longer kept" in gap.data.message
    assert int(str(gap.id)) + 1 == int(str(kept.id))
    assert kept.data.path == "/transactions/kept"


@sqlite_only
async def test_filters_by_path_status_and_uid(kind: str, feed_server: FeedServer) -> None:
    client = _client(kind, feed_server.url)

    def traffic() -> None:
        feed_server.wait_for_subscribers()
        feed_server.hit("/api/skip-me")
        feed_server.hit("/transactions/other-uid")
        feed_server.hit("/transactions/wanted-uid")

    try:
        by_path = await _take(client.sandbox.events(path="/transactions/*-uid", uid="wanted"), 1, traffic)
        start = feed_server.feed.last_id - 3
        by_status = await _take(client.sandbox.events(status="4xx", last_event_id=str(start)), 3)
        none = feed_server.control("GET", "/_sandbox/events?status=4yy")
    finally:
        await _close(client)
    assert [event.data.path for event in by_path] == ["/transactions/wanted-uid"]
    assert [event.data.status_code for event in by_status] == [404, 404, 404]
    assert none.status_code == 409
    assert none.json()["details"][0]["field"] == "status"


@sqlite_only
async def test_an_idle_stream_outlives_the_clients_read_timeout(kind: str, feed_server: FeedServer) -> None:
    feed_server.feed.heartbeat = 60.0  # no byte at all while idle
    client = _client(kind, feed_server.url, timeout=httpx.Timeout(0.5, connect=5.0), total_timeout=1.0)

    def traffic() -> None:
        feed_server.wait_for_subscribers()
        time.sleep(1.5)  # three times the client's read timeout without a byte
        feed_server.hit("/transactions/late")

    try:
        stream = client.sandbox.events()
        events = await _take(stream, 1, traffic)
    finally:
        await _close(client)
    assert events[0].data.path == "/transactions/late"
    assert stream.reconnects == 0


@sqlite_only
async def test_heartbeat_comments_are_not_events(kind: str, feed_server: FeedServer) -> None:
    feed_server.feed.heartbeat = 0.05
    client = _client(kind, feed_server.url)

    def traffic() -> None:
        feed_server.wait_for_subscribers()
        time.sleep(0.5)  # about ten heartbeats first
        feed_server.hit("/transactions/after-heartbeats")

    try:
        events = await _take(client.sandbox.events(), 1, traffic)
    finally:
        await _close(client)
    assert [event.data.path for event in events] == ["/transactions/after-heartbeats"]
    # The comments were really on the wire: the raw stream shows them.
    seen = await asyncio.to_thread(_raw_until_heartbeat, feed_server.url + "/_sandbox/events")
    assert seen.startswith(b"retry: 1000\n\n")
    assert seen.endswith(b": heartbeat\n\n")


def _raw_until_heartbeat(url: str) -> bytes:
    received = b""
    with httpx.stream("GET", url, timeout=10) as response:
        for chunk in response.iter_raw():
            received += chunk
            if received.endswith(b": heartbeat\n\n"):
                return received
    return received


async def _wait(condition: Callable[[], bool], limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        gc.collect()
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


@sqlite_only
async def test_break_and_close_end_the_connection(kind: str, feed_server: FeedServer) -> None:
    client = _client(kind, feed_server.url)
    try:
        for index in range(2):
            feed_server.hit(f"/transactions/one-{index}")
        start = str(feed_server.feed.last_id - 2)
        if isinstance(client, paysdk.AsyncClient):
            async for _event in client.sandbox.events(last_event_id=start):
                assert feed_server.feed.subscribers == 1
                break
            await _wait(lambda: feed_server.feed.subscribers == 0)
            stream = client.sandbox.events(last_event_id=start)
            await stream.__anext__()
            await stream.aclose()
        else:
            for _event in client.sandbox.events(last_event_id=start):
                assert feed_server.feed.subscribers == 1
                break
            await _wait(lambda: feed_server.feed.subscribers == 0)
            sync_stream = client.sandbox.events(last_event_id=start)
            next(sync_stream)
            sync_stream.close()
        await _wait(lambda: feed_server.feed.subscribers == 0)
    finally:
        await _close(client)


# ------------------------------------------------------------------------ a scripted SSE server


@dataclass
class Script:
    """Per connection, what the scripted server does: ``(chunks, ending)`` with ending ``end`` (a
    clean end), ``cut`` (the socket aborted) or an HTTP status answered instead of a stream."""

    steps: list[tuple[list[bytes], str | int]]
    seen: list[dict[str, str]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        remember_connection(scope, receive)  # what the server's middleware does
        index = len(self.seen)
        self.seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        chunks, ending = self.steps[min(index, len(self.steps) - 1)]
        if isinstance(ending, int):
            body = b'{"ownCode": null, "message": "gone", "details": []}'
            await send(
                {
                    "type": "http.response.start",
                    "status": ending,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(0.01)
        if ending == "cut":
            assert abort_connection(scope)
            for _ in range(3):
                await asyncio.sleep(0)
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


@pytest.fixture
def scripted() -> Iterator[Callable[[Script], str]]:
    with contextlib.ExitStack() as servers:

        def start(script: Script) -> str:
            return servers.enter_context(_serve(script)).url

        yield start


class Tick(ServerSentEvent[dict[str, int]]):
    pass


def _raw_stream(client: paysdk.Client | paysdk.AsyncClient) -> Any:
    op = StreamOperation(Operation("GET", "/stream", no_result), {"tick": Tick})
    if isinstance(client, paysdk.AsyncClient):
        return AsyncEventStream(client, op)
    return EventStream(client, op)


async def _all(stream: Any) -> list[Any]:
    if isinstance(stream, AsyncEventStream):
        return [event async for event in stream]
    return await asyncio.to_thread(lambda: list(stream))


async def test_a_stream_that_ends_cleanly_is_not_reopened(
    kind: str, scripted: Callable[[Script], str]
) -> None:
    script = Script(
        [([b': hello\n\nid: 1\nevent: tick\ndata: {"n": 1}\n\n', b"event: other\ndata: x\n\n"], "end")]
    )
    client = _client(kind, scripted(script))
    try:
        events = await _all(_raw_stream(client))
    finally:
        await _close(client)
    assert [type(event) for event in events] == [Tick, UnknownEvent]
    assert (events[0].data, events[0].id, events[1].event, events[1].data) == ({"n": 1}, "1", "other", "x")
    assert len(script.seen) == 1


async def test_retry_is_honoured_and_a_4xx_on_reconnect_stops_with_api_error(
    kind: str, scripted: Callable[[Script], str]
) -> None:
    script = Script(
        [
            ([b"retry: 250\n\n", b'id: 7\nevent: tick\ndata: {"n": 7}\n\n'], "cut"),
            ([b'id: 7\nevent: tick\ndata: {"n": 7}\n\nid: 8\nevent: tick\ndata: {"n": 8}\n\n'], "cut"),
            ([], 404),
        ]
    )
    client = _client(kind, scripted(script))
    delays: list[float] = []
    real_sleep = client._sleep

    def record(seconds: float) -> Awaitable[None] | None:
        delays.append(seconds)
        return real_sleep(seconds)

    client._sleep = record  # type: ignore[assignment]
    events: list[Any] = []
    stream = _raw_stream(client)

    async def read_all() -> None:
        if isinstance(stream, AsyncEventStream):
            async for event in stream:
                events.append(event)
        else:
            await asyncio.to_thread(lambda: events.extend(stream))

    try:
        with pytest.raises(paysdk.NotFoundError):
            await read_all()
    finally:
        await _close(client)
    assert [event.data["n"] for event in events] == [7, 8]  # the repeated 7 was dropped (dedupe by id)
    assert [headers.get("last-event-id") for headers in script.seen] == [None, "7", "8"]
    assert delays == [0.25, 0.25]  # `retry: 250`, the first reconnect after events each time


@sqlite_only
def test_callback_attempts_and_job_runs_are_in_the_feed(feed_server: FeedServer, callback_sink: Any) -> None:
    start = feed_server.feed.last_id
    with paysdk.Client(environment=paysdk.Environment.local(feed_server.url)) as control:
        shop = control.sandbox.create_client(callback_url=callback_sink.url)
        with paysdk.Client(shop.sandbox_token, paysdk.Environment.local(feed_server.url)) as merchant:
            link = merchant.payment_links.create(
                amount=Decimal("10.00"), user_id="+502 5555 0123", channel="wa", client=shop.slug
            )
        control.sandbox.pay(
            link.uid, "4242424242424242"
        )  # the callback's first attempt runs before it answers
        stream = control.sandbox.events(last_event_id=str(start))
        events = [next(stream) for _ in range(3)]
        stream.close()
        by_uid = control.sandbox.events(uid=link.uid, last_event_id=str(start))
        mentioning = next(by_uid)
        by_uid.close()
    request, callback, job = events
    assert isinstance(request, RequestEvent)
    assert (request.data.method, request.data.path, request.data.status_code) == (
        "POST",
        "/transactions",
        200,
    )
    assert isinstance(callback, CallbackEvent)
    attempt = callback.data
    assert (attempt.uid, attempt.attempt, attempt.status_code, attempt.final) == (link.uid, 1, 200, True)
    assert isinstance(job, JobEvent)
    assert (job.data.kind, job.data.ref, job.data.outcome) == ("callback", attempt.event_id, "done")
    # The uid filter: the request that created the link does not name the uid; the callback attempt does.
    assert isinstance(mentioning, CallbackEvent)
    assert mentioning.id == callback.id


@sqlite_only
async def test_before_any_stream_the_feed_keeps_nothing(db_url: str) -> None:
    # No client can hold an id of this run before a stream opened, so the request path skips the feed.
    app = create_app(db_url, start_ticker=False)
    feed: EventFeed = app.state.paysdk.events
    start = feed.last_id
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            await client.get("/transactions/nobody-listens")
            assert (feed.listened, feed.last_id) == (False, start)
            with feed.subscription():
                pass
            await client.get("/transactions/someone-listened")
        assert feed.listened
        [event] = feed.after(start)
        assert (event.kind, event.data["path"]) == ("request", "/transactions/someone-listened")
    finally:
        app.state.paysdk.db.dispose()
