"""The state of one server instance shared by routers, services, middleware and the scheduler.

Group commit (:class:`GroupCommit`, :meth:`ServerContext.run_grouped`, :meth:`ServerContext.append`): the
writes of the hot path (transaction creation) and the request log share database transactions. A batch
is taken one turn of the event loop after its first call (so the requests made ready in the same turn
join it), work that arrives while it is written joins the next, and a batch is ONE transaction (one
``BEGIN IMMEDIATE``/``COMMIT``) for every request in it, instead of one transaction per request. Each
caller awaits the commit of its batch before it answers, so an answer is never sent before what it
reports is stored.

On SQLite a batch runs on the event loop itself when the database's worker thread is idle: it takes a
fraction of a millisecond, less than the two thread switches and the GIL hand-overs of a trip to the
worker. The database's lock (:attr:`paysdk.server.db.Database.lock`, held by the worker for each unit
of work) decides: when the worker is busy the batch is queued to it instead, so the event loop never
waits for SQLite's write lock held by this server. (Another process writing the same file can still make
a batch wait, on the event loop, for as long as its transaction lasts.)

* First the calls of a batch run together (the fast way): their inserts (:meth:`Statement.insert`) are
  not executed but collected, and written at the end with one ``executemany`` per statement, inside one
  savepoint. A call that raises (an ``APIProblem``: unknown token, bad body, amount out of range...)
  has written nothing: its caller gets its exception and the others go on. When writing the collected
  inserts fails (a constraint, e.g. a reference drawn twice), the savepoint is rolled back and the calls
  run again one by one (the safe way), each inside its own ``SAVEPOINT``: a call that raises is rolled
  back to it and its caller gets its own exception (the database error a lone transaction would have
  raised); the other calls of the batch go on and commit.
* Appended items (request-log entries) are written together, after the calls, in one savepoint; when
  that fails they are written one by one, each in its own savepoint, and the failing ones reported to
  their sink (the log never breaks an answer).
* When the batch transaction itself cannot be used (``BEGIN``/``COMMIT`` fails, or a savepoint cannot be
  rolled back), nothing of it was committed: every call then runs again in a transaction of its own and
  the items are written again in one, then one by one, so each caller still gets exactly the answer it
  would have got alone.
* Inside a batch, reads that no batched call can change (the clock offset, the client of a token, the
  callback header names) are made once per batch (:func:`batch_cached`): the batch holds SQLite's write
  lock, and batched calls only insert transactions, jobs and log entries.
* Batches are per event loop; calls run in arrival order. On PostgreSQL calls are not batched (each runs
  in its own transaction on the thread pool, where row locks order writers); appended items are.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast

import anyio.to_thread
from sqlalchemy import Table, select
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import Insert, Select, Update
from starlette.requests import HTTPConnection

from paysdk.server.addresses import ServerAddresses
from paysdk.server.clock import Clock
from paysdk.server.control_token import ControlPlaneAccess
from paysdk.server.core_tables import ClockRow
from paysdk.server.db import Database
from paysdk.server.events import EventFeed

if TYPE_CHECKING:
    import httpx

    from paysdk.server.scheduler import Scheduler

__all__ = [
    "EnvironmentName",
    "GroupCommit",
    "ServerContext",
    "Sink",
    "Statement",
    "batch_cached",
    "deferring",
    "get_context",
    "virtual_now",
]

log = logging.getLogger("paysdk.server")

T = TypeVar("T")
X = TypeVar("X")
EnvironmentName = Literal["sandbox", "production"]


class ServerContext:
    """Database, virtual clock, environment, scheduler and the callback HTTP transport of one app.

    **The one way a family runs its database work** (D131): a route handler (or a job handler) never
    touches the database on the event loop; it awaits

    ``await context.run(fn, *args)``: ``fn(session, *args)`` in ONE transaction (an ORM session, committed
    when ``fn`` returns, rolled back when it raises), on SQLite's single worker thread or PostgreSQL's
    thread pool. ``fn`` is plain synchronous code: read the clock with ``context.clock.now(session)``,
    raise :class:`~paysdk.server.errors.APIProblem` for an error answer (nothing is committed). A service
    that must commit a change and still answer an error returns the problem instead
    (:func:`~paysdk.server.routers._common.raise_problem`). Routes reach it through the dependency
    :class:`~paysdk.server.routers._transactions.Transactions` (which verifies a bearer in the same
    transaction), whose ``run`` calls :meth:`run`.

    The other entry points are not for new families:

    * :meth:`run_grouped` (and :meth:`run_core`): the group-commit fast lane (module docstring) of the
      two hot creates, ``POST /transactions`` and ``POST /api/v1/integrations/transactions``, whose Core
      work only inserts; ``tests/server/test_fast_lane.py`` and ``test_hot_path.py`` hold it fast;
    * :meth:`append`: the request log's writes, batched with them;
    * :meth:`run_brief` / :meth:`brief`: the middleware's sub-millisecond look for injected faults;
    * :meth:`offload`: work that is not one transaction (the control plane's reset);
    * :meth:`call` / :meth:`call_core`: the blocking forms the above run on their threads.
    """

    def __init__(
        self,
        database: Database,
        environment: EnvironmentName,
        *,
        clock: Clock | None = None,
        http_transport: httpx.AsyncBaseTransport | None = None,
        callback_timeout: float = 10.0,
        addresses: ServerAddresses | None = None,
    ) -> None:
        self.db = database
        #: The public address and the allowed hosts (D90-D92).
        self.addresses = addresses or ServerAddresses()
        self.environment: EnvironmentName = environment
        self.clock = clock or Clock()
        self.http_transport = http_transport
        self.callback_timeout = callback_timeout
        #: ``fn(session)`` run in one transaction after each ``POST /_sandbox/reset`` (a seed's restore,
        #: :mod:`paysdk.server.seed`).
        self.after_reset: list[Callable[[Any], None]] = []
        self.scheduler: Scheduler  # set by create_app
        self.group_commit = GroupCommit(self)
        #: The live feed of ``GET /_sandbox/events`` (:mod:`paysdk.server.events`).
        self.events = EventFeed()
        #: The control token and exposure of the control plane (set by create_app, D270).
        self.control = ControlPlaneAccess()

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(session, *args)`` in one database transaction (blocking; use :meth:`run` from async)."""
        with self.db.session() as session:
            return fn(session, *args)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(session, *args)`` in one transaction on a worker thread (the event loop never blocks).

        SQLite work goes to the database's single worker thread (see :class:`Database`); PostgreSQL
        work to the thread pool, where row locks order concurrent writers.
        """
        return await self.offload(functools.partial(self.call, fn, *args))

    def call_core(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(connection, *args)`` in one Core transaction (no ORM session; blocking)."""
        with self.db.transaction() as connection:
            return fn(connection, *args)

    async def run_core(self, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`run` for Core work: ``fn(connection, *args)`` on the same worker thread(s).

        The hot path of the public endpoints uses it: a Core transaction costs a fraction of a session's.
        """
        return await self.offload(functools.partial(self.call_core, fn, *args))

    async def run_grouped(self, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`run_core` through the group commit: ``fn(connection, *args)`` in a savepoint of a
        transaction shared with the concurrent requests (SQLite; see the module docstring). Returns once
        committed. On PostgreSQL it is :meth:`run_core`."""
        if self.db.executor is None:
            return await self.run_core(fn, *args)
        result: T = await self.group_commit.call(fn, *args)
        return result

    async def append(self, sink: Sink[X], item: X) -> None:
        """Write ``item`` with ``sink`` in the next group commit; returns once committed (or reported to
        ``sink.failed``). Never raises for a database error."""
        await self.group_commit.append(sink, item)

    async def run_brief(self, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`run_core` for work of a fraction of a millisecond (the request path's look for
        injected faults): :meth:`brief` on the database's kept connection."""
        return await self.brief(functools.partial(self._call_kept, fn, *args))

    def _call_kept(self, fn: Callable[..., T], *args: Any) -> T:
        with self.db.batch_transaction() as connection:
            return fn(connection, *args)

    async def brief(self, call: Callable[[], T]) -> T:
        """``call()`` (a fraction of a millisecond of database work) on the event loop itself when
        SQLite's worker thread is idle, holding the database's lock: cheaper than the two thread switches
        and GIL hand-overs of a trip to the worker. Else (the worker is busy, or PostgreSQL, whose work
        waits on the network) :meth:`offload`."""
        db = self.db
        if db.executor is not None and db.lock.acquire(blocking=False):
            try:
                return call()
            finally:
                db.lock.release()
        return await self.offload(call)

    async def offload(self, call: Callable[[], T]) -> T:
        """``call()`` where this instance's database work runs: SQLite's worker thread (holding the
        database's lock), or a thread of the pool for PostgreSQL. The event loop never blocks."""
        if self.db.executor is not None:
            return await asyncio.get_running_loop().run_in_executor(self.db.executor, self.db.exclusive, call)
        return await anyio.to_thread.run_sync(call)

    def http_client(self) -> tuple[httpx.AsyncClient, bool]:
        """An HTTP client for callback delivery and whether the caller must close it.

        An injected transport is shared and never closed here.
        """
        import httpx  # when a callback is first delivered: the server's start does without it (D303)

        timeout = httpx.Timeout(self.callback_timeout)
        if self.http_transport is not None:
            return httpx.AsyncClient(transport=self.http_transport, timeout=timeout), False
        return httpx.AsyncClient(timeout=timeout, follow_redirects=False), True


class Sink(Protocol[X]):
    """Where appended items of a group commit go (the request log)."""

    def write(self, connection: Connection, items: list[X]) -> None:
        """Write ``items`` (inside the batch's transaction)."""

    def failed(self, item: X) -> None:
        """``item`` could not be written even alone (called from an ``except`` block)."""


_scope = threading.local()


def deferring(connection: Connection) -> bool:
    """Whether inserts on ``connection`` are collected for the end of a batch (see the module docstring);
    checks that an insert's constraint already makes (a reference drawn twice) may then be left to it."""
    return getattr(_scope, "writes", None) is not None and _scope.connection is connection


def batch_cached(connection: Connection, key: Any, compute: Callable[[], T]) -> T:
    """``compute()``, made once per group-commit batch when ``connection`` is a batch's connection (see
    the module docstring: only for values no batched call changes); otherwise every time."""
    if getattr(_scope, "connection", None) is not connection:
        return compute()
    cache: dict[Any, Any] = _scope.cache
    if key in cache:
        value: T = cache[key]
        return value
    value = cache[key] = compute()
    return value


class _Broken(Exception):
    """The batch transaction cannot be used any more (nothing of it will be committed)."""


@dataclass(slots=True)
class _Call:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    done: asyncio.Future[Any]
    ok: bool = False
    result: Any = None
    error: BaseException | None = None


@dataclass(slots=True)
class _Pending:
    calls: list[_Call] = field(default_factory=list)
    items: dict[Any, list[tuple[Any, asyncio.Future[None]]]] = field(default_factory=dict)
    flusher: asyncio.Task[None] | None = None


@contextlib.contextmanager
def _savepoint(connection: Connection, name: str = "paysdk_item") -> Iterator[None]:
    """A savepoint around one call or write: rolled back (and the exception re-raised) when it raises;
    :class:`_Broken` when the rollback itself fails."""
    if connection.dialect.name != "sqlite":
        nested = connection.begin_nested()
        try:
            yield
        except BaseException:
            try:
                nested.rollback()
            except Exception as exc:
                raise _Broken() from exc
            raise
        nested.commit()
        return
    raw = connection.connection.driver_connection
    assert raw is not None
    raw.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        try:
            raw.execute(f"ROLLBACK TO {name}")
            raw.execute(f"RELEASE {name}")
        except Exception as exc:
            raise _Broken() from exc
        raise
    raw.execute(f"RELEASE {name}")


class GroupCommit:
    """The group commit of one server instance (see the module docstring). One batch per event loop."""

    def __init__(self, context: ServerContext) -> None:
        self._context = context
        self._pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pending] = (
            weakref.WeakKeyDictionary()
        )

    def _batch(self, loop: asyncio.AbstractEventLoop) -> _Pending:
        pending = self._pending.get(loop)
        if pending is None:
            pending = self._pending[loop] = _Pending()
        if pending.flusher is None:
            pending.flusher = loop.create_task(self._flush(pending))
        return pending

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(connection, *args)`` in the next batch; its result or its exception."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        self._batch(loop).calls.append(_Call(fn, args, done))
        return await done

    async def append(self, sink: Sink[X], item: X) -> None:
        """Write ``item`` with ``sink`` in the next batch."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._batch(loop).items.setdefault(sink, []).append((item, done))
        await done

    async def _flush(self, pending: _Pending) -> None:
        calls: list[_Call] = []
        items: dict[Any, list[tuple[Any, asyncio.Future[None]]]] = {}
        try:
            # One turn of the event loop first: the requests made ready in this turn join the batch.
            await asyncio.sleep(0)
            while pending.calls or pending.items:
                calls, items = pending.calls, pending.items
                pending.calls, pending.items = [], {}
                batch = [(sink, [item for item, _ in entries]) for sink, entries in items.items()]
                await self._context.brief(functools.partial(self._write, calls, batch))
                for call in calls:
                    if call.done.done():
                        continue
                    if call.ok:
                        call.done.set_result(call.result)
                    else:
                        assert call.error is not None
                        call.done.set_exception(call.error)
                _release(items)
                calls, items = [], {}
        finally:
            pending.flusher = None
            # Only when cancelled (the loop is shutting down): never leave a caller waiting.
            for call in [*calls, *pending.calls]:
                if not call.done.done():
                    call.done.cancel()
            _release(items)
            _release(pending.items)
            pending.calls, pending.items = [], {}

    # -- on the event loop or the worker thread (see :meth:`ServerContext.brief`)

    def _write(self, calls: list[_Call], batch: list[tuple[Sink[Any], list[Any]]]) -> None:
        db = self._context.db
        try:
            with db.batch_transaction() as connection:
                _scope.connection, _scope.cache = connection, {}
                try:
                    if not _run_together(connection, calls):
                        for call in calls:
                            _run_call(connection, call)
                    for sink, items in batch:
                        _write_items(connection, sink, items)
                finally:
                    _scope.connection, _scope.cache = None, {}
            return
        except Exception:  # the batch is lost: each call and the items again, on their own
            log.debug("group commit of %d calls failed; running them one by one", len(calls), exc_info=True)
        for call in calls:  # exactly :meth:`ServerContext.call_core`: the answer the call gets alone
            call.ok, call.result, call.error = False, None, None
            try:
                with db.transaction() as connection:
                    call.result = call.fn(connection, *call.args)
                call.ok = True
            except Exception as exc:
                call.error = exc
        for sink, items in batch:
            try:
                with db.transaction() as connection:
                    sink.write(connection, items)
            except Exception:
                for item in items:
                    try:
                        with db.transaction() as connection:
                            sink.write(connection, [item])
                    except Exception:  # the log must never break an answer
                        sink.failed(item)


def _run_together(connection: Connection, calls: list[_Call]) -> bool:
    """The fast way (see the module docstring); ``False`` when the calls must run one by one."""
    if not calls:
        return True
    try:
        with _savepoint(connection, "paysdk_batch"):
            inserts: dict[Statement, list[Mapping[str, Any]]] = {}
            for call in calls:
                writes: list[tuple[Statement, Mapping[str, Any]]] = []
                _scope.writes = writes
                try:
                    call.ok, call.result, call.error = True, call.fn(connection, *call.args), None
                except Exception as exc:
                    call.ok, call.result, call.error = False, None, exc
                    continue
                finally:
                    _scope.writes = None
                for statement, params in writes:
                    inserts.setdefault(statement, []).append(params)
            for statement, rows in inserts.items():
                statement.run_many(connection, rows)
    except _Broken:
        raise
    except Exception:
        log.debug("group commit: writing %d calls together failed", len(calls), exc_info=True)
        return False
    return True


def _run_call(connection: Connection, call: _Call) -> None:
    try:
        with _savepoint(connection):
            result = call.fn(connection, *call.args)
    except _Broken:
        raise
    except Exception as exc:
        call.ok, call.error = False, exc
        return
    call.ok, call.result = True, result


def _write_items(connection: Connection, sink: Sink[Any], items: list[Any]) -> None:
    try:
        with _savepoint(connection):
            sink.write(connection, items)
        return
    except _Broken:
        raise
    except Exception:  # one bad item must not lose the others: one by one
        if len(items) == 1:
            sink.failed(items[0])
            return
    for item in items:
        try:
            with _savepoint(connection):
                sink.write(connection, [item])
        except _Broken:
            raise
        except Exception:
            sink.failed(item)


def _release(items: dict[Any, list[tuple[Any, asyncio.Future[None]]]]) -> None:
    for entries in items.values():
        for _, done in entries:
            if not done.done():
                done.set_result(None)


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    defaults: dict[str, Any]  # literal values bound by the statement itself (``id == 1``)
    binds: tuple[Callable[[Any], Any] | None, ...]
    results: tuple[Callable[[Any], Any] | None, ...]
    many: tuple[str, str]  # an INSERT as ("INSERT ... VALUES ", "(?, ...)"); ("", "") for anything else


#: Bound values per multi-row INSERT (SQLite's historical SQLITE_MAX_VARIABLE_NUMBER: safe everywhere).
_MAX_VARIABLES = 999

#: No value seen yet (:meth:`Statement._many_values`).
_UNSET = object()
#: Rows from which :meth:`Statement.run_many` processes a shared value once (:meth:`Statement._many_values`):
#: the bulk inserts' chunks (thousands of rows sharing ``created_at``...) gain; a group commit's batch (tens
#: of rows, each request's own values) would only pay the bookkeeping.
_SHARED_VALUES_FROM = 256


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
        binds = tuple(
            compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect) for name in names
        )
        results: tuple[Callable[[Any], Any] | None, ...] = ()
        if isinstance(self.statement, Select):
            results = tuple(
                column.type.dialect_impl(dialect).result_processor(dialect, None)
                for column in self.statement.selected_columns
            )
        sql = str(compiled)
        many = _multi_row(sql) if isinstance(self.statement, Insert) else ("", "")
        entry = _Compiled(sql, names, defaults, binds, results, many)
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

    def insert(self, connection: Connection, params: Mapping[str, Any]) -> None:
        """Run an ``INSERT`` whose row count nobody reads; in a group-commit batch it is collected and
        written with the batch's other rows of this statement (:func:`deferring`)."""
        if deferring(connection):
            _scope.writes.append((self, params))
            return
        self.run(connection, params)

    def _many_values(self, compiled: _Compiled, params: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
        """:meth:`_values` of each parameter dict, each column's value processed once per distinct object:
        a batch's rows share their ``created_at`` (``client_id`` ...), so e.g. the datetime processing
        runs once per batch instead of once per row."""
        last: list[tuple[object, object]] = [(_UNSET, None)] * len(compiled.names)
        rows: list[list[Any]] = []
        for item in params:
            row: list[Any] = []
            for index, name in enumerate(compiled.names):
                value = item[name] if name in item else compiled.defaults[name]
                process = compiled.binds[index]
                if process is None or value is None:
                    row.append(value)
                    continue
                seen, processed = last[index]
                if seen is not value:
                    processed = process(value)
                    last[index] = (value, processed)
                row.append(processed)
            rows.append(row)
        return rows

    def run_many(self, connection: Connection, params: Sequence[Mapping[str, Any]]) -> None:
        r"""Run an ``INSERT`` once per parameter dict (``executemany``; on SQLite as multi-row ``INSERT``\s,
        a large batch's shared values processed once, :meth:`_many_values`)."""
        if connection.dialect.name != "sqlite":
            connection.execute(self.statement, [dict(item) for item in params])
            return
        compiled = self._compile(connection.dialect)
        raw = connection.connection.driver_connection
        assert raw is not None
        if len(params) >= _SHARED_VALUES_FROM:
            rows = self._many_values(compiled, params)
        else:
            rows = [self._values(compiled, item) for item in params]
        head, group = compiled.many
        if not group or len(rows) < 2:
            raw.executemany(compiled.sql, rows)
            return
        # One multi-row INSERT per chunk: one statement step (one release of the GIL) for all its rows,
        # where executemany steps once per row; the rows, their order and a constraint's failure (of the
        # whole statement, inside the batch's savepoint) are the same.
        per_chunk = max(1, _MAX_VARIABLES // max(1, len(compiled.names)))
        for start in range(0, len(rows), per_chunk):
            chunk = rows[start : start + per_chunk]
            raw.execute(head + ", ".join([group] * len(chunk)), [value for row in chunk for value in row])


def get_context(connection: HTTPConnection) -> ServerContext:
    """The :class:`ServerContext` of the app serving ``connection``."""
    context = connection.app.state.paysdk
    assert isinstance(context, ServerContext)
    return context


_CLOCK = cast(Table, ClockRow.__table__)
_CLOCK_OFFSET = Statement(select(_CLOCK.c.offset_us).where(_CLOCK.c.id == 1))


def virtual_now(connection: Connection, clock: Clock) -> datetime:
    """:meth:`Clock.now` read through a Core connection (the same stored offset, one small query)."""
    rows = batch_cached(connection, _CLOCK_OFFSET, lambda: _CLOCK_OFFSET.rows(connection))
    return clock._wall() + timedelta(microseconds=rows[0][0] if rows else 0)
