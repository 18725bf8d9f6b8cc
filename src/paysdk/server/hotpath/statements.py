"""Compiled statements of the hot path and the ONE cache of their compiled forms.

A :class:`Statement` wraps a Core ``SELECT``/``INSERT``/``UPDATE``. On SQLite, SQLAlchemy's
per-execution machinery costs several times what SQLite itself does for the small statements of a
request, so the statement is compiled once per dialect (by SQLAlchemy: the same SQL and the same type
processing, e.g. datetimes and JSON) and then executed on the DBAPI connection inside the Core
connection's transaction. Other databases execute the Core statement, except :meth:`Statement.first`
(an ``... RETURNING`` whose one row decides: the ledger's guarded updates, the idempotency claim), which
runs on the DBAPI cursor on PostgreSQL too.

Every compiled form lives in :data:`STATEMENTS` (a :class:`StatementCache`), keyed by the dialect object
(each engine has its own) and then by the statement; a :class:`Statement` keeps none of its own. A
dialect switched off (:meth:`StatementCache.switch_off`, what ``Database(..., hotpath=False)`` does)
gets no compiled forms: every :class:`Statement` then runs through SQLAlchemy's ordinary execution,
which is how the equivalence tests compare the two paths.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import Insert, Select, Update
from sqlalchemy.types import TypeEngine

from paysdk.server.hotpath.batch import deferring, scope
from paysdk.server.hotpath.driver import dbapi

__all__ = ["STATEMENTS", "Compiled", "Statement", "StatementCache"]

#: Bound values per multi-row INSERT (SQLite's historical SQLITE_MAX_VARIABLE_NUMBER: safe everywhere).
MAX_VARIABLES = 999

_UNSET = object()


@dataclass(frozen=True, slots=True)
class Compiled:
    """A statement compiled for one dialect, with what running it on the DBAPI cursor needs."""

    sql: str
    #: The bound parameters in the SQL's order (positional paramstyles, names may repeat) or by name.
    names: tuple[str, ...]
    positional: bool
    #: Literal values bound by the statement itself (``id == 1``), by parameter name.
    defaults: dict[str, Any]
    binds: tuple[Callable[[Any], Any] | None, ...]
    #: Result processors of the selected or returned columns.
    results: tuple[Callable[[Any], Any] | None, ...]
    #: An INSERT as ``("INSERT ... VALUES ", "(?, ...)")``; ``("", "")`` for anything else.
    many: tuple[str, str]

    def values(self, params: Mapping[str, Any]) -> Any:
        """The DBAPI parameters for ``params``: a list (positional) or a dict (named), processed."""
        values = (params[name] if name in params else self.defaults[name] for name in self.names)
        processed = [
            value if process is None or value is None else process(value)
            for value, process in zip(values, self.binds, strict=True)
        ]
        return processed if self.positional else dict(zip(self.names, processed, strict=True))

    def row(self, raw: Sequence[Any]) -> tuple[Any, ...]:
        """A fetched row with its values processed as SQLAlchemy would (e.g. aware UTC datetimes)."""
        return tuple(
            value if process is None or value is None else process(value)
            for value, process in zip(raw, self.results, strict=True)
        )


def _multi_row(sql: str) -> tuple[str, str]:
    head, found, group = sql.partition(" VALUES ")
    if (
        not found
        or not head.startswith("INSERT INTO ")
        or not (group.startswith("(") and group.endswith(")"))
        or group.count("(") != 1
        or " VALUES " in group
    ):
        return "", ""
    return head + found, group


def _bind_processor(type_: TypeEngine[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """A column type's bind processing for ``dialect``: the type's own ``fast_bind_processor`` when it
    offers one for the dialect (the same values as SQLAlchemy's, sooner: ``UTCDateTime`` on SQLite,
    D770), else SQLAlchemy's."""
    fast = getattr(type_, "fast_bind_processor", None)
    found: Callable[[Any], Any] | None = fast(dialect) if fast is not None else None
    return found if found is not None else type_.dialect_impl(dialect).bind_processor(dialect)


def _compile(statement: Statement, dialect: Dialect) -> Compiled:
    core = statement.statement
    compiled = core.compile(dialect=dialect, column_keys=statement.columns)
    positional = compiled.positiontup is not None
    names = tuple(compiled.positiontup or ()) if positional else tuple(compiled.binds)
    defaults = {name: compiled.binds[name].value for name in names if not compiled.binds[name].required}
    binds = tuple(_bind_processor(compiled.binds[name].type, dialect) for name in names)
    if isinstance(core, Select):
        columns = [column.type for column in core.selected_columns]
    else:
        columns = [description["type"] for description in core.returning_column_descriptions]
    results = tuple(type_.dialect_impl(dialect).result_processor(dialect, None) for type_ in columns)
    sql = str(compiled)
    many = _multi_row(sql) if isinstance(core, Insert) and positional else ("", "")
    return Compiled(sql, names, positional, defaults, binds, results, many)


@dataclass(slots=True)
class _PerDialect:
    dialect: Dialect
    plain: bool = False
    entries: dict[Statement, Compiled] = field(default_factory=dict)


class StatementCache:
    """The compiled forms of every :class:`Statement`, per dialect object (so per engine: two engines on
    the same kind of database never share an entry whose type processing could differ)."""

    def __init__(self) -> None:
        self._dialects: dict[int, _PerDialect] = {}
        self._lock = threading.Lock()

    def _of(self, dialect: Dialect) -> _PerDialect:
        per = self._dialects.get(id(dialect))
        if per is not None and per.dialect is dialect:
            return per
        with self._lock:
            per = self._dialects.get(id(dialect))
            if per is None or per.dialect is not dialect:
                per = self._dialects[id(dialect)] = _PerDialect(dialect)
            return per

    def compiled(self, statement: Statement, dialect: Dialect) -> Compiled | None:
        """``statement`` compiled for ``dialect`` (made on first use), or ``None`` when the hot path is
        switched off for ``dialect``."""
        per = self._dialects.get(id(dialect))
        if per is None or per.dialect is not dialect:
            per = self._of(dialect)
        if per.plain:
            return None
        entry = per.entries.get(statement)
        if entry is None:
            entry = per.entries.setdefault(statement, _compile(statement, dialect))
        return entry

    def switch_off(self, dialect: Dialect) -> None:
        """Run every :class:`Statement` on ``dialect`` (an engine's) through SQLAlchemy's ordinary
        execution: the plain path the equivalence tests compare the hot path with."""
        per = self._of(dialect)
        per.plain = True
        per.entries.clear()

    def switched_off(self, dialect: Dialect) -> bool:
        """Whether :meth:`switch_off` was called for ``dialect``."""
        return self._of(dialect).plain

    def holds(self, statement: Statement, dialect: Dialect) -> Compiled | None:
        """The entry of ``statement`` for ``dialect`` if it was compiled already (never compiles)."""
        per = self._dialects.get(id(dialect))
        if per is None or per.dialect is not dialect:
            return None
        return per.entries.get(statement)

    def __len__(self) -> int:
        return sum(len(per.entries) for per in list(self._dialects.values()))


#: The one statement cache of the process.
STATEMENTS = StatementCache()


class Statement:
    """A Core statement of the hot path (see the module docstring). ``columns`` fixes the inserted
    columns of an ``INSERT`` (every parameter dict must hold exactly them). Statements are compared by
    identity: make each once, at module level or in a family's registration."""

    __slots__ = ("columns", "statement")

    def __init__(
        self, statement: Select[Any] | Insert | Update, columns: Sequence[str] | None = None
    ) -> None:
        self.statement = statement
        self.columns = list(columns) if columns is not None else None

    def compiled(self, dialect: Dialect) -> Compiled | None:
        """This statement compiled for ``dialect`` (:data:`STATEMENTS`), ``None`` on the plain path."""
        return STATEMENTS.compiled(self, dialect)

    def _driver(self, connection: Connection) -> Compiled | None:
        dialect = connection.dialect
        return STATEMENTS.compiled(self, dialect) if dialect.name == "sqlite" else None

    def rows(self, connection: Connection, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Run a ``SELECT``; every row as a tuple of processed values."""
        compiled = self._driver(connection)
        if compiled is None:
            return [tuple(row) for row in connection.execute(self.statement, dict(params or {}))]
        cursor = dbapi(connection).execute(compiled.sql, compiled.values(params or {}))
        results = compiled.results
        return [
            tuple(
                value if process is None else process(value)
                for value, process in zip(raw, results, strict=True)
            )
            for raw in cursor.fetchall()
        ]

    def first(
        self, connection: Connection, params: Mapping[str, Any] | None = None
    ) -> tuple[Any, ...] | None:
        """Run a statement that returns rows (``... RETURNING``, a ``SELECT``): its first row, processed,
        or ``None``. On SQLite and PostgreSQL through the DBAPI cursor."""
        compiled = (
            STATEMENTS.compiled(self, connection.dialect)
            if connection.dialect.name in ("sqlite", "postgresql")
            else None
        )
        if compiled is None:
            row = connection.execute(self.statement, dict(params or {})).first()
            return tuple(row) if row is not None else None
        found = dbapi(connection).execute(compiled.sql, compiled.values(params or {})).fetchone()
        return None if found is None else compiled.row(found)

    def run(self, connection: Connection, params: Mapping[str, Any] | None = None) -> int:
        """Run an ``INSERT``/``UPDATE``; returns the row count."""
        compiled = self._driver(connection)
        if compiled is None:
            return int(connection.execute(self.statement, dict(params or {})).rowcount)
        return int(dbapi(connection).execute(compiled.sql, compiled.values(params or {})).rowcount)

    def insert(self, connection: Connection, params: Mapping[str, Any]) -> None:
        """Run an ``INSERT`` whose row count nobody reads; in a group-commit batch it is collected and
        written with the batch's other rows of this statement (:func:`.deferring`)."""
        if deferring(connection):
            scope.writes.append((self, params))
            return
        self.run(connection, params)

    def run_many(self, connection: Connection, params: Sequence[Mapping[str, Any]]) -> None:
        """Run an ``INSERT`` once per parameter dict. On SQLite: one multi-row ``INSERT`` per chunk (one
        statement step, one release of the GIL, for all its rows; the rows, their order and a
        constraint's failure are those of ``executemany``), each column's value processed once per
        distinct object (a chunk's rows share their ``created_at``...). Elsewhere Core's
        ``executemany``."""
        compiled = self._driver(connection)
        if compiled is None:
            if params:
                connection.execute(self.statement, [dict(item) for item in params])
            return
        raw = dbapi(connection)
        rows = _rows(compiled, params)
        head, group = compiled.many
        if not group or len(rows) < 2:
            if rows:
                raw.executemany(compiled.sql, rows)
            return
        per_chunk = max(1, MAX_VARIABLES // max(1, len(compiled.names)))
        for start in range(0, len(rows), per_chunk):
            chunk = rows[start : start + per_chunk]
            raw.execute(head + ", ".join([group] * len(chunk)), [value for row in chunk for value in row])


def _rows(compiled: Compiled, params: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """The positional values of many rows, each column's value processed once per distinct object."""
    names, binds, defaults = compiled.names, compiled.binds, compiled.defaults
    seen: list[object] = [_UNSET] * len(names)
    made: list[Any] = [None] * len(names)
    rows: list[list[Any]] = []
    for item in params:
        row: list[Any] = []
        for index, name in enumerate(names):
            value = item[name] if name in item else defaults[name]
            process = binds[index]
            if process is not None and value is not None:
                if seen[index] is value:
                    value = made[index]
                else:
                    seen[index] = value
                    value = made[index] = process(value)
            row.append(value)
        rows.append(row)
    return rows
