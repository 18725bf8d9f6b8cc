"""Bulk cardholder upload and its progress stream (spec 4.4, 6.5; decisions D186-D188, D210-D219).

The wire models the SDK and the reference server share, and the one pure validator of the file's rows
(D186) so that the SDK can check a file before sending it exactly as the server checks it after.

* ``POST {cms}/app/partners/{partnerId}/cardholders/upload`` answers :class:`CardholderUpload` (D187:
  ``202`` for a new batch, ``200`` with ``duplicate: true`` for a file already sent for that partner).
* ``GET {cms}/app/partners/{partnerId}/cardholders/batch/{batchId}/progress`` is an event stream (D188)
  of ``progress`` (:class:`BatchProgress`), ``row-failed`` (:class:`RowFailed`) and ``done``
  (:class:`BatchDone`) events, each with ``id`` its sequence number within the batch.
* ``GET {cms}/app/partners/{partnerId}/cardholders/batch/{batchId}/results/pages/{page}`` (our extension,
  D450) answers :class:`CardholderResultsPage`: the rows the batch created with their cardholder and card
  ids, :data:`RESULTS_PAGE_ENTRIES` a page, in row order.
* ``GET {cms}/app/partners/{partnerId}/cardholders/lookup?externalId=|email=`` (our extension, D451)
  answers :class:`CardholderMatch`: one cardholder of the partner.

The file layout (D186): row 1 is the header (names case-sensitive, any order, unknown columns refused);
``externalId``, ``username``, ``email``, ``firstName``, ``lastName`` required; ``phone``, ``issueCard``,
``cardAlias`` optional. :func:`check_header` checks the header, :func:`parse_row` one data row (a
:class:`CardholderRow` or a :class:`RowError`). Row numbers count the header as row 1. A row whose cells
are all empty is skipped (keeps its number, is neither created nor failed). Nothing here does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from pydantic import Field

from paysdk.contracts.common import WireModel
from paysdk.contracts.spreadsheet import is_formula
from paysdk.contracts.wallet import email_key, validate_email, validate_username

__all__ = [
    "BOOLEAN_FALSE",
    "BOOLEAN_TRUE",
    "COLUMNS",
    "EVENT_NAMES",
    "FREE_TEXT_COLUMNS",
    "MAX_CELL_CHARS",
    "MAX_DATA_ROWS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "RESULTS_PAGE_ENTRIES",
    "BatchDone",
    "BatchProgress",
    "BatchStatus",
    "CardholderFileError",
    "CardholderMatch",
    "CardholderResultsPage",
    "CardholderRow",
    "CardholderUpload",
    "CreatedCardholder",
    "ProgressEventName",
    "RowError",
    "RowFailed",
    "check_header",
    "formula_cell",
    "is_blank",
    "parse_bool",
    "parse_row",
]

#: D187: ``completed`` means every row was tried (some may have failed); ``failed`` that the file could
#: not be read past some row (the rows before it stand).
BatchStatus: TypeAlias = Literal["queued", "processing", "completed", "failed"]
#: D188: the stream's event names.
ProgressEventName: TypeAlias = Literal["progress", "row-failed", "done"]
EVENT_NAMES: Final[tuple[ProgressEventName, ...]] = ("progress", "row-failed", "done")

#: D186: at most this many data rows (the header not counted).
MAX_DATA_ROWS: Final = 200_000
REQUIRED_COLUMNS: Final = ("externalId", "username", "email", "firstName", "lastName")
OPTIONAL_COLUMNS: Final = ("phone", "issueCard", "cardAlias")
COLUMNS: Final = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
#: D210: a longer cell makes the whole file unreadable (``400`` naming ``file`` and the row), so a
#: 10 MB cell is refused at upload instead of being carried into the batch.
MAX_CELL_CHARS: Final = 1024
MAX_NAME_CHARS: Final = 100
MAX_EXTERNAL_ID_CHARS: Final = 64
MAX_ALIAS_CHARS: Final = 64
BOOLEAN_TRUE: Final = frozenset({"true", "yes", "1"})
BOOLEAN_FALSE: Final = frozenset({"false", "no", "0", ""})

_E164 = re.compile(r"\+[1-9][0-9]{6,14}")
#: Plain ASCII emails and usernames, a subset of what D96 accepts: these skip the per-character checks
#: of :func:`~paysdk.contracts.wallet.validate_email` (a 50,000-row file spends most of its time there).
_PLAIN_EMAIL = re.compile(
    r"[A-Za-z0-9._%+!#$&'*/=?^`{|}~-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z0-9-]{1,63}"
)
_PLAIN_USERNAME = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?")
#: D210, D384: a cell a spreadsheet would run as a formula refuses the whole file, naming the column and
#: the row (CSV injection is malformed input, not data). In these free-text columns (and beyond the
#: header) that is any cell :func:`~paysdk.contracts.spreadsheet.is_formula` calls one (``= + - @``, a
#: tab or a carriage return first, leading blanks ignored); the other columns have formats of their own
#: (an E.164 ``phone`` starts with ``+``) and refuse a cell starting with ``=``.
FREE_TEXT_COLUMNS: Final = ("externalId", "username", "firstName", "lastName", "cardAlias")


class CardholderFileError(ValueError):
    """An error of the whole file (D186, D210): nothing of it is processed. ``field`` is ``"file"`` or the
    column concerned; ``row`` the row at which the file became unusable, when there is one."""

    def __init__(self, field: str, message: str, row: int | None = None) -> None:
        where = f"row {row}: " if row is not None else ""
        super().__init__(f"{field}: {where}{message}")
        self.field = field
        self.message = f"{where}{message}"
        self.row = row


@dataclass(frozen=True, slots=True)
class CardholderRow:
    """A valid data row: the cardholder the server creates (and a card when ``issue_card``)."""

    row: int
    external_id: str
    username: str
    email: str
    first_name: str
    last_name: str
    phone: str | None = None
    issue_card: bool = False
    card_alias: str | None = None


@dataclass(frozen=True, slots=True)
class RowError:
    """A row's failure: its ``row`` number, the ``field`` (column) and what is wrong; ``external_id`` as
    the row gave it (``None`` when empty). The same shape as the ``row-failed`` event."""

    row: int
    field: str
    message: str
    external_id: str | None = None

    def __str__(self) -> str:
        return f"row {self.row}, {self.field}: {self.message}"


def check_header(cells: Sequence[object]) -> tuple[str, ...]:
    """The column names of header ``cells`` (D186): each a known column, none twice, every required one
    present. Trailing empty cells are ignored (spreadsheets pad rows). Raises :class:`CardholderFileError`
    naming the column (``file`` for an empty header)."""
    names = [("" if cell is None else str(cell)).strip() for cell in cells]
    while names and not names[-1]:
        names.pop()
    if not names:
        raise CardholderFileError("file", "the first row must be the header naming the columns", 1)
    seen: set[str] = set()
    for name in names:
        if name not in COLUMNS:
            shown = name if name else "(empty)"
            raise CardholderFileError(
                shown, f"unknown column {shown!r}; the columns are {', '.join(COLUMNS)}", 1
            )
        if name in seen:
            raise CardholderFileError(name, f"column {name!r} appears twice", 1)
        seen.add(name)
    for name in REQUIRED_COLUMNS:
        if name not in seen:
            raise CardholderFileError(name, f"the required column {name!r} is missing", 1)
    return tuple(names)


def _text(cell: object) -> str:
    if type(cell) is str:
        return cell.strip()
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "true" if cell else "false"
    if isinstance(cell, float) and cell.is_integer():
        # A spreadsheet holds ``1`` or an id typed as a number as a float.
        return str(int(cell))
    return str(cell).strip()


def formula_cell(header: Sequence[str], cells: Sequence[object], row: int) -> CardholderFileError | None:
    """The :class:`CardholderFileError` of data row ``row`` when one of its cells is a spreadsheet formula
    (D384, :data:`FREE_TEXT_COLUMNS`), naming its column (``file`` beyond the header); ``None`` otherwise."""
    for index, cell in enumerate(cells):
        if not isinstance(cell, str):
            continue
        field = header[index] if index < len(header) else "file"
        free_text = field == "file" or field in FREE_TEXT_COLUMNS
        if is_formula(cell) if free_text else cell.lstrip().startswith("="):
            return CardholderFileError(field, "a formula is not accepted; give the value itself", row)
    return None


def is_blank(cells: Sequence[object]) -> bool:
    """Whether every cell of a row is empty (such a row is skipped, keeping its number)."""
    return all(not _text(cell) for cell in cells)


def parse_bool(value: str) -> bool | None:
    """``issueCard``'s value (D186): ``True``/``False``, ``None`` when not a recognised spelling."""
    folded = value.strip().lower()
    if folded in BOOLEAN_TRUE:
        return True
    if folded in BOOLEAN_FALSE:
        return False
    return None


def _printable(value: str) -> bool:
    return value.isprintable()


def parse_row(header: Sequence[str], cells: Sequence[object], row: int) -> CardholderRow | RowError:
    """Data row ``row`` (the header is row 1) read against ``header`` (:func:`check_header`'s result):
    a :class:`CardholderRow`, or the :class:`RowError` of its first faulty column in :data:`COLUMNS`
    order. Cells beyond the header must be empty ("more cells than the header names"). Whether the
    ``externalId``, username or email already exists is the server's check (D187), not this one's."""
    values: dict[str, str] = {}
    for index, cell in enumerate(cells):
        text = _text(cell)
        if index >= len(header):
            if text:
                external = values.get("externalId") or None
                return RowError(row, "file", "more cells than the header names", external)
            continue
        values[header[index]] = text
    external_id = values.get("externalId", "")
    external = external_id or None

    def fail(field: str, message: str) -> RowError:
        return RowError(row, field, message, external)

    for name in REQUIRED_COLUMNS:
        if not values.get(name):
            return fail(name, "is required")
    if len(external_id) > MAX_EXTERNAL_ID_CHARS or not _printable(external_id):
        return fail("externalId", f"must be 1 to {MAX_EXTERNAL_ID_CHARS} printable characters")
    username = values["username"]
    if not _PLAIN_USERNAME.fullmatch(username):
        try:
            validate_username(username)
        except ValueError as exc:
            return fail("username", str(exc))
    email = values["email"]
    if len(email) <= 254 and _PLAIN_EMAIL.fullmatch(email) and "xn--" not in email.lower():
        email = email.lower()  # what email_key makes of a plain ASCII address
    else:
        try:
            email = email_key(validate_email(email))
        except ValueError as exc:
            return fail("email", str(exc))
    for name in ("firstName", "lastName"):
        if len(values[name]) > MAX_NAME_CHARS or not _printable(values[name]):
            return fail(name, f"must be 1 to {MAX_NAME_CHARS} printable characters")
    phone = values.get("phone") or None
    if phone is not None and not _E164.fullmatch(phone):
        return fail("phone", "must be an E.164 number such as +14155550123")
    issue = parse_bool(values.get("issueCard", ""))
    if issue is None:
        return fail("issueCard", "must be true, false, yes, no, 1, 0 or empty")
    alias = values.get("cardAlias") or None
    if alias is not None:
        if not issue:
            return fail("cardAlias", "is only allowed when issueCard is true")
        if len(alias) > MAX_ALIAS_CHARS or not _printable(alias):
            return fail("cardAlias", f"must be 1 to {MAX_ALIAS_CHARS} printable characters")
    return CardholderRow(
        row=row,
        external_id=external_id,
        username=username,
        email=email,
        first_name=values["firstName"],
        last_name=values["lastName"],
        phone=phone,
        issue_card=issue,
        card_alias=alias,
    )


# ------------------------------------------------------------------------------------ wire models


class CardholderUpload(WireModel):
    """The answer of the upload (D187): ``202`` with a new batch (``status`` ``queued``), or ``200`` with
    the first batch of the same file (same SHA-256, same partner) and ``duplicate: true``."""

    batch_id: str
    partner_id: str
    status: BatchStatus
    file_name: str
    file_sha256: str = Field(min_length=64, max_length=64)
    duplicate: bool = False


class BatchProgress(WireModel):
    """``data`` of a ``progress`` event (D188): the counts so far; ``total`` null until counted."""

    batch_id: str
    status: BatchStatus
    total: int | None = None
    processed: int
    created: int
    failed: int


class RowFailed(WireModel):
    """``data`` of a ``row-failed`` event (D188): one per failed row (``externalId`` null when empty)."""

    row: int
    external_id: str | None = None
    field: str
    message: str


class BatchDone(WireModel):
    """``data`` of the final ``done`` event (D188), also the batch result the SDK's wait helper returns."""

    batch_id: str
    status: BatchStatus
    total: int | None = None
    processed: int
    created: int
    failed: int
    cards_issued: int


#: Created rows in a page of a batch's results (D450), as a reconciliation report's page (D331).
RESULTS_PAGE_ENTRIES: Final = 5_000


class CreatedCardholder(WireModel):
    """One row a batch created (D450): its row number (the header is row 1), ``externalId``, the
    cardholder's id (``cardholderId``: the wallet user id the backoffice paths take) and the card issued
    for it (``cardId``, null without ``issueCard``)."""

    row: int
    external_id: str
    cardholder_id: str
    card_id: str | None = None


class CardholderResultsPage(WireModel):
    """Page ``page`` of ``pages`` of a batch's created rows (D450): ``entries`` from
    ``(page - 1) * 5,000`` on, in row order; ``created`` counts them all so far and ``status`` is the
    batch's (a running batch's results grow)."""

    batch_id: str
    status: BatchStatus
    created: int
    page: int
    pages: int
    entries: list[CreatedCardholder]


class CardholderMatch(WireModel):
    """A partner's cardholder found by ``externalId`` or email (D451). ``externalId``, ``batchId``,
    ``row`` and ``cardId`` come from the upload that created it (null for a cardholder enrolled another
    way)."""

    cardholder_id: str
    partner_id: str
    username: str
    email: str
    external_id: str | None = None
    batch_id: str | None = None
    row: int | None = None
    card_id: str | None = None
