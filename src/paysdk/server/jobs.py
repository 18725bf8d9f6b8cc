"""The job queue of the reference server: adding, claiming and finishing timed jobs (decisions D125-D127).

This module owns every write to the ``jobs`` table (:class:`~paysdk.server.core_tables.JobRow`); it depends
on the tables and nothing above them. :mod:`paysdk.server.scheduler` drives it (when to claim, on which clock,
with which handler); a family only calls :func:`add` (or :func:`ensure_recurring`) and declares a handler.

* **Two clocks.** A job's ``due_at`` counts *virtual* time (:mod:`paysdk.server.clock`, moved by
  ``POST /_sandbox/clock/advance``); its lease counts *wall-clock* time, because a lease measures whether
  the process holding it still lives, which a clock advance says nothing about.
* **Claim by lease.** :func:`claim` picks the oldest job due at the limit that is ``pending``, or
  ``running`` under a lease that expired (its process died: it is taken over), with
  ``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL, then takes it with a conditional ``UPDATE`` (the
  whole guard on SQLite, where one process serves a database and ``BEGIN IMMEDIATE`` orders writers). It
  becomes ``running`` under ``lease_owner`` until ``lease_until``; ``attempts`` counts the runs started.
  A long job's runner extends the lease (:func:`extend`) while it runs.
* **Finish in the same transaction as the effects.** :func:`complete` and :func:`fail` change the row
  only while the caller still holds the lease (``lease_owner`` and ``running``); otherwise they raise
  :class:`LeaseLost`, so the caller's transaction, the job's database effects included, rolls back and
  the runner that took the job over decides. A taken-over job therefore repeats only its external
  effects (a callback POSTed again with the same ``eventId``, as spec 6.4 allows).
* **Recurring jobs** (``every``): completing one moves its ``due_at`` one interval on (from the due time,
  never from the wall time, so the schedule does not drift) and makes it ``pending`` again.
* **Failures** (D126): a handler that raises is retried after :func:`retry_wait` (1, 2, 4, 8 minutes of
  virtual time); after :data:`MAX_ATTEMPTS` runs that raised the job stays ``failed``. Nothing is
  forgotten: ``attempts``, ``last_error``, the next due time and the lease owner stay on the row, and
  ``GET /_sandbox/jobs`` lists them (:func:`listing`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session
from sqlalchemy.sql import ColumnElement

from paysdk.contracts.sandbox import SandboxJob
from paysdk.server.core_tables import JobRow

__all__ = [
    "FIRST_RETRY",
    "KIND_LENGTH",
    "LEASE",
    "MAX_ATTEMPTS",
    "MAX_RETRY_WAIT",
    "ClaimedJob",
    "LeaseLost",
    "add",
    "claim",
    "claimable_at",
    "complete",
    "ensure_recurring",
    "extend",
    "fail",
    "listing",
    "release_all",
    "retry_wait",
]

#: Wall-clock time a claim holds a job before another runner may take it over (D125).
LEASE = timedelta(seconds=30)
#: Runs that raised before a job stays ``failed`` (D126).
MAX_ATTEMPTS = 5
#: The wait after a run that raised: 1, 2, 4, 8 ... minutes of virtual time, at most 1 hour (D126).
FIRST_RETRY = timedelta(minutes=1)
MAX_RETRY_WAIT = timedelta(hours=1)
#: Characters ``jobs.kind`` holds.
KIND_LENGTH = 16


class LeaseLost(Exception):
    """The caller no longer holds the job's lease: another runner took it over (its transaction must roll
    back)."""


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job this runner now owns, or a transaction expiry (``id`` ``None``, ``ref`` the uid; see
    :mod:`paysdk.server.scheduler`). ``attempts`` counts this run."""

    id: int | None
    kind: str
    ref: str
    due_at: datetime
    attempts: int = 1
    every: timedelta | None = None


def retry_wait(failures: int) -> timedelta:
    """The wait after the ``failures``-th run that raised: 1, 2, 4 ... minutes, at most 1 hour."""
    if failures >= 8:  # 2**7 minutes already exceeds the cap
        return MAX_RETRY_WAIT
    wait: timedelta = FIRST_RETRY * (2 ** max(failures - 1, 0))
    return min(wait, MAX_RETRY_WAIT)


def add(
    session: Session,
    kind: str,
    ref: str,
    due_at: datetime,
    now: datetime,
    *,
    every: timedelta | None = None,
) -> JobRow:
    """Queue a job of ``kind`` about ``ref``, due at the virtual time ``due_at`` (``now``: the virtual
    time of its creation). ``every``: it recurs at that interval of virtual time from ``due_at``."""
    if not 0 < len(kind) <= KIND_LENGTH:
        raise ValueError(f"kind must be 1 to {KIND_LENGTH} characters, not {kind!r}")
    if every is not None and every <= timedelta(0):
        raise ValueError("every must be a positive interval")
    row = JobRow(
        kind=kind,
        ref=ref,
        due_at=due_at,
        status="pending",
        created_at=now,
        attempts=0,
        every_us=None if every is None else every // timedelta(microseconds=1),
    )
    session.add(row)
    return row


def ensure_recurring(
    session: Session, kind: str, ref: str, start: datetime, every: timedelta, now: datetime
) -> bool:
    """:func:`add` a job recurring ``every`` from ``start`` unless one of ``kind`` and ``ref`` is queued
    (not ``done``) already; whether it was added. For a run a family sets up once (a renewal run)."""
    existing = session.scalars(
        select(JobRow.id).where(JobRow.kind == kind, JobRow.ref == ref, JobRow.status != "done").limit(1)
    ).first()
    if existing is not None:
        return False
    add(session, kind, ref, start, now, every=every)
    session.flush()
    return True


def claimable_at(wall_now: datetime) -> ColumnElement[bool]:
    """A job that may be claimed at the wall time ``wall_now``: ``pending``, or ``running`` under a lease
    that has expired (its runner died)."""
    return or_(
        JobRow.status == "pending",
        and_(JobRow.status == "running", or_(JobRow.lease_until.is_(None), JobRow.lease_until < wall_now)),
    )


def claim(
    session: Session,
    *,
    kinds: Collection[str],
    limit: datetime,
    owner: str,
    wall_now: datetime,
    lease: timedelta = LEASE,
) -> ClaimedJob | None:
    """Take the oldest job of ``kinds`` due at the virtual time ``limit`` or before that is ``pending``,
    or ``running`` under a lease expired at the wall time ``wall_now``; it is now ``owner``'s until
    ``wall_now + lease``. ``None`` when there is none (or ten others were taken under our feet)."""
    if not kinds:
        return None
    claimable = claimable_at(wall_now)
    for _ in range(10):
        row = session.execute(
            select(JobRow.id, JobRow.kind, JobRow.ref, JobRow.due_at, JobRow.attempts, JobRow.every_us)
            .where(JobRow.kind.in_(list(kinds)), JobRow.due_at <= limit, claimable)
            .order_by(JobRow.due_at, JobRow.id)
            .limit(1)
            .with_for_update(skip_locked=True)  # PostgreSQL; SQLite renders nothing (BEGIN IMMEDIATE)
        ).first()
        if row is None:
            return None
        attempts = (row.attempts or 0) + 1
        result = session.execute(
            update(JobRow)
            .where(JobRow.id == row.id, claimable)
            .values(status="running", lease_owner=owner, lease_until=wall_now + lease, attempts=attempts)
            .execution_options(synchronize_session=False)
        )
        if getattr(result, "rowcount", 0) == 1:
            every = None if row.every_us is None else timedelta(microseconds=row.every_us)
            return ClaimedJob(row.id, row.kind, row.ref, row.due_at, attempts, every)
    return None  # pragma: no cover - lost ten races in a row


def _held(job_id: int, owner: str) -> ColumnElement[bool]:
    """The job is still ``owner``'s: running under its lease."""
    return and_(JobRow.id == job_id, JobRow.status == "running", JobRow.lease_owner == owner)


def extend(session: Session, job_id: int, owner: str, until: datetime) -> bool:
    """Extend ``owner``'s lease of a running job to the wall time ``until`` (a heartbeat); ``False`` when
    the lease was lost."""
    result = session.execute(
        update(JobRow)
        .where(_held(job_id, owner))
        .values(lease_until=until)
        .execution_options(synchronize_session=False)
    )
    return getattr(result, "rowcount", 0) == 1


def complete(session: Session, job: ClaimedJob, owner: str) -> None:
    """Finish ``job`` in the caller's transaction (with the job's database effects): ``done``, or for a
    recurring job ``pending`` again one interval after its due time. Raises :class:`LeaseLost` when
    ``owner`` no longer holds it. A transaction expiry (``id`` ``None``) has no row: nothing to do."""
    if job.id is None:
        return
    values: dict[str, object] = {"status": "done", "lease_until": None}
    if job.every is not None:
        values = {"status": "pending", "lease_until": None, "attempts": 0, "due_at": job.due_at + job.every}
    _update_held(session, job, owner, values)


def _update_held(session: Session, job: ClaimedJob, owner: str, values: dict[str, object]) -> None:
    """Set ``values`` on the row of ``job`` while ``owner`` holds its lease; :class:`LeaseLost` otherwise."""
    assert job.id is not None
    result = session.execute(
        update(JobRow)
        .where(_held(job.id, owner))
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if getattr(result, "rowcount", 0) != 1:
        raise LeaseLost(f"job {job.id} ({job.kind}) is no longer held by {owner}")


def fail(session: Session, job: ClaimedJob, owner: str, error: str, now: datetime) -> str:
    """Record that ``job`` raised ``error`` at the virtual time ``now``: ``pending`` again after
    :func:`retry_wait`, or ``failed`` for good after :data:`MAX_ATTEMPTS` runs. Returns the new status.
    Raises :class:`LeaseLost` when ``owner`` no longer holds it."""
    assert job.id is not None
    status = "failed" if job.attempts >= MAX_ATTEMPTS else "pending"
    values: dict[str, object] = {"status": status, "lease_until": None, "last_error": error[:500]}
    if status == "pending":
        values["due_at"] = max(now, job.due_at) + retry_wait(job.attempts)
    _update_held(session, job, owner, values)
    return status


def release_all(session: Session) -> int:
    """Make every ``running`` job ``pending`` again (start-up of the one process a SQLite database has:
    whatever ran was interrupted). Returns how many."""
    result = session.execute(
        update(JobRow)
        .where(JobRow.status == "running")
        .values(status="pending", lease_until=None)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def listing(
    session: Session,
    *,
    status: str | None = None,
    kind: str | None = None,
    limit: int = 200,
) -> list[SandboxJob]:
    """Jobs for ``GET /_sandbox/jobs``, the most recently created first (``status``, ``kind``: filters)."""
    statement = select(JobRow).order_by(JobRow.id.desc()).limit(limit)
    if status is not None:
        statement = statement.where(JobRow.status == status)
    if kind is not None:
        statement = statement.where(JobRow.kind == kind)
    return [
        SandboxJob(
            id=row.id,
            kind=row.kind,
            ref=row.ref,
            status=row.status,
            attempts=row.attempts or 0,
            last_error=row.last_error,
            due_at=row.due_at,
            every_seconds=None if row.every_us is None else row.every_us // 1_000_000,
            lease_owner=row.lease_owner,
            lease_until=row.lease_until,
            created_at=row.created_at,
        )
        for row in session.scalars(statement)
    ]
