"""Rows in every table of the reference server's schema, made from the SQLAlchemy metadata alone.

Used by ``tests/server/test_server_reset.py`` (a table added later is filled, and so checked, without
anyone remembering it) and by ``benchmarks/bench_start.py`` (the reset figure's fill). Each table gets
``counts.get(name, default)`` rows; a column's value is made from its type and the row's index, and a
foreign key takes the referenced column of a row already made in the parent table (tables are filled
parents first), so every row satisfies the schema's keys and uniqueness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
)
from sqlalchemy.engine import Connection
from sqlalchemy.types import TypeDecorator

import paysdk.server.families  # noqa: F401 (imports every family's tables onto Base.metadata)
from paysdk.server.core_tables import Base

__all__ = ["fill_every_table", "schema_tables"]


def schema_tables() -> list[Table]:
    """Every table declared on the server's metadata, parents before children."""
    return list(Base.metadata.sorted_tables)


def _value(column: Column[Any], index: int, now: datetime) -> Any:
    kind: Any = column.type
    if isinstance(kind, TypeDecorator):
        kind = kind.impl_instance
    if isinstance(kind, Boolean):
        return index % 2 == 0
    if isinstance(kind, Integer | BigInteger):
        return index + 1
    if isinstance(kind, DateTime):
        return now.replace(tzinfo=None) if column.type is kind else now
    if isinstance(kind, Date):
        return date(2026, 1, 1)
    if isinstance(kind, JSON):
        return {"n": index}
    if isinstance(kind, LargeBinary):
        return index.to_bytes(4, "big")
    if isinstance(kind, String | Text):
        text = f"{column.name[:6]}{index}"
        length = getattr(kind, "length", None)
        return text[-length:] if length else text
    raise TypeError(f"no filler value for {column.table.name}.{column.name} ({column.type!r})")


def fill_every_table(
    connection: Connection,
    counts: Mapping[str, int] | None = None,
    default: int = 3,
    *,
    offset: int = 0,
    tables: Sequence[Table] | None = None,
) -> dict[str, int]:
    """Insert rows into every table (see the module docstring); returns table name -> rows inserted.

    ``offset``: where the row indexes start (a second fill of tables a reset keeps needs other values).
    ``tables``: other tables than the server's, parents first (reflected from an older schema: the
    migration tests)."""
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    made: dict[str, list[dict[str, Any]]] = {}
    counts = counts or {}
    for table in schema_tables() if tables is None else tables:
        rows: list[dict[str, Any]] = []
        for index in range(offset, offset + counts.get(table.name, default)):
            row: dict[str, Any] = {}
            for column in table.columns:
                keys = list(column.foreign_keys)
                if keys:
                    target = keys[0].column
                    parents = made.get(target.table.name)
                    if not parents:  # a reference to its own table: left empty
                        row[column.name] = None
                    else:
                        row[column.name] = parents[index % len(parents)][target.name]
                else:
                    row[column.name] = _value(column, index, now)
            rows.append(row)
        if rows:
            connection.execute(table.insert(), rows)
        made[table.name] = rows
    return {name: len(rows) for name, rows in made.items()}
