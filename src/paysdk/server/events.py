"""The live feed of one server instance (``GET /_sandbox/events``) and event-stream answers.

:class:`EventFeed` (``context.events``) keeps the last :data:`FEED_CAPACITY` events in memory, each with
an id that only grows (decision D116): the id of the first event of a server run is the wall clock in
microseconds when it started, so ids of a later run are larger than those of an earlier one. It is fed
by a publish call where the request log entry is written (:mod:`paysdk.server.asgi.request_log`), where
callback attempts are recorded (:func:`publish_callback_attempts`) and where the scheduler runs a job
(:func:`publish_job_run`). Publishing costs a dict and a deque append; the data is serialized once, when
a subscriber first sends it.

:func:`feed_stream` answers a Server-Sent Events stream of the feed on sse-starlette
(:class:`paysdk.server.sse.EventStream`, D600): one ``http.response.body`` message per event (never
buffered), a heartbeat comment every :attr:`EventFeed.heartbeat` seconds (15 s, D117, D601); it ends
when the client disconnects, and drops the connection when the server shuts down (D602) or a
``stream_cut`` fault says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import re
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.responses import Response

from paysdk.server.core_tables import CallbackAttemptRow

if TYPE_CHECKING:
    from paysdk.server.context import ServerContext
    from paysdk.server.jobs import ClaimedJob

__all__ = [
    "FEED_CAPACITY",
    "HEARTBEAT_SECONDS",
    "RETRY_MS",
    "EventFeed",
    "FeedEvent",
    "FeedFilter",
    "encode_event",
    "feed_chunks",
    "feed_stream",
    "publish_callback_attempts",
    "publish_job_run",
]

#: Events kept in memory per server instance for ``Last-Event-ID`` resumption (D116).
FEED_CAPACITY = 1000
#: Seconds between heartbeat comments of an idle stream (D117).
HEARTBEAT_SECONDS = 15.0
#: The ``retry:`` every stream starts with: clients reconnect after a second.
RETRY_MS = 1000


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


@dataclass(slots=True)
class FeedEvent:
    """One event of the feed: ``id``, ``kind`` (the SSE event name) and ``data`` (JSON-ready, camelCase)."""

    id: int
    kind: str
    data: Mapping[str, Any]
    _payload: bytes | None = field(default=None, repr=False)

    @property
    def payload(self) -> bytes:
        """The data as compact JSON (made once)."""
        if self._payload is None:
            self._payload = json.dumps(self.data, default=_default, separators=(",", ":")).encode()
        return self._payload


def encode_event(event_id: int | str, kind: str, payload: bytes) -> bytes:
    """The wire form of one event (the JSON payload holds no line break)."""
    return b"id: %s\nevent: %s\ndata: %s\n\n" % (str(event_id).encode(), kind.encode(), payload)


@dataclass(slots=True, eq=False)
class _Waiter:
    loop: asyncio.AbstractEventLoop
    event: asyncio.Event


class EventFeed:
    """The bounded, in-memory feed of one server instance (module docstring). Thread-safe."""

    def __init__(self, capacity: int = FEED_CAPACITY, heartbeat: float = HEARTBEAT_SECONDS) -> None:
        self._lock = threading.Lock()
        self._events: deque[FeedEvent] = deque(maxlen=capacity)
        self._next = time.time_ns() // 1000
        self._waiters: set[_Waiter] = set()
        #: Seconds between heartbeat comments (tests shorten it).
        self.heartbeat = heartbeat
        #: Whether a stream was ever opened on this feed. Before that, nothing is kept: a new stream starts
        #: at the latest id and ids are this run's own, so no client could ask for an earlier event. The
        #: request path then skips the feed altogether (one flag read).
        self.listened = False

    @property
    def subscribers(self) -> int:
        """How many streams are open."""
        return len(self._waiters)

    @property
    def last_id(self) -> int:
        """The id of the last event published (one less than the first id before any)."""
        return self._next - 1

    def publish(self, kind: str, data: Mapping[str, Any]) -> FeedEvent | None:
        """Add an event and wake every open stream (``None``: no stream was ever opened, nothing kept)."""
        if not self.listened:
            return None
        with self._lock:
            event = FeedEvent(self._next, kind, data)
            self._next += 1
            self._events.append(event)
            waiters = list(self._waiters)
        for waiter in waiters:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is waiter.loop:
                waiter.event.set()
            else:
                with contextlib.suppress(RuntimeError):  # that loop is closed: its stream is gone
                    waiter.loop.call_soon_threadsafe(waiter.event.set)
        return event

    def after(self, last: int) -> list[FeedEvent]:
        """The kept events with an id above ``last``, oldest first."""
        with self._lock:
            if not self._events or self._events[-1].id <= last:
                return []
            return [event for event in self._events if event.id > last]

    def resume_point(self, header: str | None) -> tuple[int, dict[str, Any] | None]:
        """Where a stream starts: the id to send events after, and the ``gap`` data when events were
        lost (the id is older than what is kept, or not one of this feed's)."""
        with self._lock:
            latest = self._next - 1
            oldest = self._events[0].id if self._events else None
        if header is None or not header.strip():
            return latest, None
        text = header.strip()
        first_kept = oldest if oldest is not None else latest + 1
        if text.isascii() and text.isdigit():
            last = int(text)
            if first_kept - 1 <= last <= latest:
                return last, None
            reason = (
                "events after it are no longer kept" if last < first_kept - 1 else "this server never sent it"
            )
        else:
            reason = "it is not an id of this feed"
        start = first_kept - 1
        gap = {
            "lastEventId": text[:64],
            "oldestId": None if oldest is None else str(oldest),
            "message": f"cannot resume after {text[:64]!r}: {reason}; the feed goes on from here",
            "_id": start,
        }
        return start, gap

    def clear(self) -> None:
        """Drop the kept events (``/_sandbox/reset``): ids go on growing, so a stream resuming after an
        event from before the reset gets a ``gap``; open streams carry on with the events that follow."""
        with self._lock:
            self._events.clear()

    @contextlib.contextmanager
    def subscription(self) -> Any:
        """An :class:`asyncio.Event` set whenever an event is published, while the block runs."""
        waiter = _Waiter(asyncio.get_running_loop(), asyncio.Event())
        self.listened = True
        with self._lock:
            self._waiters.add(waiter)
        try:
            yield waiter.event
        finally:
            with self._lock:
                self._waiters.discard(waiter)


_STATUS = re.compile(r"[1-5](xx|\d\d)")


@dataclass(frozen=True, slots=True)
class FeedFilter:
    """Query filters of the feed: ``path`` (prefix, or glob with ``*``/``?``/``[``), ``status`` (``4xx``,
    ``500``, a comma list), ``uid`` (anywhere in the event's data). ``gap`` events always pass.
    Events without a path (callbacks, jobs) do not pass a ``path`` filter; jobs do not pass ``status``."""

    path: str | None = None
    status: tuple[str, ...] = ()
    uid: str | None = None

    @staticmethod
    def parse_status(text: str | None) -> tuple[str, ...] | None:
        """The status patterns of ``text``, ``None`` when one is malformed."""
        if text is None or not text.strip():
            return ()
        parts = tuple(part.strip().lower() for part in text.split(","))
        if not all(_STATUS.fullmatch(part) for part in parts):
            return None
        return parts

    def _status_ok(self, code: Any) -> bool:
        if not isinstance(code, int):
            return False
        text = str(code)
        return any(
            text == pattern or (pattern.endswith("xx") and text[0] == pattern[0]) for pattern in self.status
        )

    def accepts(self, event: FeedEvent) -> bool:
        if event.kind == "gap":
            return True
        data = event.data
        if self.path is not None:
            path = str(data.get("path", "")).partition("?")[0] if event.kind == "request" else None
            if path is None:
                return False
            if any(char in self.path for char in "*?["):
                if not fnmatch.fnmatchcase(path, self.path):
                    return False
            elif not path.startswith(self.path):
                return False
        if self.status and not self._status_ok(data.get("statusCode")):
            return False
        return not (self.uid is not None and self.uid.encode() not in event.payload)


def feed_stream(
    feed: EventFeed,
    feed_filter: FeedFilter,
    last_event_id: str | None,
    *,
    cut_after: int | None = None,
    abort: Callable[[], bool] | None = None,
) -> Response:
    """A Server-Sent Events answer from the feed (module docstring): an
    :class:`~paysdk.server.sse.EventStream` of :func:`feed_chunks`, a heartbeat every
    :attr:`EventFeed.heartbeat` seconds. ``cut_after``: drop the connection after that many events (the
    ``stream_cut`` fault); ``abort``: how to drop it (returns ``False`` when there is no socket to abort,
    in process: then :class:`~paysdk.server.errors.ConnectionDropped` is raised)."""
    from paysdk.server.sse import EventStream

    return EventStream(
        feed_chunks(feed, feed_filter, last_event_id),
        ping=feed.heartbeat,
        cut_after=cut_after,
        abort=abort,
        cut_raises=True,
    )


async def feed_chunks(
    feed: EventFeed, feed_filter: FeedFilter, last_event_id: str | None
) -> AsyncGenerator[bytes, None]:
    """The wire chunks of a feed stream: ``retry``, a ``gap`` event when ``last_event_id`` cannot be
    resumed, the kept events after it, then each new event that passes ``feed_filter`` as it comes (one
    chunk each). Subscribed to the feed while it runs (:attr:`EventFeed.subscribers`)."""
    with feed.subscription() as woken:
        last, gap = feed.resume_point(last_event_id)
        yield b"retry: %d\n\n" % RETRY_MS
        if gap is not None:
            start = gap.pop("_id")
            yield encode_event(start, "gap", json.dumps(gap).encode())
        while True:
            woken.clear()
            for event in feed.after(last):
                last = event.id
                if feed_filter.accepts(event):
                    yield encode_event(event.id, event.kind, event.payload)
            await woken.wait()


# ------------------------------------------------------------------------------------- publishers


def _attempts_of(session: Session, event_id: str, count: int) -> list[dict[str, Any]]:
    from paysdk.server.asgi.request_log import mask_query

    rows = list(
        session.scalars(
            select(CallbackAttemptRow)
            .where(CallbackAttemptRow.event_id == event_id)
            .order_by(CallbackAttemptRow.id.desc())
            .limit(count)
        )
    )
    return [
        {
            "eventId": row.event_id,
            "uid": row.uid,
            "attempt": row.attempt,
            "url": mask_query(row.url),
            "statusCode": row.status_code,
            "error": row.error,
            "at": row.at,
            "nextAttemptAt": row.next_attempt_at,
            "final": row.final,
        }
        for row in reversed(rows)
    ]


def publish_callback_attempts(context: ServerContext, session: Session, event_id: str, count: int) -> None:
    """Publish the last ``count`` recorded attempts of callback event ``event_id`` (``callback`` events),
    from the transaction that records them. Never raises: the feed must not break a delivery."""
    if not context.events.listened:
        return
    try:
        for data in _attempts_of(session, event_id, count):
            context.events.publish("callback", data)
    except Exception:  # pragma: no cover - a database error is the delivery's to report
        return


def publish_job_run(
    context: ServerContext, job: ClaimedJob, outcome: str, started: float | None = None
) -> None:
    """Publish a ``job`` event: ``job`` ran with ``outcome`` (``done``, ``failed``, ``taken_over``)."""
    if not context.events.listened:
        return
    data: dict[str, Any] = {
        "jobId": job.id,
        "kind": job.kind,
        "ref": job.ref,
        "dueAt": job.due_at,
        "outcome": outcome,
    }
    if started is not None:
        data["durationMs"] = round((time.monotonic() - started) * 1000)
    context.events.publish("job", data)
