"""Deprecation marks (D196, D253-D255): the control plane's ``/_sandbox/deprecations`` and the headers the
deprecation layer (:mod:`paysdk.server.asgi.deprecation`) adds to the answers of a marked public operation.

A mark names an operation as ``/openapi.json`` names it (``"POST /leads/files/upload/{fileName}"``); every
answer of that operation (errors included) then carries::

    Deprecation: @1767225600                          (RFC 9745: the moment it was deprecated)
    Sunset: Wed, 01 Jul 2026 00:00:00 GMT             (RFC 8594, when the mark has one)
    Link: <https://...>; rel="deprecation"            (when the mark has one)
    Paysdk-Deprecated-Operation: POST /leads          (D253: which operation, for the SDK's warning)

The marks live in the ``deprecations`` table (emptied by reset), so every server process over one database
applies them. The request path does not ask the database per request: a process-wide registry keyed by
database (:func:`paysdk.server.faults.database_key`) keeps the marks read last and when
(:func:`headers_for`). A mark set, cleared or reset through any app of this process invalidates it at once
(before and after the commit, as faults do); a change made by *another process* is seen at most
:data:`REFRESH_SECONDS` (1 s) later (D255).
"""

from __future__ import annotations

import email.utils
import functools
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete, event, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import ORMExecuteState, Session

from paysdk.contracts.deprecations import OPERATION_HEADER, Deprecation, DeprecationSet
from paysdk.server.bodies import template_regex
from paysdk.server.db import on_reset
from paysdk.server.deprecation_tables import DeprecationRow
from paysdk.server.errors import APIProblem
from paysdk.server.faults import database_key

__all__ = [
    "REFRESH_SECONDS",
    "Marks",
    "clear",
    "fresh",
    "headers_for",
    "list_all",
    "load",
    "marked",
    "put",
    "stale",
]

#: How long the marks read last are trusted without a look (bounds how late another process's change
#: is seen).
REFRESH_SECONDS = 1.0

#: ``"METHOD /path"`` -> the headers its answers carry (raw ASGI pairs).
Marks = Mapping[str, tuple[tuple[bytes, bytes], ...]]


@dataclass(slots=True)
class _Known:
    marks: Marks = field(default_factory=dict)
    generation: int = -1  # the registry generation the marks were read at (-1: never read)
    looked_at: float = float("-inf")


_lock = threading.Lock()
_registry: dict[str, _Known] = {}
_generation = 0  # bumped by every change made through this process (any database: cheap, rare)


def _bump(*_: Any) -> None:
    global _generation
    with _lock:
        _generation += 1


def _key(session: Session) -> str:
    return database_key(session.get_bind().engine.url)


def _changed(session: Session) -> None:
    """Invalidate now and again once committed (a look that read the table before the commit cannot
    keep the old marks then)."""
    _bump()
    event.listen(session, "after_commit", _bump, once=True)


#: ``/_sandbox/reset`` empties the table with plain SQL (:meth:`paysdk.server.db.Database.reset`): that
#: changes the marks too, before and after its commit.
on_reset(_bump)


@event.listens_for(Session, "do_orm_execute")
def _on_execute(state: ORMExecuteState) -> None:
    """An ORM ``DELETE`` of the whole table changes the marks too."""
    if state.is_delete and getattr(state.statement, "table", None) is DeprecationRow.__table__:
        _changed(state.session)


# ------------------------------------------------------------------------------------ the request path


def stale(key: str) -> bool:
    """Whether the marks of database ``key`` must be read again before use."""
    known = _registry.get(key)
    return (
        known is None
        or known.generation != _generation
        or time.monotonic() - known.looked_at >= REFRESH_SECONDS
    )


def fresh(key: str) -> Marks | None:
    """The marks of database ``key`` as read last when they need no new look (not :func:`stale`), else
    ``None``: :func:`stale` and :func:`headers_for` in one call, the request path's (D501)."""
    known = _registry.get(key)
    if (
        known is None
        or known.generation != _generation
        or time.monotonic() - known.looked_at >= REFRESH_SECONDS
    ):
        return None
    return known.marks


def headers_for(key: str) -> Marks:
    """The marks of database ``key`` as read last (:func:`load` them first when :func:`stale`)."""
    known = _registry.get(key)
    return known.marks if known is not None else {}


@functools.lru_cache(maxsize=1024)
def _pattern(template: str) -> re.Pattern[str]:
    return re.compile(template_regex(template))


def marked(
    marks: Marks, method: str, path: str, route_path: str | None = None
) -> tuple[tuple[bytes, bytes], ...] | None:
    """The headers of the marked operation a request ``method path`` is one of, else ``None`` (D392).

    The operation is named from the request's own path, matched against the marked operations'
    templates (``/rest/cards/{cardId}`` takes ``/rest/cards/crd_1``) as ``/openapi.json`` names them,
    mount prefix included: so every answer of it is marked, whether FastAPI routed it, the fast lane
    answered it, or an ASGI layer refused it before routing (a ``413``). Should two marked templates take
    the path, ``route_path`` (the path of the route that answered, without its mount prefix, when one
    did) picks the one it ends with."""
    exact = marks.get(f"{method} {path}")
    if exact is not None:
        return exact
    prefix = method + " "
    found = [
        (name, pairs)
        for name, pairs in marks.items()
        if name.startswith(prefix) and _pattern(name[len(prefix) :]).fullmatch(path)
    ]
    if len(found) > 1 and route_path:
        found = [item for item in found if item[0].endswith(route_path)] or found
    return found[0][1] if found else None


def load(connection: Connection, key: str) -> Marks:
    """Read the marks (one small query) and keep them for ``key``."""
    generation = _generation  # read before the query: a change during it leaves the result stale
    rows = connection.execute(
        select(
            DeprecationRow.operation, DeprecationRow.deprecated_at, DeprecationRow.sunset, DeprecationRow.link
        )
    ).all()
    marks: dict[str, tuple[tuple[bytes, bytes], ...]] = {}
    for operation, deprecated_at, sunset, link in rows:
        marks[operation] = _headers(
            operation, _aware(deprecated_at), _aware(sunset) if sunset else None, link
        )
    known = _Known(marks=marks, generation=generation, looked_at=time.monotonic())
    with _lock:
        _registry[key] = known
    return marks


def _aware(value: datetime) -> datetime:
    from datetime import UTC

    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _headers(
    operation: str, deprecated_at: datetime, sunset: datetime | None, link: str | None
) -> tuple[tuple[bytes, bytes], ...]:
    pairs = [(b"deprecation", b"@%d" % int(deprecated_at.timestamp()))]
    if sunset is not None:
        pairs.append((b"sunset", email.utils.format_datetime(sunset, usegmt=True).encode("ascii")))
    if link is not None:
        pairs.append((b"link", f'<{link}>; rel="deprecation"'.encode("ascii")))
    pairs.append((OPERATION_HEADER.lower().encode("ascii"), operation.encode("ascii")))
    return tuple(pairs)


# ------------------------------------------------------------------------------------ the control plane


def _view(row: DeprecationRow) -> Deprecation:
    return Deprecation(
        operation=row.operation,
        deprecated_at=_aware(row.deprecated_at),
        sunset=_aware(row.sunset) if row.sunset else None,
        link=row.link,
    )


def normalize(operation: str, known: frozenset[str]) -> str:
    """``"METHOD /path"`` as ``/openapi.json`` names it (the method in upper case); ``409`` naming
    ``operation`` for one it does not list."""
    method, _, path = operation.strip().partition(" ")
    name = f"{method.upper()} {path.strip()}"
    if name not in known:
        raise APIProblem.invalid_field(
            "operation", f"is not a public operation of /openapi.json (as 'METHOD /path'): {operation!r}"
        )
    return name


def put(session: Session, now: datetime, spec: DeprecationSet, known: frozenset[str]) -> Deprecation:
    """Mark (or mark again) an operation deprecated."""
    name = normalize(spec.operation, known)
    deprecated_at = spec.deprecated_at or now
    if deprecated_at.tzinfo is None:
        raise APIProblem.invalid_field("deprecatedAt", "must carry a UTC offset")
    if spec.sunset is not None:
        if spec.sunset.tzinfo is None:
            raise APIProblem.invalid_field("sunset", "must carry a UTC offset")
        if spec.sunset < deprecated_at:
            raise APIProblem.invalid_field("sunset", "must not be before deprecatedAt")
    row = session.get(DeprecationRow, name)
    if row is None:
        row = DeprecationRow(operation=name, created_at=now, deprecated_at=deprecated_at)
        session.add(row)
    row.deprecated_at, row.sunset, row.link = deprecated_at, spec.sunset, spec.link
    _changed(session)
    session.flush()
    return _view(row)


def clear(session: Session, operation: str | None, known: frozenset[str]) -> int:
    """Remove one operation's mark (``operation``), or every mark; how many were removed."""
    statement = delete(DeprecationRow)
    if operation is not None:
        statement = statement.where(DeprecationRow.operation == normalize(operation, known))
    result = session.execute(statement.execution_options(synchronize_session=False))
    _changed(session)
    return int(getattr(result, "rowcount", 0) or 0)


def list_all(session: Session) -> list[Deprecation]:
    """Every mark, by operation."""
    return [_view(row) for row in session.scalars(select(DeprecationRow).order_by(DeprecationRow.operation))]
