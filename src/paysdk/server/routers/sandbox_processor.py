"""The control plane plays the processor (D193, D240): ``GET /_sandbox/processor`` shows the secret the
processor signs with, ``POST /_sandbox/processor/settlements {paymentId, type, notificationId?, at?}``
signs a settlement notification and ``POST /_sandbox/processor/feed {feedId?, events: [{type, paymentId,
eventId?, at?}]}`` a feed batch, each delivered through the receiver's own code path
(:mod:`paysdk.server.services.processor_webhooks`). Left out of ``/openapi.json``;
never logged, faulted or idempotent, like the rest of ``/_sandbox``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk._redact import MASK
from paysdk.contracts.processor_webhooks import SandboxFeed, SandboxSettlement
from paysdk.server.bodies import read_json_object, validate
from paysdk.server.errors import JSONResponse
from paysdk.server.routers._transactions import Db
from paysdk.server.services import processor_webhooks

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox", include_in_schema=False)


async def _processor_info(db: Db, reveal: bool) -> Response:
    info = await db.run(processor_webhooks.processor_info, db.session, db.context)
    if db.context.control.exposed and not reveal:
        info = info.model_copy(update={"secret": MASK})
    return JSONResponse(info.model_dump(by_alias=True, mode="python"))


@router.get("/processor")
async def processor(db: Db) -> Response:
    """The processor secret (kept across resets) and the signature scheme. On a server bound to a
    non-loopback address the secret shows as ``****``: ``POST /_sandbox/processor/reveal`` answers it
    (D273)."""
    return await _processor_info(db, reveal=False)


@router.post("/processor/reveal")
async def reveal_processor(db: Db) -> Response:
    """The processor secret in full, whatever the bind (the control token guards it, D273)."""
    return await _processor_info(db, reveal=True)


@router.post("/processor/settlements")
async def deliver_settlement(request: Request, db: Db) -> Response:
    """Sign and deliver one settlement notification; the receiver's answer (or error) is the answer."""
    spec = validate(SandboxSettlement, await read_json_object(request))

    delivery = await db.run(processor_webhooks.deliver_settlement, db.session, db.context, db.now, spec)
    return JSONResponse(delivery.model_dump(by_alias=True, exclude_none=True, mode="python"))


@router.post("/processor/feed")
async def deliver_feed(request: Request, db: Db) -> Response:
    """Sign and deliver one feed batch; the receiver's answer (or error) is the answer."""
    spec = validate(SandboxFeed, await read_json_object(request))

    delivery = await db.run(processor_webhooks.deliver_feed, db.session, db.context, db.now, spec)
    return JSONResponse(delivery.model_dump(by_alias=True, exclude_none=True, mode="python"))
