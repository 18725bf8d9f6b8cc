"""``paysdk sandbox faults``: fault injection (latency, errors, rate limits, drops, duplicates, cut
streams)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit, info
from paysdk_cli.commands.sandbox._common import wire, wire_list

__all__ = ["FaultKind", "app"]

app = new_app("Fault injection: latency, errors, rate limits, drops, duplicates.")


class FaultKind(StrEnum):
    """Kinds of fault the reference server can inject."""

    latency = "latency"
    error = "error"
    rate_limit = "rate_limit"
    drop = "drop"
    duplicate_callback = "duplicate_callback"
    stream_cut = "stream_cut"
    callback_down = "callback_down"


@app.command("add")
def faults_add(
    ctx: typer.Context,
    kind: Annotated[FaultKind, typer.Option("--kind", help="What to inject.")],
    route: Annotated[
        str, typer.Option("--route", help='"METHOD /path", "/path" or a prefix ending in *.')
    ] = "*",
    count: Annotated[int, typer.Option("--count", min=1, help="How many matching requests or events.")] = 1,
    status: Annotated[int | None, typer.Option("--status", help="HTTP status for kind error (5xx).")] = None,
    latency_ms: Annotated[int | None, typer.Option("--latency-ms", help="Delay for kind latency.")] = None,
    retry_after: Annotated[
        int | None, typer.Option("--retry-after", help="Retry-After seconds for kind rate_limit.")
    ] = None,
    after_events: Annotated[
        int | None,
        typer.Option("--after-events", min=0, help="Events sent before kind stream_cut drops a stream."),
    ] = None,
) -> None:
    """Inject a fault on matching requests (duplicate_callback applies to callback deliveries,
    stream_cut to event streams such as /_sandbox/events)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        fault = sdk.sandbox.add_fault(
            kind.value,
            route=route,
            count=count,
            status=status,
            latency_ms=latency_ms,
            retry_after=retry_after,
            after_events=after_events,
        )
    emit(st.output, wire(fault), title="Fault")


@app.command("list")
def faults_list(ctx: typer.Context) -> None:
    """List the active faults and how many uses remain."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.faults()
    emit(
        st.output,
        wire_list(result),
        columns=["id", "kind", "route", "count", "remaining", "status", "latencyMs", "retryAfter"],
        title="Faults",
    )


@app.command("clear")
def faults_clear(ctx: typer.Context) -> None:
    """Remove every fault."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        sdk.sandbox.clear_faults()
    info("Cleared every fault.")
