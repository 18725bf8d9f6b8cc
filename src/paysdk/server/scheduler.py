"""Timed jobs on the virtual clock: callback deliveries/retries (D16) and expiries (D10, D19).

Jobs live in the ``jobs`` table (``kind``, ``ref``, ``due_at``, ``status``). A job is claimed with a
conditional ``UPDATE ... WHERE status = 'pending'`` so it runs once even with several runners.
Transaction expiries need no job row: a pending transaction is due at its ``expire_at`` (an index on
``(status, expire_at)`` finds the next), and expiring it is the conditional ``pending -> expired`` move,
so it happens once however many runners find it. Jobs and expiries run in one order: due time first,
an expiry before a job due at the same moment.

* :meth:`Scheduler.run_due` runs every job due at the current virtual time, oldest due first, including
  jobs that running a job creates (an expiry queues its callback, due at once).
* :meth:`Scheduler.advance` moves the virtual clock forward by steps: it runs every job due before the
  target *at its own due time* (the clock is set to the job's ``due_at`` first), so callback retries land
  exactly 1, 2, 4 ... minutes apart even when the clock jumps a week; then the clock is set to the target.
  A job runs on the clock frozen at its due time (:meth:`Clock.frozen_at`): what it causes happens at
  that virtual time, so a job it creates (an expiry's callback, due at once) is due before the target
  and runs in the same advance, however long the wall clock took.
* :meth:`Scheduler.ticker` runs :meth:`run_due` about every second of wall time while the app is served
  with its lifespan (uvicorn). In process (``httpx.ASGITransport``, no lifespan) tests drive time with
  ``POST /_sandbox/clock/advance``.

One asyncio lock serializes runners of one app, so the ticker and a clock advance never interleave.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from paysdk.contracts.payment_links import TransactionStatus
from paysdk.server.clock import Clock
from paysdk.server.context import ServerContext
from paysdk.server.db import JobRow, TransactionRow
from paysdk.server.events import publish_job_run
from paysdk.server.services import callbacks, payments

__all__ = ["JOB_HANDLERS", "ClaimedJob", "Scheduler"]

log = logging.getLogger("paysdk.server.scheduler")

#: Job kinds other families register: ``handler(session, clock, ref)``, run in one transaction with the
#: job marked done in the same transaction (the wallet's authorization expiry, D43, registers here).
JOB_HANDLERS: dict[str, Callable[[Session, Clock, str], None]] = {}


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job this runner now owns, or a transaction expiry (``id`` ``None``, ``ref`` the uid)."""

    id: int | None
    kind: str
    ref: str
    due_at: datetime


def _next_expiry(session: Session, limit: datetime, skip: Collection[str]) -> ClaimedJob | None:
    """The pending transaction that expires first, at ``limit`` or before (``skip``: uids left alone)."""
    statement = (
        select(TransactionRow.uid, TransactionRow.expire_at)
        .where(TransactionRow.status == TransactionStatus.PENDING, TransactionRow.expire_at <= limit)
        .order_by(TransactionRow.expire_at, TransactionRow.id)
        .limit(1)
    )
    if skip:
        statement = statement.where(TransactionRow.uid.not_in(list(skip)))
    row = session.execute(statement).first()
    return None if row is None else ClaimedJob(None, "expire", row.uid, row.expire_at)


def _claim_next(
    session: Session, until: datetime | None, skip: Collection[str] = ()
) -> ClaimedJob | None:
    """Claim the oldest pending job or transaction expiry due at ``until`` (``None``: the virtual now);
    an expiry comes first on a tie. ``skip``: transaction uids whose expiry is left alone."""
    limit = until if until is not None else session.info["paysdk_now"]
    expiry = _next_expiry(session, limit, skip)
    for _ in range(10):
        row = session.scalars(
            select(JobRow)
            .where(JobRow.status == "pending", JobRow.due_at <= limit)
            .order_by(JobRow.due_at, JobRow.id)
            .limit(1)
        ).first()
        if expiry is not None and (row is None or expiry.due_at <= row.due_at):
            return expiry
        if row is None:
            return None
        result = session.execute(
            update(JobRow)
            .where(JobRow.id == row.id, JobRow.status == "pending")
            .values(status="running")
            .execution_options(synchronize_session=False)
        )
        if getattr(result, "rowcount", 0) == 1:
            return ClaimedJob(row.id, row.kind, row.ref, row.due_at)
    return None  # pragma: no cover - lost ten races in a row


class Scheduler:
    """Runs the jobs of one server instance."""

    def __init__(self, context: ServerContext) -> None:
        self._context = context
        self._lock = asyncio.Lock()
        #: Transactions whose expiry failed: left alone from then on (as a failed job is marked done),
        #: so one broken row cannot keep a runner busy.
        self._failed_expiries: set[str] = set()

    def _claim(self, session: Session, until: datetime | None, move_clock: bool) -> ClaimedJob | None:
        clock = self._context.clock
        session.info["paysdk_now"] = clock.now(session)
        job = _claim_next(session, until, self._failed_expiries)
        if job is not None and move_clock:
            clock.move_to_at_least(session, job.due_at)
        return job

    async def _run_one(self, job: ClaimedJob, clock: Clock) -> None:
        context = self._context
        try:
            if job.kind == "callback":
                assert job.id is not None  # only expiries have no job row
                await callbacks.deliver_job(context, job.id, job.ref, job.due_at, clock)
            elif job.kind == "expire":
                await context.run(self._expire, job, clock)
            elif job.kind in JOB_HANDLERS:
                await context.run(self._registered, job, clock)
            else:  # pragma: no cover - unknown kinds come only from a newer server version
                log.warning("unknown job kind %r (job %s) skipped", job.kind, job.id)
                await context.run(_finish_job, job.id)
            publish_job_run(context, job, "done")  # the live feed (/_sandbox/events)
        except Exception:
            # A job must never stop the scheduler: log, mark it done so it does not loop forever.
            log.exception("job %s (%s) failed", job.id, job.kind)
            publish_job_run(context, job, "failed")
            if job.id is None:
                self._failed_expiries.add(job.ref)
            else:
                await context.run(_finish_job, job.id)

    def _registered(self, session: Session, job: ClaimedJob, clock: Clock) -> None:
        JOB_HANDLERS[job.kind](session, clock, job.ref)
        _finish_job(session, job.id)

    def _expire(self, session: Session, job: ClaimedJob, clock: Clock) -> None:
        payments.expire_job(session, clock, job.ref)
        _finish_job(session, job.id)  # an ``expire`` job row of an older version; none now

    async def run_due(self) -> int:
        """Run every job due now (and those they make due). Returns how many ran."""
        ran = 0
        async with self._lock:
            while True:
                job = await self._context.run(self._claim, None, False)
                if job is None:
                    return ran
                await self._run_one(job, self._context.clock)
                ran += 1

    async def advance(self, seconds: timedelta) -> int:
        """Move the virtual clock ``seconds`` forward, running every job that falls due on the way."""
        ran = 0
        clock = self._context.clock
        step = seconds // timedelta(microseconds=1)
        async with self._lock:
            start_offset, start = await self._context.run(lambda s: (clock.offset_us(s), clock.now(s)))
            target = start + seconds
            while True:
                job = await self._context.run(self._claim, target, True)
                if job is None:
                    break
                await self._run_one(job, clock.frozen_at(job.due_at))
                ran += 1
            # The offset grows by exactly ``seconds`` (more only if a job's due time needed it).
            await self._context.run(clock.set_offset_at_least, start_offset + step)
        return ran

    def recover(self) -> None:
        """Put jobs left ``running`` by a crashed process back to ``pending`` (called at start-up)."""
        with self._context.db.session() as session:
            session.execute(update(JobRow).where(JobRow.status == "running").values(status="pending"))

    async def ticker(self, interval: float = 1.0) -> None:
        """Run due jobs every ``interval`` seconds of wall time until cancelled."""
        while True:
            try:
                await self.run_due()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("scheduler tick failed")
            await asyncio.sleep(interval)


def _finish_job(session: Session, job_id: int | None) -> None:
    if job_id is None:  # a transaction expiry: no job row
        return
    job = session.get(JobRow, job_id)
    if job is not None:
        job.status = "done"
