"""The scheduler's transaction expiries: found by ``(status, expire_at)`` with no job row per transaction,
run in one due-time order with the jobs (callbacks), and never looping on a transaction whose expiry
fails. An advance runs each job at its own
virtual time, so what a job causes is due then, and runs in the same advance."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy
from fastapi import FastAPI
from server_helpers import JSON_TYPE, advance, attempts, create_alternative, create_link, transaction

from paysdk import _json
from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app
from paysdk.server.clock import Clock
from paysdk.server.core_tables import JobRow
from paysdk.server.services import payments


def _job_kinds(app: FastAPI) -> list[str]:
    with app.state.paysdk.db.session() as session:
        return [job.kind for job in session.scalars(sqlalchemy.select(JobRow))]


async def test_expiries_need_no_job_row_and_run_at_their_own_time(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await merchant_factory(callback_url=callback_sink.url)
    link = await create_link(asgi_client, merchant)  # expires after 24 h
    payment = await create_alternative(asgi_client, merchant)  # expires after 15 minutes
    assert _job_kinds(app) == []  # creating writes the transaction only

    await advance(asgi_client, 2 * 86400)
    for uid, lifetime in ((link["uid"], timedelta(hours=24)), (payment["uid"], timedelta(minutes=15))):
        stored = await transaction(asgi_client, uid)
        assert stored.status == "expired"
        assert stored.expire_at == stored.created_at + lifetime
        # The expiry ran at its own virtual time, not at the end of the two days.
        assert stored.updated_at == stored.expire_at
    # Each expiry queued its callback at its own time, so the two were delivered in expiry order and
    # each at once (their attempts are 24 h minus 15 minutes apart).
    first, second = await attempts(asgi_client, payment["uid"]), await attempts(asgi_client, link["uid"])
    assert [a.status_code for a in first] == [200]
    assert [a.status_code for a in second] == [200]
    gap = second[0].at - first[0].at - (timedelta(hours=24) - timedelta(minutes=15))
    assert abs(gap) < timedelta(seconds=5)
    assert _job_kinds(app) == ["callback", "callback"]


async def test_a_failing_expiry_is_left_alone_and_the_others_run(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    merchant = await merchant_factory()
    broken, fine = await create_link(asgi_client, merchant), await create_link(asgi_client, merchant)
    tries: list[str] = []
    original = payments.expire_job

    def expire_job(session: Any, clock: Any, uid: str) -> None:
        tries.append(uid)
        if uid == broken["uid"]:
            raise RuntimeError("a broken row")
        original(session, clock, uid)

    monkeypatch.setattr(payments, "expire_job", expire_job)
    await advance(asgi_client, 86400)
    await advance(asgi_client, 60)  # a later run does not try it again either
    assert (await transaction(asgi_client, broken["uid"])).status == "pending"
    assert (await transaction(asgi_client, fine["uid"])).status == "expired"
    assert tries.count(broken["uid"]) == 1


class _SlowWall:
    """The wall clock of a very slow machine: every read is ``step`` later than the one before."""

    def __init__(self, step: timedelta) -> None:
        self.step = step
        self.last = datetime(2026, 1, 5, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.last += self.step
        return self.last

    def next_read(self) -> datetime:
        """What the next read will answer."""
        return self.last + self.step


@pytest.fixture
async def slow_app(db_url: str) -> AsyncIterator[tuple[FastAPI, _SlowWall, httpx.AsyncClient]]:
    wall = _SlowWall(timedelta(minutes=10))
    application = create_app(db_url, start_ticker=False, clock=Clock(wall))
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield application, wall, client
    application.state.paysdk.db.dispose()


async def test_a_job_caused_inside_an_advance_is_due_at_its_cause_and_runs_in_that_advance(
    slow_app: tuple[FastAPI, _SlowWall, httpx.AsyncClient], callback_sink: Any
) -> None:
    """Each wall read is 10 minutes later, so work done during an advance "takes" 10 minutes per read.
    The advance ends 90 s after the link expires: the expiry's callback (refused once) and its retry one
    minute later must both run in that advance, stamped at their virtual times, not at wall time."""
    app, wall, client = slow_app
    response = await client.post(
        "/_sandbox/clients", content=_json.dumps({"callbackUrl": callback_sink.url}), headers=JSON_TYPE
    )
    assert response.status_code == 201, response.text
    merchant = SandboxClient.model_validate(_json.loads(response.content))
    link = await create_link(client, merchant)
    expire_at = (await transaction(client, link["uid"])).expire_at
    callback_sink.respond_with([500])  # the first attempt fails: a retry is due one minute later

    # The advance's first wall read fixes its start: make its target exactly 90 s after the expiry.
    offset = timedelta(microseconds=_offset_us(app))
    seconds = expire_at + timedelta(seconds=90) - (wall.next_read() + offset)
    await app.state.paysdk.scheduler.advance(seconds)

    rows = await attempts(client, link["uid"])
    assert [(row.status_code, row.at) for row in rows] == [
        (500, expire_at),
        (200, expire_at + timedelta(minutes=1)),
    ]
    stored = await transaction(client, link["uid"])
    assert stored.status == "expired"
    assert stored.updated_at == expire_at
    assert [item.json()["status"] for item in callback_sink.received] == ["expired", "expired"]
    assert _job_statuses(app) == ["done", "done"]


def _offset_us(app: FastAPI) -> int:
    with app.state.paysdk.db.session() as session:
        offset: int = app.state.paysdk.clock.offset_us(session)
    return offset


def _job_statuses(app: FastAPI) -> list[str]:
    with app.state.paysdk.db.session() as session:
        return [job.status for job in session.scalars(sqlalchemy.select(JobRow).order_by(JobRow.id))]


def _anything_due(app: FastAPI) -> bool:
    scheduler = app.state.paysdk.scheduler
    with app.state.paysdk.db.transaction() as connection:
        due: bool = scheduler._anything_due(connection)
    return due


def _add_job(app: FastAPI, kind: str, due_in: timedelta, **fields: Any) -> int:
    context = app.state.paysdk
    with context.db.session() as session:
        now = context.clock.now(session)
        row = JobRow(
            kind=kind, ref="r1", due_at=now + due_in, status="pending", created_at=now, attempts=0, **fields
        )
        session.add(row)
        session.flush()
        return row.id


async def test_an_idle_tick_reads_and_claims_nothing(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D764: the ticker's run finds nothing due with one read, without a session or a claim; a link that
    expires in 24 hours is not due, and neither is a job an hour ahead."""
    await create_link(asgi_client, merchant)
    _add_job(app, "callback", timedelta(hours=1))
    scheduler = app.state.paysdk.scheduler
    claims: list[object] = []
    monkeypatch.setattr(scheduler, "_claim", lambda *args: claims.append(args))
    assert _anything_due(app) is False
    assert await scheduler.run_due() == 0
    assert claims == []


async def test_the_idle_check_sees_each_kind_of_due_work(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    """A job due now, a running job whose lease expired (its runner died), a job of a kind this server
    has no handler for (never: it is never claimed), and a pending transaction past its expiry once the
    virtual clock moved: the check answers as the claim would."""
    assert _anything_due(app) is False
    stranger = _add_job(app, "no-such-kind", timedelta(0))
    assert _anything_due(app) is False
    running = _add_job(
        app, "callback", timedelta(0), lease_owner="dead", lease_until=datetime.now(UTC) + timedelta(hours=1)
    )
    with app.state.paysdk.db.session() as session:
        session.get(JobRow, running).status = "running"
    assert _anything_due(app) is False  # its lease holds
    with app.state.paysdk.db.session() as session:
        session.get(JobRow, running).lease_until = datetime.now(UTC) - timedelta(seconds=1)
    assert _anything_due(app) is True  # taken over once the lease expired
    with app.state.paysdk.db.session() as session:
        session.get(JobRow, running).status = "done"
        session.delete(session.get(JobRow, stranger))
    assert _anything_due(app) is False

    link = await create_link(asgi_client, merchant)  # expires in 24 hours
    with app.state.paysdk.db.session() as session:
        app.state.paysdk.clock.advance(session, 25 * 3600 * 10**6)  # the offset only: no job runs
    assert _anything_due(app) is True
    assert await app.state.paysdk.scheduler.run_due() == 1
    assert (await transaction(asgi_client, link["uid"])).status == "expired"
    assert _anything_due(app) is False
