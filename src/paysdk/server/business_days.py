"""Business days, the settlement cutoff and payout dates of terminal payments (D191, D192): pure arithmetic.

* Business days are Monday to Friday (UTC), no holidays.
* A capture at instant *t* joins the batch of the 23:30 UTC cutoff of *t*'s date when that date is a
  business day and *t* is before 23:30; otherwise the batch of the next business day's cutoff
  (:func:`batch_day`, :func:`cutoff_at`). The batch settles on the next business day after its cutoff day
  (:func:`settlement_date`), at 00:00 UTC.
* Payout is *n* business days after the settlement date, *n* by the card number's first digit: ``4`` T+1,
  ``5`` T+2, any other T+3 (:func:`payout_date`).
* An authorization not captured lapses 7 days after it was made (:func:`lapse_at`).

Every function takes aware datetimes (any zone: they are read in UTC) or dates, and nothing else: no clock,
no database. :mod:`paysdk.server.services.terminal` applies them.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

__all__ = [
    "CUTOFF",
    "LAPSE_AFTER",
    "PAYOUT_DAYS",
    "add_business_days",
    "batch_day",
    "cutoff_at",
    "is_business_day",
    "lapse_at",
    "next_business_day",
    "payout_date",
    "payout_days",
    "settlement_date",
    "start_of",
    "void_deadline",
]

#: The daily cutoff (UTC) that closes a settlement batch (spec 1, D192).
CUTOFF = time(23, 30)
#: An authorization not captured within this lapses (spec 1, D191).
LAPSE_AFTER = timedelta(days=7)
#: Business days from settlement to payout by the card number's first digit; any other digit: 3 (D192).
PAYOUT_DAYS: dict[str, int] = {"4": 1, "5": 2}
_DEFAULT_PAYOUT_DAYS = 3


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("an aware datetime is required")
    return moment.astimezone(UTC)


def is_business_day(day: date) -> bool:
    """Monday to Friday (no holidays, D192)."""
    return day.weekday() < 5


def next_business_day(day: date) -> date:
    """The first business day strictly after ``day``."""
    day += timedelta(days=1)
    while not is_business_day(day):
        day += timedelta(days=1)
    return day


def add_business_days(day: date, count: int) -> date:
    """The ``count``-th business day after ``day`` (``count`` >= 0; 0 is ``day`` itself)."""
    if count < 0:
        raise ValueError("count must not be negative")
    for _ in range(count):
        day = next_business_day(day)
    return day


def start_of(day: date) -> datetime:
    """00:00 UTC of ``day``."""
    return datetime.combine(day, time(0), tzinfo=UTC)


def cutoff_at(day: date) -> datetime:
    """The cutoff instant of ``day``: 23:30 UTC."""
    return datetime.combine(day, CUTOFF, tzinfo=UTC)


def batch_day(captured_at: datetime) -> date:
    """The business day whose cutoff closes the batch a capture at ``captured_at`` joins: its own date
    when that is a business day and the capture is before 23:30 UTC, else the next business day."""
    utc = _utc(captured_at)
    day = utc.date()
    if is_business_day(day) and utc.timetz().replace(tzinfo=None) < CUTOFF:
        return day
    return next_business_day(day)


def void_deadline(captured_at: datetime) -> datetime:
    """The last instant (exclusive) a capture at ``captured_at`` can be voided: its batch's cutoff."""
    return cutoff_at(batch_day(captured_at))


def settlement_date(captured_at: datetime) -> date:
    """The date a capture at ``captured_at`` settles (00:00 UTC): the business day after its batch's."""
    return next_business_day(batch_day(captured_at))


def payout_days(card_first_digit: str) -> int:
    """T+n of a card by the first digit of its number (``4`` 1, ``5`` 2, any other 3)."""
    return PAYOUT_DAYS.get(card_first_digit, _DEFAULT_PAYOUT_DAYS)


def payout_date(settled_on: date, card_first_digit: str) -> date:
    """The payout date of funds settled on ``settled_on`` for a card starting with ``card_first_digit``."""
    return add_business_days(settled_on, payout_days(card_first_digit))


def lapse_at(authorized_at: datetime) -> datetime:
    """When an authorization made at ``authorized_at`` lapses if not captured (7 days later)."""
    return _utc(authorized_at) + LAPSE_AFTER
