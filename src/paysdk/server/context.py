"""The state of one server instance shared by routers, services, middleware and the scheduler."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio.to_thread
import httpx
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import Insert, Select, Update
from starlette.requests import HTTPConnection

from paysdk.server.clock import Clock
from paysdk.server.db import Database

if TYPE_CHECKING:
    from paysdk.server.scheduler import Scheduler

__all__ = ["EnvironmentName", "ServerContext", "Statement", "get_context"]

T = TypeVar("T")
EnvironmentName = Literal["sandbox", "production"]


class ServerContext:
    """Database, virtual clock, environment, scheduler and the callback HTTP transport of one app."""

    def __init__(
        self,
        database: Database,
        environment: EnvironmentName,
        *,
        clock: Clock | None = None,
        http_transport: httpx.AsyncBaseTransport | None = None,
        callback_timeout: float = 10.0,
    ) -> None:
        self.db = database
        self.environment: EnvironmentName = environment
        self.clock = clock or Clock()
        self.http_transport = http_transport
        self.callback_timeout = callback_timeout
        self.scheduler: Scheduler  # set by create_app

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(session, *args)`` in one database transaction (blocking; use :meth:`run` from async)."""
        with self.db.session() as session:
            return fn(session, *args)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(session, *args)`` in one transaction on a worker thread (the event loop never blocks).

        SQLite work goes to the database's single worker thread (see :class:`Database`); PostgreSQL
        work to the thread pool, where row locks order concurrent writers.
        """
        return await self._off_loop(functools.partial(self.call, fn, *args))

    def call_core(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(connection, *args)`` in one Core transaction (no ORM session; blocking)."""
        with self.db.transaction() as connection:
            return fn(connection, *args)

    async def run_core(self, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`run` for Core work: ``fn(connection, *args)`` on the same worker thread(s).

        The hot path of the public endpoints uses it: a Core transaction costs a fraction of a session's.
        """
        return await self._off_loop(functools.partial(self.call_core, fn, *args))

    async def _off_loop(self, call: Callable[[], T]) -> T:
        if self.db.executor is not None:
            return await asyncio.get_running_loop().run_in_executor(self.db.executor, call)
        return await anyio.to_thread.run_sync(call)

    def http_client(self) -> tuple[httpx.AsyncClient, bool]:
        """An HTTP client for callback delivery and whether the caller must close it.

        An injected transport is shared and never closed here.
        """
        timeout = httpx.Timeout(self.callback_timeout)
        if self.http_transport is not None:
            return httpx.AsyncClient(transport=self.http_transport, timeout=timeout), False
        return httpx.AsyncClient(timeout=timeout, follow_redirects=False), True


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    defaults: dict[str, Any]  # literal values bound by the statement itself (``id == 1``)
    binds: tuple[Callable[[Any], Any] | None, ...]
    results: tuple[Callable[[Any], Any] | None, ...]


class Statement:
    """A Core statement of the hot path, run through the DBAPI cursor on SQLite.

    On SQLite, SQLAlchemy's per-execution machinery costs several times what SQLite itself does for the
    small statements of a request, so the statement is compiled once (by SQLAlchemy, for the connection's
    dialect: the same SQL and the same type processing, e.g. datetimes and JSON) and then executed on the
    DBAPI connection inside the connection's transaction. Other databases execute the Core statement.
    ``columns`` fixes the inserted columns of an ``INSERT`` (every parameter dict must hold exactly them).
    """

    def __init__(
        self, statement: Select[Any] | Insert | Update, columns: Sequence[str] | None = None
    ) -> None:
        self.statement = statement
        self._columns = list(columns) if columns is not None else None
        self._compiled: dict[int, tuple[Dialect, _Compiled]] = {}

    def _compile(self, dialect: Dialect) -> _Compiled:
        cached = self._compiled.get(id(dialect))
        if cached is not None and cached[0] is dialect:
            return cached[1]
        compiled = self.statement.compile(dialect=dialect, column_keys=self._columns)
        names = tuple(compiled.positiontup or ())
        if not names and compiled.binds:  # pragma: no cover - every supported dialect binds positionally
            raise ValueError("Statement needs a positional paramstyle")
        defaults = {name: compiled.binds[name].value for name in names if not compiled.binds[name].required}
        binds = tuple(compiled.binds[name].type.bind_processor(dialect) for name in names)
        results: tuple[Callable[[Any], Any] | None, ...] = ()
        if isinstance(self.statement, Select):
            results = tuple(
                column.type.result_processor(dialect, None) for column in self.statement.selected_columns
            )
        entry = _Compiled(str(compiled), names, defaults, binds, results)
        self._compiled[id(dialect)] = (dialect, entry)
        return entry

    def _values(self, compiled: _Compiled, params: Mapping[str, Any]) -> list[Any]:
        return [
            value if process is None or value is None else process(value)
            for value, process in zip(
                (params[name] if name in params else compiled.defaults[name] for name in compiled.names),
                compiled.binds,
                strict=True,
            )
        ]

    def rows(self, connection: Connection, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Run a ``SELECT``; every row as a tuple of processed values."""
        if connection.dialect.name != "sqlite":
            return [tuple(row) for row in connection.execute(self.statement, dict(params or {}))]
        compiled = self._compile(connection.dialect)
        cursor = connection.connection.driver_connection.execute(  # type: ignore[union-attr]
            compiled.sql, self._values(compiled, params or {})
        )
        return [
            tuple(
                value if process is None else process(value)
                for value, process in zip(raw, compiled.results, strict=True)
            )
            for raw in cursor.fetchall()
        ]

    def run(self, connection: Connection, params: Mapping[str, Any] | None = None) -> int:
        """Run an ``INSERT``/``UPDATE``; returns the row count."""
        if connection.dialect.name != "sqlite":
            return int(connection.execute(self.statement, dict(params or {})).rowcount)
        compiled = self._compile(connection.dialect)
        cursor = connection.connection.driver_connection.execute(  # type: ignore[union-attr]
            compiled.sql, self._values(compiled, params or {})
        )
        return int(cursor.rowcount)

    def run_many(self, connection: Connection, params: Sequence[Mapping[str, Any]]) -> None:
        """Run an ``INSERT`` once per parameter dict (``executemany``)."""
        if connection.dialect.name != "sqlite":
            connection.execute(self.statement, [dict(item) for item in params])
            return
        compiled = self._compile(connection.dialect)
        connection.connection.driver_connection.executemany(  # type: ignore[union-attr]
            compiled.sql, [self._values(compiled, item) for item in params]
        )


def get_context(connection: HTTPConnection) -> ServerContext:
    """The :class:`ServerContext` of the app serving ``connection``."""
    context = connection.app.state.paysdk
    assert isinstance(context, ServerContext)
    return context
