"""``paysdk sandbox pay``, ``simulate`` and ``test-cards``: test payments, as the hosted checkout or a
rail would make them.

Commands of the ``sandbox`` group itself: the package registers them, in the order of its help.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit
from paysdk_cli.commands.sandbox._common import wire, wire_list

__all__ = ["Outcome", "ThreeDS", "pay", "simulate", "test_cards"]


class ThreeDS(StrEnum):
    """How the 3-D Secure challenge of a 3DS test card is answered."""

    approve = "approve"
    fail = "fail"


class Outcome(StrEnum):
    """Outcome of a rail payment simulated by the server."""

    paid = "paid"
    expired = "expired"


def pay(
    ctx: typer.Context,
    uid: Annotated[str, typer.Argument(help="Payment-link transaction uid.")],
    card: Annotated[
        str,
        typer.Option("--card-number", "--card", help="Test card number (see `paysdk sandbox test-cards`)."),
    ],
    three_ds: Annotated[
        ThreeDS | None, typer.Option("--3ds", help="Answer to a 3-D Secure challenge: approve or fail.")
    ] = None,
) -> None:
    """Pay a payment link with a test card, as the hosted checkout would."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.pay(uid, card.replace(" ", ""), three_ds.value if three_ds else None)
    emit(st.output, wire(result), title="Payment")


def simulate(
    ctx: typer.Context,
    uid: Annotated[str, typer.Argument(help="Alternative-payment transaction uid.")],
    outcome: Annotated[Outcome, typer.Option("--outcome", help="paid or expired.")],
) -> None:
    """Simulate the rail's outcome for an alternative payment."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.simulate(uid, outcome.value)
    emit(st.output, wire(result), title="Simulated")


def test_cards(ctx: typer.Context) -> None:
    """List the test card numbers and the outcome each drives."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.test_cards()
    emit(
        st.output,
        wire_list(result),
        columns=["number", "brand", "outcome", "description"],
        title="Test cards",
    )
