"""The families' routes, built once per process and shared by every app made in it (D762).

FastAPI builds the routes of an included router on the first request that reaches them, once per
inclusion: a pydantic ``TypeAdapter`` per parameter, body and answer of each of ~150 routes, about a
tenth of a second of CPU for each app. A process that makes many apps (a test suite, a merchant's suite
on the pytest plugin, benchmarks) paid it for every one. Here each family router is included once per
process, at its mount, in a holder router of its own; what FastAPI appended there is appended to each
app's routes (Starlette's public ``router.routes``), so the second app serves with the routes the first
one built. Nothing private of FastAPI is read: the objects are the ones ``include_router`` makes.

A route so built belongs to no app, so FastAPI cannot ask its app for ``app.dependency_overrides``: the
holder routers ask :data:`SERVING`, the app whose request is being served, which :class:`ServerApp`
(the app class of :func:`paysdk.server.create_app`) sets for each request. Overrides so keep working per
app, as FastAPI documents them.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

__all__ = ["SERVING", "ServerApp", "include_shared"]

#: The app serving the current request (set by :meth:`ServerApp.__call__`).
SERVING: contextvars.ContextVar[FastAPI | None] = contextvars.ContextVar("paysdk_serving_app", default=None)


class ServerApp(FastAPI):
    """FastAPI, noting itself in :data:`SERVING` for the requests it serves (the shared routes' overrides)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = SERVING.set(self)
        try:
            await super().__call__(scope, receive, send)
        finally:
            SERVING.reset(token)


class _ServingAppOverrides:
    """The ``dependency_overrides_provider`` of the holder routers: the serving app's overrides."""

    @property
    def dependency_overrides(self) -> dict[Any, Any]:
        app = SERVING.get()
        return app.dependency_overrides if app is not None else {}


_OVERRIDES = _ServingAppOverrides()
#: The routes ``include_router`` made for each (router, mount, in the schema), with the router (held, so
#: that its id stays its own).
_INCLUDED: dict[tuple[int, str, bool], tuple[APIRouter, list[BaseRoute]]] = {}
_LOCK = threading.Lock()


def include_shared(
    app: FastAPI, router: APIRouter, prefix: str = "", *, include_in_schema: bool = True
) -> None:
    """Include ``router`` in ``app`` at ``prefix`` as ``app.include_router`` does, with the route objects
    made for the first app of the process that included it (module docstring)."""
    key = (id(router), prefix, include_in_schema)
    with _LOCK:
        made = _INCLUDED.get(key)
        if made is None:
            holder = APIRouter(dependency_overrides_provider=_OVERRIDES)
            holder.include_router(router, prefix=prefix, include_in_schema=include_in_schema)
            made = _INCLUDED[key] = (router, list(holder.routes))
    app.router.routes.extend(made[1])
