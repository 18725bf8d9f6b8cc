"""Business days, the 23:30 UTC cutoff and payout dates of terminal payments as properties (D192):
Hypothesis over capture instants (any, and just before or after 23:30 UTC, on Fridays, weekends, month
and year ends, in other UTC offsets), checked against a brute-force model of the rule: the first cutoff
after the capture closes its batch, the batch settles on the next business day after it."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from paysdk.server import business_days as bd

MICRO = timedelta(microseconds=1)
CUTOFF_DT = timedelta(hours=23, minutes=30)

# ------------------------------------------------------------------------------------ a model


def _model_settlement(captured_at: datetime) -> date:
    """Brute force: walk the days from the capture's date to the first business day whose 23:30 UTC
    cutoff is strictly after the capture, then the first business day after that one."""
    utc = captured_at.astimezone(UTC)
    day = utc.date()
    while not (day.weekday() < 5 and datetime.combine(day, time(23, 30), tzinfo=UTC) > utc):
        day += timedelta(days=1)
    settle = day + timedelta(days=1)
    while settle.weekday() >= 5:
        settle += timedelta(days=1)
    return settle


def _business_days_between(start: date, end: date) -> int:
    """Business days in (start, end]."""
    count, day = 0, start
    while day < end:
        day += timedelta(days=1)
        count += day.weekday() < 5
    return count


# ------------------------------------------------------------------------------------ strategies

DAYS = st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))
#: Times of day that matter: the cutoff and its neighbours, midnight, the day's last microsecond.
EDGES = st.sampled_from(
    [
        time(0, 0),
        time(23, 29, 59, 999999),
        time(23, 30),
        time(23, 30, 0, 1),
        time(23, 59, 59, 999999),
        time(12, 0),
    ]
)
OFFSETS = st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@st.composite
def captures(draw: st.DrawFn) -> datetime:
    """A capture instant: any microsecond, or an edge time of a day; sometimes shown in another offset."""
    day = draw(DAYS)
    moment = draw(st.one_of(EDGES, st.times()))
    at = datetime.combine(day, moment, tzinfo=UTC)
    if draw(st.booleans()):
        at = at.astimezone(draw(OFFSETS))
    return at


# ------------------------------------------------------------------------------------ properties


@given(captures())
@example(datetime(2026, 11, 27, 23, 29, 59, 999999, tzinfo=UTC))  # Friday just before the cutoff
@example(datetime(2026, 11, 27, 23, 30, tzinfo=UTC))  # Friday at the cutoff
@example(datetime(2026, 12, 31, 23, 29, tzinfo=UTC))  # year end, a Thursday
@example(datetime(2027, 1, 31, 23, 45, tzinfo=UTC))  # month end on a Sunday
@example(datetime(2028, 2, 29, 23, 30, tzinfo=UTC))  # leap day, a Tuesday
def test_settlement_follows_the_cutoff_rule_and_never_lands_on_a_weekend(captured_at: datetime) -> None:
    settled = bd.settlement_date(captured_at)
    assert settled == _model_settlement(captured_at)
    assert bd.is_business_day(settled)
    assert settled.weekday() < 5
    utc = captured_at.astimezone(UTC)
    # Never before the rule allows: after the capture's day, after the cutoff that closed its batch.
    assert settled > utc.date()
    assert bd.start_of(settled) >= bd.void_deadline(captured_at) + timedelta(minutes=30)
    assert bd.void_deadline(captured_at) > utc
    assert bd.void_deadline(captured_at) == bd.cutoff_at(bd.batch_day(captured_at))
    # No cutoff of a business day falls between the capture and its batch's cutoff.
    day = utc.date()
    while bd.cutoff_at(day) < bd.void_deadline(captured_at):
        assert not (bd.is_business_day(day) and bd.cutoff_at(day) > utc)
        day += timedelta(days=1)
    # At most: Friday after the cutoff (or the weekend) -> Tuesday, four days on.
    assert (settled - utc.date()).days <= 4


@given(DAYS)
def test_just_before_and_at_the_cutoff_of_a_business_day(day: date) -> None:
    cutoff = datetime.combine(day, time(23, 30), tzinfo=UTC)
    before, at, after = cutoff - MICRO, cutoff, cutoff + MICRO
    if bd.is_business_day(day):
        assert bd.settlement_date(before) == bd.next_business_day(day)
        assert bd.settlement_date(at) == bd.next_business_day(bd.next_business_day(day))
        assert bd.settlement_date(after) == bd.settlement_date(at)
        assert bd.void_deadline(before) == cutoff
    else:
        # A weekend capture, before or after 23:30, joins the next business day's batch.
        assert bd.settlement_date(before) == bd.settlement_date(at) == bd.settlement_date(after)
        assert bd.settlement_date(at) == bd.next_business_day(bd.next_business_day(day))


@given(DAYS.filter(lambda d: d.weekday() == 4), st.times())
def test_friday_captures_settle_monday_before_the_cutoff_and_tuesday_after(friday: date, at: time) -> None:
    captured = datetime.combine(friday, at, tzinfo=UTC)
    expected = friday + timedelta(days=3 if at < time(23, 30) else 4)
    assert bd.settlement_date(captured) == expected
    for weekend in (friday + timedelta(days=1), friday + timedelta(days=2)):
        assert bd.settlement_date(datetime.combine(weekend, at, tzinfo=UTC)) == friday + timedelta(days=4)


@given(DAYS.filter(bd.is_business_day), st.text(alphabet="0123456789", min_size=1, max_size=1))
@example(date(2026, 12, 31), "4")
@example(date(2027, 12, 31), "5")  # a Friday at year end
@example(date(2027, 4, 30), "3")  # a Friday at month end
def test_payout_is_one_to_three_business_days_after_settlement_by_first_digit(
    settled: date, digit: str
) -> None:
    paid = bd.payout_date(settled, digit)
    expected = {"4": 1, "5": 2}.get(digit, 3)
    assert bd.payout_days(digit) == expected
    assert bd.is_business_day(paid)
    assert paid > settled
    assert _business_days_between(settled, paid) == expected
    assert 1 <= (paid - settled).days <= expected + 2  # at most one weekend in three business days


@given(captures())
def test_an_authorization_lapses_seven_days_later(authorized_at: datetime) -> None:
    assert bd.lapse_at(authorized_at) - authorized_at == timedelta(days=7)
    assert bd.lapse_at(authorized_at).tzinfo is UTC


def test_naive_datetimes_and_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        bd.settlement_date(datetime(2026, 1, 1, 12, 0))
    with pytest.raises(ValueError, match="negative"):
        bd.add_business_days(date(2026, 1, 1), -1)
    assert bd.add_business_days(date(2026, 1, 2), 0) == date(2026, 1, 2)


def test_a_table_of_known_dates() -> None:
    def utc(year: int, month: int, day: int, hour: int, minute: int) -> datetime:
        return datetime(year, month, day, hour, minute, tzinfo=UTC)

    assert bd.settlement_date(utc(2026, 11, 23, 10, 0)) == date(2026, 11, 24)  # Mon -> Tue
    assert bd.settlement_date(utc(2026, 11, 23, 23, 30)) == date(2026, 11, 25)  # Mon after cutoff -> Wed
    assert bd.settlement_date(utc(2026, 11, 27, 23, 29)) == date(2026, 11, 30)  # Fri -> Mon
    assert bd.settlement_date(utc(2026, 11, 28, 8, 0)) == date(2026, 12, 1)  # Sat -> Tue
    assert bd.settlement_date(utc(2026, 12, 31, 23, 31)) == date(2027, 1, 4)  # Thu Dec 31 late -> Mon
    assert bd.payout_date(date(2026, 11, 27), "4") == date(2026, 11, 30)  # Fri T+1 -> Mon
    assert bd.payout_date(date(2026, 11, 26), "5") == date(2026, 11, 30)  # Thu T+2 -> Mon
    assert bd.payout_date(date(2026, 11, 26), "3") == date(2026, 12, 1)  # Thu T+3 -> Tue
    # 23:00 in UTC-3 is 02:00 UTC the next day.
    assert bd.settlement_date(datetime(2026, 11, 27, 23, 0, tzinfo=timezone(timedelta(hours=-3)))) == date(
        2026, 12, 1
    )
