"""Run an ASGI app in process behind httpx transports, sync and async, with streamed answers.

:class:`ASGIPortal` owns one event loop on a background thread; the app only ever runs there, whatever
thread or event loop the caller is on. :meth:`ASGIPortal.transport` is an :class:`httpx.BaseTransport`
for the blocking :class:`paysdk.Client`, :meth:`ASGIPortal.async_transport` an
:class:`httpx.AsyncBaseTransport` for :class:`paysdk.AsyncClient`. Unlike :class:`httpx.ASGITransport`,
an answer is handed back as soon as the app sends its status and headers, and its body streams chunk by
chunk (server-sent events, downloads): the app keeps running while the caller reads. Closing the
answer early tells the app the client went away (``http.disconnect``) and cancels it.

A request crosses to the portal's thread once to start and once per wait for more body: the status,
the headers and whatever body the app has sent by then come back together, and a body read to its end
by an app that has returned needs no further crossing to close (each crossing is a thread switch, the
bulk of a small request's cost in a test suite).

Only the SDK and the standard library are imported here: the app is whatever the caller passes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from typing import Any, TypeVar

import httpx

__all__ = ["ASGIPortal"]

T = TypeVar("T")

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]

#: Marks the end of a body in the chunk queue.
_END = b""


class _Exchange:
    """One request running in the app, on the portal's loop."""

    def __init__(self, app: ASGIApp, scope: dict[str, Any], body: bytes) -> None:
        self.app = app
        self.scope = scope
        self.body = body
        self.started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = (
            asyncio.get_running_loop().create_future()
        )
        self.chunks: asyncio.Queue[bytes | BaseException] = asyncio.Queue()
        self.disconnected = asyncio.Event()
        self._body_sent = False
        self.task = asyncio.ensure_future(self._run())

    async def _receive(self) -> dict[str, Any]:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.disconnected.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", [])]
            if not self.started.done():
                self.started.set_result((int(message["status"]), headers))
        elif message["type"] == "http.response.body":
            chunk = bytes(message.get("body", b""))
            if chunk:
                self.chunks.put_nowait(chunk)
            if not message.get("more_body", False):
                self.chunks.put_nowait(_END)

    async def _run(self) -> None:
        try:
            await self.app(self.scope, self._receive, self._send)
        except BaseException as exc:
            if not self.started.done():
                self.started.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            self.chunks.put_nowait(exc if isinstance(exc, Exception) else httpx.ReadError("cancelled"))
            if not isinstance(exc, Exception):
                raise
        else:
            if not self.started.done():
                self.started.set_exception(RuntimeError("the app returned without sending an answer"))
            self.chunks.put_nowait(_END)

    async def next_chunks(self) -> list[bytes | BaseException]:
        """Wait for the body's next item, then take every item already queued (see :meth:`ready`)."""
        return [await self.chunks.get(), *self.ready()]

    def ready(self) -> list[bytes | BaseException]:
        """The items queued now, up to the end of the body or an error (both included)."""
        items: list[bytes | BaseException] = []
        while not self.chunks.empty() and not (items and _last(items)):
            items.append(self.chunks.get_nowait())
        return items

    async def begin(
        self, within: float | None
    ) -> tuple[int, list[tuple[bytes, bytes]], list[bytes | BaseException]]:
        """Wait up to ``within`` seconds (``None``: no limit) for the status and headers; with them, the
        body items queued by then. On ``TimeoutError`` the request is closed first."""
        try:
            status, headers = await asyncio.wait_for(asyncio.shield(self.started), within)
        except TimeoutError:
            await self.close()
            raise
        return status, headers, self.ready()

    @property
    def finished(self) -> bool:
        """The app has returned (read from any thread: closing then has nothing to cancel)."""
        return self.task.done()

    async def close(self) -> None:
        self.disconnected.set()
        if not self.task.done():
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task


def _last(items: list[bytes | BaseException]) -> bool:
    """The body's last item is among ``items`` (its end or an error)."""
    return isinstance(items[-1], BaseException) or items[-1] == _END


def _scope(request: httpx.Request) -> dict[str, Any]:
    url = request.url
    port = url.port or (443 if url.scheme == "https" else 80)
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "headers": [(k.lower(), v) for k, v in request.headers.raw],
        "scheme": url.scheme,
        "path": url.path,
        "raw_path": url.raw_path.split(b"?")[0],
        "query_string": url.query,
        "server": (url.host, port),
        "client": ("127.0.0.1", 50000),
        "root_path": "",
        "extensions": {},
    }


def _read_timeout(request: httpx.Request) -> float | None:
    timeout = request.extensions.get("timeout") or {}
    value = timeout.get("read")
    return float(value) if value is not None else None


class ASGIPortal:
    """An ASGI app served in process on a background event loop (see the module docstring).

    ``with ASGIPortal(app) as portal: client = paysdk.Client(token, env, transport=portal.transport())``.
    :meth:`close` stops the loop; answers still open are cancelled.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="paysdk-asgi-portal", daemon=True)
        self._thread.start()
        self._closed = False

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def __enter__(self) -> ASGIPortal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the app runs on."""
        return self._loop

    def submit(self, coroutine: Awaitable[T]) -> concurrent.futures.Future[T]:
        """Run ``coroutine`` on the portal's loop; a future of its result."""
        if self._closed:
            raise RuntimeError("the ASGI portal is closed")

        async def run() -> T:
            return await coroutine

        return asyncio.run_coroutine_threadsafe(run(), self._loop)

    def call(self, coroutine: Awaitable[T], timeout: float | None = None) -> T:
        """Run ``coroutine`` on the portal's loop and wait for its result (from any other thread)."""
        return self.submit(coroutine).result(timeout)

    def transport(self) -> httpx.BaseTransport:
        """A transport for :class:`httpx.Client` / :class:`paysdk.Client` (blocking)."""
        return _SyncPortalTransport(self)

    def async_transport(self) -> httpx.AsyncBaseTransport:
        """A transport for :class:`httpx.AsyncClient` / :class:`paysdk.AsyncClient` (any event loop)."""
        return _AsyncPortalTransport(self)

    async def _begin(
        self, scope: dict[str, Any], body: bytes, within: float | None
    ) -> tuple[_Exchange, int, list[tuple[bytes, bytes]], list[bytes | BaseException]]:
        """Start a request and wait for its answer's start (:meth:`_Exchange.begin`), in one crossing."""
        exchange = _Exchange(self.app, scope, body)
        status, headers, ready = await exchange.begin(within)
        return exchange, status, headers, ready

    def close(self) -> None:
        """Stop the loop (pending work is cancelled) and join its thread."""
        if self._closed:
            return
        self._closed = True

        async def cancel_all() -> None:
            current = asyncio.current_task()
            tasks = [task for task in asyncio.all_tasks() if task is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(cancel_all(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()


class _Body:
    """The body items a stream holds, taken from the exchange a batch at a time."""

    def __init__(self, ready: list[bytes | BaseException]) -> None:
        self.items = ready
        self.ended = False

    def chunks(self) -> Iterator[bytes]:
        """The held chunks, in order, until the end (``ended``) or an error (raised)."""
        while self.items:
            item = self.items.pop(0)
            if isinstance(item, BaseException):
                self.ended = True
                raise item
            if item == _END:
                self.ended = True
                return
            yield item


class _SyncStream(httpx.SyncByteStream):
    def __init__(
        self,
        portal: ASGIPortal,
        exchange: _Exchange,
        timeout: float | None,
        ready: list[bytes | BaseException],
    ) -> None:
        self._portal = portal
        self._exchange = exchange
        self._timeout = timeout
        self._body = _Body(ready)

    def __iter__(self) -> Iterator[bytes]:
        while True:
            yield from self._body.chunks()
            if self._body.ended:
                return
            try:
                self._body.items = self._portal.call(self._exchange.next_chunks(), self._timeout)
            except TimeoutError:
                raise httpx.ReadTimeout("no bytes of the answer within the read timeout") from None

    def close(self) -> None:
        if self._body.ended and self._exchange.finished:
            return  # read to its end, the app returned: nothing to tell it, nothing to cancel
        with contextlib.suppress(RuntimeError, concurrent.futures.TimeoutError):
            self._portal.call(self._exchange.close(), 10)


class _AsyncStream(httpx.AsyncByteStream):
    def __init__(
        self,
        portal: ASGIPortal,
        exchange: _Exchange,
        timeout: float | None,
        ready: list[bytes | BaseException],
    ) -> None:
        self._portal = portal
        self._exchange = exchange
        self._timeout = timeout
        self._body = _Body(ready)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            for chunk in self._body.chunks():
                yield chunk
            if self._body.ended:
                return
            future = asyncio.wrap_future(self._portal.submit(self._exchange.next_chunks()))
            try:
                self._body.items = await asyncio.wait_for(future, self._timeout)
            except TimeoutError:
                raise httpx.ReadTimeout("no bytes of the answer within the read timeout") from None

    async def aclose(self) -> None:
        if self._body.ended and self._exchange.finished:
            return
        with contextlib.suppress(RuntimeError):
            await asyncio.wrap_future(self._portal.submit(self._exchange.close()))


class _SyncPortalTransport(httpx.BaseTransport):
    def __init__(self, portal: ASGIPortal) -> None:
        self._portal = portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        timeout = _read_timeout(request)
        try:
            exchange, status, headers, ready = self._portal.call(
                self._portal._begin(_scope(request), body, timeout)
            )
        except TimeoutError:
            raise httpx.ReadTimeout("no answer within the read timeout", request=request) from None
        stream = _SyncStream(self._portal, exchange, timeout, ready)
        return httpx.Response(status, headers=headers, stream=stream)


class _AsyncPortalTransport(httpx.AsyncBaseTransport):
    def __init__(self, portal: ASGIPortal) -> None:
        self._portal = portal

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        timeout = _read_timeout(request)
        begin = self._portal._begin(_scope(request), body, timeout)
        try:
            exchange, status, headers, ready = await asyncio.wrap_future(self._portal.submit(begin))
        except TimeoutError:
            raise httpx.ReadTimeout("no answer within the read timeout", request=request) from None
        stream = _AsyncStream(self._portal, exchange, timeout, ready)
        return httpx.Response(status, headers=headers, stream=stream)
