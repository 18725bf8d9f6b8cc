"""``paysdk sandbox terminal``: terminal payments on the control plane (D194, D233)."""

from __future__ import annotations

from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit

__all__ = ["app"]

app = new_app("Terminal payments: a client's affiliation number, one payment of any client.")


@app.command("affiliation")
def affiliation(
    ctx: typer.Context, client: Annotated[str, typer.Option("--client", help="The client's slug.")]
) -> None:
    """Show the client's affiliation number (assigned now if it has none)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        value = sdk.sandbox.terminal.affiliation(client)
    emit(st.output, value.to_wire(), title="Affiliation")


@app.command("show")
def show(
    ctx: typer.Context,
    payment_id: Annotated[str, typer.Argument(help="The payment's id (tpm_...).", metavar="PAYMENT_ID")],
) -> None:
    """Show one terminal payment as the server holds it."""
    from paysdk_cli.commands.terminal import COLUMNS

    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        payment = sdk.sandbox.terminal.get(payment_id)
    emit(st.output, payment.to_wire(), columns=[*COLUMNS, "settledAt", "paidOutAt"], title="Terminal payment")
