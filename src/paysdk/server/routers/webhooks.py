"""Inbound processor webhooks ``POST /webhooks/settlements`` and ``POST /webhooks/processor-feed`` (spec
4.4; D183, D193, D240): HTTP only, the logic is in :mod:`paysdk.server.services.processor_webhooks`.

The processor calls them, never a merchant: no ``Authorization`` is read; the raw body is signed in
``X-Processor-Signature`` (``401`` naming it when missing, malformed, wrong or stale). Idempotency is
the notification's or event's own id (D193), so ``Idempotency-Key`` is not honoured here (D240).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.processor_webhooks import (
    SIGNATURE_HEADER,
    FeedResult,
    ProcessorFeed,
    SettlementNotification,
    SettlementResult,
)
from paysdk.server.routers._common import answer, header, route
from paysdk.server.routers._transactions import Db
from paysdk.server.services import processor_webhooks

__all__ = ["FEED_PATH", "SETTLEMENTS_PATH", "WEBHOOK_ERRORS", "router"]

router = APIRouter(tags=["processor webhooks"])

SETTLEMENTS_PATH = "/webhooks/settlements"
FEED_PATH = "/webhooks/processor-feed"

#: D1 error answers of the inbound webhooks (D193, D240).
WEBHOOK_ERRORS: dict[int, str] = {
    400: "Malformed JSON body (ownCode null, naming body, D20).",
    401: f"{SIGNATURE_HEADER} missing, malformed, not matching the body, or t more than 5 minutes from "
    "the server's clock (ownCode null, naming the header): nothing changed.",
    404: "Unknown terminal payment (ownCode null, naming paymentId): nothing changed.",
    409: "Invalid field (5000, naming it, e.g. events.3.at; an at in the future): nothing changed.",
}

_SIGNATURE_PARAMETER: dict[str, Any] = {
    "name": SIGNATURE_HEADER,
    "in": "header",
    "required": True,
    "description": 't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>"> with the processor secret '
    "(D193; GET /_sandbox/processor on the reference server).",
    "schema": {"type": "string"},
}


def _declaration(summary: str, body: Any, result: Any, errors: dict[int, str]) -> dict[str, Any]:
    kwargs = route(summary, auth="none", body=body, answer=result, errors=errors)
    kwargs["openapi_extra"]["parameters"] = [_SIGNATURE_PARAMETER]
    return kwargs


@router.post(
    SETTLEMENTS_PATH,
    **_declaration(
        "Inbound settlement notification (the processor calls it)",
        SettlementNotification,
        SettlementResult,
        WEBHOOK_ERRORS,
    ),
)
async def receive_settlement(request: Request, db: Db) -> Response:
    """One payment settled or paid out (D193): applied at most once; ``applied: false`` with the reason
    in ``ignored`` for a repeat or a transition the payment's state does not allow."""
    raw = await request.body()
    signature = header(request, SIGNATURE_HEADER)
    return answer(
        await db.run(processor_webhooks.receive_settlement, db.session, db.context, db.now, raw, signature)
    )


@router.post(
    FEED_PATH,
    **_declaration(
        "Inbound processor feed batch (the processor calls it)",
        ProcessorFeed,
        FeedResult,
        {status: text for status, text in WEBHOOK_ERRORS.items() if status != 404},
    ),
)
async def receive_feed(request: Request, db: Db) -> Response:
    """Up to 1,000 events applied in order, each at most once (D193); unknown payments, repeats and
    refused transitions are listed in ``ignored``."""
    raw = await request.body()
    signature = header(request, SIGNATURE_HEADER)
    return answer(
        await db.run(processor_webhooks.receive_feed, db.session, db.context, db.now, raw, signature)
    )
