"""Deprecation headers (D196, D253-D255, D392): every answer for a public path of an operation marked
through ``/_sandbox/deprecations``, the refusals of the layers inside this one included, carries the
mark's headers (``Deprecation``, ``Sunset``, ``Link``). The operation is named from the request's path as
``/openapi.json`` names it, mount prefix included (:func:`paysdk.server.deprecations.marked`).

The marks live in the database; they are read again at most once a second (D255), without a coroutine
while they are fresh (D501). The control plane and the docs are never marked.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from paysdk.server import deprecations
from paysdk.server.asgi._scope import is_control_path, with_headers
from paysdk.server.context import ServerContext

__all__ = ["Deprecation"]


class Deprecation:
    """Adds a marked operation's headers to its answers.

    ``context``: the server's (its database holds the marks; ``database_key`` names that database among
    the processes' caches: :func:`paysdk.server.faults.database_key`). ``control``: the
    control-plane prefixes (:func:`paysdk.server.asgi._scope.control_forms`)."""

    def __init__(
        self, app: ASGIApp, context: ServerContext, database_key: str, control: tuple[str, ...]
    ) -> None:
        self.app = app
        self.context = context
        self.key = database_key
        self.control = control

    async def marks(self) -> deprecations.Marks:
        """The deprecation marks of the database, read again when stale (D255)."""
        marks = deprecations.fresh(self.key)
        if marks is not None:
            return marks
        await self.context.run_brief(deprecations.load, self.key)
        return deprecations.headers_for(self.key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_control_path(scope["path"], self.control):
            await self.app(scope, receive, send)
            return
        marks = deprecations.fresh(self.key)  # no coroutine while the marks are fresh (D501, D641)
        if marks is None:
            marks = await self.marks()
        if not marks:
            await self.app(scope, receive, send)
            return

        async def marking(message: Message) -> None:
            if message["type"] == "http.response.start":
                path = scope["path"]
                root = scope.get("root_path") or ""
                if root and path.startswith(root):
                    path = path[len(root) :]
                route_path = getattr(scope.get("route"), "path", None)
                pairs = deprecations.marked(marks, scope["method"], path, route_path)
                if pairs is not None:
                    message = with_headers(message, pairs)
            await send(message)

        await self.app(scope, receive, marking)
