"""The request log: method, path (+ query), status and headers of every public request, stored when the
answer is complete, before its last byte is sent (so a client that has its answer finds it logged), with
its duration (``durationMs``); a streaming answer is logged when it ends. A request that ends without an
answer (the client went away mid-body, or the drop fault) is logged with status ``0``.

Concurrent requests share the log's transactions (the group commit of
:class:`paysdk.server.context.GroupCommit`: entries that arrive while a batch is being written go into the
next, with the transaction inserts of the hot path), which keeps the log off the throughput of the public
endpoints. Bodies are never stored, so body credentials (``privateKey``/``publicKey``) never appear;
headers are kept by an allow-list (D95: ``Content-Type``, ``User-Agent``...), every other header's value
and the values of query parameters with credential-like names are masked as ``****`` (so is uvicorn's
access log: :class:`AccessLogFilter`). Each stored entry is published on the live feed
(``/_sandbox/events``). The control plane and the docs are never logged.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import unquote_plus

from sqlalchemy import Table, insert, select
from sqlalchemy.engine import Connection
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from paysdk._redact import MASK, is_sensitive_name
from paysdk.server.asgi._scope import is_control_path
from paysdk.server.clock import Clock
from paysdk.server.context import ServerContext, Statement, batch_cached, virtual_now
from paysdk.server.core_tables import ClientRow, RequestLogRow
from paysdk.server.errors import REQUEST_ID_SCOPE_KEY, ConnectionDropped

__all__ = ["AccessLogFilter", "RequestLog", "install_access_log_filter", "mask_headers", "mask_query"]

log = logging.getLogger("paysdk.server")

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


class RequestLog:
    """Logs every public request (see the module docstring); ``control``: the control-plane prefixes
    (:func:`paysdk.server.asgi._scope.control_forms`), never logged."""

    def __init__(self, app: ASGIApp, context: ServerContext, control: tuple[str, ...]) -> None:
        self.app = app
        self.context = context
        self.control = control
        self._sink = _LogSink(context)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_control_path(scope["path"], self.control):
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = 500
        logged = False

        async def record() -> None:
            nonlocal logged
            if logged:
                return
            logged = True
            entry = _Entry(
                str(scope["method"]),
                _path_with_query(scope),
                status,
                list(scope.get("headers", [])),
                str(scope.get(REQUEST_ID_SCOPE_KEY, "")),
                round((time.monotonic() - started) * 1000),
            )
            context = self.context
            await context.append(self._sink, entry)  # never raises for a database error
            if entry.row is not None and context.events.listened:  # the live feed, as stored (masked, D95)
                context.events.publish("request", _feed_data(entry.row))

        async def logging_send(message: Message) -> None:
            nonlocal status
            kind = message["type"]
            if kind == "http.response.start":
                status = int(message["status"])
            elif kind == "http.response.body" and not message.get("more_body", False):
                await record()  # before the last byte leaves: a client that got the answer finds it logged
            await send(message)

        try:
            await self.app(scope, receive, logging_send)
        except (ClientDisconnect, ConnectionDropped):
            status = 0
            raise
        finally:
            if not logged:  # no coroutine once the answer's end recorded it (D641)
                await record()
