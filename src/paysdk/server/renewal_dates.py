"""Renewal dates of subscriptions: pure date arithmetic, no I/O (decision D144).

* The dates of a subscription are computed from its **anchor** (the first renewal date, a calendar date in
  the client's timezone) and the period index, never from the previous renewal date: a monthly plan
  anchored on the 31st renews on the last day of shorter months and returns to the 31st when it can
  (Stripe Billing's cycle anchor), and one anchored on 29 February renews on 28 February in other years.
* Days and weeks are calendar days in the client's timezone, so a DST change moves no renewal date.
* A renewal date is due from its local midnight (:func:`local_midnight`, a UTC instant); the scheduled
  charge process, running every 12 hours, picks it up at its first run on or after that instant, which
  falls on that date in the client's timezone (every local day holds at least one of two runs 12 hours
  apart, even a 23-hour DST day).
"""

from __future__ import annotations

import calendar
import functools
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

__all__ = ["DEFAULT_TIMEZONE", "local_date", "local_midnight", "renewal_date", "zone"]

#: Spec 3.3.2 / 8.
DEFAULT_TIMEZONE = "America/Guatemala"


@functools.lru_cache(maxsize=256)
def zone(name: str) -> ZoneInfo:
    """The IANA timezone ``name`` (cached)."""
    return ZoneInfo(name)


def renewal_date(anchor: date, interval: str, count: int, period: int) -> date:
    """The renewal date of period ``period`` (0 is ``anchor``) of a plan renewing every ``count``
    ``interval`` s (``day``, ``week``, ``month``, ``year``)."""
    if period < 0 or count < 1:
        raise ValueError("period must be >= 0 and count >= 1")
    steps = count * period
    if interval == "day":
        return anchor + timedelta(days=steps)
    if interval == "week":
        return anchor + timedelta(weeks=steps)
    if interval == "month":
        months = steps
    elif interval == "year":
        months = 12 * steps
    else:
        raise ValueError(f"unknown interval {interval!r}")
    years, month_index = divmod(anchor.month - 1 + months, 12)
    year = anchor.year + years
    month = month_index + 1
    return date(year, month, min(anchor.day, calendar.monthrange(year, month)[1]))


def local_midnight(day: date, timezone: str) -> datetime:
    """The UTC instant at which ``day`` begins in ``timezone``."""
    # A midnight skipped by a DST change maps (fold 0: the offset before the change) to the change
    # itself, the first instant of ``day``.
    return datetime.combine(day, time(0), zone(timezone)).astimezone(UTC)


def local_date(instant: datetime, timezone: str) -> date:
    """The calendar date of the aware ``instant`` in ``timezone``."""
    return instant.astimezone(zone(timezone)).date()
