"""``paysdk funds add | withdraw``: the issuer moves money onto or off a card (D41, application only)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import state
from paysdk_cli._output import emit
from paysdk_cli._params import parse_wallet_amount
from paysdk_cli._wallet import wallet_api
from paysdk_cli.commands.cards import CARD_COLUMNS, MOVEMENT_COLUMNS, wire

__all__ = ["app"]

# Application token only: D41. The help texts show no decision ids.
app = new_app(
    "Card funds: the issuer adds or withdraws money.\n\n"
    "Application only. Amounts are exact decimals with up to 4 places; a withdrawal beyond "
    "the available balance is refused (ownCode 7303)."
)

_CARD_ID = typer.Argument(help="The card's cardId.")
_AMOUNT = typer.Option("--amount", help="Amount, an exact decimal with up to 4 places (e.g. 100.0001).")
_REFERENCE = typer.Option("--reference", help="Your reference, kept on the movement.")


def _funds(ctx: typer.Context, operation: str, card_id: str, amount: str, reference: str | None) -> None:
    st = state(ctx)
    value = parse_wallet_amount(amount)
    with wallet_api(st) as call:
        result: Any = call(lambda w: getattr(w.funds, operation)(card_id, value, reference=reference))
    data = wire(result)
    if st.output.value == "json":
        emit(st.output, data)
    else:
        emit(st.output, data["movement"], columns=MOVEMENT_COLUMNS, title="Movement")
        emit(st.output, data["card"], columns=CARD_COLUMNS, title=f"Card {data['card']['cardId']}")


@app.command("add")
def add(
    ctx: typer.Context,
    card_id: Annotated[str, _CARD_ID],
    amount: Annotated[str, _AMOUNT],
    reference: Annotated[str | None, _REFERENCE] = None,
) -> None:
    """Add funds to a card (also an inactive one: the issuer may preload)."""
    _funds(ctx, "add", card_id, amount, reference)


@app.command("withdraw")
def withdraw(
    ctx: typer.Context,
    card_id: Annotated[str, _CARD_ID],
    amount: Annotated[str, _AMOUNT],
    reference: Annotated[str | None, _REFERENCE] = None,
) -> None:
    """Withdraw funds from a card (refused with ownCode 7303 beyond the available balance)."""
    _funds(ctx, "withdraw", card_id, amount, reference)
