"""Run an ASGI app in process behind httpx transports, sync and async, with streamed answers.

:class:`ASGIPortal` owns one event loop on a background thread; the app only ever runs there, whatever
thread or event loop the caller is on. :meth:`ASGIPortal.transport` is an :class:`httpx.BaseTransport`
for the blocking :class:`paysdk.Client`, :meth:`ASGIPortal.async_transport` an
:class:`httpx.AsyncBaseTransport` for :class:`paysdk.AsyncClient`. Unlike :class:`httpx.ASGITransport`,
an answer is handed back as soon as the app sends its status and headers, and its body streams chunk by
chunk (server-sent events, downloads): the app keeps running while the caller reads. Closing the
answer early tells the app the client went away (``http.disconnect``) and cancels it.

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

    async def next_chunk(self) -> bytes:
        item = await self.chunks.get()
        if isinstance(item, BaseException):
            raise item
        return item

    async def close(self) -> None:
        self.disconnected.set()
        if not self.task.done():
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task


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

    async def _start(self, scope: dict[str, Any], body: bytes) -> _Exchange:
        return _Exchange(self.app, scope, body)

    async def _started(self, exchange: _Exchange) -> tuple[int, list[tuple[bytes, bytes]]]:
        return await exchange.started

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


class _SyncStream(httpx.SyncByteStream):
    def __init__(self, portal: ASGIPortal, exchange: _Exchange, timeout: float | None) -> None:
        self._portal = portal
        self._exchange = exchange
        self._timeout = timeout

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = self._portal.call(self._exchange.next_chunk(), self._timeout)
            except TimeoutError:
                raise httpx.ReadTimeout("no bytes of the answer within the read timeout") from None
            if chunk == _END:
                return
            yield chunk

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, concurrent.futures.TimeoutError):
            self._portal.call(self._exchange.close(), 10)


class _AsyncStream(httpx.AsyncByteStream):
    def __init__(self, portal: ASGIPortal, exchange: _Exchange, timeout: float | None) -> None:
        self._portal = portal
        self._exchange = exchange
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            future = asyncio.wrap_future(self._portal.submit(self._exchange.next_chunk()))
            try:
                chunk = await asyncio.wait_for(future, self._timeout)
            except TimeoutError:
                raise httpx.ReadTimeout("no bytes of the answer within the read timeout") from None
            if chunk == _END:
                return
            yield chunk

    async def aclose(self) -> None:
        with contextlib.suppress(RuntimeError):
            await asyncio.wrap_future(self._portal.submit(self._exchange.close()))


class _SyncPortalTransport(httpx.BaseTransport):
    def __init__(self, portal: ASGIPortal) -> None:
        self._portal = portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        timeout = _read_timeout(request)
        exchange = self._portal.call(self._portal._start(_scope(request), body))
        try:
            status, headers = self._portal.call(self._portal._started(exchange), timeout)
        except TimeoutError:
            self._portal.call(exchange.close())
            raise httpx.ReadTimeout("no answer within the read timeout", request=request) from None
        return httpx.Response(status, headers=headers, stream=_SyncStream(self._portal, exchange, timeout))


class _AsyncPortalTransport(httpx.AsyncBaseTransport):
    def __init__(self, portal: ASGIPortal) -> None:
        self._portal = portal

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        timeout = _read_timeout(request)
        exchange = await asyncio.wrap_future(self._portal.submit(self._portal._start(_scope(request), body)))
        try:
            status, headers = await asyncio.wait_for(
                asyncio.wrap_future(self._portal.submit(self._portal._started(exchange))), timeout
            )
        except TimeoutError:
            await asyncio.wrap_future(self._portal.submit(exchange.close()))
            raise httpx.ReadTimeout("no answer within the read timeout", request=request) from None
        return httpx.Response(status, headers=headers, stream=_AsyncStream(self._portal, exchange, timeout))
