"""The state of one server instance shared by routers, services, middleware and the scheduler."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio.to_thread
import httpx
from starlette.requests import HTTPConnection

from paysdk.server.clock import Clock
from paysdk.server.db import Database

if TYPE_CHECKING:
    from paysdk.server.scheduler import Scheduler

__all__ = ["EnvironmentName", "ServerContext", "get_context"]

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
        call = functools.partial(self.call, fn, *args)
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


def get_context(connection: HTTPConnection) -> ServerContext:
    """The :class:`ServerContext` of the app serving ``connection``."""
    context = connection.app.state.paysdk
    assert isinstance(context, ServerContext)
    return context
