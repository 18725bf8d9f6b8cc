"""``POST /terminal-payment`` and ``PATCH /terminal-payment/{id}`` (spec 1, 4.4; D183, D190-D192): HTTP
only, the logic is in :mod:`paysdk.server.services.terminal`.

Merchant token in ``Authorization`` (``Bearer `` optional, D9); payment-link error codes (D183): ``400``
malformed JSON (ownCode null) or amount out of range (``2003``), ``409 / 5000`` naming a missing, mistyped
or refused field (``installments``, D190), ``409`` with ``ownCode`` null naming ``action`` or ``amount``
for a transition the payment's state does not allow (D191), ``404`` for an unknown or another client's id.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.terminal import TerminalPayment, TerminalPaymentCreate, TerminalPaymentUpdate
from paysdk.server.routers._common import answer, route
from paysdk.server.routers._transactions import Db, MerchantToken
from paysdk.server.services import terminal

__all__ = ["TERMINAL_ERRORS", "router"]

router = APIRouter(tags=["terminal payments"])

#: D1 error answers of the terminal routes (D183, D191).
TERMINAL_ERRORS: dict[int, str] = {
    400: "Malformed JSON body (ownCode null, D20) or amount out of the client's range (ownCode 2003).",
    404: "Unknown terminal payment, or another client's (ownCode null, naming id).",
    409: "Invalid or refused field (5000, naming it; installments are refused), or a transition the "
    "payment's state does not allow (ownCode null, naming action or amount, saying why).",
}


@router.post(
    "/terminal-payment",
    **route(
        "Create a terminal (POS) payment",
        auth="merchant",
        body=TerminalPaymentCreate,
        answer=TerminalPayment,
        status=201,
        errors={400: TERMINAL_ERRORS[400], 409: TERMINAL_ERRORS[409]},
    ),
)
async def create_terminal_payment(request: Request, db: Db, merchant: MerchantToken) -> Response:
    """Authorize (and, with ``captureMode`` ``automatic``, capture) a card read at a terminal (D190). A
    declined card answers ``201`` with status ``declined``."""
    context = db.context
    raw = await request.body()
    payment = await db.run(terminal.create, db.session, context.clock, context.environment, merchant, raw)
    return answer(payment, 201)


@router.patch(
    "/terminal-payment/{id}",
    **route(
        "Capture, void or refund a terminal payment",
        auth="merchant",
        body=TerminalPaymentUpdate,
        answer=TerminalPayment,
        errors=TERMINAL_ERRORS,
    ),
)
async def update_terminal_payment(id: str, request: Request, db: Db, merchant: MerchantToken) -> Response:
    """``{action: capture | void | refund, amount?}`` (D191)."""
    context = db.context
    raw = await request.body()
    payment = await db.run(terminal.update, db.session, context.clock, context.environment, merchant, id, raw)
    return answer(payment)
