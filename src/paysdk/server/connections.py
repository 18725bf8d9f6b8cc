"""How long a connection may wait for a request head under :func:`paysdk.server.serve` (D86).

uvicorn closes a keep-alive connection ``timeout_keep_alive`` seconds after an answer if no byte came
since, but a connection that never sends a request, or sends its head a byte now and then, stays open
for ever. :class:`HeadTimeoutProtocol` (uvicorn's h11 protocol plus one timer) closes a connection whose
request head is not complete ``head_timeout`` seconds after the connection opened or its last answer
finished, however many bytes trickled in meanwhile. Request bodies have their own bound
(:data:`paysdk.server.bodies.BODY_TIMEOUT`, ``408``).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HeadTimeoutProtocol", "protocol_with_head_timeout"]


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request head takes too long (module doc)."""

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
        super().connection_made(transport)
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
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
        super().connection_lost(exc)


def protocol_with_head_timeout(head_timeout: float) -> type[HeadTimeoutProtocol]:
    """:class:`HeadTimeoutProtocol` bound to ``head_timeout`` seconds, for ``uvicorn.run(http=...)``."""
    return type("HeadTimeoutProtocol", (HeadTimeoutProtocol,), {"head_timeout": float(head_timeout)})
