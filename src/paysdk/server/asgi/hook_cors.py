"""Hook CORS (D14): the paths a family registers as called from web pages (``Family.cors_paths``, today
``/transactions-hook``) answer a preflight ``OPTIONS`` here (``204``) and carry
``Access-Control-Allow-Origin: *`` on every other answer, errors included.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HookCors"]

_ALLOW_ORIGIN = b"access-control-allow-origin"
_PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type, Idempotency-Key",
    "Access-Control-Max-Age": "600",
}


class HookCors:
    """CORS for browsers on ``paths`` (exact paths, a trailing ``/`` ignored); every other path passes."""

    def __init__(self, app: ASGIApp, paths: Iterable[str]) -> None:
        self.app = app
        self.paths = frozenset(path.rstrip("/") for path in paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") not in self.paths:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            await Response(status_code=204, headers=_PREFLIGHT_HEADERS)(scope, receive, send)
            return

        async def allowing(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ()) if bytes(k).lower() != _ALLOW_ORIGIN]
                message = {**message, "headers": [*headers, (_ALLOW_ORIGIN, b"*")]}
            await send(message)

        await self.app(scope, receive, allowing)
