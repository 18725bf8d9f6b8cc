"""Bounded answers and deadlines (decision D61), over a real socket against hostile raw servers.

Each test starts a tiny asyncio server in a thread that misbehaves on purpose: a huge declared
``Content-Length``, an endless chunked stream, a body or headers dribbled a byte at a time, a huge
``Retry-After``, or no answer at all. Time bounds are generous (a loaded 2-core machine): they tell
"bounded by the deadline" (a few seconds) from "unbounded" (minutes), not milliseconds.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

import paysdk
from paysdk._pipeline import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TOTAL_TIMEOUT,
    MAX_RETRY_AFTER,
    ClientConfig,
    Operation,
    no_result,
    retry_decision,
)

from .support import TOKEN

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
MiB = 1024 * 1024


class RawServer:
    """An asyncio TCP server in its own thread; ``closed`` counts connections whose peer went away."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.closed = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="raw-server")
        self._thread.start()
        assert self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await read_request(reader)
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.closed.set()
            writer.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        async def shutdown() -> None:
            self._server.close()
            handlers = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


async def read_request(reader: asyncio.StreamReader) -> None:
    """Read one request's head and body (Content-Length) off the socket."""
    head = await reader.readuntil(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            await reader.readexactly(int(value))


async def until_peer_closes(writer: asyncio.StreamWriter, chunk: bytes, pause: float = 0.0) -> None:
    """Write ``chunk`` again and again until the client closes the connection."""
    while True:
        writer.write(chunk)
        await writer.drain()
        if pause:
            await asyncio.sleep(pause)


@pytest.fixture
def raw_server() -> Iterator[Callable[[Handler], RawServer]]:
    started: list[RawServer] = []

    def start(handler: Handler) -> RawServer:
        server = RawServer(handler)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run(kind: str, url: str, call: Callable[[Any], Any], **options: Any) -> Any:
    """``call(client)`` with a sync or async client of ``url`` (its own pool: the SDK's defaults)."""
    environment = paysdk.Environment.local(url)
    if kind == "sync":
        with paysdk.Client(TOKEN, environment, **options) as client:
            return call(client)

    async def main() -> Any:
        async with paysdk.AsyncClient(TOKEN, environment, **options) as client:
            result = call(client)
            return await result if inspect.isawaitable(result) else result

    return asyncio.run(main())


def health(client: Any) -> Any:
    return client.sandbox.health()


def create_link(client: Any) -> Any:
    return client.payment_links.create(amount=Decimal("10"), user_id="+50255550123", channel="wa", client="s")


def timed(fn: Callable[[], Any]) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        fn()
    except BaseException as exc:  # the test inspects it
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


# ------------------------------------------------------------------------------------ answer size


def test_a_huge_declared_length_is_refused_before_the_body_is_read(kind: str, raw_server: Any) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        writer.write(b"Content-Length: 2000000000\r\n\r\n")
        await until_peer_closes(writer, b"0" * 65536)

    server = raw_server(handler)
    seconds, error = timed(lambda: run(kind, server.url, health, max_retries=0))
    assert isinstance(error, paysdk.ResponseTooLargeError)
    assert isinstance(error, paysdk.APIConnectionError)
    assert (error.limit, error.status_code, error.attempts) == (DEFAULT_MAX_RESPONSE_BYTES, 200, 1)
    assert f"larger than max_response_bytes ({DEFAULT_MAX_RESPONSE_BYTES})" in str(error)
    assert "connection closed" in str(error)
    assert seconds < 10
    assert server.closed.wait(10)  # the client hung up


@pytest.mark.parametrize("limit", [1 * MiB, None])
def test_an_endless_chunked_answer_stops_at_the_cap_and_memory_stays_bounded(
    kind: str, raw_server: Any, limit: int | None
) -> None:
    chunk = b"x" * 65536
    frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        writer.write(b"Transfer-Encoding: chunked\r\n\r\n")
        await until_peer_closes(writer, frame)

    server = raw_server(handler)
    options: dict[str, Any] = {"max_retries": 0}
    if limit is not None:
        options["max_response_bytes"] = limit
    cap = limit or DEFAULT_MAX_RESPONSE_BYTES
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        seconds, error = timed(lambda: run(kind, server.url, create_link, **options))
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert isinstance(error, paysdk.ResponseTooLargeError), error
    assert error.limit == cap
    assert "the request took effect" in str(error)  # a 2xx: the POST was processed
    # The chunks read (at most the cap plus one chunk) and their joining: never the endless stream.
    grew = f"client memory grew by {peak / MiB:.1f} MiB for a {cap / MiB:.0f} MiB cap"
    assert peak < 2 * cap + 4 * MiB, grew
    assert seconds < 30
    assert server.closed.wait(10)


def test_max_response_bytes_is_validated_and_shared_by_with_options() -> None:
    with pytest.raises(paysdk.ValidationError) as info:
        paysdk.Client(TOKEN, paysdk.Environment.local(), max_response_bytes=0)
    assert info.value.field == "max_response_bytes"
    with paysdk.Client(TOKEN, paysdk.Environment.local()) as client:
        assert client.max_response_bytes == 16 * MiB
        assert client.with_options(max_response_bytes=1024).max_response_bytes == 1024


def test_an_answer_within_the_cap_is_read_whole(kind: str, raw_server: Any) -> None:
    body = b'{"status": "ok", "environment": "sandbox", "database": "x", "now": "2026-01-01T00:00:00Z"}'

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        writer.write(f"Content-Length: {len(body)}\r\nX-Request-Id: r-1\r\n\r\n".encode() + body)
        await writer.drain()

    server = raw_server(handler)
    assert run(kind, server.url, health, max_response_bytes=len(body)).status == "ok"
    _, error = timed(lambda: run(kind, server.url, health, max_response_bytes=len(body) - 1))
    assert isinstance(error, paysdk.ResponseTooLargeError)


# ------------------------------------------------------------------------------------ deadlines


def test_a_body_dribbled_a_byte_at_a_time_ends_at_the_attempt_deadline(kind: str, raw_server: Any) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        writer.write(b"Content-Length: 100000\r\n\r\n")
        await until_peer_closes(writer, b" ", pause=0.1)

    server = raw_server(handler)
    seconds, error = timed(lambda: run(kind, server.url, health, timeout=1.0, max_retries=0))
    assert isinstance(error, paysdk.APITimeoutError), error
    assert "read timeout on GET /_sandbox/health" in str(error)
    assert 0.9 <= seconds < 8  # without the deadline: 10000 s, each byte well within the read timeout
    assert server.closed.wait(10)


def test_headers_dribbled_a_byte_at_a_time_end_at_the_attempt_deadline(kind: str, raw_server: Any) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        await until_peer_closes(writer, b"a", pause=0.1)

    server = raw_server(handler)
    seconds, error = timed(lambda: run(kind, server.url, create_link, timeout=1.0))
    assert isinstance(error, paysdk.APITimeoutError), error
    assert error.attempts == 3  # read timeouts of a keyed POST are retried (max_retries=2), each bounded
    assert error.outcome_unknown is True
    assert seconds < 15
    assert server.closed.wait(10)


def test_total_timeout_bounds_the_call_across_retries(kind: str, raw_server: Any) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(3600)  # never answers

    server = raw_server(handler)
    seconds, error = timed(
        lambda: run(kind, server.url, health, timeout=1.0, total_timeout=2.5, max_retries=10)
    )
    assert isinstance(error, paysdk.APITimeoutError), error
    assert 2 <= error.attempts <= 3
    assert seconds < 8  # ten retries of 1 s would take 11 s and more


def test_a_huge_retry_after_does_not_hold_create(kind: str, raw_server: Any) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        body = b'{"ownCode": null, "message": "Slow down.", "details": []}'
        writer.write(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1000000000\r\n")
        writer.write(b"Content-Type: application/json\r\n")
        writer.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()

    server = raw_server(handler)
    seconds, error = timed(lambda: run(kind, server.url, create_link))
    assert isinstance(error, paysdk.RateLimitError), error
    assert error.attempts == 1  # the capped wait (60 s) would pass total_timeout (60 s): raised at once
    assert error.headers["retry-after"] == "1000000000"
    assert seconds < 10
    assert server.connections == 1


# ------------------------------------------------------------------------------------ pure rules


def test_retry_waits_never_pass_the_total_timeout() -> None:
    op: Operation[Any] = Operation(method="GET", path="/x", parse=no_result)
    config = ClientConfig(environment=paysdk.Environment.local())
    slow = httpx.Response(503, headers={"Retry-After": "1000000000"})

    def decide(outcome: Any, remaining: float) -> tuple[bool, float]:
        decision = retry_decision(
            op, 1, outcome, config, None, rng=lambda: 0.0, now=lambda: 0.0, remaining=remaining
        )
        return decision.retry, decision.delay

    assert decide(slow, remaining=1000.0) == (True, MAX_RETRY_AFTER)  # capped
    assert decide(slow, remaining=59.0)[0] is False  # the capped wait would pass the deadline
    assert decide(httpx.ReadTimeout("t"), remaining=0.6) == (True, 0.5)
    assert decide(httpx.ReadTimeout("t"), remaining=0.5)[0] is False


def test_total_timeout_is_validated() -> None:
    env = paysdk.Environment.local()
    with paysdk.Client(TOKEN, env) as client:
        assert client.total_timeout == DEFAULT_TOTAL_TIMEOUT == 60.0
        assert client.with_options(total_timeout=120).total_timeout == 120.0
    bad_values: list[Any] = [0, -1, float("inf"), float("nan"), "60", True]
    for bad in bad_values:
        with pytest.raises(paysdk.ValidationError) as info:
            paysdk.Client(TOKEN, env, total_timeout=bad)
        assert info.value.field == "total_timeout"
    with pytest.raises(paysdk.ValidationError, match="shorter than one attempt's timeout"):
        paysdk.Client(TOKEN, env, timeout=120)
    assert paysdk.Client(TOKEN, env, timeout=120, total_timeout=300).total_timeout == 300.0
