"""Request ids (D65): every answer, control plane, pages, errors, refusals and preflights included,
carries ``X-Request-Id: req_<32 hex>`` (time-ordered, minted here, never the client's).

The id is kept in the scope (:data:`paysdk.server.errors.REQUEST_ID_SCOPE_KEY`) for the request log and
for the 500 handler, which sits outside every middleware. The layer also keeps the connection's
``receive`` in the scope (:func:`paysdk.server.adapters.uvicorn.remember_connection`), first thing, while
it is still uvicorn's own: the drop fault and the event streams reach uvicorn's request cycle through it.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from paysdk.server.adapters.uvicorn import remember_connection
from paysdk.server.errors import REQUEST_ID_HEADER, REQUEST_ID_SCOPE_KEY, new_request_id

__all__ = ["RequestId"]


class RequestId:
    """Mints the request's id, keeps it in the scope and adds it to the answer's headers (last)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        remember_connection(scope, receive)
        request_id = scope[REQUEST_ID_SCOPE_KEY] = new_request_id()
        stamp = (REQUEST_ID_HEADER, request_id.encode("ascii"))

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), stamp]}
            await send(message)

        await self.app(scope, receive, stamped)
