"""The virtual clock: wall clock + an offset stored in the database.

Every timed process of the server (link expiry D19, alternative-payment expiry D10, callback retries D16)
reads time from here, so ``POST /_sandbox/clock/advance`` moves all of them. The offset only grows: the
virtual time never runs backwards (``/_sandbox/reset`` sets it back to zero).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from sqlalchemy import text
from sqlalchemy.orm import Session

from paysdk.server.core_tables import ClockRow

__all__ = ["Clock"]

#: One upsert of the single row, the same SQL on SQLite (3.35+) and PostgreSQL: the offset grows by the
#: step in the database, never by a value read before (D361).
_ADD = text(
    "INSERT INTO clock (id, offset_us) VALUES (1, :step) "
    "ON CONFLICT (id) DO UPDATE SET offset_us = clock.offset_us + excluded.offset_us RETURNING offset_us"
)
_RAISE = text(
    "INSERT INTO clock (id, offset_us) VALUES (1, :offset) ON CONFLICT (id) DO UPDATE SET offset_us = "
    "CASE WHEN excluded.offset_us > clock.offset_us THEN excluded.offset_us ELSE clock.offset_us END"
)


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
        return self.at_offset(self.offset_us(session))

    def at_offset(self, offset_us: int) -> datetime:
        """The virtual time now, for a stored offset of ``offset_us`` microseconds read by the caller."""
        return self._wall() + timedelta(microseconds=offset_us)

    def offset_seconds(self, session: Session) -> Decimal:
        """The offset in seconds, exact."""
        return Decimal(self.offset_us(session)).scaleb(-6)

    def advance(self, session: Session, step_us: int) -> datetime:
        """Add ``step_us`` microseconds to the stored offset in one statement and return the new virtual
        now. Atomic in the database whichever process runs it (D361): concurrent advances add up, and the
        first advance of a new database inserts the row (``ON CONFLICT``), never failing on its key."""
        offset = session.execute(_ADD, {"step": step_us}).scalar_one()
        return self._wall() + timedelta(microseconds=offset)

    def set_offset_at_least(self, session: Session, offset_us: int) -> None:
        """Raise the offset to ``offset_us`` microseconds (no change when it is already larger), in one
        statement (the row is inserted when missing, as :meth:`advance` does)."""
        session.execute(_RAISE, {"offset": max(offset_us, 0)})


class _FrozenClock(Clock):
    """:meth:`Clock.frozen_at`: ``now()`` is a fixed virtual moment."""

    def __init__(self, wall: Callable[[], datetime], moment: datetime) -> None:
        super().__init__(wall)
        self._moment = moment

    def now(self, session: Session) -> datetime:
        """The fixed moment."""
        return self._moment
