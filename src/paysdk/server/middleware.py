"""ASGI middleware of the reference server: request log, fault injection, idempotency keys, hook CORS.

One pure-ASGI layer (:class:`ServerMiddleware`) does it all, in this order: hook CORS -> request log ->
faults -> idempotency -> the fast lane (the hot public creates, handed to their FastAPI route handlers
without FastAPI's routing and dependency resolution) or FastAPI routing. The control plane
(``/_sandbox``, the prefixes of the families registered with ``public`` false) and the API documentation
are never logged, faulted or idempotent.

* Request log: method, path (+ query), status and headers of every public request, stored when the
  answer is complete, before its last byte is sent (so a client that has its answer finds it logged).
  Concurrent requests share the log's transactions (the group commit of
  :class:`paysdk.server.context.GroupCommit`: entries that arrive while a batch is being written go into
  the next, with the transaction inserts of the hot path), which keeps the log off the throughput of
  the public endpoints.
  Bodies are never stored, so body credentials (``privateKey``/``publicKey``) never appear; headers
  are kept by an allow-list (D95: ``Content-Type``, ``User-Agent``...), every other header's value and
  the values of query parameters with credential-like names are masked as ``****`` (so is uvicorn's
  access log: :class:`AccessLogFilter`). A dropped connection is logged with status ``0``.
* Faults (see :mod:`paysdk.server.services.faults`, which also says when the database is asked):
  ``latency`` sleeps then answers normally,
  ``error`` answers the given 5xx, ``rate_limit`` answers ``429`` with ``Retry-After``, ``drop`` closes the
  connection without an answer. Under uvicorn the connection's transport is aborted (the client sees the
  socket close: ``httpx.RemoteProtocolError``/``ReadError``); in process, with ``httpx.ASGITransport``,
  there is no socket, so :class:`paysdk.server.errors.ConnectionDropped` is raised and reaches the
  caller of httpx.
* Idempotency (D17): a ``POST`` with ``Idempotency-Key`` under the prefixes of a family registered with
  ``idempotent_posts`` (:mod:`paysdk.server.families`) is remembered for 24 h (virtual clock),
  scoped by key, method, path and the ``Authorization`` header. The same key and body replays the stored
  answer (header ``Idempotent-Replayed: true``); another body is ``422``, ``ownCode: null``; a request
  still running with that key is ``409`` (the IETF ``Idempotency-Key`` draft's statuses), both with
  ``details`` naming ``Idempotency-Key``. 5xx answers are not stored, so a retry runs again; nor are
  event streams (``text/event-stream``: passed through as they come, never kept in memory).
* Streaming answers pass through every step above unbuffered, one body message at a time; the request
  log records them when they end, with their duration (``durationMs``).
* Body bounds (D85, :mod:`paysdk.server.bodies`): on every route, the control plane included, a declared
  ``Content-Length`` over the limit is ``413`` before any byte is read, and ``receive`` is a
  :class:`paysdk.server.bodies.BoundedReceive` (``413`` past the limit, ``408`` when the body stalls). A
  client that disconnects mid-body is one log line (status ``0`` in the request log), never a traceback.
  First of all, a request declaring both ``Content-Length`` and ``Transfer-Encoding`` is ``400`` and its
  connection closed (:func:`paysdk.server.bodies.framing_refusal`, D390).
* Deprecation marks (D196): every answer for a public path of a marked operation, the refusals above
  included, carries its headers; the operation is named from the request's path (D392).
* Hook CORS (D14): ``/transactions-hook`` answers preflight ``OPTIONS`` itself and adds
  ``Access-Control-Allow-Origin: *`` to every answer, errors included.
* Request ids (D65): every answer, control plane, pages, errors and preflights included, carries
  ``X-Request-Id: req_<32 hex>`` (time-ordered, minted here, never the client's), kept in the scope
  (:data:`REQUEST_ID_SCOPE_KEY`, for the 500 handler outside this layer) and in the request log.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol, cast
from urllib.parse import unquote_plus

from fastapi.routing import APIRoute
from sqlalchemy import Table, bindparam, delete, insert, select, update
from sqlalchemy.engine import Connection
from starlette.convertors import StringConvertor
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from paysdk._redact import MASK, is_sensitive_name
from paysdk.server.adapters.uvicorn import abort_connection, remember_connection
from paysdk.server.bodies import BodyBounds, BodyRefused, declared_framing, length_above
from paysdk.server.clock import Clock
from paysdk.server.context import ServerContext, Statement, batch_cached
from paysdk.server.core_tables import ClientRow, IdempotencyRow, RequestLogRow
from paysdk.server.errors import (
    REQUEST_ID_HEADER,
    REQUEST_ID_SCOPE_KEY,
    APIProblem,
    ConnectionDropped,
    new_request_id,
)
from paysdk.server.families import (
    FAMILIES,
    Family,
    honours_idempotency_key,
    idempotent_prefixes,
    routers_of,
)
from paysdk.server.services import deprecations, faults
from paysdk.server.services.transactions import virtual_now

__all__ = [
    "REQUEST_ID_SCOPE_KEY",
    "AccessLogFilter",
    "Endpoint",
    "ServerMiddleware",
    "control_prefixes",
    "honours_idempotency_key",
    "install_access_log_filter",
    "is_control_path",
    "mask_headers",
    "mask_query",
]

log = logging.getLogger("paysdk.server")

IDEMPOTENCY_TTL = timedelta(hours=24)
_DOC_PATHS = ("/openapi.json", "/docs", "/redoc", "/favicon.ico")
#: The headers whose values the request log keeps (D95): what the request is and how it was sent.
#: Every other header is listed with its value masked, whatever its name: custom headers carry tokens.
_LOGGED_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "cache-control",
        "connection",
        "content-encoding",
        "content-length",
        "content-type",
        "expect",
        "host",
        "origin",
        "pragma",
        "sec-fetch-dest",
        "sec-fetch-mode",
        "sec-fetch-site",
        "te",
        "transfer-encoding",
        "user-agent",
        "x-paysdk-retry-count",
        "x-request-id",
    }
)
#: Query parameters whose values are masked in the request log and uvicorn's access log (D95): a name
#: (percent-decoded, case-folded) containing one of :data:`paysdk._redact.SENSITIVE_WORDS`, or one of these.
_SENSITIVE_QUERY = frozenset({"code", "pin", "pan", "sig", "pass", "pwd", "cvc"})
HOOK_PATH = "/transactions-hook"
#: Control-plane routes that take faults, from faults naming them explicitly (``paysdk.server.services.
#: faults.matches``): the upload sink, which stands in for the upload routes of the API in tests.
FAULTABLE_CONTROL_PATHS = frozenset({"/_sandbox/uploads"})


def _stamp(message: Message, request_id: bytes) -> Message:
    """An ``http.response.start`` message with the ``X-Request-Id`` header added."""
    return {**message, "headers": [*message.get("headers", ()), (REQUEST_ID_HEADER, request_id)]}


def _stamping(send: Send, request_id: bytes) -> Send:
    """``send`` adding ``X-Request-Id`` to the answer (the control plane and preflights)."""

    async def stamped(message: Message) -> None:
        await send(_stamp(message, request_id) if message["type"] == "http.response.start" else message)

    return stamped


def control_prefixes(families: Iterable[Family] = FAMILIES) -> tuple[str, ...]:
    """The prefixes of the families that are not public (the control plane), as ``prefix`` and ``prefix/``."""
    return tuple(form for f in families if not f.public for p in f.prefixes for form in (p, p + "/"))


_CONTROL = control_prefixes()


def is_control_path(path: str, control: tuple[str, ...] = _CONTROL) -> bool:
    """The control plane (the prefixes of the non-public families, ``control``: :func:`control_prefixes`)
    and the API docs: never logged, faulted or idempotent."""
    return (
        path in control or path.startswith(control[1::2]) or path in _DOC_PATHS or path.startswith("/docs/")
    )


def _header(scope: Scope, name: bytes) -> bytes | None:
    size = len(name)
    for key, value in scope.get("headers", ()):
        if len(key) == size and key.lower() == name:
            return bytes(value)
    return None


#: Header name as sent -> (its text, whether it names a credential by itself); bounded.
_NAMES: dict[bytes, tuple[str, bool]] = {}
_NAMES_MAX = 1024


def _header_name(key: bytes) -> tuple[str, bool]:
    known = _NAMES.get(key)
    if known is None:
        name = key.decode("latin-1").lower().replace("\x00", "")
        known = (name, name not in _LOGGED_HEADERS)
        if len(_NAMES) >= _NAMES_MAX:
            _NAMES.clear()
        _NAMES[bytes(key)] = known
    return known


def mask_headers(raw: list[tuple[bytes, bytes]], extra_sensitive: set[str]) -> dict[str, str]:
    """Headers as text (latin-1, truncated to 200 characters); only the values of :data:`_LOGGED_HEADERS`
    that are not in ``extra_sensitive`` (the callback header names) are kept, the others are masked."""
    result: dict[str, str] = {}
    for key_bytes, value_bytes in raw:
        name, sensitive = _header_name(key_bytes)
        value = (
            MASK
            if sensitive or name in extra_sensitive
            else value_bytes.decode("latin-1")[:200].replace("\x00", "")
        )
        result[name] = value if name not in result else f"{result[name]}, {value}"
    return result


#: Query parameter name as sent (up to 64 characters) -> whether its value is masked; bounded.
_QUERY_NAMES: dict[str, bool] = {}


def _sensitive_query_name(raw: str) -> bool:
    known = _QUERY_NAMES.get(raw)
    if known is None:
        name = unquote_plus(raw).casefold()
        known = name in _SENSITIVE_QUERY or is_sensitive_name(name)
        if len(raw) <= 64:
            if len(_QUERY_NAMES) >= _NAMES_MAX:
                _QUERY_NAMES.clear()
            _QUERY_NAMES[raw] = known
    return known


def mask_query(target: str) -> str:
    """``path?query`` with the values of sensitive query parameters (D95) replaced by ``****``."""
    path, mark, query = target.partition("?")
    if not mark:
        return target
    parts = []
    for part in query.split("&"):
        name, equals, _value = part.partition("=")
        parts.append(f"{name}={MASK}" if equals and _sensitive_query_name(name) else part)
    return f"{path}?{'&'.join(parts)}"


class AccessLogFilter(logging.Filter):
    """Masks sensitive query values (:func:`mask_query`) in uvicorn's access log lines, whose third
    argument is the path with its query; added to the ``uvicorn.access`` logger by the app's lifespan."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (*args[:2], mask_query(args[2]), *args[3:])
        return True


def install_access_log_filter() -> None:
    """Add :class:`AccessLogFilter` to the ``uvicorn.access`` logger (once)."""
    logger = logging.getLogger("uvicorn.access")
    if not any(isinstance(item, AccessLogFilter) for item in logger.filters):
        logger.addFilter(AccessLogFilter())


async def _send_problem(problem: APIProblem, scope: Scope, receive: Receive, send: Send) -> None:
    await problem.response()(scope, receive, send)


# ---------------------------------------------------------------------------------------------- log


@dataclass(slots=True)
class _Entry:
    method: str
    path: str
    status: int
    headers: list[tuple[bytes, bytes]]
    request_id: str
    duration_ms: int | None = None
    #: The row as written (masked), for the live feed (``/_sandbox/events``); set by :func:`_write_log`.
    row: dict[str, Any] | None = None


_LOG = cast(Table, RequestLogRow.__table__)
_CLIENTS = cast(Table, ClientRow.__table__)
_INSERT_LOG = Statement(
    insert(_LOG), ("method", "path", "status_code", "at", "headers", "request_id", "duration_ms")
)
_HEADER_NAMES = Statement(select(_CLIENTS.c.callback_header_name).distinct())


def _write_log(connection: Connection, clock: Clock, entries: list[_Entry]) -> None:
    """Insert log entries in one transaction (one look at the callback header names, one clock read)."""
    names = {
        str(name).lower()
        for (name,) in batch_cached(connection, _HEADER_NAMES, lambda: _HEADER_NAMES.rows(connection))
    }
    at = virtual_now(connection, clock)
    rows = [
        {
            "method": entry.method,
            "path": mask_query(entry.path),
            "status_code": entry.status,
            "at": at,
            "headers": mask_headers(entry.headers, names),
            "request_id": entry.request_id,
            "duration_ms": entry.duration_ms,
        }
        for entry in entries
    ]
    _INSERT_LOG.run_many(connection, rows)
    for entry, row in zip(entries, rows, strict=True):
        entry.row = row


class _LogSink:
    """The request log as a sink of the group commit (:class:`paysdk.server.context.GroupCommit`).

    Entries are written in the transaction of the next batch, together with the concurrent requests'
    transaction inserts and the other entries that arrived meanwhile; :meth:`ServerContext.append`
    returns once the entry is committed, so the log holds a request before the last byte of its answer
    leaves. An entry that cannot be written even alone is reported and dropped: the answer goes on.
    """

    def __init__(self, context: ServerContext) -> None:
        self._clock = context.clock

    def write(self, connection: Connection, items: list[_Entry]) -> None:
        _write_log(connection, self._clock, items)

    def failed(self, item: _Entry) -> None:
        _log_failure(item)


def _log_failure(entry: _Entry) -> None:
    # The path without its query, which may hold anything.
    log.exception("could not record request %s %s", entry.method, entry.path.partition("?")[0])


def _feed_data(row: dict[str, Any]) -> dict[str, Any]:
    """A request log row as the ``request`` event's data (the wire names of ``RequestLogEntry``)."""
    return {
        "method": row["method"],
        "path": row["path"],
        "statusCode": row["status_code"],
        "at": row["at"],
        "headers": row["headers"],
        "requestId": row["request_id"],
        "durationMs": row["duration_ms"],
    }


def _path_with_query(scope: Scope) -> str:
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes | bytearray) else str(scope.get("path", ""))
    query = scope.get("query_string", b"")
    if query:
        path = f"{path}?{bytes(query).decode('latin-1')}"
    return path.replace("\x00", "%00")[:2000]


# ------------------------------------------------------------------------------------------- faults


# -------------------------------------------------------------------------------------- idempotency


@dataclass(frozen=True, slots=True)
class _Stored:
    verdict: str  # proceed | replay | mismatch | in_progress
    status: int = 0
    content_type: str | None = None
    body: bytes = b""


_IDEMPOTENCY = cast(Table, IdempotencyRow.__table__)
_STORED = Statement(
    select(
        _IDEMPOTENCY.c.body_sha256,
        _IDEMPOTENCY.c.state,
        _IDEMPOTENCY.c.status_code,
        _IDEMPOTENCY.c.content_type,
        _IDEMPOTENCY.c.response_body,
        _IDEMPOTENCY.c.expires_at,
    )
    .where(_IDEMPOTENCY.c.scope == bindparam("key"))
    .with_for_update()
)
_FORGET = delete(_IDEMPOTENCY).where(_IDEMPOTENCY.c.scope == bindparam("key"))  # rare: plain Core
_NEW_KEY_COLUMNS = ("scope", "body_sha256", "state", "created_at", "expires_at")
#: The first request of a key: ``INSERT ... ON CONFLICT DO NOTHING`` (a concurrent first request of the
#: same key, committed meanwhile, makes the row count 0: "in progress"), per dialect.
_CLAIM: dict[str, Statement] = {}


def _claim_statement(dialect_name: str) -> Statement | None:
    """The claim's statement for a dialect, built on first use: importing a dialect's ``insert`` imports
    the dialect, and a server runs on one (PostgreSQL's costs ~20 ms of CPU at start, issue 12, D307)."""
    claim = _CLAIM.get(dialect_name)
    if claim is None:
        if dialect_name == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            claim = Statement(sqlite_insert(_IDEMPOTENCY).on_conflict_do_nothing(), _NEW_KEY_COLUMNS)
        elif dialect_name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as postgresql_insert

            claim = Statement(
                postgresql_insert(_IDEMPOTENCY).on_conflict_do_nothing().returning(_IDEMPOTENCY.c.scope),
                _NEW_KEY_COLUMNS,
            )
        else:
            return None
        claim = _CLAIM.setdefault(dialect_name, claim)  # two first requests at once keep one
    return claim


_DONE = Statement(
    update(_IDEMPOTENCY)
    .where(_IDEMPOTENCY.c.scope == bindparam("key"))
    .values(
        state="done",
        status_code=bindparam("code"),
        content_type=bindparam("ctype"),
        response_body=bindparam("answer"),
    )
)


def _claimed(connection: Connection, params: dict[str, Any]) -> bool:
    """``INSERT ... ON CONFLICT DO NOTHING`` of a new key: whether this request inserted it. SQLite's row
    count; PostgreSQL's ``RETURNING`` (psycopg's row count of an upsert is not reliable), run on psycopg's
    cursor with the statement compiled once (:meth:`Statement.first`)."""
    dialect = connection.dialect
    claim = _claim_statement(dialect.name)
    if claim is None:  # pragma: no cover - the server runs on SQLite or PostgreSQL
        raise RuntimeError(f"no idempotency claim for {dialect.name}")
    if dialect.name == "sqlite":
        return claim.run(connection, params) == 1
    return claim.first(connection, params) is not None


def _begin(connection: Connection, context: ServerContext, scope_hash: str, body_hash: str) -> _Stored:
    """Claim an ``Idempotency-Key`` (Core, in the group commit, D259): proceed, replay, mismatch or in
    progress. A new key (the common case) is one statement; a known one is then read (and locked)."""
    now = virtual_now(connection, context.clock)
    params = {
        "scope": scope_hash,
        "body_sha256": body_hash,
        "state": "in_progress",
        "created_at": now,
        "expires_at": now + IDEMPOTENCY_TTL,
    }
    if _claimed(connection, params):
        return _Stored("proceed")
    rows = _STORED.rows(connection, {"key": scope_hash})
    if not rows or rows[0][5] <= now:  # expired (or just forgotten): this request is a first one again
        connection.execute(_FORGET, {"key": scope_hash})
        return _Stored("proceed" if _claimed(connection, params) else "in_progress")
    stored_hash, state, status, content_type, body, _expires = rows[0]
    if stored_hash != body_hash:
        return _Stored("mismatch")
    if state != "done" or status is None:
        return _Stored("in_progress")
    return _Stored("replay", status, content_type, (body or "").encode("latin-1"))


def _finish(
    connection: Connection, scope_hash: str, status: int | None, content_type: str | None, body: bytes
) -> None:
    """Store the answer of a key's request (a ``5xx`` or no answer forgets the key instead)."""
    if status is None or status >= 500:
        connection.execute(_FORGET, {"key": scope_hash})
        return
    # In a group-commit batch the update is collected and written with the batch's others (one
    # ``executemany``) before its commit, which the answer awaits.
    _DONE.insert(
        connection,
        {
            "key": scope_hash,
            "code": status,
            "ctype": content_type,
            "answer": body.decode("latin-1"),
        },
    )


async def _read_body(receive: Receive) -> bytes:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        parts.append(bytes(message.get("body", b"")))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


# ------------------------------------------------------------------------------------------- CORS


_CORS_HEADERS = [
    (b"access-control-allow-origin", b"*"),
]
_PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type, Idempotency-Key",
    "Access-Control-Max-Age": "600",
}


# ------------------------------------------------------------------------------------ the one layer


def parametrized_lane(families: Sequence[Family]) -> list[tuple[str, re.Pattern[str], APIRoute, Endpoint]]:
    """``(method, path regex, route, lane)`` of the routes with string path parameters whose handler
    names a lane (:func:`paysdk.server.routers._common.lane`), in the families' order (D261). A hot
    route with a parameter (``POST /rest/cards/{cardId}/funds``) is then handed to its lane without
    FastAPI's routing, which tries every route before it (the largest part of such a request's cost)."""
    # Imported here: the routers' helpers are not needed before the routers themselves (D303).
    from paysdk.server.routers._common import LANE_ATTRIBUTE

    lanes: list[tuple[str, re.Pattern[str], APIRoute, Endpoint]] = []
    for family in families:
        for mount, router in routers_of(family):
            for route in router.routes:
                lane = getattr(getattr(route, "endpoint", None), LANE_ATTRIBUTE, None)
                if lane is None or not isinstance(route, APIRoute):
                    continue
                regex, _format, convertors = compile_path(mount + route.path)
                if not all(isinstance(convertor, StringConvertor) for convertor in convertors.values()):
                    raise ValueError(f"{family.name}: lane route {route.path} has non-string parameters")
                lanes.extend((method, regex, route, lane) for method in sorted(route.methods or ()))
    return lanes


#: An endpoint of the fast lane: the FastAPI route handler itself, ``handler(request) -> Response``.
Endpoint = Callable[[Request], Awaitable[Response]]


class LazyRouters(Protocol):
    """The routers a lazily started app has not included yet (``paysdk.server.app``, D303)."""

    def needed(self, scope: Scope) -> bool:
        """Whether they must be included before ``scope`` is answered."""

    def include_all(self) -> dict[tuple[str, str], Endpoint]:
        """Include them all; the fast lane of every family."""


def _deprecation_headers(message: Message, scope: Scope, marks: deprecations.Marks) -> Message:
    """``http.response.start`` with the headers of a marked operation (D196), the operation named by the
    request's path as ``/openapi.json`` names it, mount prefix included (D392:
    :func:`paysdk.server.services.deprecations.marked`)."""
    path = scope["path"]
    root = scope.get("root_path") or ""
    if root and path.startswith(root):
        path = path[len(root) :]
    route_path = getattr(scope.get("route"), "path", None)
    pairs = deprecations.marked(marks, scope["method"], path, route_path)
    if pairs is None:
        return message
    return {**message, "headers": [*message.get("headers", ()), *pairs]}


def _marking(send: Send, scope: Scope, marks: deprecations.Marks) -> Send:
    """``send`` adding a marked operation's headers (an answer the layer gives before routing)."""

    async def marking(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = _deprecation_headers(message, scope, marks)
        await send(message)

    return marking if marks else send


class _Exchange:
    """One public request seen by :class:`ServerMiddleware`: the status for the log, the log entry
    written before the last body byte leaves, and the hook's CORS header (one ``send`` wrapper)."""

    __slots__ = (
        "_layer",
        "_scope",
        "_send",
        "deprecated",
        "hook",
        "logged",
        "request_id",
        "started",
        "status",
    )

    def __init__(
        self, layer: ServerMiddleware, scope: Scope, send: Send, hook: bool, request_id: str
    ) -> None:
        self._layer = layer
        self._scope = scope
        self._send = send
        self.hook = hook
        self.request_id = request_id
        self.status = 500
        self.logged = False
        self.started = time.monotonic()
        #: The deprecation marks of the database (D196): their headers go on a marked operation's answer.
        self.deprecated: deprecations.Marks = {}

    async def record(self) -> None:
        if self.logged:
            return
        self.logged = True
        scope = self._scope
        entry = _Entry(
            str(scope["method"]),
            _path_with_query(scope),
            self.status,
            list(scope.get("headers", [])),
            self.request_id,
            round((time.monotonic() - self.started) * 1000),
        )
        context = self._layer.context
        await context.append(self._layer._sink, entry)  # never raises for a database error
        if entry.row is not None and context.events.listened:  # the live feed: as stored (masked, D95)
            context.events.publish("request", _feed_data(entry.row))

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.status = int(message["status"])
            if self.hook:
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if bytes(k).lower() != b"access-control-allow-origin"
                ]
                message = {**message, "headers": headers + _CORS_HEADERS}
            if self.deprecated:
                message = _deprecation_headers(message, self._scope, self.deprecated)
            message = _stamp(message, self.request_id.encode("ascii"))
        elif kind == "http.response.body" and not message.get("more_body", False):
            # Written before the last byte leaves, so a client that got the answer finds it logged.
            await self.record()
        await self._send(message)


class ServerMiddleware:
    """The ASGI layer of the public surface (see the module docstring), in this order: hook CORS ->
    request log -> faults -> idempotency -> the fast lane or FastAPI.

    The fast lane: a request whose method and path are a key of ``fast_lane`` (the hot public creates)
    is handed to that route's FastAPI handler directly, skipping FastAPI's routing and dependency
    resolution; the handler's exceptions go to the app's exception handlers as FastAPI would send them
    (``exception_handlers``: the app's, read at the first request). The routes stay declared in FastAPI
    (OpenAPI, and requests the fast lane does not take: another method, a ``root_path``).
    ``body_bounds``: the limit and timeout of every request body (default 1 MiB and 30 s, D85).
    ``families``: the registrations whose prefixes say what is the control plane and which ``POST`` honours
    ``Idempotency-Key`` (default :data:`paysdk.server.families.FAMILIES`).
    """

    def __init__(
        self,
        app: ASGIApp,
        context: ServerContext,
        fast_lane: Mapping[tuple[str, str], Endpoint] | None = None,
        exception_handlers: Mapping[Any, Callable[..., Any]] | None = None,
        body_bounds: BodyBounds | None = None,
        families: Sequence[Family] = FAMILIES,
        routers: LazyRouters | None = None,
    ) -> None:
        self.app = app
        self._routers = routers
        self._control = control_prefixes(families)
        self._idempotent = idempotent_prefixes(families)
        self.body_bounds = body_bounds if body_bounds is not None else BodyBounds()
        self.context = context
        self._sink = _LogSink(context)
        self._fault_key = faults.database_key(context.db.engine.url)
        self._families = families
        self._fast_lane = dict(fast_lane or {})
        # The lanes are on unless turned off (the equivalence tests pass an empty fast lane to compare);
        # a lazily started app (D303) builds them once its routers are included.
        self._lanes = bool(self._fast_lane) or routers is not None
        # Part of the fast lane, and off with it.
        self._param_lane = parametrized_lane(families) if self._lanes and routers is None else []
        self._handler_source = exception_handlers if exception_handlers is not None else {}
        self._handlers: tuple[dict[Any, Any], dict[int, Any]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        remember_connection(scope, receive)  # the drop fault and event streams reach uvicorn's cycle
        request_id = scope[REQUEST_ID_SCOPE_KEY] = new_request_id()
        # One pass over the headers for the two checks of the body's framing (D501).
        length, coded = declared_framing(scope)
        # Content-Length with Transfer-Encoding: 400, and the connection closed (D390).
        refused: APIProblem | None = BodyRefused.framed_twice() if coded and length is not None else None
        if refused is None:
            refused = self.context.addresses.refusal(scope)  # allowed host, control plane (D91, D92)
        if refused is None and self.context.control.guarded:
            refused = self.context.control.refusal(scope)  # the control token (D270)
        bounds = (0, 0.0)
        if refused is None:
            # Larger on upload routes (D110); found once, for this check and the bounded receive.
            bounds = self.body_bounds.bounds_of(scope["method"], scope["path"])
            if length_above(length, bounds[0]):
                refused = BodyRefused.too_large(bounds[0])  # before a byte is read (D85)
        if refused is not None:
            stamped = _stamping(send, request_id.encode("ascii"))
            if not is_control_path(scope["path"], self._control):  # a marked upload's 413 (D392)
                stamped = _marking(stamped, scope, await self._deprecation_marks())
            await _send_problem(refused, scope, receive, stamped)
            return
        if self._routers is not None and self._routers.needed(scope):
            # The families' routers not included at start (D303): imported once, on the event loop.
            fast_lane = self._routers.include_all()
            if self._lanes:
                self._fast_lane = fast_lane
                self._param_lane = parametrized_lane(self._families)
            self._routers = None
        receive = self.body_bounds.wrap(scope, receive, bounds)
        path = scope["path"]
        hook = path.rstrip("/") == HOOK_PATH
        if hook and scope["method"] == "OPTIONS":
            preflight = Response(status_code=204, headers=_PREFLIGHT_HEADERS)
            await preflight(scope, receive, _stamping(send, request_id.encode("ascii")))
            return
        if is_control_path(path, self._control):  # never the hook path
            stamped = _stamping(send, request_id.encode("ascii"))
            with contextlib.suppress(ClientDisconnect):  # mid-body: BoundedReceive logged it
                if path.rstrip("/") in FAULTABLE_CONTROL_PATHS:  # the upload sink (faults.py)
                    await self._faults(scope, receive, stamped)
                else:
                    await self._dispatch(scope, receive, stamped)  # the reset is in the fast lane
            return
        exchange = _Exchange(self, scope, send, hook, request_id)
        # The marks as read last, without a coroutine while they are fresh (D501).
        marks = deprecations.fresh(self._fault_key)
        exchange.deprecated = marks if marks is not None else await self._deprecation_marks()
        try:
            await self._faults(scope, receive, exchange.send)
        except ClientDisconnect:  # mid-body: BoundedReceive logged it
            exchange.status = 0
        except ConnectionDropped:
            exchange.status = 0
            raise
        finally:
            await exchange.record()

    async def _deprecation_marks(self) -> deprecations.Marks:
        """The deprecation marks of the database (D196), read again at most once a second (D255)."""
        if deprecations.stale(self._fault_key):
            await self.context.run_brief(deprecations.load, self._fault_key)
        return deprecations.headers_for(self._fault_key)

    # -- faults

    async def _faults(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Several server instances may share one database, and a fault created through any of them
        # applies to all: the database is asked unless a look found none and no fault was created in
        # this process since (see :mod:`paysdk.server.services.faults` for the one limit, other processes).
        fault = (
            await self.context.run_brief(
                faults.take_request_fault_core, self._fault_key, str(scope["method"]), str(scope["path"])
            )
            if faults.request_faults_possible(self._fault_key)
            else None
        )
        if fault is None:
            await self._idempotency(scope, receive, send)
            return
        if fault.kind == "latency":
            await asyncio.sleep((fault.latency_ms or 0) / 1000)
            await self._idempotency(scope, receive, send)
        elif fault.kind == "error":
            status = fault.status or 500
            await _send_problem(APIProblem(status, None, "Injected server error."), scope, receive, send)
        elif fault.kind == "rate_limit":
            retry_after = str(fault.retry_after if fault.retry_after is not None else 1)
            problem = APIProblem(
                429, None, "Too many requests (injected).", headers={"Retry-After": retry_after}
            )
            await _send_problem(problem, scope, receive, send)
        elif fault.kind == "drop":
            if abort_connection(scope):
                # Let uvicorn see the connection lost, then return: it sends nothing more.
                for _ in range(3):
                    await asyncio.sleep(0)
                raise ConnectionDropped(f"connection dropped by an injected fault ({scope['path']})")
            raise ConnectionDropped(f"connection dropped by an injected fault ({scope['path']})")
        else:  # pragma: no cover - duplicate_callback faults are never taken here
            await self._idempotency(scope, receive, send)

    # -- idempotency

    async def _idempotency(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = _header(scope, b"idempotency-key")
        if key is None or not honours_idempotency_key(scope["method"], scope["path"], self._idempotent):
            await self._dispatch(scope, receive, send)
            return
        if not key.strip() or len(key) > 255 or not key.isascii():
            problem = APIProblem(
                400,
                None,
                "Invalid Idempotency-Key.",
                [("Idempotency-Key", "must be 1..255 ASCII characters")],
            )
            await _send_problem(problem, scope, receive, send)
            return
        try:
            body = await _read_body(receive)
        except BodyRefused as refused:
            await _send_problem(refused, scope, receive, send)
            return
        authorization = _header(scope, b"authorization") or b""
        scope_hash = hashlib.sha256(
            b"\0".join(
                [
                    scope["method"].encode(),
                    scope["path"].encode("utf-8", "replace"),
                    key,
                    hashlib.sha256(authorization).digest(),
                ]
            )
        ).hexdigest()
        body_hash = hashlib.sha256(body).hexdigest()
        stored = await self.context.group_commit.call(_begin, self.context, scope_hash, body_hash)
        if stored.verdict == "mismatch":  # the IETF Idempotency-Key draft: 422, not 409 (D17)
            problem = APIProblem(
                422,
                None,
                "This Idempotency-Key was used with another body.",
                [("Idempotency-Key", "was used with another request body")],
            )
            await _send_problem(problem, scope, receive, send)
            return
        if stored.verdict == "in_progress":
            problem = APIProblem.conflict(
                "A request with this Idempotency-Key is in progress.", "Idempotency-Key"
            )
            await _send_problem(problem, scope, receive, send)
            return
        if stored.verdict == "replay":
            response = Response(
                stored.body,
                status_code=stored.status,
                headers={"Idempotent-Replayed": "true"},
                media_type=stored.content_type,
            )
            await response(scope, receive, send)
            return
        await self._proceed(scope, receive, body, send, scope_hash)

    async def _proceed(
        self, scope: Scope, receive: Receive, body: bytes, send: Send, scope_hash: str
    ) -> None:
        status: int | None = None
        content_type: str | None = None
        chunks: list[bytes] = []
        delivered = False
        stored = False

        async def replay_receive() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # the body was read already: only a disconnect can come now

        async def capture(message: Message) -> None:
            nonlocal status, content_type, stored
            if message["type"] == "http.response.start":
                status = int(message["status"])
                for name, value in message.get("headers", []):
                    if bytes(name).lower() == b"content-type":
                        content_type = bytes(value).decode("latin-1")
                if content_type is not None and content_type.startswith("text/event-stream"):
                    status = None  # an event stream is neither kept in memory nor replayed: forgotten
            elif message["type"] == "http.response.body":
                if status is not None:
                    chunks.append(bytes(message.get("body", b"")))
                if not message.get("more_body", False) and not stored:
                    # Stored before the last byte leaves: a retry after this answer always replays it.
                    stored = True
                    await self.context.group_commit.call(
                        _finish, scope_hash, status, content_type, b"".join(chunks)
                    )
            await send(message)

        try:
            await self._dispatch(scope, replay_receive, capture)
        except BaseException:
            if not stored:
                await self.context.group_commit.call(_finish, scope_hash, None, None, b"")
            raise
        if not stored:
            await self.context.group_commit.call(_finish, scope_hash, status, content_type, b"".join(chunks))

    # -- the fast lane

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = None if scope.get("root_path") else self._fast_lane.get((scope["method"], scope["path"]))
        if endpoint is None and self._param_lane and not scope.get("root_path"):
            endpoint = self._parametrized(scope)
        if endpoint is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive, send)
        try:
            response = await endpoint(request)
        except Exception as exc:
            # As FastAPI's route wrapper does (starlette's wrap_app_handling_exceptions): the app's
            # handler for the exception answers; without one (500) the exception goes on.
            handler = self._handler(exc)
            if handler is None:
                raise
            answer = handler(request, exc)
            response = await answer if inspect.isawaitable(answer) else answer
            exc.__traceback__ = None
            if response is None:
                return
        await response(scope, receive, send)

    def _parametrized(self, scope: Scope) -> Endpoint | None:
        """The lane of a route with path parameters that matches the request, its parameters and route
        put in the scope as FastAPI's routing would (``path_params``, ``route``); else ``None``."""
        method, path = scope["method"], scope["path"]
        for lane_method, regex, route, lane in self._param_lane:
            if lane_method == method:
                match = regex.match(path)
                if match is not None:
                    scope["path_params"] = match.groupdict()
                    scope["route"] = route
                    return lane
        return None

    def _handler(self, exc: Exception) -> Callable[..., Any] | None:
        if self._handlers is None:
            # The app's own handler table (public ``app.exception_handlers``), split as Starlette's
            # ExceptionMiddleware splits it: exception classes, and status codes for HTTPException.
            # ``500``/``Exception`` belong to the outermost ServerErrorMiddleware, which this layer is
            # inside of (as every user middleware), so they are left out here as there.
            by_class = {
                key: value
                for key, value in self._handler_source.items()
                if isinstance(key, type) and key is not Exception
            }
            by_status = {
                key: value
                for key, value in self._handler_source.items()
                if isinstance(key, int) and key != 500
            }
            self._handlers = (by_class, by_status)
        by_class, by_status = self._handlers
        handler = None
        if isinstance(exc, HTTPException):
            handler = by_status.get(exc.status_code)
        if handler is None:
            for cls in type(exc).__mro__:
                if cls in by_class:
                    handler = by_class[cls]
                    break
        return handler
