"""``paysdk sandbox callbacks``, ``jobs``, ``requests``, ``tail`` and ``outbox``: what the server did
(callback attempts, timed jobs, requests received, the live feed, the emails it would have sent).

Commands of the ``sandbox`` group itself: the package registers them, in the order of its help.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

import typer

from paysdk_cli._context import open_client, state
from paysdk_cli._output import OutputFormat, emit, emit_event, info
from paysdk_cli.commands.sandbox._common import wire_list

__all__ = [
    "CALLBACK_COLUMNS",
    "CALLBACK_KEEP",
    "JOB_COLUMNS",
    "REQUEST_COLUMNS",
    "JobStatusChoice",
    "callbacks",
    "jobs",
    "outbox",
    "requests",
    "resend_callback",
    "tail",
]


#: The table columns of `sandbox callbacks` and `sandbox requests`, the most useful first.
#: ``sandbox callbacks`` is one line per delivery at 80 columns (D435): the transaction, the attempt and
#: its result (the HTTP status, or the error's class: the whole error and the eventId are in -o json).
CALLBACK_COLUMNS = ["uid", "try", "result", "at", "final", "nextAttemptAt"]
CALLBACK_KEEP = ["uid", "try", "result"]
REQUEST_COLUMNS = ["method", "path", "statusCode", "at"]
#: The table columns of `sandbox jobs`.
JOB_COLUMNS = ["id", "kind", "ref", "status", "attempts", "dueAt", "lastError", "leaseOwner"]


class JobStatusChoice(StrEnum):
    """The statuses of a job (D126)."""

    pending = "pending"
    running = "running"
    done = "done"
    failed = "failed"


def callbacks(
    ctx: typer.Context,
    uid: Annotated[str | None, typer.Option("--uid", help="Only this transaction's deliveries.")] = None,
) -> None:
    """List callback delivery attempts, one line each: the transaction, the attempt, its result (the
    HTTP status or the error's class), when, whether it was the last one. -o json has every field
    (eventId, the whole error, the next retry)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.callbacks(uid)
    records = wire_list(result)
    if st.output is OutputFormat.json:
        emit(st.output, records)
        return
    rows = [
        {
            **record,
            "try": record.get("attempt"),
            "result": str(record["statusCode"])
            if record.get("statusCode") is not None
            else str(record.get("error") or "-").partition(":")[0],
        }
        for record in records
    ]
    emit(st.output, rows, columns=CALLBACK_COLUMNS, keep=CALLBACK_KEEP, title="Callback attempts")


def jobs(
    ctx: typer.Context,
    status: Annotated[
        JobStatusChoice | None, typer.Option("--status", help="Only jobs in this status.")
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="Only jobs of this kind (callback...).")] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, max=1000, help="At most this many (200).")
    ] = None,
) -> None:
    """List the server's timed jobs (callback rounds, expiries, recurring runs): status, attempts, last
    error, due time and lease owner, newest first."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.jobs(status=None if status is None else status.value, kind=kind, limit=limit)
    emit(st.output, wire_list(result), columns=JOB_COLUMNS, title="Jobs")


def requests(ctx: typer.Context) -> None:
    """List the public API requests the server received (credentials masked)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.requests()
    emit(st.output, wire_list(result), columns=REQUEST_COLUMNS, title="Requests")


def _clock(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, datetime) else "-" * 19


def _tail_line(event: Any) -> str:
    """One readable line per feed event (``sandbox tail``)."""
    data = event.data
    name = event.event
    if name == "request":
        duration = "-" if data.duration_ms is None else f"{data.duration_ms}ms"
        return f"{_clock(data.at)}  {data.method:<6} {data.path}  {data.status_code}  {duration}"
    if name == "callback":
        outcome = str(data.status_code) if data.status_code is not None else (data.error or "failed")
        after = f"next {_clock(data.next_attempt_at)}" if data.next_attempt_at else ""
        if data.final:
            after = "final"
        head = f"{_clock(data.at)}  callback {data.event_id} uid={data.uid} attempt {data.attempt}"
        return f"{head} -> {outcome}  {after}".rstrip()
    if name == "job":
        duration = "" if data.duration_ms is None else f"  {data.duration_ms}ms"
        return f"{_clock(data.due_at)}  job {data.kind} {data.ref} {data.outcome}{duration}"
    if name == "gap":
        return f"{_clock(None)}  gap: {data.message}"
    return f"{_clock(None)}  {name}: {data}"


def _tail_json(event: Any) -> dict[str, Any]:
    data = event.data
    wire = data.to_wire() if hasattr(data, "to_wire") else data
    return {"id": event.id, "event": event.event, "data": wire}


def tail(
    ctx: typer.Context,
    path: Annotated[
        str | None, typer.Option("--path", help="Only requests to this path prefix, or glob (with *).")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only these statuses: 500, 4xx, or a comma list.")
    ] = None,
    uid: Annotated[
        str | None, typer.Option("--uid", help="Only events that mention this transaction, card or event id.")
    ] = None,
) -> None:
    """Follow what the server does, live: requests, callback attempts, job runs (Ctrl-C to stop).

    One line per event (NDJSON with -o json). A dropped connection is reopened where it stopped.
    """
    import logging
    import signal

    st = state(ctx)

    class _Note(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            info(f"note: {record.getMessage()}")

    notes = logging.getLogger("paysdk.stream")
    handler = _Note(logging.INFO)
    notes.addHandler(handler)
    previous_level = notes.level
    notes.setLevel(logging.INFO)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        with open_client(st, token_required=False) as sdk:
            stream = sdk.sandbox.events(path=path, status=status, uid=uid)
            info(f"Tailing {st.base_url}/_sandbox/events. Ctrl-C to stop.")
            with stream:
                for event in stream:
                    emit_event(st.output, _tail_json(event), _tail_line(event))
    except KeyboardInterrupt:
        return
    finally:
        signal.signal(signal.SIGTERM, previous)
        notes.removeHandler(handler)
        notes.setLevel(previous_level)


def outbox(
    ctx: typer.Context,
    to: Annotated[str | None, typer.Option("--to", help="Only the emails sent to this address.")] = None,
) -> None:
    """List the emails the sandbox would have sent (one-time codes), newest last."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.outbox(to)
    emit(st.output, wire_list(result), columns=["at", "to", "subject", "body"], title="Outbox")


def resend_callback(
    ctx: typer.Context,
    event_id: Annotated[str, typer.Argument(help="The callback event to deliver again (eventId).")],
) -> None:
    """Deliver a callback event once more: the same body, eventId and header through the normal delivery
    path, recorded as its next attempt (shown). Refused while a retry of it is still queued."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.resend_callback(event_id)
    record = result.model_dump(by_alias=True, mode="json")
    emit(st.output, record)
