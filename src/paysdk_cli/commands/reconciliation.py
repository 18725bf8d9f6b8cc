"""``paysdk reconciliation``: the daily settlement CSV against the affiliation's settled terminal payments
(``POST /reports/payfac/conciliation/upload/{affiliation}``, D194, D241).

``upload FILE --affiliation A`` checks the file locally (an error of the whole file is one line and exit
2, nothing sent), sends it, and prints one line per row: ``matched``, ``amount_mismatch``, ``unknown``,
``invalid`` (with its row number, header = row 1) and ``missing`` (payments settled on the file's days
that no row names). ``-o json`` prints the server's report as it is. ``--report OUT.csv`` writes
``row_number,status,payment_id,settlement_date,expected,actual,message``, neutralising cells a
spreadsheet would read as formulas (OWASP CSV injection). Exit codes: 0 every row matched and nothing is
missing; 5 anything did not match; 2 a file error; API failures as elsewhere (4, 6, 7).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import OutputFormat, emit, info

if TYPE_CHECKING:
    from paysdk.contracts.reconciliation import ReconciliationReport

__all__ = ["REPORT_COLUMNS", "app", "report_rows", "write_report"]

app = new_app(
    "Reconcile the processor's daily settlement CSV with your settled terminal payments.\n\n"
    "Columns settlementDate, paymentId, amount, currency (D194). Exit 5 when anything did not match."
)

#: The columns of ``--report``.
REPORT_COLUMNS = ("row_number", "status", "payment_id", "settlement_date", "expected", "actual", "message")
_TABLE = ["row", "status", "paymentId", "settlementDate", "expected", "actual", "message"]


def report_rows(report: ReconciliationReport) -> list[dict[str, Any]]:
    """One record per row of the file (by row number), then the missing payments (no row)."""
    rows: list[dict[str, Any]] = []
    for item in report.matched:
        rows.append({"row": item.row, "status": "matched", "paymentId": item.payment_id})
    for mismatch in report.amount_mismatch:
        rows.append(
            {
                "row": mismatch.row,
                "status": "amount_mismatch",
                "paymentId": mismatch.payment_id,
                "expected": str(mismatch.expected),
                "actual": str(mismatch.actual),
                "message": "the amount differs",
            }
        )
    for unknown in report.unknown:
        rows.append(
            {
                "row": unknown.row,
                "status": "unknown",
                "paymentId": unknown.payment_id,
                "message": unknown.reason,
            }
        )
    for invalid in report.invalid:
        rows.append(
            {"row": invalid.row, "status": "invalid", "message": f"{invalid.field}: {invalid.message}"}
        )
    rows.sort(key=lambda record: record["row"])
    for missing in report.missing:
        rows.append(
            {
                "status": "missing",
                "paymentId": missing.payment_id,
                "settlementDate": missing.settlement_date.isoformat(),
                "expected": f"{missing.amount} {missing.currency}",
                "message": "settled, but no row names it",
            }
        )
    return rows


def write_report(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``--report`` (RFC 4180, CRLF) atomically, formula-like cells neutralised."""
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
    """Reconcile FILE: matched, amount-mismatch, unknown, invalid and missing rows with row numbers.

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
            result = sdk.reconciliation.upload(affiliation, file)
        except paysdk.ValidationError as exc:
            if exc.field == "affiliation":
                raise
            raise CLIError(f"{file}: {exc.field}: {exc.message}", ExitCode.USAGE) from None
    rows = report_rows(result)
    if st.output is OutputFormat.json:
        emit(st.output, result.to_wire())
    else:
        title = (
            f"Affiliation {result.affiliation}: {result.rows} row(s), {len(result.matched)} matched, "
            f"{len(result.amount_mismatch)} amount mismatch, {len(result.unknown)} unknown, "
            f"{len({i.row for i in result.invalid})} invalid, {len(result.missing)} missing"
        )
        if rows:
            emit(st.output, rows, columns=_TABLE, title=title)
        else:
            info(title)
    if report is not None:
        write_report(report, rows)
    raise typer.Exit(ExitCode.OK if result.all_matched else ExitCode.PARTIAL)
