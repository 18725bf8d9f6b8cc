"""The virtual clock: wall clock + an offset stored in the database.

Every timed process of the server (link expiry D19, alternative-payment expiry D10, callback retries D16)
reads time from here, so ``POST /_sandbox/clock/advance`` moves all of them. The offset only grows: the
virtual time never runs backwards (``/_sandbox/reset`` sets it back to zero).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from sqlalchemy.orm import Session

from paysdk.server.core_tables import ClockRow

__all__ = ["Clock"]

_US = timedelta(microseconds=1)


def _wall() -> datetime:
    return datetime.now(UTC)


class Clock:
    """Reads and moves the virtual time. ``wall`` is injectable for tests."""

    def __init__(self, wall: Callable[[], datetime] = _wall) -> None:
        self._wall = wall

    def frozen_at(self, moment: datetime) -> Clock:
        """This clock as work done at the virtual time ``moment`` sees it: :meth:`now` answers ``moment``;
        the offset (read and moved by the other methods) is still the shared one."""
        return _FrozenClock(self._wall, moment)

    def offset_us(self, session: Session) -> int:
        """Microseconds the virtual clock is ahead of the wall clock."""
        row = session.get(ClockRow, 1)
        return row.offset_us if row is not None else 0

    def now(self, session: Session) -> datetime:
        """The current virtual time (aware UTC)."""
        return self._wall() + timedelta(microseconds=self.offset_us(session))

    def offset_seconds(self, session: Session) -> Decimal:
        """The offset in seconds, exact."""
        return Decimal(self.offset_us(session)).scaleb(-6)

    def move_to_at_least(self, session: Session, moment: datetime) -> datetime:
        """Move the virtual time forward so that ``now() >= moment``; never backwards. Returns ``now()``."""
        row = session.get(ClockRow, 1, with_for_update=True)
        if row is None:
            row = ClockRow(id=1, offset_us=0)
            session.add(row)
        wall = self._wall()
        needed = (moment - wall) // _US
        if needed > row.offset_us:
            row.offset_us = needed
        session.flush()
        return wall + timedelta(microseconds=row.offset_us)

    def set_offset_at_least(self, session: Session, offset_us: int) -> None:
        """Raise the offset to ``offset_us`` microseconds (no change when it is already larger)."""
        row = session.get(ClockRow, 1, with_for_update=True)
        if row is None:
            session.add(ClockRow(id=1, offset_us=max(offset_us, 0)))
        elif offset_us > row.offset_us:
            row.offset_us = offset_us
        session.flush()


class _FrozenClock(Clock):
    """:meth:`Clock.frozen_at`: ``now()`` is a fixed virtual moment."""

    def __init__(self, wall: Callable[[], datetime], moment: datetime) -> None:
        super().__init__(wall)
        self._moment = moment

    def now(self, session: Session) -> datetime:
        """The fixed moment."""
        return self._moment
