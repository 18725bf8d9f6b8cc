"""Server-Sent Events, as pure functions: the wire format, the reconnect policy, typed events.

Nothing here does I/O, sleeps, or reads the clock or a random source. The shells
(:class:`paysdk._streaming.AsyncEventStream` and the generated ``EventStream``) only loop::

    progress = StreamProgress(last_event_id=...)
    while True:
        request = stream_request(op, config, progress)         # Accept, Last-Event-ID, no read timeout
        outcome = send(request)                                 # an httpx.Response or a RequestError
        if answer_problem(outcome) is None:                     # 2xx text/event-stream
            decoder = EventDecoder(max_event_bytes)
            for chunk in the answer:                            # until it ends or the connection drops
                for block in decoder.feed(chunk):
                    event = progress.accept(block)              # id, retry, dedupe; None: nothing to yield
                    if event is not None: yield parse_event(op, event)
        decision = reconnect_decision(outcome, progress, policy, rng=...)
        if not decision.reconnect: return or raise final_error(...)
        sleep(decision.delay)

The wire format follows the WHATWG HTML standard's "event stream interpretation": lines end with CRLF,
LF or CR; a line starting with ``:`` is a comment (ignored, e.g. heartbeats); ``event``, ``data``, ``id``
(ignored when it holds NUL) and ``retry`` (ASCII digits only: the reconnection time in milliseconds)
fields; a blank line dispatches the event, and an event whose data buffer is empty is not dispatched
(its ``id`` still becomes the stream's last event id); an event cut off by the end of the stream is
discarded. httpx-sse is not used; ``docs/architecture.md`` ("Event streams") says why.

Reconnect policy (:func:`reconnect_decision`): a stream that ends cleanly is not reopened. A dropped
connection (reset, incomplete chunked read, read error, a read timeout the caller asked for) is reopened
with ``Last-Event-ID``: the first time after the server's ``retry:`` (or :data:`DEFAULT_RETRY`), then with
exponential backoff (``retry * 2**n``, capped at :data:`MAX_RECONNECT_DELAY`, minus up to 25 % jitter);
``Retry-After`` of a 429/503 is honoured up to :data:`MAX_RETRY_AFTER`. ``policy.max_reconnects``
counts consecutive failed attempts (an attempt that delivers an event resets it); before the stream was
first opened the client's ``max_retries`` and backoff (0.5 s, 1 s, ...) apply instead, as for any call,
so a server that is not running fails fast.
A 4xx answer (other than 408/429) stops with the usual :class:`~paysdk.APIError`; a 2xx that is not an
event stream with :class:`~paysdk.UnexpectedResponseError`. Events whose own ``id`` was already seen
(the last :data:`SEEN_IDS` ids) are dropped: the server resumes after ``Last-Event-ID``, this is the
safety net.
"""

from __future__ import annotations

import codecs
import dataclasses
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeAlias, TypeVar

import httpx
import pydantic

from paysdk import _json
from paysdk._credentials import CredentialValue
from paysdk._errors import APIError, PaySDKError, ResponseTooLargeError
from paysdk._pipeline import (
    MAX_RETRY_AFTER,
    ClientConfig,
    Operation,
    backoff_delay,
    build_request,
    error_from_exception,
    error_from_response,
    parse_retry_after,
    unexpected_response,
)

__all__ = [
    "DEFAULT_MAX_RECONNECTS",
    "DEFAULT_RETRY",
    "MAX_RECONNECT_DELAY",
    "Block",
    "EventDecoder",
    "EventTooLarge",
    "ReconnectDecision",
    "ServerSentEvent",
    "StreamEnded",
    "StreamOperation",
    "StreamPolicy",
    "StreamProgress",
    "UnknownEvent",
    "answer_problem",
    "final_error",
    "parse_event",
    "reconnect_decision",
    "stream_request",
    "stream_timeout",
]

D = TypeVar("D")

#: Seconds before reopening a dropped stream when the server sent no ``retry:``.
DEFAULT_RETRY: Final = 3.0
#: The longest wait between two reconnect attempts.
MAX_RECONNECT_DELAY: Final = 30.0
#: Consecutive failed reconnect attempts before the stream gives up with the last error.
DEFAULT_MAX_RECONNECTS: Final = 10
#: How many event ids are remembered to drop repeats.
SEEN_IDS: Final = 1024
#: The largest single event read (its data, in bytes of text): a larger one ends the stream.
DEFAULT_MAX_EVENT_BYTES: Final = 1024 * 1024
EVENT_STREAM: Final = "text/event-stream"
LAST_EVENT_ID_HEADER: Final = "Last-Event-ID"


# --------------------------------------------------------------------------------------------------
# Typed events


class ServerSentEvent(pydantic.BaseModel, Generic[D]):
    """One event of a stream: ``event`` (its name), ``data`` (parsed into the event's model), and ``id``
    (the stream's last event id when it was dispatched; ``None`` before any)."""

    model_config = pydantic.ConfigDict(frozen=True)

    event: str
    data: D
    id: str | None = None


class UnknownEvent(ServerSentEvent[Any]):
    """An event whose name the SDK does not know: ``data`` is the parsed JSON, or the text when it is
    not JSON. Streams tolerate new event names rather than failing."""


@dataclass(frozen=True, slots=True)
class StreamOperation:
    """A stream, described as data: the request (``op``, whose ``parse`` is unused) and the model of
    each known event name (``events``: name -> a :class:`ServerSentEvent` subclass)."""

    op: Operation[Any]
    events: Mapping[str, type[ServerSentEvent[Any]]]
    read_timeout: float | None = None
    last_event_id: str | None = None
    policy: StreamPolicy = field(default_factory=lambda: StreamPolicy())
    #: Called with the stream's progress each time a dropped connection is about to be reopened (after
    #: the INFO line), e.g. to warn once that the service may resume elsewhere (D188, D221).
    on_reconnect: Callable[[StreamProgress], None] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class StreamPolicy:
    """How hard a stream tries to stay open (see the module docstring)."""

    max_reconnects: int = DEFAULT_MAX_RECONNECTS
    max_delay: float = MAX_RECONNECT_DELAY
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES


# --------------------------------------------------------------------------------------------------
# The wire format


@dataclass(frozen=True, slots=True)
class Block:
    """What a blank line dispatched: ``event`` name (``message`` by default), ``data`` (``None``: the
    data buffer was empty, nothing to dispatch), ``id`` (the block's own ``id`` field, ``None`` when it
    had none) and ``retry`` (milliseconds, when the block set it)."""

    event: str
    data: str | None
    id: str | None = None
    retry: int | None = None


class EventTooLarge(httpx.RequestError):
    """An event (or a line) longer than the stream's ``max_event_bytes``; ends the stream, never retried."""


class EventDecoder:
    """Incremental parser of one connection's bytes into :class:`Block` values (module docstring)."""

    __slots__ = (
        "_data",
        "_event",
        "_id",
        "_line",
        "_pending_cr",
        "_retry",
        "_size",
        "_started",
        "_text",
        "max_event_bytes",
    )

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._line: list[str] = []
        self._size = 0
        self._pending_cr = False
        self._started = False
        self._event = ""
        self._data: list[str] | None = None
        self._id: str | None = None
        self._retry: int | None = None
        self.max_event_bytes = max_event_bytes

    def feed(self, chunk: bytes) -> list[Block]:
        """The blocks completed by ``chunk``."""
        text = self._text.decode(chunk)
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        blocks: list[Block] = []
        start = 0
        index = 0
        length = len(text)
        while index < length:
            char = text[index]
            if char == "\n" and self._pending_cr:  # the LF of a CRLF split across chunks
                self._pending_cr = False
                start = index + 1
            elif char in "\r\n":
                self._line.append(text[start:index])
                self._end_line(blocks)
                if char == "\r":
                    if index + 1 < length:
                        if text[index + 1] == "\n":
                            index += 1
                    else:
                        self._pending_cr = True
                start = index + 1
            else:
                self._pending_cr = False
            index += 1
        if start < length:
            rest = text[start:]
            self._line.append(rest)
            self._size += len(rest)
            if self._size > self.max_event_bytes:
                raise EventTooLarge(f"an event-stream line is longer than {self.max_event_bytes} bytes")
        return blocks

    def _end_line(self, blocks: list[Block]) -> None:
        line = "".join(self._line)
        self._line.clear()
        self._size = 0
        if not line:
            blocks.append(
                Block(
                    self._event or "message",
                    None if self._data is None else "\n".join(self._data),
                    self._id,
                    self._retry,
                )
            )
            self._event, self._data, self._id, self._retry = "", None, None, None
            return
        if line.startswith(":"):
            return  # a comment
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            if self._data is None:
                self._data = []
            self._data.append(value)
            if sum(len(part) for part in self._data) > self.max_event_bytes:
                raise EventTooLarge(f"an event is larger than {self.max_event_bytes} bytes")
        elif name == "id" and "\x00" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)


# --------------------------------------------------------------------------------------------------
# The state of a stream across connections


@dataclass(slots=True)
class StreamProgress:
    """What a stream knows across its connections: the last event id (sent as ``Last-Event-ID``), the
    server's ``retry`` (seconds), whether it was ever open, the consecutive failed attempts, the ids seen."""

    last_event_id: str | None = None
    retry: float | None = None
    opened: bool = False
    failures: int = 0
    reconnects: int = 0
    _seen: set[str] = field(default_factory=set)
    _order: deque[str] = field(default_factory=deque)

    def accept(self, block: Block) -> Block | None:
        """Apply ``block`` (its ``retry``, its ``id``); the block to dispatch, or ``None`` (no data, or an
        id seen before)."""
        if block.retry is not None:
            self.retry = block.retry / 1000
        if block.id is not None:
            self.last_event_id = block.id
        if block.data is None:
            return None
        if block.id:
            if block.id in self._seen:
                return None
            self._seen.add(block.id)
            self._order.append(block.id)
            if len(self._order) > SEEN_IDS:
                self._seen.discard(self._order.popleft())
        self.failures = 0
        return dataclasses.replace(block, id=self.last_event_id or None)


def stream_timeout(config: ClientConfig, read_timeout: float | None) -> httpx.Timeout:
    """The client's connect, write and pool timeouts; no read timeout between events unless asked."""
    base = config.timeout
    return httpx.Timeout(connect=base.connect, read=read_timeout, write=base.write, pool=base.pool)


def stream_request(
    stream: StreamOperation,
    config: ClientConfig,
    progress: StreamProgress,
    credential: CredentialValue | None = None,
) -> httpx.Request:
    """The request of one connection: ``Accept: text/event-stream``, ``Cache-Control: no-store``, and
    ``Last-Event-ID`` once an id is known. ``credential``: the access token of a token-managed
    credential (``backoffice_user``...), obtained by the shell for this connection."""
    op = dataclasses.replace(stream.op, timeout=stream_timeout(config, stream.read_timeout))
    request = build_request(op, config, None, attempt=1, credential=credential)
    request.headers["Accept"] = EVENT_STREAM
    request.headers["Cache-Control"] = "no-store"
    last = progress.last_event_id if progress.last_event_id is not None else stream.last_event_id
    if last:
        request.headers[LAST_EVENT_ID_HEADER] = last
    if progress.reconnects:
        request.headers["X-Paysdk-Retry-Count"] = str(progress.reconnects)
    return request


def parse_event(stream: StreamOperation, block: Block) -> ServerSentEvent[Any]:
    """The typed event of a dispatched block; :class:`UnknownEvent` for a name the stream does not know.
    Raises :class:`pydantic.ValidationError` or :class:`ValueError` when a known event's data does not fit."""
    text = block.data or ""
    model = stream.events.get(block.event)
    if model is None:
        try:
            data: Any = _json.loads(text)
        except _json.JSONDecodeError:
            data = text
        return UnknownEvent(event=block.event, data=data, id=block.id)
    return model.model_validate({"event": block.event, "data": _json.loads(text), "id": block.id})


# --------------------------------------------------------------------------------------------------
# Answers and reconnects


class StreamEnded:
    """The outcome of a connection whose stream ended cleanly (the server closed it properly)."""

    def __repr__(self) -> str:
        return "StreamEnded()"


ENDED: Final = StreamEnded()
#: What one connection produced: the answer that was not an event stream, the error that ended it,
#: or the clean end.
StreamOutcome: TypeAlias = httpx.Response | httpx.RequestError | StreamEnded


def answer_problem(response: httpx.Response) -> str | None:
    """Why an answer cannot be read as an event stream (``None``: a 2xx ``text/event-stream``)."""
    if not 200 <= response.status_code < 300:
        return f"status {response.status_code}"
    kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind != EVENT_STREAM:
        return f"Content-Type {kind or 'missing'}, not {EVENT_STREAM}"
    return None


@dataclass(frozen=True, slots=True)
class ReconnectDecision:
    """Reopen the stream after ``delay`` seconds, or stop. ``reason`` is for logs."""

    reconnect: bool
    delay: float = 0.0
    reason: str = ""


_RETRYABLE_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})
#: Errors after which the stream is reopened: nothing was sent, or the connection dropped.
_TRANSPORT_ERRORS: Final = (httpx.TransportError, httpx.RemoteProtocolError)


def reconnect_decision(
    outcome: StreamOutcome,
    progress: StreamProgress,
    config: ClientConfig,
    policy: StreamPolicy,
    *,
    rng: Callable[[], float],
    now: Callable[[], float],
) -> ReconnectDecision:
    """Whether to open the stream again and after how long (see the module docstring).

    ``progress.failures`` counts the consecutive attempts that delivered no event, this one excluded;
    ``rng`` returns a float in [0, 1) (jitter), ``now`` the Unix time (an HTTP-date ``Retry-After``).
    """
    if isinstance(outcome, StreamEnded):
        return ReconnectDecision(False, reason="the stream ended")
    delay: float | None = None
    if isinstance(outcome, httpx.Response):
        status = outcome.status_code
        if status not in _RETRYABLE_STATUSES:
            return ReconnectDecision(False, reason=f"status {status} is not retryable")
        reason = f"status {status}"
        retry_after = parse_retry_after(outcome.headers, now=now())
        if retry_after is not None:
            delay = min(retry_after, MAX_RETRY_AFTER)
    elif isinstance(outcome, EventTooLarge) or not isinstance(outcome, _TRANSPORT_ERRORS):
        return ReconnectDecision(False, reason=f"{type(outcome).__name__} is not retryable")
    else:
        reason = type(outcome).__name__
    limit = policy.max_reconnects if progress.opened else config.max_retries
    if progress.failures >= limit:
        what = "max_reconnects" if progress.opened else "max_retries"
        return ReconnectDecision(False, reason=f"{reason}; {what}={limit} reached")
    if delay is None and not progress.opened:
        delay = backoff_delay(progress.failures, rng=rng)  # as any call: a server not running fails fast
    if delay is None:
        base = progress.retry if progress.retry is not None else DEFAULT_RETRY
        if progress.failures == 0:
            delay = min(base, policy.max_delay)  # the server's retry:, exactly
        else:
            delay = min(max(base, 0.1) * 2.0**progress.failures, policy.max_delay) * (1.0 - 0.25 * rng())
    return ReconnectDecision(True, delay=delay, reason=reason)


def final_error(
    stream: StreamOperation,
    outcome: httpx.Response | httpx.RequestError,
    *,
    attempts: int,
    secrets: tuple[str, ...],
) -> PaySDKError:
    """The error a stream that gives up raises: the :class:`~paysdk.APIError` of an error answer, an
    :class:`~paysdk.UnexpectedResponseError` for a 2xx that is no event stream, a connection error."""
    op = stream.op
    if isinstance(outcome, httpx.Response):
        problem = answer_problem(outcome)
        if 200 <= outcome.status_code < 300:
            return unexpected_response(op, outcome, problem or "not an event stream", attempts=attempts)
        error: APIError = error_from_response(
            outcome, method=op.method, path=op.path, attempts=attempts, secrets=secrets
        )
        return error
    if isinstance(outcome, EventTooLarge):
        return ResponseTooLargeError(
            f"event stream {op.method} {op.path}: {outcome}",
            limit=stream.policy.max_event_bytes,
            status_code=200,
            method=op.method,
            path=op.path,
            attempts=attempts,
        )
    return error_from_exception(outcome, method=op.method, path=op.path, attempts=attempts, secrets=secrets)
