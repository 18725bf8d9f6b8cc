"""The server's own column types, shared by every table module (no import of the storage layer).

:class:`UTCDateTime` lives here, not in :mod:`paysdk.server.db`, so that the core tables import a type
and not the database they are stored in (``db`` imports the tables to make the schema: an import cycle
otherwise). ``paysdk.server.db`` re-exports it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime, Dialect
from sqlalchemy.types import TypeDecorator

__all__ = ["UTCDateTime"]


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime stored as naive UTC, identical on SQLite and PostgreSQL."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC)
