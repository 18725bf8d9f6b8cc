"""The server's event-stream answers, on sse-starlette's :class:`~sse_starlette.EventSourceResponse` (D600).

Every ``text/event-stream`` route (``GET /_sandbox/events``, a cardholder batch's progress) answers an
:class:`EventStream`: the route gives it the wire chunks (``retry:``, events as ``id``/``event``/``data``
blocks, already encoded: the wire format is the route's), and sse-starlette does the rest:

* **ping**: a ``: heartbeat`` comment every ``ping`` seconds (the server's setting, 15 s, D117, D188;
  tests shorten it), sent between events by sse-starlette's ping task (D601);
* **client disconnect**: sse-starlette watches ``receive`` for ``http.disconnect`` and cancels the
  stream, whose source then closes (its subscription ends: :attr:`StreamRegistry.open` drops);
* **cooperative shutdown**: every server, ``paysdk serve`` on SIGTERM or SIGINT as a server run from
  another thread (tests, embedding), is seen stopping by the :class:`StreamRegistry`'s one watcher per
  app (uvicorn tells each open request that it shuts down, :func:`~paysdk.server.adapters.uvicorn.
  shutdown_probe`), which stops the stream (D602). sse-starlette's own exit listener is overridden
  (:mod:`paysdk.server.adapters.sse_starlette`): its flag is process-wide and never reset (D604, D630).
  The connection is then dropped, not ended: a client reconnects with ``Last-Event-ID`` to another
  instance or after a restart, and ``paysdk serve`` stops at once with streams open.

A ``stream_cut`` fault (``cut_after``) drops the connection after that many events (``abort`` drops the
socket; in process there is none: ``cut_raises`` raises :class:`~paysdk.server.errors.ConnectionDropped`
as the ``drop`` fault does, else the stream ends cleanly).

sse-starlette is a dependency of the ``server`` extra only; this module is imported when a stream is
opened, not when the server starts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import anyio
from sse_starlette import ServerSentEvent
from starlette.types import Receive, Scope, Send

from paysdk.server.adapters.sse_starlette import ServerWatchedResponse
from paysdk.server.adapters.uvicorn import shutdown_probe

__all__ = ["SHUTDOWN_POLL", "EventStream", "StreamRegistry"]

#: Seconds between two looks of a :class:`StreamRegistry` at whether the server shuts down.
SHUTDOWN_POLL = 0.5
#: The state attribute of the app an :class:`EventStream` keeps its :class:`StreamRegistry` under.
_REGISTRY = "paysdk_event_streams"


def _heartbeat() -> ServerSentEvent:
    return ServerSentEvent(comment="heartbeat", sep="\n")


class StreamRegistry:
    """The open :class:`EventStream` answers of one app, and its one shutdown watcher (module docstring).

    The watcher runs while a stream is open: every :data:`SHUTDOWN_POLL` seconds it asks each stream's
    probe whether the server shuts down, and stops the streams it says so of."""

    def __init__(self) -> None:
        self._streams: dict[EventStream, tuple[Callable[[], bool], asyncio.AbstractEventLoop]] = {}
        self._watcher: asyncio.Task[None] | None = None

    @staticmethod
    def of(app: Any) -> StreamRegistry:
        """The registry of ``app`` (a Starlette app: kept in its ``state``), made on first use."""
        state = app.state
        registry = getattr(state, _REGISTRY, None)
        if registry is None:
            registry = StreamRegistry()
            setattr(state, _REGISTRY, registry)
        return registry

    @property
    def open(self) -> int:
        """How many streams are open."""
        return len(self._streams)

    def add(self, stream: EventStream, stopping: Callable[[], bool]) -> None:
        """Keep ``stream`` until :meth:`discard`; ``stopping`` says whether the server shuts down."""
        loop = asyncio.get_running_loop()
        self._streams[stream] = (stopping, loop)
        if self._watcher is None or self._watcher.done():
            self._watcher = loop.create_task(self._watch())

    def discard(self, stream: EventStream) -> None:
        """Forget ``stream`` (it ended)."""
        self._streams.pop(stream, None)

    async def _watch(self) -> None:
        here = asyncio.get_running_loop()
        while self._streams:
            await asyncio.sleep(SHUTDOWN_POLL)
            for stream, (stopping, loop) in list(self._streams.items()):
                if not stopping():
                    continue
                if loop is here:
                    stream.stop()
                else:  # an app served by several loops (threads): stopped on its own loop
                    with contextlib.suppress(RuntimeError):  # that loop is closed: the stream is gone
                        loop.call_soon_threadsafe(stream.stop)


class EventStream(ServerWatchedResponse):
    """A Server-Sent Events answer of ``chunks`` (module docstring). ``ping``: seconds between heartbeat
    comments; ``cut_after``: drop the connection after that many events; ``abort``: drop it (``False``
    when there is no socket, in process); ``cut_raises``: in process, a cut raises
    :class:`~paysdk.server.errors.ConnectionDropped` instead of ending the stream."""

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        *,
        ping: float,
        cut_after: int | None = None,
        abort: Callable[[], bool] | None = None,
        cut_raises: bool = False,
    ) -> None:
        self._shutdown = anyio.Event()
        self._cancel: anyio.CancelScope | None = None
        self._dropping = False
        self._aborted = False
        self.cut_after = cut_after
        self.abort = abort
        self.cut_raises = cut_raises
        super().__init__(
            chunks if cut_after is None else self._paced(chunks),  # no pass-through layer per chunk
            ping=ping,
            ping_message_factory=_heartbeat,
            shutdown_event=self._shutdown,
        )

    def stop(self) -> None:
        """Drop the connection: the server shuts down (called by the :class:`StreamRegistry`)."""
        self._dropping = True
        if self._cancel is not None:
            self._cancel.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope.get("app")
        registry = StreamRegistry.of(app) if app is not None else None
        with anyio.CancelScope() as cancel:
            self._cancel = cancel
            if registry is not None:
                registry.add(self, shutdown_probe(scope))
            try:
                await super().__call__(scope, receive, send)
            finally:
                if registry is not None:
                    registry.discard(self)
        if not self._aborted and (self._dropping or self._shutdown.is_set()):
            self._aborted = self.abort is not None and self.abort()
        if self._aborted:
            for _ in range(3):  # let the server see the connection lost: it sends nothing more
                await asyncio.sleep(0)

    async def _paced(self, chunks: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
        """``chunks`` as they come; one event block at a time while a cut is due, then the cut."""
        sent = 0
        async with contextlib.aclosing(chunks) as source:  # type: ignore[type-var]
            async for chunk in source:
                if self.cut_after is None:
                    yield chunk
                    continue
                for block in chunk.split(b"\n\n")[:-1]:
                    yield block + b"\n\n"
                    if block.startswith(b"id: "):
                        sent += 1
                    if sent >= self.cut_after:
                        await self._cut()
                        return

    async def _cut(self) -> None:
        if self._cancel is not None and self.abort is not None and self.abort():
            self._aborted = True
            self._cancel.cancel()  # the answer's tasks end here; the socket is already gone
            await anyio.sleep_forever()
        if self.cut_raises:
            from paysdk.server.errors import ConnectionDropped

            raise ConnectionDropped("event stream cut by an injected fault")
