"""Body bounds (D85, D110, D390; :mod:`paysdk.server.bodies`), on every route, the control plane included.

First a request that declares both ``Content-Length`` and ``Transfer-Encoding`` is ``400`` and its
connection closed (request smuggling, D390); then a declared ``Content-Length`` over the route's limit is
``413`` before any byte is read; else ``receive`` becomes a :class:`paysdk.server.bodies.BoundedReceive`
(``413`` past the limit, ``408`` when the body stalls). A client that disconnects mid-body
(:class:`starlette.requests.ClientDisconnect`, logged once by the bounded receive) ends the request
quietly, never with a traceback.
"""

from __future__ import annotations

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from paysdk.server.bodies import BodyBounds, BodyRefused, declared_framing, length_above

__all__ = ["BodyBoundsLayer"]


class BodyBoundsLayer:
    """Refuses a body framed two ways or declared too large, and bounds the body as it streams.

    ``bounds``: the limits and timeouts of every request body (:class:`paysdk.server.bodies.BodyBounds`).
    """

    def __init__(self, app: ASGIApp, bounds: BodyBounds) -> None:
        self.app = app
        self.bounds = bounds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # One pass over the headers for the two checks of the body's framing (D501).
        length, coded = declared_framing(scope)
        if coded and length is not None:
            await BodyRefused.framed_twice().response()(scope, receive, send)
            return
        # Larger on upload routes (D110); found once, for this check and the bounded receive.
        bounds = self.bounds.bounds_of(scope["method"], scope["path"])
        if length_above(length, bounds[0]):
            await BodyRefused.too_large(bounds[0]).response()(scope, receive, send)
            return
        try:  # a plain ``try`` costs less than a ``contextlib.suppress`` per request (D641)
            await self.app(scope, self.bounds.wrap(scope, receive, bounds), send)
        except ClientDisconnect:  # mid-body: the bounded receive logged it
            return
