"""Renewal dates and the charge process as properties (D144-D146): month ends, leap days and DST in three
zones; Hypothesis over anchors, intervals, timezones, dunning settings and sequences of declines, the
charge process run on a real database at its 12-hour times (``renewals.expire_ended`` and
``renewals.charge_batch``, the job's own steps)."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from paysdk.contracts.sandbox import SandboxClientCreate
from paysdk.contracts.subscriptions import PlanCreate, SandboxSubscriptionsCreate
from paysdk.server.clock import Clock
from paysdk.server.db import Database
from paysdk.server.renewal_dates import local_date, local_midnight, renewal_date
from paysdk.server.services import renewals, sandbox
from paysdk.server.services.subscriptions import create_plan, create_subscriptions
from paysdk.server.services.test_cards import saved_card
from paysdk.server.subscription_tables import SubscriptionChargeRow, SubscriptionRow

ZONES = ["America/Santiago", "America/New_York", "Europe/London", "America/Guatemala", "Asia/Kolkata"]
APPROVE = "4242424242424242"
DECLINE = "4000000000000341"
HOUR = timedelta(hours=1)

# ------------------------------------------------------------------------------------ dates


def test_a_monthly_plan_anchored_on_the_31st_renews_on_month_ends_and_returns_to_the_31st() -> None:
    dates = [renewal_date(date(2027, 1, 31), "month", 1, k) for k in range(14)]
    assert dates == [
        date(2027, 1, 31),
        date(2027, 2, 28),
        date(2027, 3, 31),
        date(2027, 4, 30),
        date(2027, 5, 31),
        date(2027, 6, 30),
        date(2027, 7, 31),
        date(2027, 8, 31),
        date(2027, 9, 30),
        date(2027, 10, 31),
        date(2027, 11, 30),
        date(2027, 12, 31),
        date(2028, 1, 31),
        date(2028, 2, 29),
    ]
    assert renewal_date(date(2027, 1, 31), "month", 3, 1) == date(2027, 4, 30)


def test_a_plan_anchored_on_29_february_renews_on_28_february_in_common_years() -> None:
    assert [renewal_date(date(2028, 2, 29), "year", 1, k) for k in range(5)] == [
        date(2028, 2, 29),
        date(2029, 2, 28),
        date(2030, 2, 28),
        date(2031, 2, 28),
        date(2032, 2, 29),
    ]
    assert renewal_date(date(2028, 2, 29), "month", 12, 1) == date(2029, 2, 28)


@pytest.mark.parametrize(
    ("zone", "day", "hours"),
    [
        ("America/New_York", date(2026, 3, 8), 23),
        ("America/New_York", date(2026, 11, 1), 25),
        ("Europe/London", date(2026, 3, 29), 23),
        ("Europe/London", date(2026, 10, 25), 25),
        ("America/Santiago", date(2026, 9, 6), 23),  # its midnight does not exist (00:00 -> 01:00)
        ("America/Santiago", date(2026, 4, 5), 24),  # 24:00 of the 4th goes back to 23:00 of the 4th
        ("America/Santiago", date(2026, 4, 4), 25),
    ],
)
def test_dst_days_keep_their_calendar_date_and_hold_a_run(zone: str, day: date, hours: int) -> None:
    start = local_midnight(day, zone)
    end = local_midnight(day + timedelta(days=1), zone)
    assert end - start == timedelta(hours=hours)
    assert local_date(start, zone) == day
    assert local_date(end - timedelta(microseconds=1), zone) == day
    # Daily and weekly renewals are calendar days: the day after stays the next date, whatever DST does.
    assert renewal_date(day - timedelta(days=1), "day", 1, 1) == day
    assert renewal_date(day - timedelta(weeks=1), "week", 1, 1) == day
    # A run at 00:00 or 12:00 UTC falls on that local day, so the date is charged on itself.
    run = renewals.first_run_at(start - timedelta(microseconds=1))
    assert start <= run < end


def test_santiago_spring_forward_midnight_is_the_first_instant_of_the_day() -> None:
    start = local_midnight(date(2026, 9, 6), "America/Santiago")
    assert start == datetime(2026, 9, 6, 4, tzinfo=UTC)  # 01:00 -03
    assert local_date(start - timedelta(microseconds=1), "America/Santiago") == date(2026, 9, 5)


@given(
    anchor=st.dates(min_value=date(1990, 1, 1), max_value=date(2100, 12, 31)),
    interval=st.sampled_from(["day", "week", "month", "year"]),
    count=st.integers(min_value=1, max_value=13),
)
def test_renewal_dates_never_skip_or_repeat_a_period(anchor: date, interval: str, count: int) -> None:
    dates = [renewal_date(anchor, interval, count, k) for k in range(40)]
    assert dates[0] == anchor
    assert all(a < b for a, b in itertools.pairwise(dates))  # never repeated, in order
    for k, day in enumerate(dates):
        if interval in ("day", "week"):
            assert (day - anchor).days == k * count * (1 if interval == "day" else 7)
        else:
            months = k * count * (1 if interval == "month" else 12)
            # Exactly ``months`` calendar months on (none skipped), the anchor's day or the month's last.
            assert (day.year - anchor.year) * 12 + day.month - anchor.month == months
            assert day.day == anchor.day or (day + timedelta(days=1)).day == 1
            assert day.day <= anchor.day


@given(day=st.dates(min_value=date(2000, 1, 1), max_value=date(2060, 12, 31)), zone=st.sampled_from(ZONES))
def test_every_local_day_holds_a_run(day: date, zone: str) -> None:
    start = local_midnight(day, zone)
    end = local_midnight(day + timedelta(days=1), zone)
    assert local_date(start, zone) == day
    assert timedelta(hours=23) <= end - start <= timedelta(hours=25)
    assert renewals.first_run_at(start - timedelta(microseconds=1)) < end


# ------------------------------------------------------------------------------------ the process


@pytest.fixture(scope="module")
def sim_db() -> Iterator[Database]:
    """A SQLite database of this module's simulations."""
    with tempfile.TemporaryDirectory() as directory:
        db = Database(f"sqlite:///{Path(directory) / 'renewals.db'}")
        db.create_schema()
        try:
            yield db
        finally:
            db.dispose()


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _run_at(run_times_start: datetime, instant: datetime) -> datetime:
    """The first run (00:00 or 12:00 UTC) at or after ``instant`` and after the schedule began."""
    at = max(instant, run_times_start)
    return renewals.first_run_at(at - timedelta(microseconds=1))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    zone=st.sampled_from(ZONES),
    interval=st.sampled_from(["day", "week", "month"]),
    count=st.integers(min_value=1, max_value=3),
    start_in=st.integers(min_value=0, max_value=9),
    daily_attempts=st.integers(min_value=1, max_value=4),
    interval_attempt=st.sampled_from([1, 6, 12, 13, 24, 36]),
    grace_days=st.none() | st.integers(min_value=0, max_value=3),
    term=st.none() | st.integers(min_value=1, max_value=7),
    failures=st.lists(st.integers(min_value=0, max_value=4), min_size=8, max_size=8),
)
# Found by Hypothesis: a retry whose time fell inside the grace window was made by the next run, after it.
@example(
    zone="America/Santiago",
    interval="day",
    count=1,
    start_in=0,
    daily_attempts=2,
    interval_attempt=13,
    grace_days=0,
    term=None,
    failures=[0, 0, 0, 0, 0, 0, 0, 1],
)
# A fixed term whose last period is still in its retries when the term ends: it is charged, then expires
# (an expiry that ignored the period owed ended it uncharged, issue 20).
@example(
    zone="America/Guatemala",
    interval="day",
    count=1,
    start_in=0,
    daily_attempts=3,
    interval_attempt=36,
    grace_days=None,
    term=1,
    failures=[1, 0, 0, 0, 0, 0, 0, 0],
)
def test_the_charge_process_charges_each_period_begun_while_active_once(
    sim_db: Database,
    zone: str,
    interval: str,
    count: int,
    start_in: int,
    daily_attempts: int,
    interval_attempt: int,
    grace_days: int | None,
    term: int | None,
    failures: list[int],
) -> None:
    db = sim_db
    with db.session() as session:
        created = Clock().now(session)
        client = sandbox.create_client(session, SandboxClientCreate(timezone=zone), created)
        spec = PlanCreate(
            client=client.slug,
            amount=Decimal("3.10"),
            interval=interval,
            interval_count=count,
            term=term,
            daily_attempts=daily_attempts,
            interval_attempt=interval_attempt,
            grace_days=grace_days,
        )
        plan = create_plan(session, spec, created)
        anchor = local_date(created, zone) + timedelta(days=start_in)
        [sub_uid] = create_subscriptions(
            session,
            Clock(),
            SandboxSubscriptionsCreate(plan_id=plan.plan_id, card_number=APPROVE, start_date=anchor),
        ).sub_uids

    def fail_of(period: int) -> int:
        """How many first attempts of ``period`` decline."""
        return failures[period] if period < len(failures) else 0

    horizon = local_midnight(renewal_date(anchor, interval, count, 7), zone) + timedelta(days=2)
    first_run = renewals.first_run_at(created)

    def load() -> SubscriptionRow:
        with db.session() as session:
            row = session.scalars(
                sqlalchemy.select(SubscriptionRow).where(SubscriptionRow.sub_uid == sub_uid)
            ).one()
            session.expunge(row)
            return row

    runs: list[datetime] = []
    while True:
        sub = load()
        if sub.status != "active":
            break
        due = _aware(sub.due_at)
        if sub.ends_on is not None:
            due = min(due, local_midnight(sub.ends_on, zone))
        if due > horizon:
            break
        at = _run_at(first_run, due)
        if runs and at <= runs[-1]:
            at = runs[-1] + renewals.EVERY  # one attempt per subscription and pass: the next run
        card = saved_card(DECLINE if sub.attempts < fail_of(sub.period) else APPROVE)
        with db.session() as session:
            session.execute(
                sqlalchemy.update(SubscriptionRow)
                .where(SubscriptionRow.id == sub.id)
                .values(card_renewal=card.renewal, card_decline_reason=card.decline_reason)
            )
        with db.session() as session:
            renewals.expire_ended(session, at)
            while renewals.charge_batch(session, at).claimed:
                pass
        runs.append(at)
        # A second pass at the same time (an overlapping runner, a restart) changes nothing.
        with db.session() as session:
            assert renewals.charge_batch(session, at).claimed == 0

    with db.session() as session:
        rows = (
            session.execute(
                sqlalchemy.select(SubscriptionChargeRow)
                .where(SubscriptionChargeRow.subscription_id == sub.id)
                .order_by(SubscriptionChargeRow.id)
            )
            .scalars()
            .all()
        )
    final = load()
    approved = [row for row in rows if row.status == "approved"]
    assert [row.period for row in approved] == list(range(len(approved)))  # none skipped, none twice
    by_period: dict[int, list[SubscriptionChargeRow]] = {}
    for row in rows:
        assert row.period is not None
        by_period.setdefault(row.period, []).append(row)
    for period, attempts in by_period.items():
        day = renewal_date(anchor, interval, count, period)
        assert [row.attempt for row in attempts] == list(range(1, len(attempts) + 1))
        assert all(row.renewal_date == day for row in attempts)  # nextRenewalDate never moves in retries
        assert len(attempts) <= daily_attempts  # per plan
        assert all(row.status == "declined" for row in attempts[:-1])
        assert len(attempts) <= fail_of(period) + 1
        times = [_aware(row.created_at) for row in attempts]
        expected_first = _run_at(first_run, local_midnight(day, zone))
        if period > 0 and expected_first <= _aware(by_period[period - 1][-1].created_at):
            # The previous period was approved at or after this date's first run: the next run charges it.
            expected_first = _aware(by_period[period - 1][-1].created_at) + renewals.EVERY
        assert times[0] == expected_first
        for before, after in itertools.pairwise(times):
            assert after == _run_at(first_run, before + interval_attempt * HOUR)
            if grace_days is not None:
                assert after < local_midnight(day + timedelta(days=grace_days + 1), zone)
    begun = [
        k
        for k in range(20)
        if local_midnight(renewal_date(anchor, interval, count, k), zone) <= horizon
        and (term is None or k < term)
    ]
    if final.status == "inactive":
        suspended_in = max(by_period)
        assert by_period[suspended_in][-1].status == "declined"
        assert len(by_period[suspended_in]) <= fail_of(suspended_in)
        assert len(approved) == suspended_in
    elif final.status == "expired":
        assert term is not None
        # Every period of the term was charged: a period still in its retries when the term ends is
        # retried (and expires the subscription once approved) or suspends it, never expires uncharged.
        assert len(approved) == term
        assert final.period == term
        assert final.ended_at is not None
        assert final.ends_on is not None
        assert _aware(final.ended_at) == local_midnight(final.ends_on, zone)
    else:
        assert final.status == "active"
        # Every period before the current one is charged. A period in its retries has begun, and the
        # periods begun meanwhile wait for it (nextRenewalDate never moves in retries, D146); otherwise
        # every period begun is charged.
        assert len(approved) == final.period
        if final.attempts > 0:
            assert final.period < len(begun)
        else:
            assert final.period == len(begun)
    with db.session() as session:  # out of the way of the next example's runs
        session.execute(
            sqlalchemy.update(SubscriptionRow).where(SubscriptionRow.id == sub.id).values(status="cancelled")
        )
