"""The scheduled charge process (spec 3.3; D143-D149) on the real reference server, SQLite and PostgreSQL:
renewal dates, one clock advance charging every period in order, per-plan dunning with its emails and
``subsCallback``, the renewal test cards, fixed terms, and states never charged again."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy
from fastapi import FastAPI
from renewals_helpers import (
    aware,
    charges,
    database,
    make_plan,
    make_subscriptions,
    now,
    set_status,
    subscription,
)
from server_helpers import TIMES_OF_DAY, advance

from paysdk.contracts.subscriptions import SubsCallback
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow, JobRow
from paysdk.server.renewal_dates import local_date, local_midnight, renewal_date
from paysdk.server.services import renewals
from paysdk.server.services.subscriptions import create_subscription
from paysdk.server.subscription_tables import PlanRow

DAY = 24 * 3600
APPROVE = "4242424242424242"
DECLINE_ALWAYS = "4000000000000341"
DECLINE_FIRST_OF_SECOND = "4000000000000333"
THREE_DS = "4000002500003155"


def run_times(start: datetime, end: datetime) -> list[datetime]:
    """The charge process's runs after ``start`` up to ``end``: every 00:00 and 12:00 UTC."""
    times = []
    at = renewals.first_run_at(start)
    while at <= end:
        times.append(at)
        at += renewals.EVERY
    return times


def first_run_on_or_after(instant: datetime, runs: list[datetime]) -> datetime:
    return next(run for run in runs if run >= instant)


async def outbox(client: httpx.AsyncClient, to: str) -> list[dict[str, Any]]:
    response = await client.get("/_sandbox/outbox", params={"to": to})
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()["data"] if "data" in response.json() else response.json()
    return messages


# ------------------------------------------------------------------------------------ the schedule


async def test_the_job_is_queued_with_the_first_subscription_every_12_hours(
    app: FastAPI, merchant_factory: Any
) -> None:
    db = database(app)
    merchant = await merchant_factory()
    plan = make_plan(db, merchant.slug, interval="day")
    with db.session() as session:
        assert session.scalars(sqlalchemy.select(JobRow).where(JobRow.kind == "renewals")).all() == []
    with db.session() as session:  # one subscription (a verified card's path) queues it
        client = session.scalars(sqlalchemy.select(ClientRow).where(ClientRow.slug == merchant.slug)).one()
        plan_row = session.scalars(sqlalchemy.select(PlanRow).where(PlanRow.plan_id == plan)).one()
        created_at = Clock().now(session)
        create_subscription(session, client, plan_row, email="a@example.com", card=APPROVE, now=created_at)
    make_subscriptions(db, plan, 2)  # and in bulk: still one job
    with db.session() as session:
        [job] = session.scalars(sqlalchemy.select(JobRow).where(JobRow.kind == "renewals")).all()
        assert job.every_us == 12 * 3600 * 10**6
        due = aware(job.due_at)
    assert due == renewals.first_run_at(created_at)
    assert due.hour in (0, 12)
    assert due.minute == due.second == due.microsecond == 0
    assert timedelta(0) < due - created_at <= timedelta(hours=12)


def test_first_run_at_is_the_next_half_day_boundary() -> None:
    assert renewals.first_run_at(datetime(2026, 3, 1, 11, 59, tzinfo=UTC)) == datetime(
        2026, 3, 1, 12, tzinfo=UTC
    )
    assert renewals.first_run_at(datetime(2026, 3, 1, 12, tzinfo=UTC)) == datetime(2026, 3, 2, tzinfo=UTC)
    assert renewals.first_run_at(datetime(2026, 3, 1, 23, 0, 1, tzinfo=UTC)) == datetime(
        2026, 3, 2, tzinfo=UTC
    )


# ------------------------------------------------------------------------------------ one advance


@pytest.mark.parametrize("timezone", ["America/Santiago", "America/New_York", "Europe/London"])
@pytest.mark.parametrize("wall_clock", TIMES_OF_DAY)
async def test_one_advance_of_30_days_charges_every_period_in_order_once(
    app: FastAPI,
    merchant_factory: Any,
    asgi_client: httpx.AsyncClient,
    timezone: str,
    wall_clock: datetime,
) -> None:
    db = database(app)
    clock = app.state.paysdk.clock
    merchant = await merchant_factory(timezone=timezone)
    daily = make_plan(db, merchant.slug, interval="day")
    weekly = make_plan(db, merchant.slug, interval="week")
    start = now(db, clock)
    [day_sub] = make_subscriptions(db, daily, clock=clock)
    [week_sub] = make_subscriptions(db, weekly, clock=clock)
    await advance(asgi_client, 30 * DAY)  # ONE request
    end = now(db, clock)
    runs = run_times(start, end)
    anchor = local_date(start, timezone)
    for sub_uid, interval in ((day_sub, "day"), (week_sub, "week")):
        begun = [
            k for k in range(40) if local_midnight(renewal_date(anchor, interval, 1, k), timezone) <= runs[-1]
        ]
        rows = charges(db, sub_uid)
        assert [row.period for row in rows] == begun  # in order, none skipped, none twice
        assert all(row.status == "approved" and row.attempt == 1 for row in rows)
        previous: datetime | None = None
        for row in rows:
            assert row.period is not None
            due = local_midnight(renewal_date(anchor, interval, 1, row.period), timezone)
            assert row.renewal_date == renewal_date(anchor, interval, 1, row.period)
            # The first run at or after it, one charge per subscription and run (D170): period 0, overdue
            # at creation, takes the first run, and a period due at that same run waits for the next one.
            expected = first_run_on_or_after(due, runs)
            if previous is not None and expected <= previous:
                expected = previous + renewals.EVERY
            assert aware(row.created_at) == expected
            if expected == first_run_on_or_after(due, runs) and due >= start:
                assert local_date(expected, timezone) == row.renewal_date  # on that local day
            previous = expected
        sub = subscription(db, sub_uid)
        assert sub.status == "active"
        assert sub.period == len(begun)
        assert sub.next_renewal_date == renewal_date(anchor, interval, 1, len(begun))
    assert 30 <= len(charges(db, day_sub)) <= 32


# ------------------------------------------------------------------------------------ dunning


@pytest.mark.parametrize("wall_clock", TIMES_OF_DAY)
async def test_dunning_follows_each_plan_with_emails_and_one_callback(
    app: FastAPI,
    merchant_factory: Any,
    asgi_client: httpx.AsyncClient,
    callback_sink: Any,
    wall_clock: datetime,
) -> None:
    db = database(app)
    clock = app.state.paysdk.clock
    merchant = await merchant_factory(callback_url=callback_sink.url, timezone="America/Guatemala")
    three = make_plan(db, merchant.slug, interval="month", daily_attempts=3, interval_attempt=12)
    one = make_plan(db, merchant.slug, interval="month", daily_attempts=1)
    graced = make_plan(
        db, merchant.slug, interval="month", daily_attempts=5, interval_attempt=24, grace_days=1
    )
    start = now(db, clock)
    [sub3] = make_subscriptions(db, three, card=DECLINE_ALWAYS, email="three@example.com", clock=clock)
    [sub1] = make_subscriptions(db, one, card=DECLINE_ALWAYS, email="one@example.com", clock=clock)
    [subg] = make_subscriptions(db, graced, card=DECLINE_ALWAYS, email="grace@example.com", clock=clock)
    await advance(asgi_client, 5 * DAY)
    runs = run_times(start, now(db, clock))
    first = runs[0]

    rows3 = charges(db, sub3)
    assert [(r.period, r.attempt, r.status) for r in rows3] == [(0, n, "declined") for n in (1, 2, 3)]
    assert [aware(r.created_at) for r in rows3] == [
        first,
        first + timedelta(hours=12),
        first + timedelta(hours=24),
    ]
    assert [(r.period, r.attempt) for r in charges(db, sub1)] == [(0, 1)]
    # graceDays 1: retries only before the end of the local day anchor + 1 (retry every 24 hours).
    anchor = local_date(start, "America/Guatemala")
    limit = local_midnight(anchor + timedelta(days=2), "America/Guatemala")
    expected_g = 1 + sum(1 for k in range(1, 5) if first + timedelta(hours=24 * k) < limit)
    assert len(charges(db, subg)) == expected_g < 5
    for sub_uid in (sub3, sub1, subg):
        assert subscription(db, sub_uid).status == "inactive"

    mail = await outbox(asgi_client, "three@example.com")
    events = [m["data"]["notifyEvent"] for m in mail]
    assert events == ["subPayProblem"] * 3 + ["subscriptionSuspended"]
    assert [m["data"]["attempt"] for m in mail] == [1, 2, 3, 3]
    assert [m["data"]["chargeId"] for m in mail[:3]] == [r.charge_id for r in rows3]
    assert "nextAttemptAt" in mail[0]["data"]
    assert "nextAttemptAt" not in mail[2]["data"]
    assert all(m["data"]["subUid"] == sub3 and m["data"]["planId"] == three for m in mail)
    assert all(m["data"]["reason"] == rows3[0].reason for m in mail)
    one_mail = [m["data"]["notifyEvent"] for m in await outbox(asgi_client, "one@example.com")]
    assert one_mail == ["subPayProblem", "subscriptionSuspended"]

    received = callback_sink.wait_for(3)
    bodies = {item.json()["subUid"]: item for item in received}
    assert set(bodies) == {sub3, sub1, subg}
    callback = SubsCallback.model_validate(bodies[sub3].json())
    assert callback.event == "subscriptionSuspended"
    assert callback.status == "inactive"
    assert callback.plan_id == three
    assert callback.client == merchant.slug
    assert callback.attempts == 3
    assert callback.last_charge_id == rows3[-1].charge_id
    assert callback.renewal_date == anchor
    assert bodies[sub3].headers["x-event-id"] == callback.event_id
    # Suspended subscriptions are never charged again.
    await advance(asgi_client, 40 * DAY)
    assert len(charges(db, sub3)) == 3
    assert len(callback_sink.received) == 3


#: A Monday 08:00 UTC (02:00 in Guatemala): the first run is 12:00 UTC; a 6-hour retry would be 18:00.
PINNED_MORNING = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize("wall_clock", [PINNED_MORNING])
async def test_sub_pay_problem_says_when_the_retry_will_run(
    app: FastAPI, merchant_factory: Any, asgi_client: httpx.AsyncClient, wall_clock: datetime
) -> None:
    """``nextAttemptAt`` is the run that makes the retry (00:00, the 12-hour grid), not the decline time +
    ``intervalAttempt`` (18:00): the email, the sandbox view and the retry's own time agree (D146, D350)."""
    db = database(app)
    clock = app.state.paysdk.clock
    merchant = await merchant_factory(timezone="America/Guatemala")
    plan = make_plan(db, merchant.slug, interval="month", daily_attempts=3, interval_attempt=6)
    [sub_uid] = make_subscriptions(db, plan, card=DECLINE_ALWAYS, email="six@example.com", clock=clock)
    first = datetime(2026, 3, 2, 12, tzinfo=UTC)
    assert renewals.first_run_at(now(db, clock)) == first
    await advance(asgi_client, 5 * 3600)  # past the first run (12:00), before 18:00
    [declined] = charges(db, sub_uid)
    assert aware(declined.created_at) == first
    retry_run = datetime(2026, 3, 3, 0, tzinfo=UTC)
    [mail] = await outbox(asgi_client, "six@example.com")
    assert mail["data"]["notifyEvent"] == "subPayProblem"
    assert mail["data"]["nextAttemptAt"] == "2026-03-03T00:00:00Z"
    view = (await asgi_client.get(f"/_sandbox/subscriptions/{sub_uid}")).json()
    assert datetime.fromisoformat(view["nextAttemptAt"]) == retry_run

    await advance(asgi_client, DAY)
    rows = charges(db, sub_uid)
    assert [(r.attempt, aware(r.created_at)) for r in rows] == [
        (1, first),
        (2, retry_run),  # the retry ran when the email said
        (3, retry_run + renewals.EVERY),  # 00:00 + 6 h = 06:00 -> the 12:00 run
    ]
    every = await outbox(asgi_client, "six@example.com")
    assert [m["data"].get("nextAttemptAt") for m in every] == [
        "2026-03-03T00:00:00Z",
        "2026-03-03T12:00:00Z",
        None,  # attempt 3 of 3: suspended
        None,
    ]


async def test_the_callback_is_retried_with_one_event_id_and_a_410_stops_it(
    app: FastAPI, merchant_factory: Any, asgi_client: httpx.AsyncClient, callback_sink: Any
) -> None:
    db = database(app)
    merchant = await merchant_factory(callback_url=callback_sink.url)
    plan = make_plan(db, merchant.slug, daily_attempts=1)
    [retried] = make_subscriptions(db, plan, card=DECLINE_ALWAYS)
    callback_sink.respond_with([500, 503, 200])
    await advance(asgi_client, DAY)  # the run, then retries 1 and 2 minutes later
    received = callback_sink.wait_for(3)
    assert {item.headers["x-event-id"] for item in received} == {received[0].json()["eventId"]}
    assert [item.json()["subUid"] for item in received] == [retried] * 3
    await advance(asgi_client, 7 * DAY)
    assert len(callback_sink.received) == 3  # delivered once it answered 200

    [gone] = make_subscriptions(db, plan, card=DECLINE_ALWAYS)
    callback_sink.respond_with([410])
    await advance(asgi_client, DAY)
    await advance(asgi_client, 7 * DAY)
    assert [item.json()["subUid"] for item in callback_sink.received[3:]] == [gone]  # 410: never again


# ------------------------------------------------------------------------------------ test cards


async def test_card_0333_declines_the_first_attempt_of_period_1_and_its_retry_renews(
    app: FastAPI, merchant_factory: Any, asgi_client: httpx.AsyncClient
) -> None:
    db = database(app)
    merchant = await merchant_factory()
    plan = make_plan(db, merchant.slug, interval="week", interval_attempt=24)
    [sub_uid] = make_subscriptions(db, plan, card=DECLINE_FIRST_OF_SECOND, email="w@example.com")
    await advance(asgi_client, 17 * DAY)
    rows = charges(db, sub_uid)
    assert [(r.period, r.attempt, r.status) for r in rows] == [
        (0, 1, "approved"),
        (1, 1, "declined"),
        (1, 2, "approved"),
        (2, 1, "approved"),
    ]
    assert rows[1].renewal_date == rows[2].renewal_date  # nextRenewalDate never moves during retries
    assert aware(rows[2].created_at) - aware(rows[1].created_at) == timedelta(hours=24)
    mail = await outbox(asgi_client, "w@example.com")
    assert [m["data"]["notifyEvent"] for m in mail] == ["subPayProblem"]
    assert subscription(db, sub_uid).status == "active"


async def test_card_3155_renews_on_a_three_ds_client_with_no_challenge(
    app: FastAPI, merchant_factory: Any, asgi_client: httpx.AsyncClient
) -> None:
    db = database(app)
    merchant = await merchant_factory(three_ds=True)
    plan = make_plan(db, merchant.slug, interval="day")
    [sub_uid] = make_subscriptions(db, plan, card=THREE_DS)
    await advance(asgi_client, 3 * DAY)
    rows = charges(db, sub_uid)
    assert len(rows) >= 3
    assert {(r.status, r.attempt) for r in rows} == {("approved", 1)}


# ------------------------------------------------------------------------------------ states


@pytest.mark.parametrize("wall_clock", TIMES_OF_DAY)
async def test_a_fixed_term_expires_after_its_last_period(
    app: FastAPI, merchant_factory: Any, asgi_client: httpx.AsyncClient, wall_clock: datetime
) -> None:
    db = database(app)
    clock = app.state.paysdk.clock
    merchant = await merchant_factory(timezone="America/New_York")
    plan = make_plan(db, merchant.slug, interval="day", interval_count=2, term=3)
    start = now(db, clock)
    [sub_uid] = make_subscriptions(db, plan, clock=clock)
    await advance(asgi_client, 10 * DAY)
    anchor = local_date(start, "America/New_York")
    rows = charges(db, sub_uid)
    assert [(r.period, r.status) for r in rows] == [(0, "approved"), (1, "approved"), (2, "approved")]
    sub = subscription(db, sub_uid)
    assert sub.status == "expired"
    assert sub.ends_on == anchor + timedelta(days=6)
    assert sub.ended_at is not None
    assert aware(sub.ended_at) == local_midnight(anchor + timedelta(days=6), "America/New_York")


@pytest.mark.parametrize("wall_clock", [PINNED_MORNING])
async def test_a_fixed_term_whose_last_period_is_in_retries_is_charged_before_it_expires(
    app: FastAPI, merchant_factory: Any, asgi_client: httpx.AsyncClient, wall_clock: datetime
) -> None:
    """Term 2, daily: period 1 (renewal 3 March) declines at 12:00 UTC of the 3rd, its retry runs 36 hours
    later (5 March 00:00), after ``endsOn`` (4 March) began: the retry is made and approved, then the
    subscription expires; it never expires with its last period uncharged (D145)."""
    db = database(app)
    clock = app.state.paysdk.clock
    merchant = await merchant_factory(timezone="America/Guatemala")
    plan = make_plan(
        db, merchant.slug, interval="day", term=2, daily_attempts=3, interval_attempt=36, grace_days=None
    )
    [sub_uid] = make_subscriptions(db, plan, card=DECLINE_FIRST_OF_SECOND, clock=clock)
    anchor = local_date(now(db, clock), "America/Guatemala")
    assert subscription(db, sub_uid).ends_on == anchor + timedelta(days=2)
    await advance(asgi_client, 2 * DAY + 6 * 3600)  # to 4 March 14:00 UTC: endsOn began, no retry yet
    sub = subscription(db, sub_uid)
    assert (sub.status, sub.period, sub.attempts) == ("active", 1, 1)
    await advance(asgi_client, 2 * DAY)
    rows = charges(db, sub_uid)
    assert [(r.period, r.attempt, r.status) for r in rows] == [
        (0, 1, "approved"),
        (1, 1, "declined"),
        (1, 2, "approved"),
    ]
    assert aware(rows[2].created_at) == datetime(2026, 3, 5, 0, tzinfo=UTC)
    sub = subscription(db, sub_uid)
    assert (sub.status, sub.period) == ("expired", 2)
    assert sub.ended_at is not None
    assert aware(sub.ended_at) == local_midnight(anchor + timedelta(days=2), "America/Guatemala")


async def test_cancelled_and_inactive_subscriptions_are_never_charged(
    app: FastAPI, merchant_factory: Any, asgi_client: httpx.AsyncClient
) -> None:
    db = database(app)
    merchant = await merchant_factory()
    plan = make_plan(db, merchant.slug, interval="day")
    cancelled, inactive, active = make_subscriptions(db, plan, 3)
    await advance(asgi_client, DAY)
    before = {uid: len(charges(db, uid)) for uid in (cancelled, inactive)}
    set_status(db, cancelled, "cancelled")
    set_status(db, inactive, "inactive")
    await advance(asgi_client, 10 * DAY)
    assert {uid: len(charges(db, uid)) for uid in (cancelled, inactive)} == before
    assert len(charges(db, active)) >= 10 + before[cancelled]


async def test_many_subscriptions_in_several_batches_are_each_charged_once(
    app: FastAPI, merchant_factory: Any, asgi_client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(renewals, "BATCH_SIZE", 7)
    db = database(app)
    merchant = await merchant_factory()
    plan = make_plan(db, merchant.slug, interval="day")
    uids = make_subscriptions(db, plan, 50)
    await advance(asgi_client, 2 * DAY)
    with db.session() as session:
        from paysdk.server.subscription_tables import SubscriptionChargeRow

        periods = Counter(
            session.execute(
                sqlalchemy.select(SubscriptionChargeRow.subscription_id, SubscriptionChargeRow.period)
            ).all()
        )
    assert len(periods) >= 2 * len(uids)
    assert set(periods.values()) == {1}
    assert len({subscription(db, uid).period for uid in uids}) == 1
