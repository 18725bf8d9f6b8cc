"""The group commit (:class:`GroupCommit`; :meth:`paysdk.server.context.ServerContext.run_grouped` and
:meth:`~paysdk.server.context.ServerContext.append` use it): the
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

* First the calls of a batch run together (the fast way): their inserts
  (:meth:`paysdk.server.hotpath.statements.Statement.insert`) are not executed but collected, and
  written at the end with one ``executemany`` per statement, inside one
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
  callback header names) are made once per batch (:func:`paysdk.server.hotpath.batch.batch_cached`):
  the batch holds SQLite's write lock, and batched calls only insert transactions, jobs and log entries.
* Batches are per event loop; calls run in arrival order. On PostgreSQL calls are not batched (each runs
  in its own transaction on the thread pool, where row locks order writers); appended items are.

The switch: when the database's hot path is off (``Database(..., hotpath=False)``), :meth:`GroupCommit.call`
runs each call in a transaction of its own and :meth:`GroupCommit.append` writes each item in one: the
plain path the equivalence tests compare with.

:class:`LockingGroupCommit` is a group commit whose every batch first runs a family's lock call over the
keys its calls name (the wallet ledger locks its cards in card-id order on PostgreSQL, D258).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy.engine import Connection

from paysdk.server.hotpath.batch import scope
from paysdk.server.hotpath.driver import SavepointBroken, savepoint
from paysdk.server.hotpath.statements import Statement

if TYPE_CHECKING:
    from paysdk.server.db import Database

__all__ = ["Call", "GroupCommit", "LockingGroupCommit", "Runner", "Sink"]

log = logging.getLogger("paysdk.server")

T = TypeVar("T")
X = TypeVar("X")


class Runner(Protocol):
    """What a group commit runs on (a :class:`paysdk.server.context.ServerContext`)."""

    db: Database

    async def brief(self, call: Callable[[], T]) -> T:
        """``call()`` on the event loop when SQLite's worker is idle, else on the worker."""

    async def run_core(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` in a Core transaction of its own, on the worker thread(s)."""


class Sink(Protocol[X]):
    """Where appended items of a group commit go (the request log)."""

    def write(self, connection: Connection, items: list[X]) -> None:
        """Write ``items`` (inside the batch's transaction)."""

    def failed(self, item: X) -> None:
        """``item`` could not be written even alone (called from an ``except`` block)."""


@dataclass(slots=True)
class Call:
    """One call waiting in a batch: ``fn(connection, *args)``, and where its outcome goes."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    done: asyncio.Future[Any]
    ok: bool = False
    result: Any = None
    error: BaseException | None = None


@dataclass(slots=True)
class _Pending:
    calls: list[Call] = field(default_factory=list)
    items: dict[Any, list[tuple[Any, asyncio.Future[None]]]] = field(default_factory=dict)
    flusher: asyncio.Task[None] | None = None


class GroupCommit:
    """The group commit of one server instance (see the module docstring). One batch per event loop."""

    def __init__(self, context: Runner) -> None:
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
        """``fn(connection, *args)`` in the next batch; its result or its exception (in a transaction of
        its own when the hot path is off)."""
        if not self._context.db.hotpath:
            return await self._context.run_core(fn, *args)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        self._batch(loop).calls.append(Call(fn, args, done))
        return await done

    async def append(self, sink: Sink[X], item: X) -> None:
        """Write ``item`` with ``sink`` in the next batch (alone when the hot path is off)."""
        if not self._context.db.hotpath:
            try:
                await self._context.run_core(_write_alone, sink, item)
            except Exception:  # the log must never break an answer
                sink.failed(item)
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._batch(loop).items.setdefault(sink, []).append((item, done))
        await done

    async def _flush(self, pending: _Pending) -> None:
        calls: list[Call] = []
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

    def _write(self, calls: list[Call], batch: list[tuple[Sink[Any], list[Any]]]) -> None:
        db = self._context.db
        try:
            with db.batch_transaction() as connection:
                scope.connection, scope.cache = connection, {}
                try:
                    if not _run_together(connection, calls):
                        for call in calls:
                            _run_call(connection, call)
                    for sink, items in batch:
                        _write_items(connection, sink, items)
                finally:
                    scope.connection, scope.cache = None, {}
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


def _run_together(connection: Connection, calls: list[Call]) -> bool:
    """The fast way (see the module docstring); ``False`` when the calls must run one by one."""
    if not calls:
        return True
    try:
        with savepoint(connection, "paysdk_batch"):
            inserts: dict[Statement, list[Mapping[str, Any]]] = {}
            for call in calls:
                writes: list[tuple[Statement, Mapping[str, Any]]] = []
                scope.writes = writes
                try:
                    call.ok, call.result, call.error = True, call.fn(connection, *call.args), None
                except Exception as exc:
                    call.ok, call.result, call.error = False, None, exc
                    continue
                finally:
                    scope.writes = None
                for statement, params in writes:
                    inserts.setdefault(statement, []).append(params)
            for statement, rows in inserts.items():
                statement.run_many(connection, rows)
    except SavepointBroken:
        raise
    except Exception:
        log.debug("group commit: writing %d calls together failed", len(calls), exc_info=True)
        return False
    return True


def _run_call(connection: Connection, call: Call) -> None:
    try:
        with savepoint(connection):
            result = call.fn(connection, *call.args)
    except SavepointBroken:
        raise
    except Exception as exc:
        call.ok, call.error = False, exc
        return
    call.ok, call.result = True, result


def _write_items(connection: Connection, sink: Sink[Any], items: list[Any]) -> None:
    try:
        with savepoint(connection):
            sink.write(connection, items)
        return
    except SavepointBroken:
        raise
    except Exception:  # one bad item must not lose the others: one by one
        if len(items) == 1:
            sink.failed(items[0])
            return
    for item in items:
        try:
            with savepoint(connection):
                sink.write(connection, [item])
        except SavepointBroken:
            raise
        except Exception:
            sink.failed(item)


def _write_alone(connection: Connection, sink: Sink[Any], item: Any) -> None:
    sink.write(connection, [item])


def _release(items: dict[Any, list[tuple[Any, asyncio.Future[None]]]]) -> None:
    for entries in items.values():
        for _, done in entries:
            if not done.done():
                done.set_result(None)


class LockingGroupCommit(GroupCommit):
    """A :class:`GroupCommit` whose every batch first runs ``lock(connection, keys)`` over the keys its
    calls name (in one call placed before them), so the batch takes its row locks in the order ``lock``
    chooses rather than in arrival order: the order other writers use, so no lock cycle can form. The
    lock call's own outcome is nobody's answer: when it fails the batch's calls run one by one, as for any
    failing call. Where one writer holds the whole database (``executor``: SQLite) the calls join
    ``shared`` (the server's main group commit) instead: no lock order to keep, one ``COMMIT`` fewer."""

    def __init__(
        self,
        context: Runner,
        lock: Callable[[Connection, list[Any]], None],
        shared: GroupCommit,
    ) -> None:
        super().__init__(context)
        self._lock = lock
        self._shared = shared

    async def call_keyed(self, key: Any, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(connection, *args)`` in the next batch, after the batch's lock over ``key`` and the
        others' keys; its result or its exception."""
        if self._context.db.executor is not None or not self._context.db.hotpath:
            return await self._shared.call(fn, *args)
        loop = asyncio.get_running_loop()
        pending = self._batch(loop)
        if not pending.calls:  # a new batch: its first call locks every key of the batch
            lock: asyncio.Future[Any] = loop.create_future()
            lock.add_done_callback(_retrieved)
            pending.calls.append(Call(self._lock, ([],), lock))
        first = pending.calls[0]
        assert first.fn is self._lock
        first.args[0].append(key)
        done: asyncio.Future[Any] = loop.create_future()
        pending.calls.append(Call(fn, args, done))
        return await done


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # the lock's own outcome is nobody's answer: the calls report theirs
