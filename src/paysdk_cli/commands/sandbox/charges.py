"""``paysdk sandbox charges``: card payments on wallet cards (authorize, capture, refund, clear a refund)."""

from __future__ import annotations

from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit
from paysdk_cli.commands.sandbox._common import wire

__all__ = ["app"]

app = new_app("Card payments on wallet cards: authorize, capture, refund, clear a refund.")


_CHARGE_COLUMNS = [
    "chargeId",
    "cardId",
    "status",
    "amount",
    "capturedAmount",
    "refundedAmount",
    "createdAt",
    "expiresAt",
]
_REFUND_COLUMNS = ["refundId", "chargeId", "cardId", "status", "amount", "createdAt"]


@app.command("create")
def charges_create(
    ctx: typer.Context,
    card_id: Annotated[str, typer.Argument(help="The card paid with.", metavar="CARD_ID")],
    amount: Annotated[str, typer.Option("--amount", help="Amount, an exact decimal with at most 4 places.")],
    capture: Annotated[
        bool, typer.Option("--capture", help="Capture at once (the balance drops now).")
    ] = False,
) -> None:
    """Authorize a card payment: a pending debit that lowers the available balance.

    Capture it with `sandbox charges capture CHARGE_ID` (or pass --capture); an authorization not
    captured within 7 days (virtual clock) expires and releases the hold.
    """
    from paysdk_cli._params import parse_wallet_amount

    st = state(ctx)
    value = parse_wallet_amount(amount, "--amount")
    with open_client(st, token_required=False) as sdk:
        charge = sdk.sandbox.charge(card_id, value, capture=capture)
    emit(st.output, wire(charge), columns=_CHARGE_COLUMNS, title=f"Charge {charge.charge_id}")


@app.command("capture")
def charges_capture(
    ctx: typer.Context,
    charge_id: Annotated[str, typer.Argument(help="An authorized charge.", metavar="CHARGE_ID")],
) -> None:
    """Capture an authorization: the held amount leaves the balance."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        charge = sdk.sandbox.capture(charge_id)
    emit(st.output, wire(charge), columns=_CHARGE_COLUMNS, title=f"Charge {charge.charge_id}")


@app.command("refund")
def charges_refund(
    ctx: typer.Context,
    charge_id: Annotated[str, typer.Argument(help="A captured charge.", metavar="CHARGE_ID")],
    amount: Annotated[
        str | None,
        typer.Option("--amount", help="Refund this much (exact decimal); default: what is left to refund."),
    ] = None,
) -> None:
    """Refund part or all of a captured charge: a pending credit until cleared."""
    from paysdk_cli._params import parse_wallet_amount

    st = state(ctx)
    value = parse_wallet_amount(amount, "--amount") if amount is not None else None
    with open_client(st, token_required=False) as sdk:
        refund = sdk.sandbox.refund(charge_id, value)
    emit(st.output, wire(refund), columns=_REFUND_COLUMNS, title=f"Refund {refund.refund_id}")


@app.command("clear-refund")
def charges_clear_refund(
    ctx: typer.Context,
    refund_id: Annotated[str, typer.Argument(help="A pending refund.", metavar="REFUND_ID")],
) -> None:
    """Clear a refund: its pending credit reaches the card's balance."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        refund = sdk.sandbox.clear_refund(refund_id)
    emit(st.output, wire(refund), columns=_REFUND_COLUMNS, title=f"Refund {refund.refund_id}")
