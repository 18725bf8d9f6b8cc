"""Fault injection (WireMock-style) for the public surface and callback delivery.

``route`` is ``"*"``, ``"/path"`` or ``"METHOD /path"``; a path ending in ``*`` matches a prefix. Faults
never apply to the control plane (``/_sandbox``), so they can always be listed and removed, except to
the upload sink ``POST /_sandbox/uploads`` (it stands for the upload routes in tests of an SDK's
retries) and there only when the fault's route names it (``POST /_sandbox/uploads``), never ``*``.
Each matching request (or, for ``duplicate_callback`` and ``callback_down``, each callback event round)
uses one of ``count``; the use is taken with a conditional ``UPDATE ... WHERE remaining > 0`` so
concurrent requests never over-use one.
Faults apply in creation order: the oldest matching fault wins. ``stream_cut`` faults are taken when an
event stream starts (:func:`take_stream_fault`), the control plane's ``/_sandbox/events`` included: the
stream's connection is dropped after ``after_events`` events (D118).

The request path asks the database only when a request fault may exist. A process-wide registry, keyed by
database (:func:`database_key`), remembers per database whether the last look found no request fault
(:func:`request_faults_possible`). Every fault created through any app instance of this process marks its
database "faults possible" (before and again after its commit, so a look that raced the commit cannot
clear the mark), so every instance of the process over that database honours the fault from the answer of
``POST /_sandbox/faults`` on, exactly as before. Only removals (uses, ``DELETE``, reset) change the
database without marking it, and they can only make a stale "faults possible" mark cost one extra look.

Limit: a fault written by *another process* into the same database file is not announced to this one; it
is seen by the first request of this process after :data:`REFRESH_SECONDS` (1 s) since this process last
looked, at the latest. Within one process nothing is delayed.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, event, func, select, update
from sqlalchemy.engine import URL, Connection, Row
from sqlalchemy.orm import Session

from paysdk.contracts.sandbox import Fault, FaultCreate
from paysdk.server.core_tables import FaultRow

__all__ = [
    "REFRESH_SECONDS",
    "REQUEST_KINDS",
    "STREAM_KINDS",
    "any_left",
    "consume_callback_down",
    "consume_duplicate_callback",
    "create",
    "database_key",
    "delete_all",
    "list_all",
    "matches",
    "request_faults_possible",
    "take_request_fault",
    "take_request_fault_core",
    "take_stream_fault",
]

REQUEST_KINDS = ("latency", "error", "rate_limit", "drop")
#: Faults taken when an event stream starts (``stream_cut``: drop its connection after N events, D118).
STREAM_KINDS = ("stream_cut",)
#: How long "no request fault" is trusted without a look (bounds how late another process's fault is seen).
REFRESH_SECONDS = 1.0


# -------------------------------------------------------------------- process-wide "faults possible"


@dataclass(slots=True)
class _Known:
    generation: int = 0  # bumped by every fault created in this process over the database
    possible: bool = True  # False only after a look found no request fault (and nothing was created since)
    looked_at: float = float("-inf")  # time.monotonic() of that look


_registry: dict[str, _Known] = {}
_registry_lock = threading.Lock()


def database_key(url: URL) -> str:
    """The registry key of a database: the SQLite file's real path, else the full URL."""
    if url.get_backend_name() == "sqlite":
        database = url.database or ":memory:"
        return "sqlite:" + (database if database == ":memory:" else os.path.realpath(database))
    return url.render_as_string(hide_password=False)


def _known(key: str) -> _Known:
    known = _registry.get(key)
    if known is None:
        with _registry_lock:
            known = _registry.setdefault(key, _Known())
    return known


def _mark_possible(key: str) -> None:
    known = _known(key)
    with _registry_lock:
        known.generation += 1
        known.possible = True


def request_faults_possible(key: str) -> bool:
    """Whether a request to the database ``key`` must look for a request fault (see the docstring)."""
    known = _known(key)
    return known.possible or time.monotonic() - known.looked_at >= REFRESH_SECONDS


def _view(row: FaultRow | Row[Any]) -> Fault:
    return Fault(
        id=row.id,
        kind=row.kind,
        route=row.route,
        count=row.count,
        remaining=row.remaining,
        status=row.status,
        latency_ms=row.latency_ms,
        retry_after=row.retry_after,
        after_events=row.after_events,
    )


def create(session: Session, spec: FaultCreate, now: datetime) -> Fault:
    """Store a fault with its defaults filled in (error: 500, rate_limit: Retry-After 1, latency: 1000 ms)."""
    seq = (session.scalar(select(func.max(FaultRow.seq))) or 0) + 1
    row = FaultRow(
        id="flt_" + secrets.token_hex(8),
        seq=seq,
        kind=spec.kind,
        route=spec.route.strip() or "*",
        count=spec.count,
        remaining=spec.count,
        status=spec.status if spec.status is not None else (500 if spec.kind == "error" else None),
        latency_ms=spec.latency_ms
        if spec.latency_ms is not None
        else (1000 if spec.kind == "latency" else None),
        retry_after=spec.retry_after
        if spec.retry_after is not None
        else (1 if spec.kind == "rate_limit" else None),
        after_events=spec.after_events
        if spec.after_events is not None
        else (1 if spec.kind == "stream_cut" else None),
        created_at=now,
    )
    key = database_key(session.get_bind().engine.url)
    _mark_possible(key)
    # Marked again once committed: a look that read the table before this commit cannot clear it then.
    event.listen(session, "after_commit", lambda _session: _mark_possible(key), once=True)
    session.add(row)
    session.flush()
    return _view(row)


def list_all(session: Session) -> list[Fault]:
    """Every stored fault, oldest first."""
    return [_view(row) for row in session.scalars(select(FaultRow).order_by(FaultRow.seq))]


def delete_all(session: Session) -> int:
    """Remove every fault; returns how many there were."""
    count = session.scalar(select(func.count()).select_from(FaultRow)) or 0
    session.execute(delete(FaultRow))
    return int(count)


def matches(route: str, method: str, path: str) -> bool:
    """Whether a fault's ``route`` applies to ``method path``. A control-plane path (only the upload
    sink asks) is matched only by a route that names a ``/_sandbox/`` path itself, never by ``*``."""
    route = route.strip()
    control = path.startswith("/_sandbox/")
    if route in ("", "*"):
        return not control
    want_method, _, want_path = route.partition(" ") if " " in route else ("", "", route)
    if want_method and want_method.upper() != method.upper():
        return False
    want_path = want_path.strip()
    if control and not want_path.startswith("/_sandbox/"):
        return False
    if want_path in ("", "*"):
        return True
    if want_path.endswith("*"):
        return path.startswith(want_path[:-1])
    return path.rstrip("/") == want_path.rstrip("/")


def _take(session: Session, row: FaultRow) -> bool:
    result = session.execute(
        update(FaultRow)
        .where(FaultRow.id == row.id, FaultRow.remaining > 0)
        .values(remaining=FaultRow.remaining - 1)
        .execution_options(synchronize_session=False)
    )
    return getattr(result, "rowcount", 0) == 1


def _take_oldest(session: Session, kinds: Collection[str], method: str, path: str) -> Fault | None:
    """Use one of the oldest fault of ``kinds`` matching ``method path``, if any."""
    rows = session.scalars(
        select(FaultRow).where(FaultRow.remaining > 0, FaultRow.kind.in_(kinds)).order_by(FaultRow.seq)
    ).all()
    for row in rows:
        if matches(row.route, method, path) and _take(session, row):
            session.refresh(row)
            return _view(row)
    return None


def take_request_fault(session: Session, method: str, path: str) -> Fault | None:
    """Use one of the oldest request fault matching ``method path``, if any."""
    return _take_oldest(session, REQUEST_KINDS, method, path)


_FAULT_TABLE = cast(Table, FaultRow.__table__)
_REQUEST_FAULTS = (
    select(_FAULT_TABLE.c.id, _FAULT_TABLE.c.route)
    .where(_FAULT_TABLE.c.remaining > 0, _FAULT_TABLE.c.kind.in_(REQUEST_KINDS))
    .order_by(_FAULT_TABLE.c.seq)
)
_TAKE = (
    update(_FAULT_TABLE)
    .where(_FAULT_TABLE.c.id == bindparam("fault_id"), _FAULT_TABLE.c.remaining > 0)
    .values(remaining=_FAULT_TABLE.c.remaining - 1)
)
_ONE = select(_FAULT_TABLE).where(_FAULT_TABLE.c.id == bindparam("fault_id"))


def take_request_fault_core(connection: Connection, key: str, method: str, path: str) -> Fault | None:
    """:func:`take_request_fault` with Core statements; records a look that found none in the registry."""
    known = _known(key)
    with _registry_lock:
        generation = known.generation
    looked_at = time.monotonic()
    rows = connection.execute(_REQUEST_FAULTS).all()
    if not rows:
        with _registry_lock:
            if known.generation == generation:  # nothing was created meanwhile
                known.possible = False
                known.looked_at = looked_at
        return None
    for fault_id, route in rows:
        if matches(route, method, path):
            result = connection.execute(_TAKE, {"fault_id": fault_id})
            if getattr(result, "rowcount", 0) == 1:
                return _view(connection.execute(_ONE, {"fault_id": fault_id}).one())
    return None


def take_stream_fault(session: Session, method: str, path: str) -> Fault | None:
    """Use one of the oldest ``stream_cut`` fault matching ``method path`` (an event stream that starts;
    the control plane's ``/_sandbox/events`` included), if any."""
    return _take_oldest(session, STREAM_KINDS, method, path)


def any_left(session: Session) -> bool:
    """Whether any request fault has uses left."""
    statement = select(FaultRow.id).where(FaultRow.remaining > 0, FaultRow.kind.in_(REQUEST_KINDS)).limit(1)
    return session.scalar(statement) is not None


def consume_duplicate_callback(session: Session) -> bool:
    """Use one ``duplicate_callback`` fault, if any is left: the current delivery is sent twice."""
    rows = session.scalars(
        select(FaultRow)
        .where(FaultRow.remaining > 0, FaultRow.kind == "duplicate_callback")
        .order_by(FaultRow.seq)
    ).all()
    return any(_take(session, row) for row in rows[:1])


def consume_callback_down(session: Session) -> bool:
    """Use one ``callback_down`` fault, if any is left: the current delivery round fails as a receiver
    that refuses connections would (nothing is sent; the round is recorded and retried as usual, D703)."""
    rows = session.scalars(
        select(FaultRow)
        .where(FaultRow.remaining > 0, FaultRow.kind == "callback_down")
        .order_by(FaultRow.seq)
    ).all()
    return any(_take(session, row) for row in rows[:1])
