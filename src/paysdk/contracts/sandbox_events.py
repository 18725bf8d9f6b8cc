"""The live feed of the reference server, ``GET /_sandbox/events`` (Server-Sent Events, decision D115).

Every event has an ``id`` (a decimal integer, increasing), a name and JSON data:

* ``request``: a public request ended (its answer was sent, a stream included), data
  :class:`~paysdk.contracts.sandbox.RequestLogEntry` exactly as the request log stores it (D95 masking);
* ``callback``: a merchant callback delivery attempt, data :class:`~paysdk.contracts.sandbox.CallbackAttempt`;
* ``job``: the scheduler ran a job, data :class:`JobRun`;
* ``gap``: events were lost between the ``Last-Event-ID`` a client resumed from and what the server
  still keeps (D116), data :class:`FeedGap`; its ``id`` is the one just before the oldest kept event.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from paysdk._sse import ServerSentEvent
from paysdk.contracts.common import WireModel
from paysdk.contracts.sandbox import CallbackAttempt, RequestLogEntry

__all__ = [
    "EVENT_TYPES",
    "CallbackEvent",
    "FeedGap",
    "GapEvent",
    "JobEvent",
    "JobRun",
    "RequestEvent",
    "SandboxEvent",
]


class JobRun(WireModel):
    """A job the scheduler ran: ``job_id`` (``None`` for a transaction expiry, which has no job row),
    ``kind`` (``callback``, ``expire``, ...), ``ref`` (what it is about: an event id, a transaction uid),
    ``due_at`` (virtual time), ``outcome`` (``done``, ``failed`` or ``taken_over``) and ``duration_ms``
    when measured."""

    job_id: int | None = None
    kind: str
    ref: str
    due_at: datetime
    outcome: str
    duration_ms: int | None = None


class FeedGap(WireModel):
    """Events after ``last_event_id`` are no longer kept (or the id is not one of this server's): the
    feed goes on from ``oldest_id`` (``None``: nothing kept yet)."""

    last_event_id: str
    oldest_id: str | None = None
    message: str


class RequestEvent(ServerSentEvent[RequestLogEntry]):
    """``request``: a public request ended."""

    event: Literal["request"] = "request"


class CallbackEvent(ServerSentEvent[CallbackAttempt]):
    """``callback``: a callback delivery attempt was recorded."""

    event: Literal["callback"] = "callback"


class JobEvent(ServerSentEvent[JobRun]):
    """``job``: the scheduler ran a job."""

    event: Literal["job"] = "job"


class GapEvent(ServerSentEvent[FeedGap]):
    """``gap``: events were lost before this one (see :class:`FeedGap`)."""

    event: Literal["gap"] = "gap"


#: Event name -> model, for :class:`paysdk._sse.StreamOperation`.
EVENT_TYPES: dict[str, type[ServerSentEvent[Any]]] = {
    "request": RequestEvent,
    "callback": CallbackEvent,
    "job": JobEvent,
    "gap": GapEvent,
}

#: What ``client.sandbox.events()`` yields (an :class:`~paysdk._sse.UnknownEvent` for a newer name).
SandboxEvent = RequestEvent | CallbackEvent | JobEvent | GapEvent | ServerSentEvent[Any]
