"""``paysdk sandbox transactions``: a transaction as the server holds it."""

from __future__ import annotations

from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit
from paysdk_cli.commands.sandbox._common import wire

__all__ = ["app"]

app = new_app("Transactions as the server holds them.")


@app.command("show")
def transactions_show(
    ctx: typer.Context,
    uid: Annotated[str, typer.Argument(help="Transaction uid.")],
) -> None:
    """Show a transaction: status, amount, client, timestamps."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.transaction(uid)
    emit(st.output, wire(result), title=f"Transaction {uid}")
