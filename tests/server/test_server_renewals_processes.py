"""The scheduled charge process in real server processes (``jobs_worker.py``: ``create_app`` under uvicorn,
its ticker on): a process killed with SIGKILL in the middle of a run and a new one on the same database
finish the run with one approved charge per period (SQLite and PostgreSQL), and two processes on one
PostgreSQL database running the job at the same time charge every due subscription once (D145)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy
from test_server_jobs_processes import Worker

from paysdk.contracts.sandbox import SandboxClientCreate
from paysdk.contracts.subscriptions import PlanCreate, SandboxSubscriptionsCreate
from paysdk.server import jobs
from paysdk.server.clock import Clock
from paysdk.server.core_tables import JobRow
from paysdk.server.db import Database
from paysdk.server.services import renewals, sandbox
from paysdk.server.services.subscriptions import create_plan, create_subscriptions
from paysdk.server.subscription_tables import SubscriptionChargeRow, SubscriptionRow

pytestmark = pytest.mark.heavy  # minutes of server processes: run first (tests/conftest.py)

COUNT = 20_000


def _schema(url: str) -> Iterator[Database]:
    database = Database(url)
    database.create_schema()
    try:
        yield database
    finally:
        database.dispose()


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    """The test's database with the server's schema (SQLite file or the emptied PostgreSQL database)."""
    yield from _schema(db_url)


@pytest.fixture
def pg_db(request: pytest.FixtureRequest) -> Iterator[Database]:
    """The emptied PostgreSQL test database with the server's schema (unparametrized)."""
    url: str = request.getfixturevalue("_postgres_database")
    with sqlalchemy.create_engine(url).begin() as connection:
        query = sqlalchemy.text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        names = [f'"{row[0]}"' for row in connection.execute(query)]
        if names:
            connection.execute(sqlalchemy.text(f"TRUNCATE {', '.join(names)} RESTART IDENTITY CASCADE"))
    yield from _schema(url)


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    """The server processes a test started (stopped after it)."""
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def _start(db: Database, started: list[Worker], *, slow: bool = False) -> Worker:
    """One more server process on ``db`` (3-second leases), up and answering; ``slow``: each renewal batch
    (500 subscriptions) takes 50 ms longer, so the test can kill it mid-run on any machine."""
    worker = Worker(db, 3.0, env={"PAYSDK_TEST_RENEWAL_PAUSE": "0.05"} if slow else None)
    started.append(worker)
    return worker.wait_up()


def _wait(condition: Callable[[], bool], what: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _scalar(db: Database, statement: sqlalchemy.Select[Any]) -> int:
    with db.session() as session:
        return int(session.scalar(statement) or 0)


def _charged(db: Database) -> int:
    return _scalar(db, sqlalchemy.select(sqlalchemy.func.count()).select_from(SubscriptionChargeRow))


def _left(db: Database) -> int:
    """Active subscriptions still at period 0."""
    return _scalar(
        db,
        sqlalchemy.select(sqlalchemy.func.count()).where(
            SubscriptionRow.status == "active", SubscriptionRow.period == 0
        ),
    )


def _subscribe(db: Database, count: int) -> None:
    """``count`` daily subscriptions anchored today (due now), and the renewal job."""
    with db.session() as session:
        now = Clock().now(session)
        client = sandbox.create_client(session, SandboxClientCreate(), now)
        plan = create_plan(
            session, PlanCreate(client=client.slug, amount=Decimal("5.00"), interval="day"), now
        )
    with db.session() as session:
        create_subscriptions(session, Clock(), SandboxSubscriptionsCreate(plan_id=plan.plan_id, count=count))


def _job_completed(db: Database) -> bool:
    """Whether the renewal job was completed after :func:`_make_due` (pending again, no attempts)."""
    with db.session() as session:
        [job] = session.scalars(sqlalchemy.select(JobRow).where(JobRow.kind == renewals.JOB_KIND)).all()
        return job.status == "pending" and job.attempts == 0 and job.lease_owner is not None


def _make_due(db: Database, extra_jobs: int = 0) -> None:
    """Make the renewal job due now (and queue ``extra_jobs`` more renewal runs due now, as a second
    scheduler of an overlapping deployment would)."""
    with db.session() as session:
        now = Clock().now(session)
        session.execute(sqlalchemy.update(JobRow).where(JobRow.kind == renewals.JOB_KIND).values(due_at=now))
        for index in range(extra_jobs):
            jobs.add(session, renewals.JOB_KIND, f"overlap-{index}", now, now)


def _assert_every_period_charged_once(db: Database, count: int) -> None:
    with db.session() as session:
        twice = session.execute(
            sqlalchemy.select(SubscriptionChargeRow.subscription_id, SubscriptionChargeRow.period)
            .where(SubscriptionChargeRow.status == "approved", SubscriptionChargeRow.source == "renewal")
            .group_by(SubscriptionChargeRow.subscription_id, SubscriptionChargeRow.period)
            .having(sqlalchemy.func.count() > 1)
        ).all()
        approved = session.scalar(
            sqlalchemy.select(sqlalchemy.func.count()).where(SubscriptionChargeRow.status == "approved")
        )
        periods = session.execute(
            sqlalchemy.select(SubscriptionRow.period, sqlalchemy.func.count()).group_by(
                SubscriptionRow.period
            )
        ).all()
        uncharged = session.scalar(
            sqlalchemy.select(sqlalchemy.func.count())
            .select_from(SubscriptionRow)
            .outerjoin(SubscriptionChargeRow, SubscriptionChargeRow.subscription_id == SubscriptionRow.id)
            .where(SubscriptionChargeRow.id.is_(None))
        )
    assert twice == []
    assert approved == count
    assert periods == [(1, count)]
    assert uncharged == 0


def test_a_run_killed_midway_is_finished_by_a_restart_with_one_charge_per_period(
    db: Database, workers: list[Worker]
) -> None:
    _subscribe(db, COUNT)
    dying = _start(db, workers, slow=True)
    _make_due(db)
    _wait(lambda: _charged(db) >= 2000, "the run to charge its first batches")
    os.kill(dying.process.pid, signal.SIGKILL)
    dying.process.wait(10)
    at_kill = _charged(db)
    assert 0 < at_kill < COUNT, at_kill  # killed in the middle of the run
    _start(db, workers)
    _wait(lambda: _left(db) == 0, "the restarted server to finish the run")
    _wait(lambda: _job_completed(db), "the run to complete")  # pending again, 12 hours later
    _assert_every_period_charged_once(db, COUNT)


def test_two_processes_on_postgresql_running_the_job_at_once_charge_each_subscription_once(
    pg_db: Database, workers: list[Worker]
) -> None:
    db = pg_db  # several processes share one database on PostgreSQL only (D125)
    _subscribe(db, COUNT)
    _start(db, workers)
    _start(db, workers)
    _make_due(db, extra_jobs=1)  # two runs due at once: each process claims one
    _wait(lambda: _left(db) == 0, "both runs to finish")

    def both_done() -> bool:
        with db.session() as session:
            return all(
                job.status != "running"
                for job in session.scalars(sqlalchemy.select(JobRow).where(JobRow.kind == renewals.JOB_KIND))
            )

    _wait(both_done, "both runs to complete")
    _assert_every_period_charged_once(db, COUNT)
    with db.session() as session:
        owners = {
            job.lease_owner
            for job in session.scalars(sqlalchemy.select(JobRow).where(JobRow.kind == renewals.JOB_KIND))
        }
    assert len(owners) == 2, owners  # the two runs ran in the two processes
