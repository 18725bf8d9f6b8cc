"""``paysdk reconciliation``: the daily settlement CSV against the affiliation's settled terminal payments
(``POST /reports/payfac/conciliation/upload/{affiliation}``, D194, D241).

``upload FILE --affiliation A`` checks the file locally (an error of the whole file is one line and exit
2, nothing sent), sends it, and prints the counts and one line per row: ``matched``, ``amount_mismatch``,
``unknown``, ``invalid`` (with its row number, header = row 1) and ``missing`` (payments settled on the
file's days that no row names), at most :data:`SHOWN_ROWS` of them (the rest: ``--report``).
``-o json`` prints the whole report (every page read, D331). ``--report OUT.csv`` writes every row
``row_number,status,payment_id,settlement_date,expected,actual,message``, neutralising cells a
spreadsheet would read as formulas (OWASP CSV injection); it is written as the report's pages are read
(:func:`iter_report_rows`: a few pages in memory at a time, whatever the file's size). Exit codes: 0
every row matched and nothing is missing; 5 anything did not match; 2 a file error; API failures as
elsewhere (4, 6, 7).
"""

from __future__ import annotations

import csv
import heapq
import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import OutputFormat, emit, info

if TYPE_CHECKING:
    from paysdk.contracts.reconciliation import (
        ReconciliationCounts,
        ReconciliationReport,
        ReconciliationReportPage,
    )

__all__ = ["REPORT_COLUMNS", "SHOWN_ROWS", "app", "iter_report_rows", "report_rows", "write_report"]

# The columns: D194.
app = new_app(
    "Reconcile the processor's daily settlement CSV with your settled terminal payments.\n\n"
    "Columns settlementDate, paymentId, amount, currency. Exit 5 when anything did not match."
)

#: The columns of ``--report``.
REPORT_COLUMNS = ("row_number", "status", "payment_id", "settlement_date", "expected", "actual", "message")
_TABLE = ["row", "status", "paymentId", "settlementDate", "expected", "actual", "message"]
#: What a narrow terminal never hides (D430): which row, its verdict and why.
_KEEP = ["row", "status", "message"]


#: Rows printed to the terminal at most (``--report`` holds them all).
SHOWN_ROWS = 200
#: The report's lists in page order (D331); the last, ``missing``, has no row number.
_LISTS = ("matched", "amount_mismatch", "unknown", "invalid", "missing")


def _record(name: str, item: Any) -> dict[str, Any]:
    """The row of ``--report`` and of the table for one entry of list ``name``."""
    if name == "matched":
        return {"row": item.row, "status": "matched", "paymentId": item.payment_id}
    if name == "amount_mismatch":
        return {
            "row": item.row,
            "status": "amount_mismatch",
            "paymentId": item.payment_id,
            "expected": str(item.expected),
            "actual": str(item.actual),
            "message": "the amount differs",
        }
    if name == "unknown":
        return {"row": item.row, "status": "unknown", "paymentId": item.payment_id, "message": item.reason}
    if name == "invalid":
        return {"row": item.row, "status": "invalid", "message": f"{item.field}: {item.message}"}
    return {
        "status": "missing",
        "paymentId": item.payment_id,
        "settlementDate": item.settlement_date.isoformat(),
        "expected": f"{item.amount} {item.currency}",
        "message": "settled, but no row names it",
    }


def report_rows(report: ReconciliationReport) -> list[dict[str, Any]]:
    """One record per row of the file (by row number), then the missing payments (no row): the lists
    ``report`` holds."""
    rows = [_record(name, item) for name in _LISTS[:-1] for item in getattr(report, name)]
    rows.sort(key=lambda record: record["row"])
    rows.extend(_record("missing", item) for item in report.missing)
    return rows


def iter_report_rows(
    first: ReconciliationReport, page: Callable[[int], ReconciliationReportPage]
) -> Iterator[dict[str, Any]]:
    """:func:`report_rows` of the whole report whose first page is ``first`` (the upload's answer),
    reading its other pages with ``page(number)`` as the rows are needed (D331). Each list is sorted by
    row within the report, so the four lists with a row are merged; a page is read again only where a
    list starts inside it (at most once per list). A ``first`` holding the whole report reads nothing."""
    counts = first.counts
    if counts is None or first.complete:
        yield from report_rows(first)
        return
    sizes = [getattr(counts, name) for name in _LISTS]
    starts = [0, *itertools.accumulate(sizes)][:-1]

    def entries(index: int) -> Iterator[dict[str, Any]]:
        name, start, size = _LISTS[index], starts[index], sizes[index]
        if size == 0:
            return
        from paysdk.contracts.reconciliation import PAGE_ENTRIES

        for number in range(start // PAGE_ENTRIES + 1, (start + size - 1) // PAGE_ENTRIES + 2):
            source: Any = first if number == 1 else page(number)
            for item in getattr(source, name):
                yield _record(name, item)

    with_rows: list[Iterable[dict[str, Any]]] = [entries(index) for index in range(len(_LISTS) - 1)]
    yield from heapq.merge(*with_rows, key=lambda record: int(record["row"]))
    yield from entries(len(_LISTS) - 1)


def _counts(report: ReconciliationReport) -> ReconciliationCounts:
    """The counts of a report whose server sent none (its lists are the whole report)."""
    from paysdk.contracts.reconciliation import ReconciliationCounts

    return ReconciliationCounts(
        matched=len(report.matched),
        missing=len(report.missing),
        unknown=len(report.unknown),
        amount_mismatch=len(report.amount_mismatch),
        invalid=len(report.invalid),
        invalid_rows=len({item.row for item in report.invalid}),
    )


def write_report(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write ``--report`` (RFC 4180, CRLF) atomically, formula-like cells neutralised, as ``rows``
    come."""
    from paysdk_cli._batch import neutralise

    temp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with temp.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\r\n")
            writer.writerow(REPORT_COLUMNS)
            for record in rows:
                cells = [str(record.get(name, "") or "") for name in _TABLE]
                writer.writerow([neutralise(cell) for cell in cells])
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


@app.command("upload")
def upload(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The daily reconciliation CSV.", metavar="FILE")],
    affiliation: Annotated[
        str, typer.Option("--affiliation", help="Your affiliation number (10 digits).", metavar="A")
    ],
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Write row_number,status,payment_id,settlement_date,expected,actual,message to this CSV.",
            metavar="OUT.csv",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Reconcile FILE: matched, amount-mismatch, unknown, invalid and missing rows with row numbers
    (the first 200 shown; --report writes them all).

    Exit codes: 0 everything matched; 5 some row did not match or a payment is missing; 2 a file error
    (nothing sent); 4, 6, 7 API failures.
    """
    st = state(ctx)
    file = file.expanduser()
    if not file.is_file():
        raise CLIError(f"{file}: no such file", ExitCode.USAGE)
    if report is not None:
        report = report.expanduser()
        if not report.parent.is_dir():
            raise CLIError(f"--report {report}: no directory {report.parent}", ExitCode.USAGE)
        if report.exists() and report.samefile(file):
            raise CLIError("--report must not be the CSV file itself", ExitCode.USAGE)
    import paysdk

    with open_client(st) as sdk:
        try:
            # -o json prints the whole report; otherwise the pages are read as --report is written.
            result = sdk.reconciliation.upload(affiliation, file, whole=st.output is OutputFormat.json)
        except paysdk.ValidationError as exc:
            if exc.field == "affiliation":
                raise
            raise CLIError(f"{file}: {exc.field}: {exc.message}", ExitCode.USAGE) from None
        report_id = result.report_id or ""

        def page(number: int) -> ReconciliationReportPage:
            return sdk.reconciliation.report_page(report_id, number)

        if st.output is OutputFormat.json:
            emit(st.output, result.to_wire())
        else:
            counts = result.counts or _counts(result)
            title = (
                f"Affiliation {result.affiliation}: {result.rows} row(s), {counts.matched} matched, "
                f"{counts.amount_mismatch} amount mismatch, {counts.unknown} unknown, "
                f"{counts.invalid_rows} invalid, {counts.missing} missing"
            )
            shown = list(itertools.islice(iter_report_rows(result, page), SHOWN_ROWS + 1))
            if shown:
                emit(st.output, shown[:SHOWN_ROWS], columns=_TABLE, keep=_KEEP, title=title)
            else:
                info(title)
            if len(shown) > SHOWN_ROWS:
                more = "--report OUT.csv writes every row" if report is None else f"every row is in {report}"
                info(f"... the first {SHOWN_ROWS} rows shown; {more}")
        if report is not None:
            write_report(report, iter_report_rows(result, page))
    raise typer.Exit(ExitCode.OK if result.all_matched else ExitCode.PARTIAL)
