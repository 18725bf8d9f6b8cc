"""The job queue (``paysdk.server.jobs``) driven by the scheduler, in process on SQLite and PostgreSQL:
a handler that raises is retried with backoff and stays visible in ``GET /_sandbox/jobs`` (D126),
recurring jobs run every interval of virtual time, a claimed job whose owner vanished is taken over
after its lease (wall clock, D125) and its late owner's work rolls back, outbound events are generic
(D128). The same across server processes: ``test_server_jobs_processes.py``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy
from fastapi import FastAPI
from server_helpers import advance, attempts, body, create_link, pay
from sqlalchemy.orm import Session

from paysdk.contracts.sandbox import SandboxJob
from paysdk.server import create_app, jobs
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow
from paysdk.server.families import job_handlers
from paysdk.server.jobs import ClaimedJob, LeaseLost
from paysdk.server.scheduler import JobHandler, Scheduler
from paysdk.server.services import callbacks

EFFECTS = sqlalchemy.Table(
    "test_job_effects",
    sqlalchemy.MetaData(),
    sqlalchemy.Column("id", sqlalchemy.Integer, primary_key=True, autoincrement=True),
    sqlalchemy.Column("ref", sqlalchemy.String(64)),
    sqlalchemy.Column("at", sqlalchemy.String(40)),
)


def _effect(session: Session, ref: str, at: datetime) -> None:
    session.execute(EFFECTS.insert().values(ref=ref, at=at.isoformat()))


def _effects(app: FastAPI) -> list[tuple[str, datetime]]:
    with app.state.paysdk.db.session() as session:
        rows = session.execute(sqlalchemy.select(EFFECTS.c.ref, EFFECTS.c.at).order_by(EFFECTS.c.id))
        return [(ref, datetime.fromisoformat(at)) for ref, at in rows]


class Flaky:
    """A sync handler that raises ``failures`` times, then writes its effect (in the completing
    transaction). ``runs``: the virtual time of each run."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.runs: list[datetime] = []

    def __call__(self, session: Session, clock: Clock, ref: str) -> None:
        now = clock.now(session)
        self.runs.append(now)
        _effect(session, ref, now)  # rolled back with the run when it raises below
        if len(self.runs) <= self.failures:
            raise RuntimeError(f"boom {len(self.runs)}")


@pytest.fixture
def make_app(db_url: str) -> Iterator[Callable[[dict[str, JobHandler]], FastAPI]]:
    apps: list[FastAPI] = []

    def make(handlers: dict[str, JobHandler]) -> FastAPI:
        application = create_app(db_url, start_ticker=False, job_handlers=handlers)
        EFFECTS.create(application.state.paysdk.db.engine, checkfirst=True)
        with application.state.paysdk.db.session() as session:
            session.execute(EFFECTS.delete())
        apps.append(application)
        return application

    yield make
    for application in apps:
        application.state.paysdk.db.dispose()


def _client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


def _add(app: FastAPI, kind: str, ref: str, *, delay: timedelta = timedelta(0), **kw: Any) -> datetime:
    context = app.state.paysdk
    with context.db.session() as session:
        now = context.clock.now(session)
        jobs.add(session, kind, ref, now + delay, now, **kw)
    due: datetime = now + delay
    return due


async def _jobs(client: httpx.AsyncClient, **params: str) -> list[SandboxJob]:
    response = await client.get("/_sandbox/jobs", params=params)
    assert response.status_code == 200, response.text
    return [SandboxJob.model_validate(item) for item in body(response)]


async def test_a_handler_that_raises_three_times_is_retried_with_backoff_then_done(
    make_app: Callable[[dict[str, JobHandler]], FastAPI],
) -> None:
    flaky = Flaky(failures=3)
    app = make_app({"test_flaky": flaky})
    async with _client(app) as client:
        due = _add(app, "test_flaky", "ref-1")
        await advance(client, 1)  # run 1 raises: due again 1 minute later (virtual time)
        [job] = await _jobs(client)
        assert (job.kind, job.ref, job.status, job.attempts) == ("test_flaky", "ref-1", "pending", 1)
        assert job.last_error == "RuntimeError: boom 1"
        assert job.due_at == due + timedelta(minutes=1)
        assert job.lease_owner == app.state.paysdk.scheduler.owner
        assert job.lease_until is None
        await advance(client, 50)
        assert len(flaky.runs) == 1  # not before its due time
        await advance(client, 20)  # run 2 raises: due 2 minutes later
        [job] = await _jobs(client)
        assert (job.status, job.attempts, job.last_error) == ("pending", 2, "RuntimeError: boom 2")
        assert job.due_at == due + timedelta(minutes=3)
        await advance(client, 10 * 60)  # run 3 raises at +3 min, run 4 at +7 min succeeds
        [job] = await _jobs(client)
        assert (job.status, job.attempts) == ("done", 4)
        assert job.last_error == "RuntimeError: boom 3"  # kept: what happened stays visible
    # each run at its own due time: 0, 1, 3, 7 minutes (waits 1, 2, 4)
    assert [run - due for run in flaky.runs] == [timedelta(minutes=m) for m in (0, 1, 3, 7)]
    # the effects of the runs that raised were rolled back with them: one effect, of the last run
    assert _effects(app) == [("ref-1", due + timedelta(minutes=7))]


async def test_a_job_that_keeps_raising_ends_failed_visible_and_never_runs_again(
    make_app: Callable[[dict[str, JobHandler]], FastAPI],
) -> None:
    flaky = Flaky(failures=1000)
    app = make_app({"test_flaky": flaky})
    async with _client(app) as client:
        _add(app, "test_flaky", "ref-2")
        await advance(client, 86400)
        assert len(flaky.runs) == jobs.MAX_ATTEMPTS
        [job] = await _jobs(client, status="failed")
        assert job.attempts == jobs.MAX_ATTEMPTS
        assert job.last_error == f"RuntimeError: boom {jobs.MAX_ATTEMPTS}"
        await advance(client, 7 * 86400)
        assert len(flaky.runs) == jobs.MAX_ATTEMPTS
        assert await _jobs(client, status="done") == []
        refused = await client.get("/_sandbox/jobs", params={"status": "lost"})
        assert refused.status_code == 409
        assert body(refused)["details"][0]["field"] == "status"
    waits = [b - a for a, b in zip(flaky.runs, flaky.runs[1:], strict=False)]
    assert waits == [jobs.retry_wait(n) for n in range(1, jobs.MAX_ATTEMPTS)]
    assert _effects(app) == []


async def test_a_recurring_job_runs_every_interval_of_virtual_time_across_an_advance(
    make_app: Callable[[dict[str, JobHandler]], FastAPI],
) -> None:
    runs = Flaky(failures=0)
    app = make_app({"test_every": runs})
    context = app.state.paysdk
    every = timedelta(hours=12)
    with context.db.session() as session:
        now = context.clock.now(session)
        start = now + timedelta(hours=1)  # a configurable start
        assert jobs.ensure_recurring(session, "test_every", "run", start, every, now)
        assert not jobs.ensure_recurring(session, "test_every", "run", start, every, now)  # once only
    async with _client(app) as client:
        await advance(client, 2 * 86400)
        assert runs.runs == [start + n * every for n in range(4)]  # 1 h, 13 h, 25 h, 37 h
        [job] = await _jobs(client, kind="test_every")
        assert (job.status, job.attempts, job.every_seconds) == ("pending", 0, 12 * 3600)
        assert job.due_at == start + 4 * every
        await advance(client, 12 * 3600)
        assert len(runs.runs) == 5
    assert [at for _, at in _effects(app)] == runs.runs


async def test_an_async_handler_works_outside_then_commits_with_the_completion(
    make_app: Callable[[dict[str, JobHandler]], FastAPI],
) -> None:
    seen: list[str] = []

    async def handler(context: Any, job: ClaimedJob, clock: Clock) -> Callable[[Session], None]:
        seen.append(job.ref)  # the external part

        def finish(session: Session) -> None:
            _effect(session, job.ref, clock.now(session))

        return finish

    app = make_app({"test_async": handler})
    due = _add(app, "test_async", "ref-a", delay=timedelta(minutes=5))
    async with _client(app) as client:
        await advance(client, 600)
        [job] = await _jobs(client)
    assert seen == ["ref-a"]
    assert (job.status, job.attempts) == ("done", 1)
    assert _effects(app) == [("ref-a", due)]


async def test_a_kind_without_handler_stays_pending_and_visible(
    make_app: Callable[[dict[str, JobHandler]], FastAPI],
) -> None:
    app = make_app({})
    due = _add(app, "test_nobody", "ref-n")
    async with _client(app) as client:
        result = await advance(client, 3600)
        assert result["jobsRun"] == 0
        [job] = await _jobs(client)
    assert (job.kind, job.status, job.attempts, job.due_at) == ("test_nobody", "pending", 0, due)


class _Wall:
    """A wall clock for leases that the test moves."""

    def __init__(self) -> None:
        self.moved = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.moved


async def test_a_claimed_job_whose_owner_vanished_is_taken_over_after_the_lease(
    make_app: Callable[[dict[str, JobHandler]], FastAPI],
) -> None:
    flaky = Flaky(failures=0)
    app = make_app({"test_lease": flaky})
    context = app.state.paysdk
    due = _add(app, "test_lease", "ref-l")
    vanished = Scheduler(context, {"test_lease": flaky}, owner="runner-a")
    job = await context.run(vanished._claim, None)  # claimed, then its process "dies"
    assert job is not None
    assert job.attempts == 1
    wall = _Wall()
    other = Scheduler(context, {"test_lease": flaky}, owner="runner-b", wall=wall)
    assert await other.run_due() == 0  # the lease still holds
    async with _client(app) as client:
        [listed] = await _jobs(client, status="running")
        assert listed.lease_owner == "runner-a"
        assert listed.lease_until is not None
        wall.moved = listed.lease_until - datetime.now(UTC) + timedelta(seconds=1)
        assert await other.run_due() == 1  # taken over once the lease expired
        [listed] = await _jobs(client)
    assert (listed.status, listed.attempts, listed.lease_owner) == ("done", 2, "runner-b")
    assert _effects(app) == [("ref-l", flaky.runs[0])]
    assert flaky.runs[0] >= due

    # The vanished runner comes back and finishes: its lease is gone, so its work rolls back.
    def late(session: Session) -> None:
        _effect(session, "late", due)

    with pytest.raises(LeaseLost):
        await context.run(vanished._complete, job, late)
    assert [ref for ref, _ in _effects(app)] == ["ref-l"]


async def test_a_callback_taken_over_is_sent_again_with_the_same_event_id(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await merchant_factory(callback_url=callback_sink.url)
    callback_sink.respond_with([500])
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4242424242424242")  # round 1: 500, round 2 due in 1 minute
    context = app.state.paysdk
    vanished = Scheduler(context, job_handlers(), owner="runner-a")
    # An advance by a day: the clock moves first (D361), then the advance claims round 2 and dies.
    far = await context.run(context.clock.advance, 86_400_000_000)
    job = await context.run(vanished._claim, far)
    assert job is not None
    assert job.kind == callbacks.JOB_KIND
    wall = _Wall()
    wall.moved = jobs.LEASE + timedelta(seconds=1)
    other = Scheduler(context, job_handlers(), owner="runner-b", wall=wall)
    assert await other.run_due() == 1
    rows = await attempts(asgi_client, link["uid"])
    assert [(row.attempt, row.status_code) for row in rows] == [(1, 500), (2, 200)]
    event_ids = {item.headers["x-event-id"] for item in callback_sink.received}
    assert event_ids == {rows[0].event_id} == {item.json()["eventId"] for item in callback_sink.received}
    assert len(callback_sink.received) == 2
    with pytest.raises(LeaseLost):  # the vanished runner cannot record round 2 again
        await context.run(vanished._complete, job, None)
    assert len(await attempts(asgi_client, link["uid"])) == 2


async def test_enqueue_event_sends_any_event_type_and_410_stops_it(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await merchant_factory(callback_url=callback_sink.url)
    context = app.state.paysdk
    with context.db.session() as session:
        client = session.scalars(sqlalchemy.select(ClientRow).where(ClientRow.slug == merchant.slug)).one()
        now = context.clock.now(session)
        event_id = callbacks.enqueue_event(
            session, client, "subscription.test", {"subscriptionId": "sub-1", "n": 1}, ref="sub-1", now=now
        )
        other = callbacks.enqueue_event(
            session, client, "x", {"a": 1}, ref="sub-2", now=now, url=callback_sink.url + "/other"
        )
        no_url = callbacks.enqueue_event(session, client, "x", {}, ref="sub-3", now=now, url="")
    assert event_id is not None
    assert other is not None
    assert no_url is None
    callback_sink.respond_with([503, 410])
    await context.scheduler.run_due()  # round 1 of both events: 503 and 410
    await advance(asgi_client, 7 * 86400)
    first = await attempts(asgi_client, "sub-1")
    second = await attempts(asgi_client, "sub-2")
    statuses = {event_id: [row.status_code for row in first], other: [row.status_code for row in second]}
    assert sorted(statuses.values()) == [[410], [503, 200]]  # 410 stopped its event for good
    received = {item.headers["x-event-id"]: item for item in callback_sink.received}
    assert set(received) == {event_id, other}
    assert received[event_id].body.startswith(b'{"eventId":"' + event_id.encode() + b'","subscriptionId"')
    assert received[event_id].json() == {"eventId": event_id, "subscriptionId": "sub-1", "n": 1}
    assert received[event_id].headers[merchant.callback_header_name.lower()] == merchant.callback_header_value
    assert received[other].path == "/callbacks/other"
    assert len(callback_sink.received) == 3
