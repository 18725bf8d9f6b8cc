"""The server's one reach past SQLAlchemy's execution layer: the DBAPI connection under a Core
connection (``driver_connection``), and what the hot path does on it.

Nothing outside :mod:`paysdk.server.hotpath` (and :mod:`paysdk.server.adapters.sqlalchemy`, which holds
SQLAlchemy's private hooks) touches ``driver_connection``; ``tests/foundation/test_hotpath_seam.py`` greps the
tree for it. Each helper runs inside the Core connection's transaction (or, where it says so, outside
any), so SQLAlchemy's own bookkeeping of that transaction stays true.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy.engine import Connection

__all__ = ["SavepointBroken", "copy_rows", "dbapi", "execute_script", "savepoint"]


def dbapi(connection: Connection) -> Any:
    """The DBAPI connection (``sqlite3.Connection``, ``psycopg.Connection``) under ``connection``."""
    raw = connection.connection.driver_connection
    assert raw is not None
    return raw


def execute_script(connection: Connection, statements: Iterable[str]) -> None:
    """Run plain SQL ``statements`` (pragmas, ``BEGIN IMMEDIATE``, schema-owned ``DELETE`` s) on the
    DBAPI connection, one after the other, without SQLAlchemy's per-execution machinery. The SQL is the
    server's own, never input."""
    raw = dbapi(connection)
    for sql in statements:
        raw.execute(sql)


def copy_rows(
    connection: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """PostgreSQL's ``COPY table (columns) FROM STDIN`` of ``rows`` (values as psycopg adapts them):
    psycopg's ``executemany`` sends one statement per row; ``COPY`` streams them. ``table`` and
    ``columns`` are the schema's own names, never input."""
    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    with dbapi(connection).cursor() as cursor, cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


class SavepointBroken(Exception):
    """A savepoint could not be rolled back: the enclosing transaction cannot be used any more."""


@contextlib.contextmanager
def savepoint(connection: Connection, name: str = "paysdk_item") -> Iterator[None]:
    """A savepoint around one call or write: rolled back (and the exception re-raised) when it raises;
    :class:`SavepointBroken` when the rollback itself fails. On SQLite it is plain SQL on the DBAPI
    connection (a Core ``begin_nested`` costs several times SQLite's own work); elsewhere Core's."""
    if connection.dialect.name != "sqlite":
        nested = connection.begin_nested()
        try:
            yield
        except BaseException:
            try:
                nested.rollback()
            except Exception as exc:
                raise SavepointBroken() from exc
            raise
        nested.commit()
        return
    raw = dbapi(connection)
    raw.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        try:
            raw.execute(f"ROLLBACK TO {name}")
            raw.execute(f"RELEASE {name}")
        except Exception as exc:
            raise SavepointBroken() from exc
        raise
    raw.execute(f"RELEASE {name}")
