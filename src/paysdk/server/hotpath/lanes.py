"""The fast lanes (D261, D560): the hot routes served as plain Starlette routes placed ahead of FastAPI's.

A lane is a route's own handler, ``handler(request) -> Response`` (path parameters read from
``request.path_params``), registered as a :class:`starlette.routing.Route` at the head of the app's
routes: the router tries it first, and the request skips FastAPI's dependency resolution and its walk
through every route declared before the hot one. The route stays declared in FastAPI (``/openapi.json``,
and the requests the lane does not take: another method). Errors are answered by the app's exception
handlers, as for any Starlette route (:func:`starlette.routing.request_response`).

The routes are given as data (``(method, path as served, handler)``, from the families' registrations,
:func:`paysdk.server.app.create_app`): this module knows no family.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, Router
from starlette.types import Receive, Scope, Send

__all__ = ["LANE_NAME", "Endpoint", "install_lanes", "lane_routes"]

#: An endpoint of a fast lane: ``handler(request) -> Response``.
Endpoint = Callable[[Request], Awaitable[Response]]

#: The name of every lane's route (a lane is never the target of ``url_for``: its FastAPI route is).
LANE_NAME = "paysdk-fast-lane"


class _Lane:
    """A handler as a plain ASGI app: the request goes in, its answer out. Its exceptions go on to the
    app's :class:`starlette.middleware.exceptions.ExceptionMiddleware`, which answers them with the app's
    handlers exactly as a route's own wrapper would (one ``send`` wrapper fewer per request)."""

    __slots__ = ("handler",)

    def __init__(self, handler: Endpoint) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.handler(Request(scope, receive, send))
        await response(scope, receive, send)


def lane_routes(lanes: Iterable[tuple[str, str, Endpoint]]) -> list[Route]:
    """One undocumented Starlette route per ``(method, path, handler)``."""
    return [
        Route(path, _Lane(handler), methods=[method], name=LANE_NAME, include_in_schema=False)
        for method, path, handler in lanes
    ]


def install_lanes(router: Router, lanes: Iterable[tuple[str, str, Endpoint]]) -> list[BaseRoute]:
    """Put the lanes at the head of ``router``'s routes, after the lanes installed before (which stay);
    returns the lane routes now installed."""
    routes = [route for route in router.routes if getattr(route, "name", None) == LANE_NAME]
    known = {(tuple(sorted(getattr(r, "methods", ()) or ())), getattr(r, "path", "")) for r in routes}
    for route in lane_routes(lanes):
        if (tuple(sorted(route.methods or ())), route.path) not in known:
            routes.append(route)
    router.routes[:] = [*routes, *(r for r in router.routes if getattr(r, "name", None) != LANE_NAME)]
    return routes
