"""``paysdk cardholders``: bulk cardholder upload with live progress, reattach, operator card association
(spec 4.4, 6.5; decisions D186-D189, D220-D229).

* ``upload FILE --partner ID`` sends the ``.csv`` or ``.xlsx`` file, then follows the batch's progress
  stream to its ``done`` event; ``progress BATCH_ID --partner ID`` reattaches to a batch (running or
  finished: a finished batch replays its events). A dropped connection is reopened where it stopped
  (``Last-Event-ID``), with one warning that the real service needs affinity to one instance (D188, D221).
* Display (D223): on stderr a live rich progress bar when stderr is a terminal, else one plain line per
  event. On stdout: ``-o json`` writes one JSON line per event as it arrives (``{"event", "id", "data"}``;
  ``upload`` first writes ``{"event": "upload", "id": null, "data": <the upload's answer>}``); a table
  is the batch summary and the failed rows once the batch is done.
* Once the batch is done, its created rows are read from its results (D450, D453): with ``-o json`` one
  line ``{"event": "created", "id": null, "data": {row, externalId, cardholderId, cardId}}`` per created
  row, in row order; a table shows the first 50.
* ``--report OUT.csv`` writes every row in row order: ``row_number,status,error,external_id,
  cardholder_id,card_id`` (status ``created`` with the ids, or ``failed`` with the error
  ``field: message``), cells a spreadsheet would run as a formula neutralised with ``'``, written to a
  temporary file and renamed.
* ``lookup --partner ID --external-id X`` (or ``--email``) finds one cardholder (D451).
* Exit codes (D223): 0 every row created; 5 some rows failed (or the batch stopped at an unreadable
  row); 130 interrupted (the batch goes on: ``progress`` reattaches); 2, 4, 6, 7 as for every command.

Credentials: the profile's backoffice operator login (``paysdk_cli._backoffice``). Heavy imports (the
SDK, rich) happen inside the commands.
"""

from __future__ import annotations

import csv
import heapq
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import json_text, printable
from paysdk_cli._state import OutputFormat, State

if TYPE_CHECKING:
    from paysdk.contracts.cardholders import CreatedCardholder, RowFailed
    from paysdk.resources.cardholders import CardholderBatchResult

__all__ = ["app", "associate_card", "lookup", "progress", "upload"]

app = new_app("Cardholders: bulk upload with live progress, operator card association.")

REPORT_COLUMNS = ("row_number", "status", "error", "external_id", "cardholder_id", "card_id")
#: stderr lists at most this many failed rows as they come, a table at most this many at the end
#: (every one is in -o json and --report).
ROWS_SHOWN = 50

_PARTNER_HELP = "The partner whose cardholders these are."  # partners: D185


def _check_report(report: Path | None, file: Path | None = None) -> Path | None:
    """``--report`` checked before anything is sent: its directory exists, it is not the input file."""
    if report is None:
        return None
    report = report.expanduser()
    if not report.parent.is_dir():
        raise CLIError(f"--report {report}: no directory {report.parent}", ExitCode.USAGE)
    if file is not None and report.exists() and file.exists() and report.samefile(file):
        raise CLIError("--report must not be the uploaded file itself", ExitCode.USAGE)
    return report


@app.command("upload")
def upload(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            help="The .csv or .xlsx file: externalId,username,email,firstName,lastName[,phone]"
            "[,issueCard][,cardAlias].",
            show_default=False,
        ),
    ],
    partner: Annotated[str, typer.Option("--partner", metavar="ID", help=_PARTNER_HELP, show_default=False)],
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            metavar="OUT.csv",
            help="Write every row (created with its cardholder and card ids, or failed with its error) "
            "to this CSV file.",
            show_default=False,
        ),
    ] = None,
    no_wait: Annotated[
        bool,
        typer.Option("--no-wait", help="Print the batch and exit at once (follow it later with `progress`)."),
    ] = False,
) -> None:
    """Upload a cardholder file for a partner and follow its processing live to the end.

    Exit codes: 0 every row created; 5 some rows failed; 130 interrupted (the batch goes on:
    `paysdk cardholders progress BATCH_ID --partner ID` reattaches); 2, 4, 6, 7 as for every command.
    """
    st = state(ctx)
    report = _check_report(report, file)
    if no_wait and report is not None:
        raise CLIError("--report needs the batch's end: drop --no-wait", ExitCode.USAGE)
    if file.is_dir():
        raise CLIError(f"{file}: is a directory, not a .csv or .xlsx file", ExitCode.USAGE)
    from paysdk_cli._backoffice import open_backoffice_client

    with open_backoffice_client(st) as client:
        answer = client.backoffice.cardholders.upload(partner, file)
        data = answer.model_dump(mode="json", by_alias=True)
        if no_wait:
            from paysdk_cli._output import emit

            emit(st.output, data, title=f"Cardholder batch {answer.batch_id}")
            return
        if st.output is OutputFormat.json:
            _json_line({"event": "upload", "id": None, "data": data})
        from paysdk_cli._output import info

        if answer.duplicate:
            info(
                f"{file.name} was uploaded before for partner {answer.partner_id}: batch {answer.batch_id} "
                "(nothing created again); following it"
            )
        else:
            info(f"batch {answer.batch_id} {answer.status}: {file.name} (sha256 {answer.file_sha256[:12]})")
        raise typer.Exit(_Follow(st, partner, answer.batch_id, report).run(client))


@app.command("progress")
def progress(
    ctx: typer.Context,
    batch_id: Annotated[
        str, typer.Argument(help="The batch's id (the upload's batchId).", show_default=False)
    ],
    partner: Annotated[str, typer.Option("--partner", metavar="ID", help=_PARTNER_HELP, show_default=False)],
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            metavar="OUT.csv",
            help="Write every row (created with its cardholder and card ids, or failed with its error) "
            "to this CSV file.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Reattach to a batch: follow its progress to the end (a finished batch replays its events).

    Exit codes: 0 every row created; 5 some rows failed; 130 interrupted; 2, 4, 6, 7 as for every command.
    """
    st = state(ctx)
    report = _check_report(report)
    from paysdk_cli._backoffice import open_backoffice_client

    with open_backoffice_client(st) as client:
        raise typer.Exit(_Follow(st, partner, batch_id, report).run(client))


@app.command("associate-card")
def associate_card(
    ctx: typer.Context,
    cardholder_id: Annotated[
        str, typer.Argument(help="The cardholder (wallet user id).", show_default=False)
    ],
    card_id: Annotated[str, typer.Argument(help="An unassigned card of the merchant.", show_default=False)],
    partner: Annotated[str, typer.Option("--partner", metavar="ID", help=_PARTNER_HELP, show_default=False)],
) -> None:
    """Link an unassigned card to a partner's cardholder; it then shows in the cardholder's wallet.

    \f
    Decision D189.
    """
    st = state(ctx)
    from paysdk_cli._backoffice import open_backoffice_client
    from paysdk_cli._output import emit

    with open_backoffice_client(st) as client:
        card = client.backoffice.associate_card(partner, cardholder_id, card_id)
    emit(st.output, card.model_dump(mode="json", by_alias=True), title="Card")


@app.command("lookup")
def lookup(
    ctx: typer.Context,
    partner: Annotated[str, typer.Option("--partner", metavar="ID", help=_PARTNER_HELP, show_default=False)],
    external_id: Annotated[
        str | None,
        typer.Option("--external-id", metavar="ID", help="The row's externalId in the uploaded file."),
    ] = None,
    email: Annotated[str | None, typer.Option("--email", help="The cardholder's email.")] = None,
) -> None:
    """Find a partner's cardholder by --external-id or --email: its cardholderId is what
    `associate-card` takes. Exit 6 when there is none.

    \f
    Decision D451.
    """
    st = state(ctx)
    if (external_id is None) == (email is None):
        raise CLIError("give exactly one of --external-id and --email", ExitCode.USAGE)
    from paysdk_cli._backoffice import open_backoffice_client
    from paysdk_cli._output import emit

    with open_backoffice_client(st) as client:
        found = client.backoffice.cardholders.lookup(partner, external_id=external_id, email=email)
    emit(st.output, found.model_dump(mode="json", by_alias=True), title="Cardholder")


# ----------------------------------------------------------------------------------- following


def _json_line(data: dict[str, Any]) -> None:
    sys.stdout.write(json_text(data) + "\n")
    sys.stdout.flush()


def _counts(data: Any) -> str:
    total = "?" if data.total is None else f"{data.total:,}"
    return f"{data.processed:,}/{total} processed, {data.created:,} created, {data.failed:,} failed"


class _Follow:
    """One follow of a batch's stream: the display, the failed rows, the summary, the report."""

    def __init__(self, st: State, partner: str, batch_id: str, report: Path | None) -> None:
        self.st = st
        self.partner = partner
        self.batch_id = batch_id
        self.report = report
        self.failed_rows: dict[int, RowFailed] = {}

    def run(self, client: Any) -> int:
        """Follow to ``done``; the exit code. Ctrl-C stops following (exit 130), the batch goes on."""
        display = _display_for(self.st)
        handler = _Notes(display)
        notes = logging.getLogger("paysdk.stream")
        notes.addHandler(handler)
        previous_level = notes.level
        notes.setLevel(logging.INFO)
        try:
            result = self._follow(client, display)
        except KeyboardInterrupt:
            display.close()
            from paysdk_cli._output import info

            info(
                f"stopped following batch {self.batch_id} (it goes on): reattach with "
                f"paysdk cardholders progress {self.batch_id} --partner {self.partner}"
            )
            return 130
        finally:
            display.close()
            notes.removeHandler(handler)
            notes.setLevel(previous_level)
        self._finish(result, client)
        return ExitCode.OK if result.all_created else ExitCode.PARTIAL

    def _follow(self, client: Any, display: _Display) -> CardholderBatchResult:
        from paysdk.resources.cardholders import (
            BatchDoneEvent,
            BatchProgressEvent,
            CardholderBatchResult,
            RowFailedEvent,
        )

        last_event_id: str | None = None
        reconnects = 0
        for _ in range(11):  # a clean end before `done` is reopened after the last event (D222)
            stream = client.backoffice.cardholders.progress(self.partner, self.batch_id, last_event_id)
            with stream:
                for event in stream:
                    if self.st.output is OutputFormat.json:
                        _json_line(
                            {
                                "event": event.event,
                                "id": event.id,
                                "data": event.data.model_dump(mode="json", by_alias=True)
                                if hasattr(event.data, "model_dump")
                                else event.data,
                            }
                        )
                    if isinstance(event, BatchProgressEvent):
                        display.progress(event.data)
                    elif isinstance(event, RowFailedEvent):
                        self.failed_rows[event.data.row] = event.data
                        display.row_failed(event.data, len(self.failed_rows))
                    elif isinstance(event, BatchDoneEvent):
                        done = event.data
                        display.done(done)
                        return CardholderBatchResult(
                            batch_id=done.batch_id,
                            status=done.status,
                            total=done.total,
                            processed=done.processed,
                            created=done.created,
                            failed=done.failed,
                            cards_issued=done.cards_issued,
                            failed_rows=tuple(self.failed_rows[row] for row in sorted(self.failed_rows)),
                            reconnects=reconnects + stream.reconnects,
                        )
            last_event_id = stream.last_event_id
            reconnects += stream.reconnects + 1
        raise CLIError(
            f"the progress stream of batch {self.batch_id} kept ending before its 'done' event: "
            f"reattach with paysdk cardholders progress {self.batch_id} --partner {self.partner}",
            ExitCode.SERVER,
        )

    def _created(self, client: Any) -> Iterator[CreatedCardholder]:
        """The batch's created rows in row order, a page (5,000) read at a time (D450)."""
        results = client.backoffice.cardholders
        number, pages = 1, 1
        while number <= pages:
            page = results.results_page(self.partner, self.batch_id, number)
            pages = page.pages
            yield from page.entries
            number += 1

    def _finish(self, result: CardholderBatchResult, client: Any) -> None:
        from paysdk_cli._output import emit, info

        if self.st.output is OutputFormat.json:
            for entry in self._created(client):
                _json_line(
                    {"event": "created", "id": None, "data": entry.model_dump(mode="json", by_alias=True)}
                )
        else:
            summary = {
                "batchId": result.batch_id,
                "status": result.status,
                "total": result.total,
                "processed": result.processed,
                "created": result.created,
                "failed": result.failed,
                "cardsIssued": result.cards_issued,
            }
            emit(self.st.output, summary, title=f"Cardholder batch {result.batch_id}")
            created = [
                entry.model_dump(mode="json", by_alias=True)
                for _, entry in zip(range(ROWS_SHOWN), self._created(client), strict=False)
            ]
            if created:
                emit(
                    self.st.output,
                    created,
                    columns=["row", "externalId", "cardholderId", "cardId"],
                    title="Created cardholders"
                    + (f" (first {ROWS_SHOWN})" if result.created > ROWS_SHOWN else ""),
                )
            shown = result.failed_rows[:ROWS_SHOWN]
            if shown:
                emit(
                    self.st.output,
                    [
                        {"row": r.row, "externalId": r.external_id, "field": r.field, "message": r.message}
                        for r in shown
                    ],
                    columns=["row", "externalId", "field", "message"],
                    title="Failed rows"
                    + (f" (first {ROWS_SHOWN})" if len(result.failed_rows) > ROWS_SHOWN else ""),
                )
        if self.report is not None:
            try:
                written = write_report(self.report, result.failed_rows, self._created(client))
            except OSError as exc:
                raise CLIError(f"cannot write the report {self.report}: {exc.strerror or exc}") from None
            info(
                f"{written - len(result.failed_rows):,} created and {len(result.failed_rows):,} failed rows "
                f"written to {self.report}"
            )
        if result.status == "failed":
            info(f"batch {result.batch_id} stopped at an unreadable row: the rows after it were not tried")


def write_report(path: Path, rows: Any, created: Iterable[CreatedCardholder] = ()) -> int:
    """``--report``: every row in row order (RFC 4180, CRLF), ``row_number,status,error,external_id,
    cardholder_id,card_id``: the failed ``rows`` (status ``failed``, error ``field: message``) merged with
    the ``created`` rows (in row order, read as the file is written; status ``created`` with the ids,
    D453). Each cell a spreadsheet would run as a formula is prefixed with ``'`` (OWASP); written
    atomically. Answers the number of rows written."""
    from paysdk_cli._batch import neutralise

    def failed_cells(row: Any) -> tuple[int, tuple[str, ...]]:
        return row.row, (str(row.row), "failed", f"{row.field}: {row.message}", row.external_id or "", "", "")

    def created_cells(entry: Any) -> tuple[int, tuple[str, ...]]:
        cells = (str(entry.row), "created", "", entry.external_id, entry.cardholder_id, entry.card_id or "")
        return entry.row, cells

    merged = heapq.merge(
        (failed_cells(row) for row in sorted(rows, key=lambda item: item.row)),
        (created_cells(entry) for entry in created),
        key=lambda item: item[0],
    )
    written = 0

    path = path.expanduser()
    temp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with temp.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\r\n")
            writer.writerow(REPORT_COLUMNS)
            for _, cells in merged:
                writer.writerow([neutralise(cell) for cell in cells])
                written += 1
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return written


# ----------------------------------------------------------------------------------- display


class _Display:
    """Plain lines on stderr (stderr is not a terminal): one per event."""

    def progress(self, data: Any) -> None:
        from paysdk_cli._output import info

        info(f"progress: {_counts(data)}")

    def row_failed(self, data: Any, count: int) -> None:
        from paysdk_cli._output import info

        if count <= ROWS_SHOWN:
            info(f"row {data.row} failed: {data.field}: {data.message}")
        elif count == ROWS_SHOWN + 1:
            info("... more failed rows (all in -o json and --report)")

    def done(self, data: Any) -> None:
        from paysdk_cli._output import info

        info(f"done: {data.status}, {_counts(data)}, {data.cards_issued:,} cards issued")

    def note(self, message: str) -> None:
        from paysdk_cli._output import info

        info(message)

    def close(self) -> None:
        """Nothing to remove."""


class _RichDisplay(_Display):
    """A rich bar on stderr: ``Cardholders ━━━━━ 1,500/12,000 rows  1,490 created  10 failed  0:00:03``."""

    def __init__(self, *, force_terminal: bool | None = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        self._bar = Bar(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:,.0f}/{task.fields[total_text]} rows"),
            TextColumn("{task.fields[created]:,} created"),
            TextColumn("{task.fields[failed]:,} failed"),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr, stderr=True, force_terminal=force_terminal),
            transient=True,
            redirect_stdout=False,  # stdout is the data (-o json lines), never the bar's
            redirect_stderr=False,
        )
        self._bar.start()
        self._task = self._bar.add_task("Cardholders", total=None, total_text="?", created=0, failed=0)
        self._closed = False

    def _update(self, data: Any) -> None:
        self._bar.update(
            self._task,
            total=data.total,
            total_text="?" if data.total is None else f"{data.total:,}",
            completed=data.processed,
            created=data.created,
            failed=data.failed,
        )

    def progress(self, data: Any) -> None:
        self._update(data)

    def row_failed(self, data: Any, count: int) -> None:
        if count <= ROWS_SHOWN:
            self._bar.console.print(
                printable(f"row {data.row} failed: {data.field}: {data.message}"), markup=False
            )

    def done(self, data: Any) -> None:
        self._update(data)

    def note(self, message: str) -> None:
        self._bar.console.print(printable(message), markup=False)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._bar.stop()


def _display_for(st: State) -> _Display:
    isatty = getattr(sys.stderr, "isatty", None)
    return _RichDisplay() if callable(isatty) and isatty() else _Display()


class _Notes(logging.Handler):
    """The SDK's stream notes (reconnects, the affinity warning) through the display."""

    def __init__(self, display: _Display) -> None:
        super().__init__(logging.INFO)
        self._display = display

    def emit(self, record: logging.LogRecord) -> None:
        prefix = "Warning: " if record.levelno >= logging.WARNING else "note: "
        self._display.note(prefix + record.getMessage())
