"""Fault injection (:mod:`paysdk.server.faults`, which also says when the database is asked):
``latency`` sleeps then answers normally, ``error`` answers the given 5xx, ``rate_limit`` answers ``429``
with ``Retry-After``, ``drop`` closes the connection without an answer.

Under uvicorn a dropped connection's transport is aborted (the client sees the socket close:
``httpx.RemoteProtocolError``/``ReadError``); in process, with ``httpx.ASGITransport``, there is no
socket, so :class:`paysdk.server.errors.ConnectionDropped` is raised and reaches the caller of httpx.
Faults apply to public paths and to the control-plane paths a fault may name explicitly (the upload
sink, which stands in for the upload routes of the API in tests); never to the rest of the control plane.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from paysdk.server import faults
from paysdk.server.adapters.uvicorn import abort_connection
from paysdk.server.asgi._scope import is_control_path
from paysdk.server.context import ServerContext
from paysdk.server.errors import APIProblem, ConnectionDropped

__all__ = ["FAULTABLE_CONTROL_PATHS", "Faults"]

#: Control-plane routes that take faults, from faults naming them explicitly (``paysdk.server.services.
#: faults.matches``): the upload sink, which stands in for the upload routes of the API in tests.
FAULTABLE_CONTROL_PATHS = frozenset({"/_sandbox/uploads"})


class Faults:
    """Applies the first matching fault to a request (see the module docstring).

    ``database_key``: the database's key among the process's caches
    (:func:`paysdk.server.faults.database_key`); ``control``: the control-plane prefixes
    (:func:`paysdk.server.asgi._scope.control_forms`); ``faultable``: control-plane paths that take faults.
    """

    def __init__(
        self,
        app: ASGIApp,
        context: ServerContext,
        database_key: str,
        control: tuple[str, ...],
        faultable: Iterable[str] = FAULTABLE_CONTROL_PATHS,
    ) -> None:
        self.app = app
        self.context = context
        self.key = database_key
        self.control = control
        self.faultable = frozenset(faultable)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Several server instances may share one database, and a fault created through any of them
        # applies to all: the database is asked unless a look found none and no fault was created in
        # this process since (see :mod:`paysdk.server.faults` for the one limit, other processes).
        if (
            scope["type"] != "http"
            or not faults.request_faults_possible(self.key)
            or (
                is_control_path(scope["path"], self.control)
                and scope["path"].rstrip("/") not in self.faultable
            )
        ):
            await self.app(scope, receive, send)
            return
        fault = await self.context.run_brief(
            faults.take_request_fault_core, self.key, str(scope["method"]), str(scope["path"])
        )
        if fault is None or fault.kind == "latency":
            if fault is not None:
                await asyncio.sleep((fault.latency_ms or 0) / 1000)
            await self.app(scope, receive, send)
        elif fault.kind == "error":
            problem = APIProblem(fault.status or 500, None, "Injected server error.")
            await problem.response()(scope, receive, send)
        elif fault.kind == "rate_limit":
            retry_after = str(fault.retry_after if fault.retry_after is not None else 1)
            problem = APIProblem(
                429, None, "Too many requests (injected).", headers={"Retry-After": retry_after}
            )
            await problem.response()(scope, receive, send)
        elif fault.kind == "drop":
            if abort_connection(scope):
                # Let uvicorn see the connection lost, then return: it sends nothing more.
                for _ in range(3):
                    await asyncio.sleep(0)
            raise ConnectionDropped(f"connection dropped by an injected fault ({scope['path']})")
        else:  # pragma: no cover - duplicate_callback faults are never taken here
            await self.app(scope, receive, send)
