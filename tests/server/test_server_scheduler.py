"""The scheduler's transaction expiries: found by ``(status, expire_at)`` with no job row per transaction,
run in one due-time order with the jobs (callbacks), compatible with the ``expire`` job rows of older
versions, and never looping on a transaction whose expiry fails."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy
from fastapi import FastAPI
from server_helpers import advance, attempts, create_alternative, create_link, transaction

from paysdk.server import create_app
from paysdk.server.db import JobRow
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
        # The clock was moved to the expiry itself (plus the wall time the run took), not to the end of
        # the two days.
        assert timedelta(0) <= stored.updated_at - stored.expire_at < timedelta(seconds=5)
    # Each expiry queued its callback at its own time, so the two were delivered in expiry order and
    # each at once (their attempts are 24 h minus 15 minutes apart).
    first, second = await attempts(asgi_client, payment["uid"]), await attempts(asgi_client, link["uid"])
    assert [a.status_code for a in first] == [200]
    assert [a.status_code for a in second] == [200]
    gap = second[0].at - first[0].at - (timedelta(hours=24) - timedelta(minutes=15))
    assert abs(gap) < timedelta(seconds=5)
    assert _job_kinds(app) == ["callback", "callback"]


async def test_expire_job_rows_of_an_older_version_still_run(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    merchant = await merchant_factory()
    link = await create_link(asgi_client, merchant)
    stored = await transaction(asgi_client, link["uid"])
    with app.state.paysdk.db.session() as session:
        session.add(
            JobRow(
                kind="expire",
                ref=link["uid"],
                due_at=stored.expire_at,
                status="pending",
                created_at=stored.created_at,
            )
        )
    await advance(asgi_client, 86400)
    assert (await transaction(asgi_client, link["uid"])).status == "expired"
    with app.state.paysdk.db.session() as session:
        assert [job.status for job in session.scalars(sqlalchemy.select(JobRow))] == ["done"]


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


def test_a_database_of_an_older_version_gets_the_expiry_index(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    create_app(url, start_ticker=False).state.paysdk.db.dispose()
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP INDEX ix_transactions_expiry")
    app = create_app(url, start_ticker=False)
    app.state.paysdk.db.dispose()
    assert "ix_transactions_expiry" in {
        index["name"] for index in sqlalchemy.inspect(engine).get_indexes("transactions")
    }
    engine.dispose()
