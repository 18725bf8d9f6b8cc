"""``paysdk sandbox cards``: wallet stock cards, issued physical cards no one holds yet."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, cast

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit
from paysdk_cli._params import parse_amount
from paysdk_cli.commands.sandbox._common import MERCHANT, merchant_slug, wire

if TYPE_CHECKING:
    from paysdk.contracts.common import CurrencyCode

__all__ = ["app"]

app = new_app("Wallet stock cards: issued physical cards no one holds yet.")


@app.command("create")
def cards_create(
    ctx: typer.Context,
    merchant: Annotated[str | None, MERCHANT] = None,
    currency: Annotated[str, typer.Option("--currency", help="GTQ, USD, ...")] = "GTQ",
    balance: Annotated[
        str | None, typer.Option("--balance", help="Preloaded balance, an exact decimal (default 0).")
    ] = None,
) -> None:
    """Issue a physical stock card (link it with `paysdk cards link CARD_ID --user-id ID`)."""
    st = state(ctx)
    slug = merchant_slug(st, merchant)
    amount = parse_amount(balance, "--balance") if balance is not None else None
    with open_client(st, token_required=False) as sdk:
        card = sdk.sandbox.create_stock_card(slug, cast("CurrencyCode", currency), amount)
    emit(
        st.output,
        wire(card),
        columns=["cardId", "maskedPan", "type", "status", "currency", "balance"],
        title=f"Card {card.card_id}",
    )
