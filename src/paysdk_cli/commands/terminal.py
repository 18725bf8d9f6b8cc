"""``paysdk terminal``: terminal (POS) payments (``/terminal-payment``, spec 1, 4.4; D190-D192)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit
from paysdk_cli._params import parse_amount

if TYPE_CHECKING:
    from paysdk.contracts.common import CurrencyCode
    from paysdk.contracts.terminal import TerminalPayment

__all__ = ["COLUMNS", "app"]

app = new_app(
    "Terminal (POS) payments with two-step capture.\n\n"
    "Create (authorize, and capture at once unless --manual), capture within 7 days, void the same "
    "business day (before 23:30 UTC), refund after settlement."
)

#: What the table shows of a payment (``-o json`` prints every field).
COLUMNS = [
    "id",
    "status",
    "captureMode",
    "amount",
    "currency",
    "capturedAmount",
    "refundedAmount",
    "cardLast4",
    "declineReason",
    "captureBefore",
    "settlementDate",
    "payoutDate",
]

_ID = typer.Argument(help="The terminal payment's id (tpm_...).", metavar="PAYMENT_ID")


def _show(ctx: typer.Context, payment: TerminalPayment, title: str) -> None:
    data: dict[str, Any] = payment.to_wire()
    emit(state(ctx).output, data, columns=COLUMNS, title=title)


def _expiry(value: str) -> tuple[int, int]:
    month, _, year = value.partition("/")
    if not (month.isdigit() and year.isdigit() and len(year) == 4 and 1 <= int(month) <= 12):
        raise typer.BadParameter("must be MM/YYYY, e.g. 12/2030", param_hint="--expiry")
    return int(month), int(year)


@app.command("create")
def create(
    ctx: typer.Context,
    amount: Annotated[str, typer.Option("--amount", help="Amount as a decimal, e.g. 10.50 (exact).")],
    currency: Annotated[str, typer.Option("--currency", help="GTQ, USD, ...")],
    terminal_id: Annotated[str, typer.Option("--terminal-id", help="The terminal that read the card.")],
    card: Annotated[str, typer.Option("--card", "--card-number", help="Card number (a sandbox test card).")],
    expiry: Annotated[str, typer.Option("--expiry", help="Card expiry MM/YYYY.")] = "12/2030",
    manual: Annotated[
        bool, typer.Option("--manual", help="Two-step: only authorize; capture later (within 7 days).")
    ] = False,
    reference: Annotated[str | None, typer.Option("--reference", help="Your reference.")] = None,
    external_id: Annotated[str | None, typer.Option("--external-id", help="Your id.")] = None,
) -> None:
    """Authorize a card read at a terminal (and capture it at once unless --manual)."""
    st = state(ctx)
    value = parse_amount(amount)
    month, year = _expiry(expiry)
    with open_client(st) as sdk:
        payment = sdk.terminal.create(
            amount=value,
            currency=cast("CurrencyCode", currency),  # checked by the SDK, naming the option
            terminal_id=terminal_id,
            card_number=card,
            expiry_month=month,
            expiry_year=year,
            capture_mode="manual" if manual else "automatic",
            reference=reference,
            external_id=external_id,
        )
    _show(ctx, payment, "Terminal payment")


@app.command("capture")
def capture(
    ctx: typer.Context,
    payment_id: Annotated[str, _ID],
    amount: Annotated[
        str | None, typer.Option("--amount", help="Capture less than authorized (default: all).")
    ] = None,
) -> None:
    """Capture an authorized payment (once, within 7 days of the authorization)."""
    st = state(ctx)
    value = None if amount is None else parse_amount(amount)
    with open_client(st) as sdk:
        payment = sdk.terminal.capture(payment_id, value)
    _show(ctx, payment, "Captured")


@app.command("void")
def void(ctx: typer.Context, payment_id: Annotated[str, _ID]) -> None:
    """Void an authorization, or a capture before the 23:30 UTC cutoff of its business day."""
    st = state(ctx)
    with open_client(st) as sdk:
        payment = sdk.terminal.void(payment_id)
    _show(ctx, payment, "Voided")


@app.command("refund")
def refund(
    ctx: typer.Context,
    payment_id: Annotated[str, _ID],
    amount: Annotated[
        str | None, typer.Option("--amount", help="Refund part (default: all that is left).")
    ] = None,
) -> None:
    """Refund a settled payment, in full or in part (never more than captured)."""
    st = state(ctx)
    value = None if amount is None else parse_amount(amount)
    with open_client(st) as sdk:
        payment = sdk.terminal.refund(payment_id, value)
    _show(ctx, payment, "Refunded")
