"""The state of one server instance shared by routers, services, the ASGI layers and the scheduler.

The group commit, the compiled statements and the values read once per batch live in
:mod:`paysdk.server.hotpath` (the speed machinery's seam); this module re-exports their names
(:class:`Statement`, :class:`GroupCommit`, :class:`Sink`, :func:`batch_cached`, :func:`deferring`) for the
services that use them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import anyio.to_thread
from sqlalchemy import Table, select
from sqlalchemy.engine import Connection
from starlette.requests import HTTPConnection

from paysdk.server.addresses import ServerAddresses
from paysdk.server.clock import Clock
from paysdk.server.control_token import ControlPlaneAccess
from paysdk.server.core_tables import ClockRow
from paysdk.server.db import Database
from paysdk.server.events import EventFeed
from paysdk.server.hotpath.batch import batch_cached, deferring
from paysdk.server.hotpath.group_commit import GroupCommit, Sink
from paysdk.server.hotpath.statements import Statement

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

    * :meth:`run_grouped` (and :meth:`run_core`): the group-commit fast lane (:mod:`paysdk.server.hotpath`)
      of the two hot creates, ``POST /transactions`` and ``POST /api/v1/integrations/transactions``, whose
      Core work only inserts; ``tests/server/test_fast_lane.py`` and ``test_hot_path.py`` hold it fast;
    * :meth:`append`: the request log's writes, batched with them;
    * :meth:`run_brief` / :meth:`brief`: the faults layer's sub-millisecond look for injected faults;
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
        transaction shared with the concurrent requests (SQLite; :mod:`paysdk.server.hotpath.group_commit`).
        Returns once committed. On PostgreSQL, or with the hot path off, it is :meth:`run_core`."""
        if self.db.executor is None or not self.db.hotpath:
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
        from paysdk._tls import verification_context

        return httpx.AsyncClient(timeout=timeout, follow_redirects=False, verify=verification_context()), True


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
