"""``paysdk sandbox processor``: the control plane plays the processor (D193, D240): show its signing
secret, deliver a signed settlement notification (``settle``, ``pay-out``) or a signed feed batch
(``feed``) through the inbound receivers' own code path."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import OutputFormat, emit, mask

__all__ = ["app"]

# Where deliveries go: D193.
app = new_app(
    "Play the processor: its signing secret, signed settlement notifications and feed batches.\n\n"
    "Deliveries go through POST /webhooks/settlements and /webhooks/processor-feed's own code."
)

_ID = typer.Argument(help="The terminal payment's id (tpm_...).", metavar="PAYMENT_ID")
_RESULT = ["id", "paymentId", "type", "code", "reason"]


def _at(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter("must be an ISO 8601 time with an offset", param_hint="--at") from None
    if moment.tzinfo is None:
        raise typer.BadParameter("must carry an offset, e.g. 2026-01-05T00:00:00Z", param_hint="--at")
    return moment


@app.command("secret")
def secret(
    ctx: typer.Context,
    show_secrets: Annotated[bool, typer.Option("--show-secrets", help="Print the secret in clear.")] = False,
) -> None:
    """Show the processor secret (masked unless --show-secrets) and the signature scheme.

    --show-secrets asks for it through the reveal call: a server on a non-loopback address masks it
    otherwise.
    """
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        processor = sdk.sandbox.processor
        value = processor.reveal_secret() if show_secrets else processor.secret()
    data = mask(value.model_dump(by_alias=True), ["secret"], show=show_secrets)
    emit(st.output, data, title="Processor")


def _deliver(
    ctx: typer.Context, kind: str, payment_id: str, notification_id: str | None, at: str | None
) -> None:
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        method = sdk.sandbox.processor.settle if kind == "settled" else sdk.sandbox.processor.pay_out
        delivery = method(payment_id, notification_id=notification_id, at=_at(at))
    result = delivery.result
    data: dict[str, Any] = {
        "notificationId": result.notification_id,
        "type": delivery.notification.type,
        "paymentId": delivery.notification.payment_id,
        "applied": result.applied,
        "status": result.status,
        "ignored": "; ".join(f"{i.code}: {i.reason}" for i in result.ignored),
    }
    emit(
        st.output,
        data if st.output is not OutputFormat.json else delivery.to_wire(),
        title="Settlement notification",
    )


_NOTIFICATION = typer.Option(
    "--notification-id", help="The notification's id (default a new one).", show_default=False
)
_AT = typer.Option(
    "--at", help="When it happened, ISO 8601 (default the virtual clock's now).", show_default=False
)


@app.command("settle")
def settle(
    ctx: typer.Context,
    payment_id: Annotated[str, _ID],
    notification_id: Annotated[str | None, _NOTIFICATION] = None,
    at: Annotated[str | None, _AT] = None,
) -> None:
    """Deliver a signed 'settled' notification for the payment (POST /webhooks/settlements)."""
    _deliver(ctx, "settled", payment_id, notification_id, at)


@app.command("pay-out")
def pay_out(
    ctx: typer.Context,
    payment_id: Annotated[str, _ID],
    notification_id: Annotated[str | None, _NOTIFICATION] = None,
    at: Annotated[str | None, _AT] = None,
) -> None:
    """Deliver a signed 'paid_out' notification for the payment (POST /webhooks/settlements)."""
    _deliver(ctx, "paid_out", payment_id, notification_id, at)


def _event(value: str, payment_id: str | None) -> dict[str, Any]:
    parts = value.split(":")
    if payment_id is not None:
        if len(parts) not in (1, 2) or not all(parts):
            raise typer.BadParameter("with --payment-id, must be TYPE or TYPE:EVENT_ID", param_hint="--event")
        parts.insert(1, payment_id)
    elif len(parts) not in (2, 3) or not all(parts):
        raise typer.BadParameter("must be TYPE:PAYMENT_ID or TYPE:PAYMENT_ID:EVENT_ID", param_hint="--event")
    event: dict[str, Any] = {"type": parts[0], "payment_id": parts[1]}
    if len(parts) == 3:
        event["event_id"] = parts[2]
    return event


@app.command("feed")
def feed(
    ctx: typer.Context,
    event: Annotated[
        list[str] | None,
        typer.Option(
            "--event",
            help="TYPE:PAYMENT_ID[:EVENT_ID] (TYPE[:EVENT_ID] with --payment-id), TYPE one of settled, "
            "paid_out, voided (repeatable).",
            show_default=False,
        ),
    ] = None,
    payment_id: Annotated[
        str | None,
        typer.Option("--payment-id", help="The payment of every --event.", show_default=False),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            help="A JSON list of events {type, paymentId, eventId?, at?} (instead of --event).",
            show_default=False,
        ),
    ] = None,
    feed_id: Annotated[
        str | None, typer.Option("--feed-id", help="The batch's id (default a new one).", show_default=False)
    ] = None,
) -> None:
    """Deliver a signed feed batch (POST /webhooks/processor-feed): each event applied at most once."""
    st = state(ctx)
    if bool(event) == (file is not None):
        raise CLIError("give the events with --event (repeatable) or --file, one of the two", ExitCode.USAGE)
    events: list[Any]
    if file is not None:
        try:
            events = json.loads(file.expanduser().read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CLIError(f"--file {file}: {exc}", ExitCode.USAGE) from None
        if not isinstance(events, list):
            raise CLIError(f"--file {file}: must hold a JSON list of events", ExitCode.USAGE)
    else:
        events = [_event(value, payment_id) for value in event or ()]
    with open_client(st, token_required=False) as sdk:
        delivery = sdk.sandbox.processor.feed(events, feed_id=feed_id)
    if st.output is OutputFormat.json:
        emit(st.output, delivery.to_wire())
        return
    result = delivery.result
    records = [
        {"id": e.event_id, "paymentId": e.payment_id, "type": e.type, "code": "applied", "reason": ""}
        for e in delivery.feed.events
        if e.event_id in result.applied
    ]
    records += [i.to_wire() for i in result.ignored]
    emit(
        st.output,
        records,
        columns=_RESULT,
        title=f"Feed {result.feed_id}: {len(result.applied)} applied, {len(result.ignored)} ignored",
    )
