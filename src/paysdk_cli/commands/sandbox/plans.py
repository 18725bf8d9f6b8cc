"""``paysdk sandbox plan``: subscription plans (D141); the public API has no plan calls."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, cast

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit
from paysdk_cli._params import parse_amount
from paysdk_cli.commands.sandbox._common import wire

if TYPE_CHECKING:
    from paysdk.contracts.common import CurrencyCode

__all__ = ["Interval", "app"]

app = new_app("Subscription plans: amount, interval, term and retry settings.")  # D141


class Interval(StrEnum):
    """A plan's billing interval unit."""

    day = "day"
    week = "week"
    month = "month"
    year = "year"


_PLAN_COLUMNS = [
    "planId",
    "client",
    "name",
    "amount",
    "currency",
    "interval",
    "intervalCount",
    "term",
    "dailyAttempts",
    "intervalAttempt",
    "graceDays",
    "createdAt",
]


@app.command("create")
def plan_create(
    ctx: typer.Context,
    amount: Annotated[
        str, typer.Option("--amount", help="Amount of each period, an exact decimal (e.g. 9.99).")
    ],
    client: Annotated[
        str | None, typer.Option("--client", help="Client slug (default: the profile's).")
    ] = None,
    plan_id: Annotated[
        str | None, typer.Option("--plan-id", help="The plan's id (default: generated).")
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="A name for people.")] = None,
    currency: Annotated[str | None, typer.Option("--currency", help="Default: the client's first.")] = None,
    interval: Annotated[Interval, typer.Option("--interval", help="Period unit.")] = Interval.month,
    interval_count: Annotated[int, typer.Option("--interval-count", help="Units per period.")] = 1,
    term: Annotated[
        int | None,
        typer.Option("--term", help="Number of periods of a fixed-term plan (default: open-ended)."),
    ] = None,
    daily_attempts: Annotated[
        int, typer.Option("--daily-attempts", help="Attempts per renewal before suspension (1-24).")
    ] = 3,
    interval_attempt: Annotated[
        int, typer.Option("--interval-attempt", help="Hours between attempts (default 24).")
    ] = 24,
    grace_days: Annotated[
        int | None, typer.Option("--grace-days", help="Days after the renewal date retries may take.")
    ] = None,
) -> None:
    """Create a subscription plan (the public API has no plan calls)."""
    from paysdk_cli._context import require_client_slug

    st = state(ctx)
    slug = require_client_slug(st, client)
    value = parse_amount(amount)
    with open_client(st, token_required=False) as sdk:
        plan = sdk.sandbox.plans.create(
            slug,
            value,
            plan_id=plan_id,
            name=name,
            currency=cast("CurrencyCode | None", currency),
            interval=interval.value,
            interval_count=interval_count,
            term=term,
            daily_attempts=daily_attempts,
            interval_attempt=interval_attempt,
            grace_days=grace_days,
        )
    emit(st.output, wire(plan), columns=_PLAN_COLUMNS, title=f"Plan {plan.plan_id}")


@app.command("show")
def plan_show(
    ctx: typer.Context, plan_id: Annotated[str, typer.Argument(help="The plan's planId.", metavar="PLAN_ID")]
) -> None:
    """Show one plan."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        plan = sdk.sandbox.plans.get(plan_id)
    emit(st.output, wire(plan), columns=_PLAN_COLUMNS, title=f"Plan {plan.plan_id}")
