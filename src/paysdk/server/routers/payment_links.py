"""``POST /transactions`` and ``POST /transactions-hook`` (spec 4.1; decisions D2, D9, D14, D17, D20).

Bodies are read raw and parsed by the service with :func:`paysdk._json.loads`; the contract model's
schema documents them in OpenAPI. Both answer ``200 {uid, reference, URL}``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.payment_links import PaymentLink, PaymentLinkCreate, PaymentLinkHookCreate
from paysdk.server.context import get_context
from paysdk.server.errors import JSONResponse
from paysdk.server.routers._common import MERCHANT_ERRORS, credentials, only, route, webview_url
from paysdk.server.services import payment_links

__all__ = ["router"]

router = APIRouter(tags=["payment links"])


@router.post(
    "/transactions",
    **route(
        "Create a payment link",
        auth="merchant",
        body=PaymentLinkCreate,
        answer=PaymentLink,
        errors=only(MERCHANT_ERRORS, 400, 409),
    ),
)
async def create_payment_link(request: Request) -> Response:
    """Create a payment-link transaction. ``Authorization: <merchant token>`` (``Bearer `` accepted, D9)."""
    context = get_context(request)
    raw = await request.body()
    link = await context.run_grouped(
        payment_links.create,
        context.clock,
        context.environment,
        credentials(request),
        payment_links.parse(raw),
        webview_url(request),
    )
    return JSONResponse(link.to_wire())


@router.post(
    "/transactions-hook",
    **route(
        "Create a payment link from a browser (body credentials, CORS)",
        auth="hook-keys",
        body=PaymentLinkHookCreate,
        answer=PaymentLink,
        errors=only(MERCHANT_ERRORS, 400, 409),
    ),
)
async def create_payment_link_hook(request: Request) -> Response:
    """Create a payment link with the body key pair ``privateKey``/``publicKey`` (D14). CORS enabled."""
    context = get_context(request)
    raw = await request.body()
    link = await context.run_grouped(
        payment_links.create_from_hook, context.clock, payment_links.parse_hook(raw), webview_url(request)
    )
    return JSONResponse(link.to_wire())
