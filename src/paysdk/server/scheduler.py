"""Timed jobs on the virtual clock: callback deliveries/retries (D16), expiries (D10, D19), the jobs of the
families (the wallet's authorization expiry, D43) and recurring runs.

Jobs live in the ``jobs`` table; :mod:`paysdk.server.jobs` adds, claims (by lease), completes and fails
them (D125-D127). Transaction expiries need no job row: a pending transaction is due at its ``expire_at``
(an index on ``(status, expire_at)`` finds the next), and expiring it is the conditional
``pending -> expired`` move, so it happens once however many runners find it. Jobs and expiries run in
one order: due time first, an expiry before a job due at the same moment.

* :meth:`Scheduler.run_due` runs every job due at the current virtual time, oldest due first, including
  jobs that running a job creates (an expiry queues its callback, due at once).
* :meth:`Scheduler.advance` moves the virtual clock forward: it adds the step to the stored offset in one
  statement (concurrent advances on any number of processes add up, D361), then runs every job due up
  to the new time *at its own due time*, so callback retries land exactly 1, 2, 4 ... minutes apart even
  when the clock jumps a week. A job runs on the clock frozen at its due time (:meth:`Clock.frozen_at`):
  what it causes happens at that virtual time, so a job it creates (an expiry's callback, due at once)
  is due before the target and runs in the same advance, however long the wall clock took.
* :meth:`Scheduler.ticker` runs :meth:`run_due` about every second of wall time while the app is served
  with its lifespan (uvicorn). In process (``httpx.ASGITransport``, no lifespan) tests drive time with
  ``POST /_sandbox/clock/advance``.

Handlers are given to the scheduler (``Scheduler(context, handlers)``), one per job kind: the families'
(:func:`paysdk.server.families.job_handlers` of the registrations, passed by
:func:`paysdk.server.app.create_app`; the payment links register ``callback`` and ``expire``, the handler
of transaction expiries, so the scheduler names no family's code, D553). A job of a kind this scheduler has no
handler for (written by another version, or by a family this server does not register) is never claimed:
it stays ``pending``, visible in ``GET /_sandbox/jobs``, and :meth:`Scheduler.recover` logs an error naming
it at start. A handler is either

* sync, ``handler(session, clock, ref)``: it runs inside the transaction that completes the job, so its
  database effects commit exactly when the job is done (the wallet's authorization expiry); or
* async, ``await handler(context, job, clock)``: it does its external work first (a callback's POST) and
  returns ``finish(session)`` (or ``None``), which runs in the transaction that completes the job.

While a job runs its runner extends the lease (a heartbeat every third of it), so a long job keeps it;
a job whose process died is taken over by another runner once its lease expired. A handler that raises
is retried with backoff and ends ``failed`` after :data:`paysdk.server.jobs.MAX_ATTEMPTS` runs (D126).

One asyncio lock serializes runners of one app, so the ticker and a clock advance never interleave;
several server processes on one PostgreSQL database share the queue through the leases.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from datetime import UTC, datetime, timedelta
from typing import TypeAlias, cast

from sqlalchemy import Connection, func, literal, select
from sqlalchemy.orm import Session

from paysdk.server import jobs
from paysdk.server.clock import Clock
from paysdk.server.context import ServerContext
from paysdk.server.core_tables import ClockRow, JobRow, TransactionRow
from paysdk.server.events import publish_job_run
from paysdk.server.jobs import ClaimedJob, LeaseLost
from paysdk.server.refs import resolve

__all__ = [
    "AsyncJobHandler",
    "ClaimedJob",
    "JobHandler",
    "Scheduler",
    "SyncJobHandler",
]

log = logging.getLogger("paysdk.server.scheduler")

#: ``handler(session, clock, ref)``: runs in the transaction that completes the job.
SyncJobHandler: TypeAlias = Callable[[Session, Clock, str], None]
#: ``await handler(context, job, clock)``: external work, then ``finish(session)`` (or ``None``) to run in
#: the transaction that completes the job.
AsyncJobHandler: TypeAlias = Callable[
    [ServerContext, ClaimedJob, Clock], Awaitable[Callable[[Session], None] | None]
]
JobHandler: TypeAlias = SyncJobHandler | AsyncJobHandler

#: A transaction's status while it may expire (the payment links' ``TransactionStatus.PENDING``, written
#: here so the core imports no family's contract; tests/foundation/test_import_contracts.py holds them equal).
PENDING = "pending"


def _wall() -> datetime:
    return datetime.now(UTC)


def _owner_name() -> str:
    """This runner's lease owner: host, process and a random part (two apps of one process differ)."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"


def _next_expiry(session: Session, limit: datetime, skip: Collection[str]) -> ClaimedJob | None:
    """The pending transaction that expires first, at ``limit`` or before (``skip``: uids left alone)."""
    statement = (
        select(TransactionRow.uid, TransactionRow.expire_at)
        .where(TransactionRow.status == PENDING, TransactionRow.expire_at <= limit)
        .order_by(TransactionRow.expire_at, TransactionRow.id)
        .limit(1)
    )
    if skip:
        statement = statement.where(TransactionRow.uid.not_in(list(skip)))
    row = session.execute(statement).first()
    return None if row is None else ClaimedJob(None, "expire", row.uid, row.expire_at)


class Scheduler:
    """Runs the jobs of one server instance with ``handlers`` (job kind -> handler, see the module
    docstring). ``lease``: the wall-clock time a claim holds a job; ``wall``: the wall clock of the leases
    (injectable for tests); ``owner``: this runner's name in ``lease_owner`` (default: host, pid, random)."""

    def __init__(
        self,
        context: ServerContext,
        handlers: Mapping[str, JobHandler | str],
        *,
        lease: timedelta = jobs.LEASE,
        wall: Callable[[], datetime] = _wall,
        owner: str | None = None,
    ) -> None:
        self._context = context
        #: A handler given as a ``"module:attribute"`` reference is imported when a job of its kind first
        #: runs (D303), then kept here.
        self._handlers: dict[str, JobHandler | str] = dict(handlers)
        for kind in self._handlers:
            if not 0 < len(kind) <= jobs.KIND_LENGTH:
                raise ValueError(f"job kind must be 1 to {jobs.KIND_LENGTH} characters, not {kind!r}")
        self._lease = lease
        self._wall = wall
        self.owner = owner or _owner_name()
        self._lock = asyncio.Lock()
        #: Transactions whose expiry failed: left alone from then on, so one broken row cannot keep a
        #: runner busy (an expiry has no job row to record its failure on).
        self._failed_expiries: set[str] = set()

    @property
    def kinds(self) -> frozenset[str]:
        """The job kinds this scheduler runs."""
        return frozenset(self._handlers)

    def _claim(self, session: Session, until: datetime | None) -> ClaimedJob | None:
        """Claim the oldest job or transaction expiry due at ``until`` (``None``: the virtual now); an
        expiry comes first on a tie."""
        clock = self._context.clock
        limit = until if until is not None else clock.now(session)
        # Expiries run the ``expire`` kind's handler: a scheduler without one leaves transactions alone.
        job = _next_expiry(session, limit, self._failed_expiries) if "expire" in self._handlers else None
        claimed = jobs.claim(
            session,
            kinds=self._handlers.keys(),
            # A job due at the expiry's moment waits for it.
            limit=limit if job is None else job.due_at - timedelta(microseconds=1),
            owner=self.owner,
            wall_now=self._wall(),
            lease=self._lease,
        )
        return claimed or job

    async def _run_one(self, job: ClaimedJob, clock: Clock) -> None:
        context = self._context
        started = time.monotonic()
        if job.id is None:  # a transaction expiry
            try:
                expire = self._handlers["expire"]  # a reference imported on the first expiry (D303)
                if isinstance(expire, str):
                    expire = self._handlers["expire"] = cast(JobHandler, resolve(expire))
                await context.run(cast(SyncJobHandler, expire), clock, job.ref)
                publish_job_run(context, job, "done", started)  # the live feed (/_sandbox/events)
            except Exception:
                log.exception("expiry of transaction %s failed; left alone", job.ref)
                publish_job_run(context, job, "failed", started)
                self._failed_expiries.add(job.ref)
            return
        handler = self._handlers[job.kind]
        if isinstance(handler, str):
            handler = self._handlers[job.kind] = cast(JobHandler, resolve(handler))
        beat = asyncio.create_task(self._heartbeat(job))
        try:
            if inspect.iscoroutinefunction(handler):
                finish = await cast(AsyncJobHandler, handler)(context, job, clock)
                await context.run(self._complete, job, finish)
            else:
                sync = cast(SyncJobHandler, handler)
                await context.run(self._complete, job, lambda session: sync(session, clock, job.ref))
            publish_job_run(context, job, "done", started)  # the live feed (/_sandbox/events)
        except LeaseLost:
            log.warning("job %s (%s) taken over by another runner: rolled back here", job.id, job.kind)
            publish_job_run(context, job, "taken_over", started)
        except Exception as exc:
            # Never stops the scheduler, never marked done: retried with backoff, then ``failed`` (D126).
            log.exception("job %s (%s) failed (run %d)", job.id, job.kind, job.attempts)
            publish_job_run(context, job, "failed", started)
            from paysdk._describe import exception_text

            error = exception_text(exc)
            with contextlib.suppress(LeaseLost):
                await context.run(self._fail, job, clock, error)
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    def _complete(self, session: Session, job: ClaimedJob, finish: Callable[[Session], None] | None) -> None:
        # The job's row first: it is locked from here to the commit (no takeover meanwhile), and a lost
        # lease costs no work.
        jobs.complete(session, job, self.owner)
        if finish is not None:
            finish(session)

    def _fail(self, session: Session, job: ClaimedJob, clock: Clock, error: str) -> None:
        jobs.fail(session, job, self.owner, error, clock.now(session))

    async def _heartbeat(self, job: ClaimedJob) -> None:
        """Extend the lease of ``job`` every third of the lease while it runs."""
        assert job.id is not None
        while True:
            await asyncio.sleep(self._lease.total_seconds() / 3)
            held = await self._context.run(jobs.extend, job.id, self.owner, self._wall() + self._lease)
            if not held:
                log.warning("job %s (%s): lease lost while running", job.id, job.kind)
                return

    def _anything_due(self, connection: Connection) -> bool:
        """Whether a job or an expiry may be due at the virtual now: one read of the clock's offset and the
        earliest due time of each queue, with no session and no claim. What an idle tick costs (D764);
        ``True`` may still find nothing to claim (an expiry that failed before is left alone)."""
        kinds = sorted(self._handlers)
        next_job = (
            select(func.min(JobRow.due_at))
            .where(JobRow.kind.in_(kinds), jobs.claimable_at(self._wall()))
            .scalar_subquery()
        )
        next_expiry = (
            select(func.min(TransactionRow.expire_at))
            .where(TransactionRow.status == PENDING)
            .scalar_subquery()
            if "expire" in self._handlers
            else literal(None, TransactionRow.expire_at.type)
        )
        offset = select(ClockRow.offset_us).where(ClockRow.id == 1).scalar_subquery()
        row = connection.execute(select(offset, next_job, next_expiry)).one()
        now = self._context.clock.at_offset(row[0] or 0)
        return any(moment is not None and moment <= now for moment in row[1:])

    async def run_due(self) -> int:
        """Run every job due now (and those they make due). Returns how many ran."""
        ran = 0
        async with self._lock:
            if not await self._context.run_brief(self._anything_due):
                return 0
            while True:
                job = await self._context.run(self._claim, None)
                if job is None:
                    return ran
                await self._run_one(job, self._context.clock)
                ran += 1

    async def advance(self, seconds: timedelta) -> int:
        """Move the virtual clock ``seconds`` forward, running every job that falls due on the way.

        The step is added to the stored offset first, in one statement (:meth:`Clock.advance`), so
        concurrent advances, in this process or another on the same database, each add their whole step
        (D361); then every job due up to the new time runs, each on the clock frozen at its due time."""
        ran = 0
        clock = self._context.clock
        async with self._lock:
            target = await self._context.run(clock.advance, seconds // timedelta(microseconds=1))
            while True:
                job = await self._context.run(self._claim, target)
                if job is None:
                    break
                await self._run_one(job, clock.frozen_at(job.due_at))
                ran += 1
        return ran

    def recover(self) -> None:
        """At start-up on SQLite (one process per database): put the jobs left ``running`` by a crashed
        process back to ``pending`` at once. On PostgreSQL other processes may be running them: their
        leases decide (a dead process's expire)."""
        if self._context.db.dialect == "sqlite":
            with self._context.db.session() as session:
                jobs.release_all(session)
        with self._context.db.session() as session:
            unknown = session.execute(
                select(JobRow.kind, func.count())
                .where(JobRow.status == "pending", JobRow.kind.not_in(sorted(self._handlers)))
                .group_by(JobRow.kind)
                .order_by(JobRow.kind)
            ).all()
        for kind, count in unknown:
            log.error(
                "%d pending job(s) of kind %r have no handler in this server's families: left pending, "
                "never run (register the family that handles them)",
                count,
                kind,
            )

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
