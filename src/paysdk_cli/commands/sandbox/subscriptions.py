"""``paysdk sandbox subscriptions create`` (D142): active subscriptions in bulk; ``paysdk sandbox
subscription SUB_UID``: one subscription with its charges (a command of the ``sandbox`` group itself,
which the package registers)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import OutputFormat, emit
from paysdk_cli.commands.sandbox._common import wire

__all__ = ["app", "subscription"]

app = new_app("Subscriptions in bulk, for tests and benchmarks.")  # D142


#: What `sandbox subscription SUB_UID` shows above its charges (JSON has every field).
_SUBSCRIPTION_COLUMNS = [
    "subUid",
    "status",
    "planId",
    "client",
    "email",
    "card",
    "timezone",
    "anchorDate",
    "nextRenewalDate",
    "period",
    "attempts",
    "nextAttemptAt",
    "endsOn",
    "createdAt",
    "cancelledAt",
    "endedAt",
]


@app.command("create")
def subscriptions_create(
    ctx: typer.Context,
    plan_id: Annotated[str, typer.Option("--plan-id", help="The plan.")],
    count: Annotated[int, typer.Option("--count", help="How many (1-100000).")] = 1,
    email: Annotated[str | None, typer.Option("--email", help="Their notification email.")] = None,
    card: Annotated[
        str, typer.Option("--card-number", "--card", help="Test card, their default method.")
    ] = "4242424242424242",
    start_date: Annotated[
        str | None,
        typer.Option(
            "--start-date", help="First renewal date, YYYY-MM-DD (default: today in the client's zone)."
        ),
    ] = None,
) -> None:
    """Create active subscriptions at once, without card verification (tests and benchmarks)."""
    from paysdk_cli._params import parse_date

    st = state(ctx)
    start = parse_date(start_date, "--start-date")
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.subscriptions.create(plan_id, count, email, card.replace(" ", ""), start)
    if st.output is OutputFormat.json:
        emit(st.output, wire(result))
    else:
        emit(st.output, [{"subUid": uid} for uid in result.sub_uids], title=f"{result.count} subscriptions")


def subscription(
    ctx: typer.Context,
    sub_uid: Annotated[str, typer.Argument(help="The subscription's subUid.", metavar="SUB_UID")],
) -> None:
    """Show one subscription: state, next renewal date, the period's attempts and every charge."""
    from paysdk_cli.commands.subscriptions import CHARGE_COLUMNS, flat

    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.subscriptions.get(sub_uid)
    if st.output is OutputFormat.json:
        emit(st.output, wire(result))
        return
    data = flat(result)
    emit(st.output, data, columns=_SUBSCRIPTION_COLUMNS, title=f"Subscription {result.sub_uid}")
    sys.stdout.write("\n")
    charges = [flat(charge) for charge in result.charges]
    emit(st.output, charges, columns=CHARGE_COLUMNS, title="Charges")
