"""Several reference-server processes on one PostgreSQL database share one job queue (D125): each job is
completed exactly once, under concurrency; callback rounds are never delivered twice; a job whose
process died is taken over after its lease. Real server processes (``jobs_worker.py``: ``create_app``
under uvicorn, ticker on), each test on a PostgreSQL database of its own."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import sqlalchemy
from jobs_worker import EFFECTS
from server_helpers import JSON_TYPE, dumps

from paysdk import _json
from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import jobs
from paysdk.server.clock import Clock
from paysdk.server.core_tables import CallbackAttemptRow, CallbackEventRow, ClientRow, JobRow
from paysdk.server.db import Database
from paysdk.server.services import callbacks
from paysdk.testing._ready import free_port, http_ok, wait_ready

pytestmark = pytest.mark.heavy  # minutes of server processes: run first (tests/conftest.py)

WORKER = Path(__file__).with_name("jobs_worker.py")
PG_ADMIN_URL = os.environ.get("PAYSDK_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def database() -> Iterator[Database]:
    """A PostgreSQL database of this test only (created, then dropped), with the server's schema."""
    name = f"paysdk_jobs_{os.getpid()}_{secrets.token_hex(4)}"
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        db = Database(f"{base}/{name}")
        try:
            db.create_schema()  # once, before the processes start
            EFFECTS.create(db.engine)
            yield db
        finally:
            db.dispose()
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Worker:
    """One server process (``jobs_worker.py``)."""

    def __init__(
        self, db: Database, lease: float, *, hang: bool = False, env: dict[str, str] | None = None
    ) -> None:
        self.port = free_port()
        url = db.engine.url.render_as_string(hide_password=False)
        args = [sys.executable, str(WORKER), url, str(self.port), str(lease), *(["hang"] if hang else [])]
        self.process = subprocess.Popen(args, cwd=WORKER.parent, env={**os.environ, **(env or {})})
        self.url = f"http://127.0.0.1:{self.port}"

    def wait_up(self) -> Worker:
        """Wait until the process answers; returns it."""
        wait_ready(http_ok(self.url + "/_sandbox/health"), what="the server process", process=self.process)
        return self

    def owns(self, owner: str | None) -> bool:
        """Whether a lease owner name (``host:pid:random``) is this process's."""
        return owner is not None and owner.split(":")[-2] == str(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


@pytest.fixture
def workers(database: Database) -> Iterator[Callable[..., list[Worker]]]:
    """``workers(count, lease=..., hang=...)``: start ``count`` server processes (at once), wait for them."""
    started: list[Worker] = []

    def start(count: int = 1, lease: float = 30.0, *, hang: bool = False) -> list[Worker]:
        batch = [Worker(database, lease, hang=hang) for _ in range(count)]
        started.extend(batch)
        return [worker.wait_up() for worker in batch]

    yield start
    for worker in started:
        worker.stop()


def _wait(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _count(db: Database, statement: Any) -> int:
    with db.session() as session:
        return int(session.scalar(statement) or 0)


def _done(db: Database, kind: str) -> int:
    return _count(
        db, sqlalchemy.select(sqlalchemy.func.count()).where(JobRow.kind == kind, JobRow.status == "done")
    )


def _add_jobs(db: Database, kind: str, refs: list[str]) -> None:
    with db.session() as session:
        now = Clock().now(session)
        for ref in refs:
            jobs.add(session, kind, ref, now, now)


def test_two_processes_share_the_queue_and_complete_each_job_exactly_once(
    database: Database, workers: Callable[..., list[Worker]]
) -> None:
    first, second = workers(2)
    refs = [f"job-{index}" for index in range(200)]
    _add_jobs(database, "test_count", refs)  # all due at once: both processes claim concurrently
    _wait(lambda: _done(database, "test_count") == len(refs), "every job to be done")
    with database.session() as session:
        effects = session.execute(sqlalchemy.select(EFFECTS.c.ref, EFFECTS.c.runner)).all()
        rows = {row.ref: row for row in session.scalars(sqlalchemy.select(JobRow))}
    assert sorted(ref for ref, _ in effects) == sorted(refs)  # each job's effect exactly once
    for ref, runner in effects:
        assert rows[ref].lease_owner == runner  # the effect committed with its own completion
        assert rows[ref].attempts == 1
    by_process = Counter(
        "first" if first.owns(runner) else "second" if second.owns(runner) else "?" for _, runner in effects
    )
    assert set(by_process) == {"first", "second"}, by_process  # both processes took part


def test_two_processes_never_deliver_one_callback_round_twice(
    database: Database, workers: Callable[..., list[Worker]], callback_sink: Any
) -> None:
    first, second = workers(2)
    response = httpx.post(
        first.url + "/_sandbox/clients",
        content=dumps({"callbackUrl": callback_sink.url}),
        headers=JSON_TYPE,
        timeout=60,
    )
    assert response.status_code == 201, response.text
    merchant = SandboxClient.model_validate(_json.loads(response.content))
    callback_sink.respond_with([500] * 10)  # ten first rounds fail: their retries are due 1 minute later
    events: list[str] = []
    with database.session() as session:
        client = session.scalars(sqlalchemy.select(ClientRow).where(ClientRow.slug == merchant.slug)).one()
        now = Clock().now(session)
        for index in range(30):
            event_id = callbacks.enqueue_event(
                session, client, "test.event", {"n": index}, ref=f"r{index}", now=now
            )
            assert event_id is not None
            events.append(event_id)
    attempts_made = sqlalchemy.select(sqlalchemy.func.count()).select_from(CallbackAttemptRow)
    _wait(lambda: _count(database, attempts_made) == 30, "the first rounds")
    # One process moves the clock (running the retries due on the way) while the other's ticker runs.
    advanced = httpx.post(
        first.url + "/_sandbox/clock/advance", content=dumps({"seconds": 120}), headers=JSON_TYPE, timeout=60
    )
    assert advanced.status_code == 200, advanced.text
    delivered = sqlalchemy.select(sqlalchemy.func.count()).where(CallbackEventRow.state == "delivered")
    _wait(lambda: _count(database, delivered) == 30, "every event to be delivered")

    received = Counter(item.headers["x-event-id"] for item in callback_sink.received)
    with database.session() as session:
        rows = session.scalars(sqlalchemy.select(CallbackAttemptRow).order_by(CallbackAttemptRow.id)).all()
        owners = {job.lease_owner for job in session.scalars(sqlalchemy.select(JobRow))}
    assert len(callback_sink.received) == 40  # 30 events, 10 of them twice
    assert sum(1 for count in received.values() if count == 2) == 10
    for event_id in events:
        rounds = [row.attempt for row in rows if row.event_id == event_id]
        assert rounds == list(range(1, received[event_id] + 1))  # one POST per recorded round
        assert [row.status_code for row in rows if row.event_id == event_id][-1] == 200
    for item in callback_sink.received:
        assert item.json()["eventId"] == item.headers["x-event-id"]
    assert all(first.owns(owner) or second.owns(owner) for owner in owners)


def test_a_job_whose_process_died_is_taken_over_after_its_lease(
    database: Database, workers: Callable[..., list[Worker]]
) -> None:
    [dying] = workers(1, 3.0, hang=True)  # holds test_hang jobs forever, extending its lease while alive
    _add_jobs(database, "test_hang", ["held"])

    def held_by(worker: Worker) -> bool:
        with database.session() as session:
            job = session.scalars(sqlalchemy.select(JobRow).where(JobRow.ref == "held")).one()
            return job.status == "running" and worker.owns(job.lease_owner)

    _wait(lambda: held_by(dying), "the first process to claim the job")
    [survivor] = workers(1, 3.0)
    # The survivor runs other jobs while the first process lives: the held job is not taken from it,
    # though the survivor took longer to start than the lease lasts (the holder's heartbeat extends it).
    _add_jobs(database, "test_count", ["marker"])
    _wait(lambda: _done(database, "test_count") == 1, "the survivor to run a job")
    assert held_by(dying)
    os.kill(dying.process.pid, signal.SIGKILL)  # dies holding the job
    dying.process.wait(10)
    _wait(lambda: _done(database, "test_hang") == 1, "the job to be taken over")
    with database.session() as session:
        job = session.scalars(sqlalchemy.select(JobRow).where(JobRow.ref == "held")).one()
        effects = session.execute(sqlalchemy.select(EFFECTS.c.ref, EFFECTS.c.runner)).all()
    assert job.attempts == 2
    assert survivor.owns(job.lease_owner)
    assert sorted(ref for ref, _ in effects) == ["held", "marker"]
    assert all(survivor.owns(runner) for _, runner in effects)
