"""``/api/v1/integrations/transactions[...]`` (spec 2.3, 4.1; decisions D10-D13, D21).

Answers are wrapped in ``{"data": ...}``: create ``201``, process ``200``, payment intent ``201``,
dismiss ``200``. Merchant token in ``Authorization`` (``Bearer `` conventional, raw accepted, D9).
A dismissal's callback is delivered by a background task right after the answer.
"""

from __future__ import annotations

from fastapi import APIRouter, BackgroundTasks, Request
from pydantic import BaseModel
from starlette.responses import Response

from paysdk.contracts.alternative_payments import (
    AlternativePayment,
    AlternativePaymentCreate,
    DismissResult,
    PaymentIntent,
    PaymentIntentCreate,
    ProcessRequest,
    ProcessResult,
)
from paysdk.server.context import get_context
from paysdk.server.errors import JSONResponse
from paysdk.server.routers._common import MERCHANT_ERRORS, credentials, only, route, webview_url
from paysdk.server.routers._transactions import Db, MerchantToken
from paysdk.server.services import alternative_payments

__all__ = ["router"]

router = APIRouter(prefix="/api/v1/integrations", tags=["alternative payments"])


class EmptyBody(BaseModel):
    """No body, or any JSON object (D13)."""


@router.post(
    "/transactions",
    **route(
        "Create an alternative payment",
        auth="merchant",
        body=AlternativePaymentCreate,
        answer=AlternativePayment,
        envelope=True,
        status=201,
        errors=only(MERCHANT_ERRORS, 400, 409),
    ),
)
async def create_alternative_payment(request: Request) -> Response:
    """Create a transaction to be paid on a rail; ``expireAt`` is epoch milliseconds (D10)."""
    context = get_context(request)
    raw = await request.body()
    payment = await context.run_grouped(
        alternative_payments.create,
        context.clock,
        context.environment,
        credentials(request),
        alternative_payments.parse(raw),
    )
    return JSONResponse({"data": payment.to_wire()}, status_code=201)


@router.post(
    "/transactions/{uid}/payments",
    **route(
        "Process an alternative payment on a rail",
        auth="merchant",
        body=ProcessRequest,
        answer=ProcessResult,
        envelope=True,
        errors=only(MERCHANT_ERRORS, 400, 404, 409),
    ),
)
async def process_payment(uid: str, request: Request, db: Db, merchant: MerchantToken) -> Response:
    """QR rails answer a PNG data URI, URL rails a page address, bank rails a 12-digit reference (D11)."""
    context = db.context
    raw = await request.body()
    result = await db.run(
        alternative_payments.process,
        db.session,
        context.clock,
        context.environment,
        merchant,
        uid,
        raw,
        webview_url(request),
    )
    return JSONResponse({"data": result.to_wire()})


@router.post(
    "/transactions/{uid}/payment-intents",
    **route(
        "Record the customer's choice of rail",
        auth="merchant",
        body=PaymentIntentCreate,
        answer=PaymentIntent,
        envelope=True,
        status=201,
        errors=only(MERCHANT_ERRORS, 400, 404, 409),
    ),
)
async def create_payment_intent(uid: str, request: Request, db: Db, merchant: MerchantToken) -> Response:
    """Record the customer's choice of rail (D12).

    ``{"processor"}`` in, ``201 {"data": {intentId, uid, processor, status, expireAt}}`` out.
    """
    context = db.context
    raw = await request.body()
    intent = await db.run(
        alternative_payments.payment_intent,
        db.session,
        context.clock,
        context.environment,
        merchant,
        uid,
        raw,
    )
    return JSONResponse({"data": intent.to_wire()}, status_code=201)


@router.post(
    "/transactions/{uid}/dismiss",
    **route(
        "Dismiss an alternative payment",
        auth="merchant",
        body=EmptyBody,
        body_required=False,
        answer=DismissResult,
        envelope=True,
        errors=only(MERCHANT_ERRORS, 400, 404, 409),
    ),
)
async def dismiss_payment(
    uid: str, request: Request, background: BackgroundTasks, db: Db, merchant: MerchantToken
) -> Response:
    """Make the transaction ``dismissed`` and send the merchant callback (D13)."""
    context = db.context
    raw = await request.body()
    result = await db.run(
        alternative_payments.dismiss, db.session, context.clock, context.environment, merchant, uid, raw
    )
    background.add_task(context.scheduler.run_due)
    return JSONResponse({"data": result.to_wire()}, background=background)
