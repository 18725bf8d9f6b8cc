"""Reconciliation (spec 4.4, D194, D241): the daily CSV's reader and validator, and the report's models.

``POST /reports/payfac/conciliation/upload/{affiliation}`` takes the processor's daily settlement file and
answers how its rows match the affiliation's settled terminal payments. The reader here is the one the
SDK (before sending) and the reference server (after receiving) share: pure stdlib, it reads a binary
file object once, a record at a time, hashing it as it goes (with the CSV reader every file shares,
:class:`~paysdk.contracts.csv_records.CsvRecords`, D320).

The layout (D194): UTF-8 (a BOM is allowed), comma-separated, RFC 4180 quoting, LF or CRLF. Row 1 is the
header naming the columns ``settlementDate``, ``paymentId``, ``amount``, ``currency`` in any order, each
once; any other column is an error of the whole file. At most :data:`MAX_ROWS` data rows. Each record
after the header is a data row numbered from the header (row 1), blank lines skipped but counted; every
error of a row is reported (row, field, message) and the row takes no part in matching (D241).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import BinaryIO, Final

from pydantic import Field

from paysdk.contracts.common import DecimalNumber, WireModel, parse_amount_text
from paysdk.contracts.csv_records import CsvRecords, CsvSyntaxError

__all__ = [
    "COLUMNS",
    "MAX_CELL_CHARS",
    "MAX_FILE_BYTES",
    "MAX_ROWS",
    "PAGE_ENTRIES",
    "AmountMismatchRow",
    "InvalidRow",
    "MatchedRow",
    "MissingPayment",
    "ReconciliationCounts",
    "ReconciliationFileError",
    "ReconciliationReport",
    "ReconciliationReportPage",
    "ReconciliationRow",
    "ReconciliationScan",
    "UnknownRow",
    "read_reconciliation_csv",
]

#: The header's columns (D194), every one required.
COLUMNS: Final = ("settlementDate", "paymentId", "amount", "currency")
#: Data rows of one file at most (D194).
MAX_ROWS: Final = 100_000
#: The largest file the server takes (the whole multipart body, D194).
MAX_FILE_BYTES: Final = 16 << 20
#: A longer cell is an error of its row (D241).
MAX_CELL_CHARS: Final = 1024

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_PAYMENT = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CURRENCY = re.compile(r"[A-Za-z]{3}")


class ReconciliationFileError(ValueError):
    """An error of the whole file (not UTF-8, no or a bad header, too many rows, a record that cannot be
    read as CSV, D320): no report is made. ``column`` is ``"file"`` or the column concerned; ``row`` the
    row at which the file became unreadable, when there is one."""

    def __init__(self, column: str, message: str, row: int | None = None) -> None:
        where = f"row {row}: " if row is not None else ""
        super().__init__(f"{column}: {where}{message}")
        self.column = column
        self.message = f"{where}{message}"
        self.row = row


@dataclass(frozen=True, slots=True)
class ReconciliationRow:
    """A valid data row. ``currency`` upper case."""

    row: int
    settlement_date: date
    payment_id: str
    amount: Decimal
    currency: str


@dataclass(slots=True)
class ReconciliationScan:
    """What :func:`read_reconciliation_csv` found: the file's SHA-256, its data rows (blank lines not
    counted), the valid rows and every row error ``(row, field, message)``, by row."""

    sha256: str = ""
    rows: int = 0
    valid: list[ReconciliationRow] = field(default_factory=list)
    errors: list[tuple[int, str, str]] = field(default_factory=list)


def _columns(cells: list[str] | None) -> tuple[str, ...]:
    if not cells or not any(cell.strip() for cell in cells):
        raise ReconciliationFileError(
            "file", "has no header row: row 1 must name the columns " + ", ".join(COLUMNS)
        )
    seen: list[str] = []
    for cell in cells:
        name = cell.strip()
        if name not in COLUMNS:
            shown = name if len(name) <= 40 else name[:40] + "..."
            raise ReconciliationFileError(
                shown or "file", f"is not a column of a reconciliation file (columns: {', '.join(COLUMNS)})"
            )
        if name in seen:
            raise ReconciliationFileError(name, "appears twice in the header row")
        seen.append(name)
    for name in COLUMNS:
        if name not in seen:
            raise ReconciliationFileError(name, "is a required column missing from the header row")
    return tuple(seen)


def _check(
    row: int, cells: list[str], columns: tuple[str, ...], errors: list[tuple[int, str, str]]
) -> ReconciliationRow | None:
    if len(cells) != len(columns):
        errors.append((row, "row", f"the row has {len(cells)} cells, the header {len(columns)}"))
        return None
    before = len(errors)
    values: dict[str, object] = {}
    for name, raw in zip(columns, cells, strict=True):
        cell = raw.strip()
        if len(raw) > MAX_CELL_CHARS:
            errors.append((row, name, f"is longer than {MAX_CELL_CHARS:,} characters"))
        elif name == "settlementDate":
            try:
                if not _DATE.fullmatch(cell):
                    raise ValueError
                values[name] = date.fromisoformat(cell)
            except ValueError:
                errors.append((row, name, "must be a date YYYY-MM-DD"))
        elif name == "paymentId":
            if not _PAYMENT.fullmatch(cell):
                errors.append((row, name, "must be a terminal payment id (1 to 64 of A-Z a-z 0-9 _ -)"))
            else:
                values[name] = cell
        elif name == "amount":
            try:
                values[name] = parse_amount_text(cell, places=2, integer_digits=13)
            except ValueError as exc:
                errors.append((row, name, str(exc)))
        elif not _CURRENCY.fullmatch(cell):
            errors.append((row, name, "must be a three-letter currency code"))
        else:
            values[name] = cell.upper()
    if len(errors) != before:
        return None
    return ReconciliationRow(
        row,
        values["settlementDate"],  # type: ignore[arg-type]
        values["paymentId"],  # type: ignore[arg-type]
        values["amount"],  # type: ignore[arg-type]
        values["currency"],  # type: ignore[arg-type]
    )


def read_reconciliation_csv(stream: BinaryIO, *, max_rows: int = MAX_ROWS) -> ReconciliationScan:
    """Read and validate a reconciliation file from ``stream``'s position, one record at a time.

    Raises :class:`ReconciliationFileError` for an error of the whole file (not UTF-8, a missing,
    unknown or repeated column, more than ``max_rows`` data rows, and, naming its row and column, a
    record ``csv`` refuses or a line longer than :data:`~paysdk.contracts.csv_records.MAX_LINE_BYTES`:
    D320, the shared :class:`~paysdk.contracts.csv_records.CsvRecords` reads the file). Row errors are
    in ``errors``: a row with the wrong number of cells, a cell longer than :data:`MAX_CELL_CHARS`, a bad
    date, payment id, amount or currency, and a payment named by an earlier row ("appears again").
    A file with a header and no data rows is valid (a day without settlements).
    """
    digest = hashlib.sha256()
    records = CsvRecords(stream, bom=True, update=digest.update)
    scan = ReconciliationScan()
    columns: tuple[str, ...] = ()
    first_row: dict[str, int] = {}
    try:
        for row, cells in records:
            if row == 1:
                columns = _columns(cells)
                continue
            if not cells:
                continue  # a blank line keeps its number
            scan.rows += 1
            if scan.rows > max_rows:
                raise ReconciliationFileError("file", f"has more than {max_rows:,} data rows")
            checked = _check(row, cells, columns, scan.errors)
            if checked is None:
                continue
            earlier = first_row.get(checked.payment_id)
            if earlier is not None:
                scan.errors.append((row, "paymentId", f"appears again: row {earlier} names this payment"))
                continue
            first_row[checked.payment_id] = row
            scan.valid.append(checked)
    except CsvSyntaxError as exc:
        if exc.encoding:
            raise ReconciliationFileError("file", exc.message) from None
        if exc.row == 1:
            raise ReconciliationFileError("file", f"has an unreadable header row ({exc.message})") from None
        raise ReconciliationFileError(
            exc.column(columns), f"{exc.message}; no report is made", exc.row
        ) from None
    if not columns:
        _columns(None)
    scan.sha256 = digest.hexdigest()
    return scan


# ------------------------------------------------------------------------------------ the report


class MatchedRow(WireModel):
    """A row whose payment settled that day with that amount, net of refunds, in that currency."""

    row: int
    payment_id: str


class MissingPayment(WireModel):
    """A payment of the affiliation settled on one of the file's dates that no row names."""

    payment_id: str
    settlement_date: date
    amount: DecimalNumber
    currency: str


class UnknownRow(WireModel):
    """A row naming no payment of the affiliation settled on that date in that currency (D241:
    ``reason`` says which)."""

    row: int
    payment_id: str
    reason: str = ""


class AmountMismatchRow(WireModel):
    """A row whose payment settled that day but for another amount (``expected``: captured less
    refunded; ``actual``: the file's)."""

    row: int
    payment_id: str
    expected: DecimalNumber
    actual: DecimalNumber


class InvalidRow(WireModel):
    """An error of a row (every error of the row is listed): it takes no part in matching."""

    row: int
    field: str
    message: str


#: Entries of a report's page, the five lists together (D331): the upload's answer holds the first.
PAGE_ENTRIES: Final = 5000


class ReconciliationCounts(WireModel):
    """How many entries each list of the whole report holds (D331); ``invalid_rows``: the rows with an
    error (``invalid`` counts every error of every row)."""

    matched: int = 0
    missing: int = 0
    unknown: int = 0
    amount_mismatch: int = 0
    invalid: int = 0
    invalid_rows: int = 0


class ReconciliationReport(WireModel):
    """The answer of ``POST /reports/payfac/conciliation/upload/{affiliation}`` (D194, D241, D331).

    The lists hold the report's first page: at most :data:`PAGE_ENTRIES` (5,000) entries taken in the
    order ``matched``, ``amount_mismatch``, ``unknown``, ``invalid``, ``missing``. ``counts`` gives each
    list's whole length; when ``pages`` is more than 1, ``report_id`` names the stored report whose
    pages ``GET /reports/payfac/conciliation/reports/{reportId}/pages/{page}`` answers (the SDK's
    ``upload`` reads them for you and returns the whole report)."""

    affiliation: str
    file_sha256: str
    rows: int
    matched: list[MatchedRow] = Field(default_factory=list)
    missing: list[MissingPayment] = Field(default_factory=list)
    unknown: list[UnknownRow] = Field(default_factory=list)
    amount_mismatch: list[AmountMismatchRow] = Field(default_factory=list)
    invalid: list[InvalidRow] = Field(default_factory=list)
    counts: ReconciliationCounts | None = None
    pages: int = 1
    report_id: str | None = None

    @property
    def all_matched(self) -> bool:
        """Whether every row matched and no payment is missing (by ``counts`` when the server sent
        them, so a first page says it for the whole report)."""
        if self.counts is not None:
            counts = self.counts
            return not (counts.missing or counts.unknown or counts.amount_mismatch or counts.invalid)
        return not (self.missing or self.unknown or self.amount_mismatch or self.invalid)

    @property
    def complete(self) -> bool:
        """Whether the lists hold the whole report (one page, or every page read)."""
        if self.counts is None:
            return True
        counts = self.counts
        held = (len(self.matched), len(self.missing), len(self.unknown), len(self.amount_mismatch))
        wanted = (counts.matched, counts.missing, counts.unknown, counts.amount_mismatch)
        return held == wanted and len(self.invalid) == counts.invalid


class ReconciliationReportPage(WireModel):
    """Page ``page`` (1 to ``pages``) of a stored report (D331): the report's entries from
    ``(page - 1) * PAGE_ENTRIES`` on, in the order of :class:`ReconciliationReport`'s lists."""

    report_id: str
    page: int
    pages: int
    matched: list[MatchedRow] = Field(default_factory=list)
    missing: list[MissingPayment] = Field(default_factory=list)
    unknown: list[UnknownRow] = Field(default_factory=list)
    amount_mismatch: list[AmountMismatchRow] = Field(default_factory=list)
    invalid: list[InvalidRow] = Field(default_factory=list)
