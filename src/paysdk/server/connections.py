"""How long a connection may wait for a request head under :func:`paysdk.server.serve` (D86).

uvicorn closes a keep-alive connection ``timeout_keep_alive`` seconds after an answer if no byte came
since, but a connection that never sends a request, or sends its head a byte now and then, stays open
for ever. :class:`HeadTimeoutProtocol` (uvicorn's h11 protocol plus one timer) closes a connection whose
request head is not complete ``head_timeout`` seconds after the connection opened or its last answer
finished, however many bytes trickled in meanwhile. Request bodies have their own bound
(:data:`paysdk.server.bodies.BODY_TIMEOUT`, ``408``).

**Lingering close.** A ``413`` or ``408`` is answered while the client is still sending its body, and the
answer closes the connection. Closing a socket with unread bytes in its receive buffer makes the kernel
send a reset, and a reset that reaches the client before it read the answer discards the answer from
the client's buffer: the client sees ``connection reset`` instead of the ``413`` (seen under load). So,
as nginx's ``lingering_close`` does, when the server closes a connection whose request body is still
arriving it first shuts down its sending side (the client reads the answer, then end of file), reads
and discards what still comes, and closes when the client closes (uvicorn's ``eof_received`` lets the
transport close), when nothing came for :data:`LINGER_IDLE_SECONDS`, or after :data:`LINGER_SECONDS` in
all (nginx's ``lingering_timeout`` and ``lingering_time``). A client still sending its body keeps the
linger alive, so a slow client on a loaded machine reads its answer instead of a reset (a fixed 2 s linger
lost a ``413`` on a loaded CI machine).
"""

from __future__ import annotations

import asyncio
import math
import weakref
from typing import Any

import h11

from paysdk.server.adapters.uvicorn import H11Protocol, keep_connection_in_scope

#: Seconds an idle connection stays open under ``paysdk serve`` (uvicorn's ``timeout_keep_alive``, D86).
KEEP_ALIVE_TIMEOUT = 5.0
#: Seconds open answers may go on once ``paysdk serve`` is asked to stop; then they are cancelled. Open
#: event streams end within a :data:`paysdk.server.sse.SHUTDOWN_POLL` (0.5 s) of the signal on an idle
#: machine; the margin is for a loaded one, where 2 s were seen to run out (D615). A stop waits no longer
#: than its answers take.
STREAMS_SHUTDOWN_TIMEOUT = 10

__all__ = [
    "KEEP_ALIVE_TIMEOUT",
    "LINGER_IDLE_SECONDS",
    "LINGER_SECONDS",
    "STREAMS_SHUTDOWN_TIMEOUT",
    "HeadTimeoutProtocol",
    "protocol_with_head_timeout",
    "uvicorn_connection_options",
]

#: The longest a closed connection whose request body was still arriving keeps reading (module doc).
LINGER_SECONDS = 30.0
#: ... and how long it waits for the next bytes before it closes (module doc).
LINGER_IDLE_SECONDS = 5.0


class _LingeringTransport:
    """The connection's transport as uvicorn sees it: every call goes to the real one, except a
    ``close()`` while the request body is still arriving, which lingers (module doc)."""

    def __init__(self, real: asyncio.Transport, protocol: HeadTimeoutProtocol) -> None:
        self._real = real
        # Weakly: the protocol holds this transport, and the real transport holds the protocol while the
        # connection lives; a strong reference back would keep the protocol and its last request cycle
        # for the garbage collector after the connection closed (D769).
        self._protocol = weakref.proxy(protocol)
        self.lingering = False
        self._idle_timer: asyncio.TimerHandle | None = None
        self._deadline = 0.0

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)

    def is_closing(self) -> bool:
        return self.lingering or self._real.is_closing()

    def close(self) -> None:
        if (
            self.lingering
            or self._real.is_closing()
            or self._protocol.conn.their_state is not h11.SEND_BODY
            or not self._real.can_write_eof()
        ):
            self._real.close()
            return
        self.lingering = True
        self._real.write_eof()  # the answer, then end of file: nothing the client reads is lost
        self._real.resume_reading()
        loop = self._protocol.loop
        self._deadline = loop.time() + LINGER_SECONDS
        self._idle_timer = loop.call_later(LINGER_IDLE_SECONDS, self._real.close)

    def drained(self) -> None:
        """Bytes came while lingering: wait for more, up to :data:`LINGER_SECONDS` in all."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        loop = self._protocol.loop
        wait = min(LINGER_IDLE_SECONDS, self._deadline - loop.time())
        self._idle_timer = loop.call_later(max(wait, 0.0), self._real.close)

    def stop_lingering(self) -> None:
        """The connection is gone: no timer left behind."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request head takes too long (module doc).
    uvicorn's protocol class and the parts of it used here are named in
    :mod:`paysdk.server.adapters.uvicorn` (D530)."""

    #: Seconds (see :func:`protocol_with_head_timeout`).
    head_timeout = 5.0
    _head_timer: asyncio.TimerHandle | None = None

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        keep_connection_in_scope(self)  # the drop fault and event streams reach the request cycle (D531)
        self._lingering_transport = _LingeringTransport(transport, self)
        super().connection_made(self._lingering_transport)  # type: ignore[arg-type]
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        if self._lingering_transport.lingering:
            self._lingering_transport.drained()  # the rest of a body the answer refused: dropped (module doc)
            return
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is complete: the request is running
            self._disarm_head_timer()
        elif self._head_timer is None:  # a body the app left unread has ended: the next head is due
            self._arm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._head_timer is None:  # waiting for the next request head from now on
            self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        self._lingering_transport.stop_lingering()
        super().connection_lost(exc)


def protocol_with_head_timeout(head_timeout: float) -> type[HeadTimeoutProtocol]:
    """:class:`HeadTimeoutProtocol` bound to ``head_timeout`` seconds, for ``uvicorn.run(http=...)``."""
    return type("HeadTimeoutProtocol", (HeadTimeoutProtocol,), {"head_timeout": float(head_timeout)})


def uvicorn_connection_options(keep_alive_timeout: float) -> dict[str, Any]:
    """The connection settings of :func:`paysdk.server.serve` as ``uvicorn.run``/``uvicorn.Config``
    keyword arguments: the head timeout and the lingering close of :class:`HeadTimeoutProtocol`, and
    uvicorn's own keep-alive timer in whole seconds (the head timer closes at the exact value). Every
    uvicorn that serves the app (``paysdk serve``, ``paysdk.testing.SandboxServer``, the test suite's
    socket servers) uses them, so a ``413`` answered while the body still arrives reaches the client."""
    return {
        "timeout_keep_alive": max(1, math.ceil(keep_alive_timeout)),
        "http": protocol_with_head_timeout(keep_alive_timeout),
    }
