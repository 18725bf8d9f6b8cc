"""Batch charge CSV files (D155): the one reader and validator the SDK and the reference server share.

Pure apart from reading the file it is given (a binary file object, read once from where it stands, or
twice when the file has a duplicate reference). Nothing here imports httpx, pydantic or the server.

The layout (D155): UTF-8 with an optional BOM, comma-separated, RFC 4180 quoting, LF or CRLF line ends.
Row 1 is the header naming the columns in any order: ``subscriptionId``, ``amount``, ``reference``
(required), ``currency`` and ``description`` (optional). Each following record is a data row; a blank
line is skipped but keeps its row number. A record is one row even when a quoted cell holds line
breaks, so ``row`` is the record's number in the file (the header is row 1), which is the line number
for every file whose cells hold no line break.

* :func:`scan` reads a whole file once (with :class:`~paysdk.contracts.csv_records.CsvRecords`, the
  reader every CSV file shares, D320): the header (a :class:`CsvFileError` when it is unusable, naming
  ``file`` or the column; so is a record that cannot be read as CSV, naming its row), every row's
  errors (:class:`CsvRowError`: row, column, message), the in-file duplicate references ("duplicate
  of row N", found from 64-bit hashes kept in an ``array('q')``; the rows are named by a second pass
  only when a duplicate exists), the byte offset after each record, and optionally the parsed valid
  rows (:class:`ChargeRow`, what the server charges).
* :func:`plan_upload` also splits the file into parts of at most :data:`BATCH_MAX_ROWS` data rows
  (:class:`CsvPart`): a part is the header line plus byte ranges of the original file (one contiguous
  range, or several when invalid rows are left out), so no row is copied in memory; each part knows
  the original row numbers of the rows it carries (:meth:`CsvPart.original_row`) and its
  ``Idempotency-Key`` (``csv-<file sha256 prefix>-<first row>-<last row>``: what it carries, not its
  index, D158/D321).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import BinaryIO, Final

from paysdk.contracts.common import parse_amount_text
from paysdk.contracts.csv_records import CsvRecords, CsvSyntaxError
from paysdk.contracts.spreadsheet import FORMULA_MESSAGE, is_formula

__all__ = [
    "BATCH_MAX_ROWS",
    "COLUMNS",
    "MAX_CELL_CHARS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "ChargeRow",
    "CsvFileError",
    "CsvPart",
    "CsvPlan",
    "CsvRowError",
    "CsvScan",
    "CsvSpan",
    "RowIds",
    "part_key",
    "part_row_ids",
    "plan_upload",
    "scan",
]

#: Spec 8: at most 5,000 data rows per file sent to the server (the header not counted).
BATCH_MAX_ROWS: Final = 5000
REQUIRED_COLUMNS: Final = ("subscriptionId", "amount", "reference")
OPTIONAL_COLUMNS: Final = ("currency", "description")
COLUMNS: Final = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
#: A longer cell is an error of its row (D155).
MAX_CELL_CHARS: Final = 1024
MAX_DESCRIPTION_CHARS: Final = 255
#: Bytes of the file's SHA-256 (hex digits) in a part's idempotency key.
KEY_HASH_DIGITS: Final = 16

_REFERENCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
_SUBSCRIPTION = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_CURRENCY = re.compile(r"[A-Za-z]{3}")
#: Reference hashes (64-bit) are kept in this many ``array('q')`` by their low bits (_duplicate_hashes).
_BUCKETS: Final = 16
_BUCKET_MASK: Final = _BUCKETS - 1

# Row state flags (one byte per record).
_VALID, _BLANK, _INVALID = 0, 1, 2


class CsvFileError(ValueError):
    """An error of the whole file (D155/D156: not UTF-8, no header, a column error, no rows, too many
    rows; D320: a record that cannot be read as CSV): nothing in it is charged. ``column`` is ``"file"``
    or the column concerned; ``row`` the row at which the file became unreadable, when there is one."""

    def __init__(self, column: str, message: str, row: int | None = None) -> None:
        where = f"row {row}: " if row is not None else ""
        super().__init__(f"{column}: {where}{message}")
        self.column = column
        self.message = f"{where}{message}"
        self.row = row


@dataclass(frozen=True, slots=True)
class CsvRowError:
    """One error of one data row: its ``row`` (the header is row 1), the ``column`` and what is wrong."""

    row: int
    column: str
    message: str

    def __str__(self) -> str:
        return f"row {self.row}, {self.column}: {self.message}"


@dataclass(frozen=True, slots=True)
class ChargeRow:
    """A valid data row: what the server charges. ``currency`` is upper case, ``None`` when not given."""

    row: int
    subscription_id: str
    amount: Decimal
    reference: str
    currency: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class RowIds:
    """A data row's ``subscriptionId`` and ``reference`` cells as read, valid or not (what names the
    row to its author): known for every row that has as many cells as the header."""

    subscription_id: str
    reference: str


@dataclass(frozen=True, slots=True)
class CsvSpan:
    """A byte range ``[start, end)`` of the file (offsets from where the file stood when read) holding
    ``records`` whole records (blank lines included), the first of them row ``first_row``."""

    start: int
    end: int
    first_row: int
    records: int


@dataclass(frozen=True, slots=True)
class CsvPart:
    """One part of an upload (D158): the header line then :attr:`spans` of the original file.

    ``index`` counts from 1; ``first_row``/``last_row`` are the original row numbers of its first and
    last data rows, ``rows`` how many data rows it carries; ``key`` its ``Idempotency-Key``.
    """

    index: int
    first_row: int
    last_row: int
    rows: int
    spans: tuple[CsvSpan, ...]
    key: str
    header: bytes = field(repr=False)
    #: Blank lines inside :attr:`spans` (sent, skipped by the server), by row number.
    blanks: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        """The part's length in bytes (the header line and its spans)."""
        return len(self.header) + sum(span.end - span.start for span in self.spans)

    def original_row(self, row: int) -> int:
        """The original file's row number of the part's row ``row`` (the part's header is row 1)."""
        offset = row - 2
        if offset >= 0:
            for span in self.spans:
                if offset < span.records:
                    return span.first_row + offset
                offset -= span.records
        raise ValueError(f"part {self.index} has no row {row}")

    def data_rows(self) -> Iterator[int]:
        """The original row numbers of the data rows the part carries, in order."""
        blanks = set(self.blanks)
        for span in self.spans:
            for row in range(span.first_row, span.first_row + span.records):
                if row not in blanks:
                    yield row


@dataclass(slots=True)
class CsvScan:
    """What :func:`scan` found. ``rows``: data rows (blank lines not counted); ``records``: records after
    the header (blank lines counted); ``errors``: every row error, by row; ``charges``: the valid rows
    when asked for; ``ends``: the byte offset after the header (index 0) and after each record;
    ``state``: per record (index 0 the header) valid 0, blank 1, invalid 2; ``header``: the header
    line's bytes (without BOM); ``start``: the offset of the header line (after a BOM); ``invalid_ids``:
    the cells naming each invalid row as read (:class:`RowIds`), by row, where the row has as many cells
    as the header."""

    columns: tuple[str, ...]
    header: bytes
    start: int
    rows: int = 0
    records: int = 0
    errors: list[CsvRowError] = field(default_factory=list)
    invalid_ids: dict[int, RowIds] = field(default_factory=dict)
    charges: list[ChargeRow] | None = None
    ends: array[int] = field(default_factory=lambda: array("Q"))
    state: bytearray = field(default_factory=bytearray)

    @property
    def valid_rows(self) -> int:
        """Data rows without an error."""
        return self.rows - len({error.row for error in self.errors})


@dataclass(frozen=True, slots=True)
class CsvPlan:
    """A file read, validated and split (:func:`plan_upload`): its SHA-256 and size, the data rows, the
    row errors and the parts (at most :data:`BATCH_MAX_ROWS` data rows each; invalid rows are in none)."""

    sha256: str
    size: int
    rows: int
    errors: tuple[CsvRowError, ...]
    parts: tuple[CsvPart, ...]
    #: The cells naming each invalid row as read (:attr:`CsvScan.invalid_ids`).
    invalid_ids: dict[int, RowIds] = field(default_factory=dict)

    @property
    def invalid_rows(self) -> frozenset[int]:
        """The row numbers that have an error."""
        return frozenset(error.row for error in self.errors)


# ------------------------------------------------------------------------------------ reading


def _header(records: CsvRecords) -> tuple[bytes, int, int]:
    """The header line (BOM removed), the offset it starts at and the offset after it."""
    try:
        first = next(records.lines, b"")
    except CsvSyntaxError as exc:
        raise _file_error(exc, ()) from None
    return first, records.offset - len(first), records.offset


def _file_error(exc: CsvSyntaxError, columns: tuple[str, ...]) -> CsvFileError:
    """The error of the whole file for a record that cannot be read (D320): its row and column."""
    if exc.encoding:
        return CsvFileError("file", exc.message)
    return CsvFileError(exc.column(columns), f"{exc.message}; nothing in the file is charged", exc.row)


def _columns(header: bytes) -> tuple[str, ...]:
    try:
        text = header.decode("utf-8")
    except UnicodeDecodeError:
        raise CsvFileError("file", "is not UTF-8 text (line 1); save it as UTF-8") from None
    if not text.strip():
        raise CsvFileError("file", "has no header row: row 1 must name the columns " + ", ".join(COLUMNS))
    try:
        cells = next(csv.reader([text], strict=True))
    except csv.Error as exc:
        raise CsvFileError("file", f"has an unreadable header row ({exc})") from None
    seen: set[str] = set()
    for cell in cells:
        name = cell.strip()
        if name not in COLUMNS:
            shown = name if len(name) <= 40 else name[:40] + "..."
            raise CsvFileError(
                shown or "file", f"is not a column of a batch charge file (columns: {', '.join(COLUMNS)})"
            )
        if name in seen:
            raise CsvFileError(name, "appears twice in the header row")
        seen.add(name)
    missing = [name for name in REQUIRED_COLUMNS if name not in seen]
    if missing:
        raise CsvFileError(missing[0], "is a required column missing from the header row")
    return tuple(cell.strip() for cell in cells)


def _check(
    row: int, cells: list[str], columns: tuple[str, ...], errors: list[CsvRowError]
) -> ChargeRow | None:
    """The row's value, or ``None`` after adding its errors to ``errors``."""
    before = len(errors)
    if len(cells) != len(columns):
        column = columns[len(cells)] if len(cells) < len(columns) else "row"
        errors.append(CsvRowError(row, column, f"the row has {len(cells)} cells, the header {len(columns)}"))
        return None
    subscription = amount = reference = ""
    currency: str | None = None
    description: str | None = None
    for name, cell in zip(columns, cells, strict=True):
        if len(cell) > MAX_CELL_CHARS:
            errors.append(CsvRowError(row, name, f"is longer than {MAX_CELL_CHARS:,} characters"))
        elif name == "amount":
            try:
                value = parse_amount_text(cell, places=2, integer_digits=10)
            except ValueError as exc:
                errors.append(CsvRowError(row, name, str(exc)))
            else:
                if value == 0:
                    errors.append(CsvRowError(row, name, "must be greater than 0"))
                else:
                    amount = cell
        elif name == "reference":
            if not _REFERENCE.fullmatch(cell):
                errors.append(
                    CsvRowError(
                        row, name, "must be 1 to 64 of A-Z a-z 0-9 . _ : - starting with a letter or digit"
                    )
                )
            else:
                reference = cell
        elif name == "subscriptionId":
            if not _SUBSCRIPTION.fullmatch(cell):
                errors.append(
                    CsvRowError(row, name, "must be a subscription id (1 to 64 of A-Z a-z 0-9 _ . : -)")
                )
            else:
                subscription = cell
        elif name == "currency":
            if cell:
                if not _CURRENCY.fullmatch(cell):
                    errors.append(CsvRowError(row, name, "must be a three-letter currency code, or empty"))
                else:
                    currency = cell.upper()
        elif cell:  # description
            if len(cell) > MAX_DESCRIPTION_CHARS:
                errors.append(CsvRowError(row, name, f"is longer than {MAX_DESCRIPTION_CHARS} characters"))
            elif is_formula(cell):  # free text a spreadsheet may show (D384)
                errors.append(CsvRowError(row, name, FORMULA_MESSAGE))
            else:
                description = cell
    if len(errors) != before:
        return None
    return ChargeRow(row, subscription, Decimal(amount), reference, currency, description)


def _hash(reference: str) -> int:
    return hash(reference.encode())


#: Per column, the bytes pattern of a valid cell that needs no quoting (ASCII, no comma or quote): a line
#: made only of such cells is a whole valid row, checked by one regular expression (the fast path).
_FAST_CELLS: Final = {
    "subscriptionId": rb"[A-Za-z0-9_.:-]{1,64}",
    "amount": rb"(?!0*(?:\.0*)?(?:,|\r|\n|\Z))[0-9]{1,10}(?:\.[0-9]{1,2})?",
    "reference": rb"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}",
    "currency": rb"(?:[A-Za-z]{3})?",
    "description": rb"[\x20\x21\x23-\x2b\x2d-\x7e]{0,255}",
}


def _fast_row(columns: tuple[str, ...], every: bool) -> re.Pattern[bytes]:
    """The fast path's pattern: every cell captured (``every``: the server keeps the rows), or only the
    reference (group 1: a capture costs time on a million rows)."""
    cells = (
        b"(" + _FAST_CELLS[name] + b")" if every or name == "reference" else _FAST_CELLS[name]
        for name in columns
    )
    return re.compile(b",".join(cells) + rb"\r?\n?")


def scan(stream: BinaryIO, *, keep_rows: bool = False, max_rows: int | None = None) -> CsvScan:
    """Read and validate a batch charge file from ``stream``'s current position (a binary file object).

    Raises :class:`CsvFileError` for an error of the whole file, including no data row, with
    ``max_rows`` more data rows than that (the server's limit, D156), and any record ``csv`` refuses or
    a line longer than :data:`~paysdk.contracts.csv_records.MAX_LINE_BYTES` (D320: its row and column;
    reading never goes on past it, so a line hidden in an open quote is never a row). Row errors are
    in the answer's ``errors``, by row; ``keep_rows``: the valid rows are kept in ``charges`` (the
    server's use). A duplicate reference needs a seekable ``stream`` (it is read again to name the
    earlier row).

    A line that is a whole valid row of plain cells is checked by one regular expression; any other
    line (quotes, line breaks in a cell, non-ASCII text, an error) goes through the shared
    :class:`~paysdk.contracts.csv_records.CsvRecords`.
    """
    records = CsvRecords(stream, offset=stream.tell(), bom=True)
    header, start, after = _header(records)
    columns = _columns(header)
    result = CsvScan(columns=columns, header=header, start=start, charges=[] if keep_rows else None)
    reference_at = columns.index("reference")
    subscription_at = columns.index("subscriptionId")
    width = len(columns)
    invalid_ids = result.invalid_ids
    fast = _fast_row(columns, keep_rows).fullmatch
    group = reference_at + 1 if keep_rows else 1
    keep = keep_rows
    ends = result.ends
    ends.append(after)
    buckets = [array("q") for _ in range(_BUCKETS)]
    adders = [bucket.append for bucket in buckets]
    add_end = ends.append
    special: list[tuple[int, int]] = []  # (record index, blank or invalid); every other record is valid
    errors = result.errors
    charges = result.charges
    # The data row number past the limit: ``row`` minus 1 minus the blank lines so far.
    stop = max_rows + 2 if max_rows is not None else -1
    over = False
    row = 1
    try:
        for raw in records.lines:
            row += 1
            match = fast(raw)
            if match is not None:
                if row == stop:
                    over = True
                    break
                add_end(records.offset)
                value = hash(match.group(group))
                adders[value & _BUCKET_MASK](value)
                if keep:
                    assert charges is not None
                    charges.append(_fast_value(row, columns, match))
                continue
            cells = records.record(records.decode(raw))
            if not cells:
                add_end(records.offset)
                special.append((row - 1, _BLANK))
                if stop > 0:
                    stop += 1
                continue
            if row == stop:
                over = True
                break
            add_end(records.offset)
            if len(cells) == width and _REFERENCE.fullmatch(reference := cells[reference_at]) is not None:
                value = _hash(reference)
                adders[value & _BUCKET_MASK](value)
            checked = _check(row, cells, columns, errors)
            if checked is None:
                special.append((row - 1, _INVALID))
                if len(cells) == width:
                    invalid_ids[row] = RowIds(cells[subscription_at], cells[reference_at])
            elif charges is not None:
                charges.append(checked)
    except CsvSyntaxError as exc:
        raise _file_error(exc, columns) from None
    if over:
        raise CsvFileError(
            "file", f"has more than {max_rows:,} data rows; split it into files of {max_rows:,}"
        )
    state = result.state = bytearray(len(ends))  # all _VALID (0) but the special records
    blanks = 0
    for index, kind in special:
        state[index] = kind
        blanks += kind == _BLANK
    result.records = len(ends) - 1
    result.rows = rows = result.records - blanks
    if rows == 0:
        raise CsvFileError("file", "has no data rows: one charge per row after the header")
    duplicates = _duplicate_hashes(buckets)
    del buckets, adders
    if duplicates:
        _name_duplicates(stream, result, duplicates, after)
    return result


def _fast_value(row: int, columns: tuple[str, ...], match: re.Match[bytes]) -> ChargeRow:
    cells = dict(
        zip(columns, (value.decode("ascii") if value else "" for value in match.groups()), strict=True)
    )
    return ChargeRow(
        row,
        cells["subscriptionId"],
        Decimal(cells["amount"]),
        cells["reference"],
        cells.get("currency", "").upper() or None,
        cells.get("description") or None,
    )


def _duplicate_hashes(buckets: list[array[int]]) -> set[int]:
    """The hashes present more than once. The hashes are kept in :data:`_BUCKETS` arrays by their low
    bits, so the set that finds repeats holds one bucket at a time (a sixteenth of the file's rows)."""
    found: set[int] = set()
    for bucket in buckets:
        if len(set(bucket)) == len(bucket):
            continue
        seen: set[int] = set()
        for value in bucket:
            if value in seen:
                found.add(value)
            seen.add(value)
    return found


def _name_duplicates(stream: BinaryIO, result: CsvScan, duplicates: set[int], after: int) -> None:
    """Second pass: a row whose reference an earlier row has is an error naming that row (D155)."""
    stream.seek(after)
    columns = result.columns
    reference_at = columns.index("reference")
    subscription_at = columns.index("subscriptionId")
    width = len(columns)
    first: dict[str, int] = {}
    repeated: set[int] = set()
    for row, cells in CsvRecords(stream, offset=after, row=1):  # read once already: no syntax error
        if len(cells) != width:
            continue
        reference = cells[reference_at]
        if _REFERENCE.fullmatch(reference) is None or _hash(reference) not in duplicates:
            continue
        earlier = first.setdefault(reference, row)
        if earlier != row:
            result.errors.append(CsvRowError(row, "reference", f"duplicate of row {earlier}"))
            result.state[row - 1] = _INVALID
            result.invalid_ids[row] = RowIds(cells[subscription_at], reference)
            repeated.add(row)
    if repeated:
        result.errors.sort(key=lambda error: error.row)
        if result.charges is not None:
            result.charges = [charge for charge in result.charges if charge.row not in repeated]


# ------------------------------------------------------------------------------------ splitting


def part_key(sha256: str, first_row: int, last_row: int) -> str:
    """The ``Idempotency-Key`` of the part carrying the valid data rows ``first_row`` to ``last_row`` of
    the file whose SHA-256 is ``sha256`` (D158, D321). A part's bytes are the header line and exactly
    those rows' records (the blank lines between them included, the invalid rows left out, nothing after
    ``last_row``), so the key names what the part contains: the same rows under the same key whatever
    the part size or the part's index, other rows under another key."""
    return f"csv-{sha256[:KEY_HASH_DIGITS]}-{first_row}-{last_row}"


def _digest(stream: BinaryIO) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def plan_upload(
    stream: BinaryIO, *, part_rows: int = BATCH_MAX_ROWS, resplits: Sequence[tuple[int, int]] = ()
) -> CsvPlan:
    """Read, validate and split a batch charge file (a seekable binary file object, from its current
    position): its SHA-256, its row errors, and its parts of at most ``part_rows`` valid data rows, each
    the header line plus byte ranges of the file (rows with an error are in no part). ``resplits``:
    ``(after_row, part_rows)`` pairs: the rows after ``after_row`` go in parts of that many rows (a part
    open at that row ends there; the CLI's ``--resume`` with another ``--part-rows``, D321). Raises
    :class:`CsvFileError` for an error of the whole file (any number of rows is fine here)."""
    if part_rows < 1 or any(size < 1 for _, size in resplits):
        raise ValueError("part_rows must be at least 1")
    base = stream.tell()
    sha256, size = _digest(stream)
    stream.seek(base)
    result = scan(stream)
    parts = _split(result, sha256, part_rows, resplits)
    return CsvPlan(
        sha256=sha256,
        size=size,
        rows=result.rows,
        errors=tuple(result.errors),
        parts=parts,
        invalid_ids=result.invalid_ids,
    )


def part_row_ids(stream: BinaryIO, part: CsvPart) -> dict[int, RowIds]:
    """The cells naming each data row of ``part`` as read (:class:`RowIds`), by row: its spans read
    again from ``stream``, the file :func:`plan_upload` read (seekable; its position is restored)."""
    columns = _columns(part.header)
    subscription_at, reference_at = columns.index("subscriptionId"), columns.index("reference")
    width = len(columns)
    found: dict[int, RowIds] = {}
    position = stream.tell()
    try:
        for span in part.spans:
            stream.seek(span.start)
            records = CsvRecords(io.BytesIO(stream.read(span.end - span.start)), row=span.first_row - 1)
            for row, cells in records:
                if len(cells) == width:
                    found[row] = RowIds(cells[subscription_at], cells[reference_at])
    finally:
        stream.seek(position)
    return found


def _split(
    result: CsvScan, sha256: str, part_rows: int, resplits: Sequence[tuple[int, int]] = ()
) -> tuple[CsvPart, ...]:
    ends = result.ends
    state = result.state
    count = len(state)  # records, the header included (index 0)
    parts: list[CsvPart] = []
    cuts = sorted(resplits)

    def emit(ranges: list[tuple[int, int]], blanks: list[int], first_row: int, last: int, rows: int) -> None:
        """A part of the record ranges ``ranges`` (record indexes, the header is 0), the last one cut at
        ``last``, the index of its last data row: a part never carries what follows its last row."""
        ranges[-1] = (ranges[-1][0], last)
        last_row = last + 1
        parts.append(
            CsvPart(
                len(parts) + 1,
                first_row,
                last_row,
                rows,
                tuple(CsvSpan(ends[a - 1], ends[b], a + 1, b - a + 1) for a, b in ranges),
                part_key(sha256, first_row, last_row),
                result.header,
                tuple(row for row in blanks if row < last_row),
            )
        )

    if not cuts and _INVALID not in state and _BLANK not in state:  # the common case: no walk
        for first in range(1, count, part_rows):
            last = min(first + part_rows - 1, count - 1)
            emit([(first, last)], [], first + 1, last, last - first + 1)
        return tuple(parts)

    ranges: list[tuple[int, int]] = []
    blanks: list[int] = []
    opened: int | None = None
    rows = first_row = last = 0
    size = part_rows
    for index in range(1, count):
        kind = state[index]
        if kind == _INVALID or (kind == _BLANK and opened is None):
            if opened is not None:
                ranges.append((opened, index - 1))
                opened = None
            continue
        if kind == _VALID:
            while cuts and index + 1 > cuts[0][0]:  # a new part size from this row on
                if rows:
                    if opened is not None:
                        ranges.append((opened, index - 1))
                    emit(ranges, blanks, first_row, last, rows)
                    ranges, blanks, opened, rows = [], [], None, 0
                size = cuts.pop(0)[1]
        if opened is None:
            opened = index
        if kind == _BLANK:
            blanks.append(index + 1)
            continue
        if not rows:
            first_row = index + 1
        rows += 1
        last = index
        if rows == size:
            ranges.append((opened, index))
            emit(ranges, blanks, first_row, last, rows)
            ranges, blanks, opened, rows = [], [], None, 0
    if rows:
        if opened is not None:
            ranges.append((opened, count - 1))
        emit(ranges, blanks, first_row, last, rows)
    return tuple(parts)
