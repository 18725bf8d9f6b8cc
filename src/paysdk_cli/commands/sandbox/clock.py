"""``paysdk sandbox clock``: the virtual clock (show it, move it forward and run what falls due)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit
from paysdk_cli._params import parse_amount
from paysdk_cli.commands.sandbox._common import wire

__all__ = ["app"]

app = new_app("The virtual clock that drives expiry and callback retries.")


@app.command("show")
def clock_show(ctx: typer.Context) -> None:
    """Show the virtual time and its offset from the wall clock."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.clock()
    emit(st.output, wire(result), title="Clock")


@app.command("advance")
def clock_advance(
    ctx: typer.Context,
    seconds: Annotated[str, typer.Argument(help="Seconds to move the clock forward (e.g. 86400).")],
) -> None:
    """Move the virtual clock forward and run every job that falls due (expiry, callback retries)."""
    st = state(ctx)
    value: Decimal = parse_amount(seconds, "SECONDS")
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.advance_clock(value)
    emit(st.output, wire(result), title="Clock")
