"""Fault injection (WireMock-style) for the public surface and callback delivery.

``route`` is ``"*"``, ``"/path"`` or ``"METHOD /path"``; a path ending in ``*`` matches a prefix. Faults
never apply to the control plane (``/_sandbox``), so they can always be listed and removed. Each matching
request (or, for ``duplicate_callback``, each callback event round) uses one of ``count``; the use is
taken with a conditional ``UPDATE ... WHERE remaining > 0`` so concurrent requests never over-use one.
Faults apply in creation order: the oldest matching fault wins.
"""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from paysdk.contracts.sandbox import Fault, FaultCreate
from paysdk.server.db import FaultRow

__all__ = [
    "REQUEST_KINDS",
    "any_left",
    "consume_duplicate_callback",
    "create",
    "delete_all",
    "list_all",
    "matches",
    "take_request_fault",
]

REQUEST_KINDS = ("latency", "error", "rate_limit", "drop")


def _view(row: FaultRow) -> Fault:
    return Fault(
        id=row.id,
        kind=row.kind,
        route=row.route,
        count=row.count,
        remaining=row.remaining,
        status=row.status,
        latency_ms=row.latency_ms,
        retry_after=row.retry_after,
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
        created_at=now,
    )
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
    """Whether a fault's ``route`` applies to ``method path``."""
    route = route.strip()
    if route in ("", "*"):
        return True
    want_method, _, want_path = route.partition(" ") if " " in route else ("", "", route)
    if want_method and want_method.upper() != method.upper():
        return False
    want_path = want_path.strip()
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


def take_request_fault(session: Session, method: str, path: str) -> Fault | None:
    """Use one of the oldest request fault matching ``method path``, if any."""
    rows = session.scalars(
        select(FaultRow)
        .where(FaultRow.remaining > 0, FaultRow.kind.in_(REQUEST_KINDS))
        .order_by(FaultRow.seq)
    ).all()
    for row in rows:
        if matches(row.route, method, path) and _take(session, row):
            session.refresh(row)
            return _view(row)
    return None


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
