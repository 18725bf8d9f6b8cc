"""``paysdk transfers create``: card-to-card transfers (spec 2.5, D41: both legs in one transaction)."""

from __future__ import annotations

from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import state
from paysdk_cli._output import emit
from paysdk_cli._params import parse_wallet_amount
from paysdk_cli._wallet import AsUser, wallet_api
from paysdk_cli.commands.cards import MOVEMENT_COLUMNS, MOVEMENT_KEEP, wire

__all__ = ["app"]

app = new_app(
    "Card-to-card transfers.\n\n"
    "As a user (--as-user) the source card needs transferBetweenCards; both cards share a currency."
)


@app.command("create")
def create(
    ctx: typer.Context,
    from_card: Annotated[str, typer.Option("--from", help="Source cardId.")],
    to_card: Annotated[str, typer.Option("--to", help="Destination cardId.")],
    amount: Annotated[
        str, typer.Option("--amount", help="Amount, an exact decimal with up to 4 places (e.g. 25.5).")
    ],
    description: Annotated[str | None, typer.Option("--description", help="Shown on both movements.")] = None,
    as_user: AsUser = None,
) -> None:
    """Move money from one card to another (atomic; ownCode 7303 when the source lacks funds)."""
    st = state(ctx)
    value = parse_wallet_amount(amount)
    with wallet_api(st, as_user) as call:
        result = call(lambda w: w.transfers.create(from_card, to_card, value, description=description))
    data = wire(result)
    if st.output.value == "json":
        emit(st.output, data)
    else:
        emit(
            st.output,
            [data["debit"], data["credit"]],
            columns=MOVEMENT_COLUMNS,
            keep=MOVEMENT_KEEP,
            title=f"Transfer {data['transferId']}",
        )
