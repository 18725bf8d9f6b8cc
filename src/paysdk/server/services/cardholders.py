"""Bulk cardholder upload and its progress stream (spec 4.4, 6.5; decisions D185-D188, D210-D219).

* :func:`receive_file` keeps the multipart part ``file`` in a spooled temporary file while hashing it
  (the reader every upload route shares, :func:`paysdk.server.multipart.read_multipart`).
* :func:`scan_file` reads the whole file once before anything is stored (D210): the kind from the part's
  file name (``.csv`` or ``.xlsx``), the header (:func:`paysdk.contracts.cardholders.check_header`),
  readability to the end (UTF-8 and quoting, or a workbook :mod:`paysdk.server.xlsx` reads in
  bounded memory, D330), cell lengths and the row count. A fault is ``400`` naming ``file`` (or the
  column) and the row; no batch is made.
* :func:`accept_upload` stores the batch, the file's bytes (chunks, so any process can run the job) and
  its first ``progress`` event, and queues the batch's job (:data:`JOB_KIND`), in one transaction. The
  same file (SHA-256) for the same partner answers the first batch with ``duplicate: true`` (D187); a
  concurrent twin loses the unique index on ``(partner_pk, file_sha256)`` and answers the winner's batch.
* :func:`run_batch` is the job (a leased job of :mod:`paysdk.server.jobs`, async form): it reads the file
  from the batch's cursor (``next_row``) and processes it in chunks of at most :data:`CHUNK_ROWS` rows or
  :data:`CHUNK_SECONDS` of work, each chunk one transaction: the cardholders it creates (wallet users of
  the partner's merchant, without a password: rows carry none, D186, so no key derivation runs; and a
  virtual card when ``issueCard``), a ``row-failed`` event per failed row, one ``progress`` event, and
  the cursor moved with a compare-and-set (a runner that lost its lease to another rolls back instead of
  writing twice). The last chunk writes ``done``.
* A row whose ``externalId`` exists for the partner, or whose username (its D96 canonical form) or email
  exists for the merchant, fails ``already exists`` naming the column (D187): the unique indexes make
  that true under concurrent uploads too (a chunk that collides is retried row by row in savepoints).
* :func:`event_stream` is the progress stream (D188) read from the events table, so any server process
  over the database serves it. The streams of one batch in one process share one reader (:func:`feeds`,
  :mod:`paysdk.server.fanout`, D370): one poll of the database per interval, whatever their number.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import tempfile
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.contracts.cardholders import (
    COLUMNS,
    MAX_CELL_CHARS,
    MAX_DATA_ROWS,
    RESULTS_PAGE_ENTRIES,
    BatchDone,
    BatchProgress,
    BatchStatus,
    CardholderFileError,
    CardholderMatch,
    CardholderResultsPage,
    CardholderRow,
    CardholderUpload,
    CreatedCardholder,
    RowError,
    RowFailed,
    check_header,
    formula_cell,
    is_blank,
    parse_row,
)
from paysdk.contracts.csv_records import CsvRecords, CsvSyntaxError
from paysdk.contracts.wallet import username_key
from paysdk.server import xlsx
from paysdk.server.backoffice_tables import PartnerEnrollmentRow, PartnerRow
from paysdk.server.cardholder_tables import (
    BatchCardholderRow,
    CardholderBatchRow,
    CardholderEventRow,
    CardholderFileChunkRow,
)
from paysdk.server.clock import Clock
from paysdk.server.context import ServerContext
from paysdk.server.core_tables import ClientRow
from paysdk.server.errors import APIProblem
from paysdk.server.fanout import FanOut, FeedItem, Snapshot
from paysdk.server.hotpath import Statement
from paysdk.server.jobs import ClaimedJob, LeaseLost
from paysdk.server.multipart import ReceivedFile, receive_file_part
from paysdk.server.services.wallet_common import new_id
from paysdk.server.services.wallet_users import unusable_hash
from paysdk.server.wallet_tables import WalletCardRow, WalletUserRow

__all__ = [
    "CHUNK_ROWS",
    "CHUNK_SECONDS",
    "FILE_CHUNK_BYTES",
    "HEARTBEAT_SECONDS",
    "JOB_KIND",
    "MAX_COLUMNS",
    "POLL_SECONDS",
    "RETRY_MS",
    "BatchListing",
    "FileScan",
    "ReceivedFile",
    "accept_upload",
    "batch_of",
    "event_stream",
    "feeds",
    "file_kind",
    "file_problem",
    "file_rows",
    "format_event",
    "kick",
    "known_upload",
    "receive_file",
    "recent_batches",
    "run_batch",
    "scan_file",
]

log = logging.getLogger("paysdk.server.cardholders")

#: The job kind of a batch (BACKOFFICE family).
JOB_KIND = "cardholder_batch"
#: D188: a ``progress`` event at most every 500 rows or 250 ms of processing: a chunk is that much.
CHUNK_ROWS = 500
CHUNK_SECONDS = 0.25
#: The file is stored in chunks of this many bytes.
FILE_CHUNK_BYTES = 1 << 20
#: D330: an xlsx sheet's values sit in columns A to BL at most (the layout has 8 columns).
MAX_COLUMNS = 64
#: Bytes of an upload kept in memory before its spool moves to disk.
SPOOL_BYTES = 4 << 20
#: D188: the stream's ``retry``, heartbeat interval and database poll interval.
RETRY_MS = 1000
HEARTBEAT_SECONDS = 15.0
POLL_SECONDS = 0.1
_MAX_PARTS = 16
_MAX_HEADER_BYTES = 16 * 1024
_KINDS = {".csv": "csv", ".xlsx": "xlsx"}
_FINISHED: frozenset[str] = frozenset({"completed", "failed"})
_CARD_COLUMNS = tuple(WalletCardRow.__table__.columns)


def _insert_statement(table: Any, exclude: tuple[str, ...] = ()) -> Statement:
    """A precompiled ``INSERT`` of the columns of ``table`` but ``exclude`` (multi-row on SQLite, as
    :class:`~paysdk.server.hotpath.Statement` runs the hot path's, each column's value processed
    once per distinct object)."""
    columns = [column.key for column in table.columns if column.key not in exclude]
    return Statement(insert(table), columns=columns)


_USERS = _insert_statement(WalletUserRow.__table__)
_MEMBERS = _insert_statement(BatchCardholderRow.__table__, exclude=("id",))
_ENROLLED = _insert_statement(PartnerEnrollmentRow.__table__)
_CARDS = _insert_statement(WalletCardRow.__table__)


def file_problem(message: str, field: str = "file") -> APIProblem:
    """``400``, ``ownCode`` null, naming ``file`` or the column (D183, D186)."""
    return APIProblem(400, None, f"Invalid cardholder file: {field} {message}.", [(field, message)])


# ------------------------------------------------------------------------------------ receiving


async def receive_file(content_type: str | None, chunks: AsyncIterator[bytes]) -> ReceivedFile:
    """The ``file`` part of a multipart body (the caller closes it); ``400`` naming ``file`` when the body
    is not multipart, is malformed or has no ``file`` part
    (:func:`paysdk.server.multipart.receive_file_part`)."""
    return await receive_file_part(
        content_type, chunks, title="Invalid cardholder upload", spool_bytes=SPOOL_BYTES
    )


def file_kind(file_name: str) -> str:
    """``csv`` or ``xlsx`` from the part's file name (D186), else ``400`` naming ``file``."""
    lowered = file_name.lower()
    for suffix, kind in _KINDS.items():
        if lowered.endswith(suffix):
            return kind
    raise file_problem("must have a file name ending in .csv or .xlsx (the part's filename)")


# ------------------------------------------------------------------------------------ reading


def _csv_rows(stream: IO[bytes]) -> Iterator[tuple[int, list[str]]]:
    """``(row number, cells)`` of a CSV file from its start (the header is row 1), streaming with the
    reader every CSV file shares (:class:`~paysdk.contracts.csv_records.CsvRecords`, D320).
    :class:`CardholderFileError` at the row that cannot be read (encoding, quoting, a cell or a line too
    long), naming the cell."""
    try:
        yield from CsvRecords(stream, bom=True)
    except CsvSyntaxError as exc:
        if exc.encoding:
            raise CardholderFileError("file", "is not UTF-8 text", exc.row) from None
        cell = f" at cell {exc.cell + 1}" if exc.cell is not None else ""
        raise CardholderFileError("file", f"cannot be read as CSV{cell} ({exc.message})", exc.row) from None


def _xlsx_rows(stream: IO[bytes]) -> Iterator[tuple[int, list[Any]]]:
    """``(row number, cells)`` of the rows of the first worksheet of an xlsx workbook that hold a value,
    read in bounded memory (:mod:`paysdk.server.xlsx`, D330): the archive's sizes, the sheet's declared
    dimension and every value's position are checked against :data:`MAX_DATA_ROWS` + 1 rows and
    :data:`MAX_COLUMNS` columns."""
    try:
        yield from xlsx.read_first_sheet(
            stream,
            max_rows=MAX_DATA_ROWS + 1,
            max_columns=MAX_COLUMNS,
            max_cell_chars=MAX_CELL_CHARS,
            max_strings=(MAX_DATA_ROWS + 1) * len(COLUMNS),
        )
    except xlsx.XlsxError as exc:
        raise CardholderFileError("file", exc.message, exc.row) from None


def file_rows(
    stream: IO[bytes], kind: str, *, check_cells: bool = True
) -> Generator[tuple[int, list[Any]], None, None]:
    """The rows of a stored or received file from row 1, each cell at most :data:`MAX_CELL_CHARS`
    (``check_cells=False``: a stored file, whose cells the upload checked already)."""
    rows = _csv_rows(stream) if kind == "csv" else _xlsx_rows(stream)
    if not check_cells:
        yield from rows
        return
    for row, cells in rows:
        for cell in cells:
            if isinstance(cell, str) and len(cell) > MAX_CELL_CHARS:
                raise CardholderFileError("file", f"has a cell longer than {MAX_CELL_CHARS} characters", row)
        yield row, cells


@dataclass(frozen=True, slots=True)
class FileScan:
    """What the upload's read of the whole file found: the kind, the header's columns, the data rows
    (blank rows not counted) and the last row's number."""

    kind: str
    header: tuple[str, ...]
    total: int
    last_row: int


def scan_file(received: ReceivedFile) -> FileScan:
    """Read the whole file once (D210, blocking: call it in a thread); ``400`` for a file fault."""
    kind = file_kind(received.file_name)
    received.spool.seek(0)
    rows = file_rows(received.spool, kind)
    try:
        first = next(rows, None)
        if first is None:
            raise CardholderFileError("file", "is empty: the first row must be the header", 1)
        header = check_header(first[1])
        total = 0
        last = 1
        for row, cells in rows:
            last = row
            if is_blank(cells):
                continue
            formula = formula_cell(header, cells, row)
            if formula is not None:
                raise formula
            total += 1
            if total > MAX_DATA_ROWS:
                raise CardholderFileError("file", f"has more than {MAX_DATA_ROWS:,} data rows", row)
        if total == 0:
            raise CardholderFileError("file", "has no data rows after the header")
    except CardholderFileError as exc:
        raise file_problem(exc.message, exc.field) from None
    finally:
        rows.close()
        received.spool.seek(0)
    return FileScan(kind, header, total, last)


# ------------------------------------------------------------------------------------ accepting


def _upload_view(batch: CardholderBatchRow, duplicate: bool) -> CardholderUpload:
    status: BatchStatus = batch.status  # type: ignore[assignment]
    return CardholderUpload(
        batch_id=batch.id,
        partner_id=batch.partner_id,
        status=status,
        file_name=batch.file_name,
        file_sha256=batch.file_sha256,
        duplicate=duplicate,
    )


def _progress(batch: CardholderBatchRow) -> BatchProgress:
    status: BatchStatus = batch.status  # type: ignore[assignment]
    return BatchProgress(
        batch_id=batch.id,
        status=status,
        total=batch.total,
        processed=batch.processed,
        created=batch.created,
        failed=batch.failed,
    )


def _done(batch: CardholderBatchRow) -> BatchDone:
    status: BatchStatus = batch.status  # type: ignore[assignment]
    return BatchDone(
        batch_id=batch.id,
        status=status,
        total=batch.total,
        processed=batch.processed,
        created=batch.created,
        failed=batch.failed,
        cards_issued=batch.cards_issued,
    )


def _wire_json(model: Any) -> str:
    return json.dumps(model.model_dump(by_alias=True, mode="json"), separators=(",", ":"))


def _existing(session: Session, partner: PartnerRow, sha256: str) -> CardholderBatchRow | None:
    return session.scalars(
        select(CardholderBatchRow).where(
            CardholderBatchRow.partner_pk == partner.id, CardholderBatchRow.file_sha256 == sha256
        )
    ).first()


def known_upload(session: Session, partner: PartnerRow, received: ReceivedFile) -> CardholderUpload | None:
    """The answer for a file this partner sent before (its first batch, ``duplicate: true``, D187), found
    by its SHA-256 before the file is read (D330); ``None`` for a new file. A part's file name that is
    neither ``.csv`` nor ``.xlsx`` is ``400`` naming ``file`` first, as for a new file."""
    file_kind(received.file_name)
    found = _existing(session, partner, received.sha256)
    return None if found is None else _upload_view(found, True)


def accept_upload(
    session: Session, now: datetime, partner: PartnerRow, received: ReceivedFile, scanned: FileScan
) -> tuple[CardholderUpload, bool]:
    """Store the batch and queue its job (D187); ``(answer, created)``: ``created`` false for a file this
    partner sent before (the first batch's answer, ``duplicate: true``)."""
    from paysdk.server import jobs

    found = _existing(session, partner, received.sha256)
    if found is not None:
        return _upload_view(found, True), False
    batch = CardholderBatchRow(
        id=new_id("chb"),
        client_id=partner.client_id,
        partner_pk=partner.id,
        partner_id=partner.partner_id,
        file_name=received.file_name[:255],
        file_sha256=received.sha256,
        kind=scanned.kind,
        size=received.size,
        status="queued",
        total=scanned.total,
        last_row=scanned.last_row,
        next_row=2,
        processed=0,
        created=0,
        failed=0,
        cards_issued=0,
        last_seq=1,
        created_at=now,
    )
    try:
        with session.begin_nested():
            session.add(batch)
            session.flush()
    except IntegrityError:
        # A concurrent upload of the same file won the unique index: its batch is the answer.
        session.expunge_all()
        found = _existing(session, partner, received.sha256)
        if found is None:  # pragma: no cover - the index said it exists
            raise
        return _upload_view(found, True), False
    received.spool.seek(0)
    seq = 0
    while chunk := received.spool.read(FILE_CHUNK_BYTES):
        session.execute(insert(CardholderFileChunkRow).values(batch_id=batch.id, seq=seq, data=chunk))
        seq += 1
    session.add(
        CardholderEventRow(
            batch_id=batch.id, seq=1, event="progress", data=_wire_json(_progress(batch)), written_at=_wall()
        )
    )
    jobs.add(session, JOB_KIND, batch.id, now, now)
    session.flush()
    return _upload_view(batch, False), True


def batch_of(session: Session, partner: PartnerRow, batch_id: str) -> CardholderBatchRow:
    """The partner's batch ``batch_id``; another partner's or an unknown one is ``404`` naming ``batchId``
    (the same answer for both)."""
    batch = session.get(CardholderBatchRow, batch_id)
    if batch is None or batch.partner_pk != partner.id or batch.client_id != partner.client_id:
        raise APIProblem.not_found("Batch", "batchId")
    return batch


def results_page(session: Session, partner: PartnerRow, batch_id: str, page: int) -> CardholderResultsPage:
    """Page ``page`` of the rows batch ``batch_id`` created, with their cardholder and card ids (D450):
    :data:`RESULTS_PAGE_ENTRIES` a page in row order; ``pages`` is at least 1 (an empty first page for a
    batch that created nothing yet). Another partner's or an unknown batch is ``404`` naming
    ``batchId``; a page past the last (or ``0``, what the route passes for one that is not a number)
    ``404`` naming ``page``."""
    batch = batch_of(session, partner, batch_id)
    created = session.scalar(
        select(func.count()).select_from(BatchCardholderRow).where(BatchCardholderRow.batch_id == batch.id)
    )
    count = int(created or 0)
    pages = max(1, -(-count // RESULTS_PAGE_ENTRIES))
    if not 1 <= page <= pages:
        raise APIProblem.not_found("Page", "page")
    members = session.execute(
        select(
            BatchCardholderRow.row,
            BatchCardholderRow.external_id,
            BatchCardholderRow.user_id,
            BatchCardholderRow.card_id,
        )
        .where(BatchCardholderRow.batch_id == batch.id)
        .order_by(BatchCardholderRow.row)
        .offset((page - 1) * RESULTS_PAGE_ENTRIES)
        .limit(RESULTS_PAGE_ENTRIES)
    ).all()
    status: BatchStatus = batch.status  # type: ignore[assignment]
    return CardholderResultsPage(
        batch_id=batch.id,
        status=status,
        created=count,
        page=page,
        pages=pages,
        entries=[
            CreatedCardholder(row=row, external_id=external, cardholder_id=user, card_id=card)
            for row, external, user, card in members
        ],
    )


def lookup(
    session: Session, partner: PartnerRow, external_id: str | None, email: str | None
) -> CardholderMatch:
    """The partner's cardholder whose ``externalId`` (from its upload) or email is given (D451): exactly
    one of them (``400`` naming ``externalId`` otherwise); none is ``404`` naming the one given. The email
    is compared as stored (lower-cased, D96)."""
    if (external_id is None) == (email is None):
        raise APIProblem(400, None, "Give exactly one of externalId and email.", [("externalId", "required")])
    query = (
        select(WalletUserRow, BatchCardholderRow)
        .join(PartnerEnrollmentRow, PartnerEnrollmentRow.user_id == WalletUserRow.id)
        .outerjoin(
            BatchCardholderRow,
            (BatchCardholderRow.user_id == WalletUserRow.id)
            & (BatchCardholderRow.partner_pk == PartnerEnrollmentRow.partner_pk),
        )
        .where(PartnerEnrollmentRow.partner_pk == partner.id, WalletUserRow.client_id == partner.client_id)
    )
    if external_id is not None:
        query = query.where(BatchCardholderRow.external_id == external_id)
        field_name = "externalId"
    else:
        assert email is not None
        query = query.where(WalletUserRow.email == email.strip().lower())
        field_name = "email"
    found = session.execute(query.limit(1)).first()
    if found is None:
        raise APIProblem.not_found("Cardholder", field_name)
    user, member = found
    return CardholderMatch(
        cardholder_id=user.id,
        partner_id=partner.partner_id,
        username=user.username,
        email=user.email,
        external_id=None if member is None else member.external_id,
        batch_id=None if member is None else member.batch_id,
        row=None if member is None else member.row,
        card_id=None if member is None else member.card_id,
    )


def _wall() -> datetime:
    return datetime.now(UTC)


# ------------------------------------------------------------------------------------ processing


@dataclass
class _Cursor:
    """A running batch as its job sees it: the file's rows from ``next_row`` on."""

    batch_id: str
    client_id: int
    partner_pk: int
    header: tuple[str, ...]
    rows: Iterator[tuple[int, list[Any]]]
    next_row: int
    last_row: int
    kind: str
    client: ClientRow
    password_hash: str
    spool: IO[bytes] = field(repr=False)
    pending: tuple[int, list[Any]] | None = None


def _load(session: Session, batch_id: str, now: datetime) -> _Cursor | None:
    """The batch's file read from its cursor on; ``None`` when the batch is finished (or gone)."""
    batch = session.get(CardholderBatchRow, batch_id)
    if batch is None or batch.status in _FINISHED:
        return None
    if batch.status == "queued":
        batch.status = "processing"
    client = session.get(ClientRow, batch.client_id)
    assert client is not None
    session.expunge(client)  # kept by the job after this transaction
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - closed by the job
    for (data,) in session.execute(
        select(CardholderFileChunkRow.data)
        .where(CardholderFileChunkRow.batch_id == batch_id)
        .order_by(CardholderFileChunkRow.seq)
    ):
        spool.write(data)
    spool.seek(0)
    return _Cursor(
        batch_id=batch.id,
        client_id=batch.client_id,
        partner_pk=batch.partner_pk,
        header=(),
        rows=iter(()),
        next_row=batch.next_row,
        last_row=batch.last_row,
        kind=batch.kind,
        client=client,
        password_hash=unusable_hash(),
        spool=spool,
    )


def _open_rows(cursor: _Cursor) -> None:
    """Position ``cursor.rows`` at ``cursor.next_row`` (blocking: parses the file up to there)."""
    rows = file_rows(cursor.spool, cursor.kind, check_cells=False)
    first = next(rows, None)
    assert first is not None
    cursor.header = check_header(first[1])
    for row, cells in rows:
        if row >= cursor.next_row:
            cursor.pending = (row, cells)
            break
    cursor.rows = rows


@dataclass
class _Chunk:
    """One chunk's rows: the valid ones and the failures, in file order."""

    valid: list[CardholderRow] = field(default_factory=list)
    failures: list[RowError] = field(default_factory=list)
    tried: int = 0
    next_row: int = 0
    exhausted: bool = False
    broken: CardholderFileError | None = None


def _take(cursor: _Cursor) -> _Chunk:
    """The next chunk: up to :data:`CHUNK_ROWS` data rows or :data:`CHUNK_SECONDS` of reading."""
    chunk = _Chunk(next_row=cursor.next_row)
    started = time.monotonic()
    while chunk.tried < CHUNK_ROWS and time.monotonic() - started < CHUNK_SECONDS:
        if cursor.pending is not None:
            item, cursor.pending = cursor.pending, None
        else:
            try:
                item = next(cursor.rows)
            except StopIteration:
                chunk.exhausted = True
                break
            except CardholderFileError as exc:
                chunk.broken = exc
                break
        row, cells = item
        chunk.next_row = row + 1
        if is_blank(cells):
            continue
        chunk.tried += 1
        parsed = parse_row(cursor.header, cells, row)
        if isinstance(parsed, RowError):
            chunk.failures.append(parsed)
        else:
            chunk.valid.append(parsed)
    if not chunk.exhausted and chunk.broken is None and chunk.next_row > cursor.last_row:
        chunk.exhausted = True
    return chunk


def _already(row: CardholderRow, column: str) -> RowError:
    return RowError(row.row, column, "already exists", row.external_id)


def _screen(
    session: Session, cursor: _Cursor, rows: Sequence[CardholderRow]
) -> tuple[list[CardholderRow], list[RowError]]:
    """Rows whose ``externalId`` (partner), username or email (merchant) exist, or repeat an earlier row
    of the chunk, fail ``already exists`` naming the column (D187)."""
    if not rows:
        return [], []
    externals = {
        value
        for (value,) in session.execute(
            select(BatchCardholderRow.external_id).where(
                BatchCardholderRow.partner_pk == cursor.partner_pk,
                BatchCardholderRow.external_id.in_([row.external_id for row in rows]),
            )
        )
    }
    keys = {row.row: username_key(row.username) for row in rows}
    taken_keys = {
        value
        for (value,) in session.execute(
            select(WalletUserRow.username_key).where(
                WalletUserRow.client_id == cursor.client_id,
                WalletUserRow.username_key.in_(set(keys.values())),
            )
        )
    }
    taken_emails = {
        value
        for (value,) in session.execute(
            select(WalletUserRow.email).where(
                WalletUserRow.client_id == cursor.client_id,
                WalletUserRow.email.in_([row.email for row in rows]),
            )
        )
    }
    kept: list[CardholderRow] = []
    failures: list[RowError] = []
    for row in rows:
        key = keys[row.row]
        if row.external_id in externals:
            failures.append(_already(row, "externalId"))
        elif key in taken_keys:
            failures.append(_already(row, "username"))
        elif row.email in taken_emails:
            failures.append(_already(row, "email"))
        else:
            kept.append(row)
        externals.add(row.external_id)
        taken_keys.add(key)
        taken_emails.add(row.email)
    return kept, failures


def _records(
    cursor: _Cursor, rows: Sequence[CardholderRow], now: datetime
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The wallet users, partner cardholders and cards of ``rows``."""
    from paysdk.server.services.wallet_cards import new_card

    currency = str(cursor.client.currencies[0])
    users: list[dict[str, Any]] = []
    holders: list[dict[str, Any]] = []
    cards: list[dict[str, Any]] = []
    for row in rows:
        user_id = new_id("usr")
        profile: dict[str, Any] = {"firstName": row.first_name, "lastName": row.last_name}
        if row.phone is not None:
            profile["phone"] = row.phone
        users.append(
            {
                "id": user_id,
                "client_id": cursor.client_id,
                "merchant": cursor.client.slug,
                "username": row.username,
                "username_key": username_key(row.username),
                "email": row.email,
                "password_hash": cursor.password_hash,
                "profile": profile,
                "created_at": now,
            }
        )
        card_id = None
        if row.issue_card:
            card = new_card(
                cursor.client,
                now,
                type_="virtual",
                status="active",
                currency=currency,
                holder=user_id,
                alias=row.card_alias,
            )
            card_id = card.id
            cards.append({column.key: getattr(card, column.key) for column in _CARD_COLUMNS})
        holders.append(
            {
                "client_id": cursor.client_id,
                "partner_pk": cursor.partner_pk,
                "external_id": row.external_id,
                "user_id": user_id,
                "batch_id": cursor.batch_id,
                "row": row.row,
                "card_id": card_id,
                "created_at": now,
            }
        )
    return users, holders, cards


def _insert(session: Session, cursor: _Cursor, rows: Sequence[CardholderRow], now: datetime) -> int:
    """Insert the cardholders of ``rows`` (Core ``executemany``: no ORM unit of work per row); the
    cards issued."""
    users, holders, cards = _records(cursor, rows, now)
    connection = session.connection()
    if users:
        _USERS.run_many(connection, users)
        _MEMBERS.run_many(connection, holders)
        _ENROLLED.run_many(
            connection,
            [{"user_id": user["id"], "partner_pk": cursor.partner_pk, "created_at": now} for user in users],
        )
    if cards:
        _CARDS.run_many(connection, cards)
    return len(cards)


def _create(
    session: Session, cursor: _Cursor, rows: Sequence[CardholderRow], now: datetime
) -> tuple[int, int, list[RowError]]:
    """Create ``rows`` (already screened): ``(created, cards, failures)``. A collision with a concurrent
    upload (a unique index) is retried row by row, the colliding rows failing ``already exists``."""
    try:
        with session.begin_nested():
            cards = _insert(session, cursor, rows, now)
        return len(rows), cards, []
    except (IntegrityError, sqlite3.IntegrityError):
        pass
    created = cards = 0
    failures: list[RowError] = []
    for row in rows:
        kept, screened = _screen(session, cursor, [row])
        if screened:
            failures.extend(screened)
            continue
        try:
            with session.begin_nested():
                cards += _insert(session, cursor, kept, now)
            created += 1
        except (IntegrityError, sqlite3.IntegrityError):
            failures.append(_already(row, "externalId"))
    return created, cards, failures


def _event(session: Session, batch: CardholderBatchRow, name: str, data: str) -> None:
    batch.last_seq += 1
    session.add(
        CardholderEventRow(batch_id=batch.id, seq=batch.last_seq, event=name, data=data, written_at=_wall())
    )


def _process_chunk(session: Session, cursor: _Cursor, clock: Clock) -> bool:
    """One chunk in one transaction; whether the batch is finished. :class:`LeaseLost` when another runner
    moved the cursor (this one's work rolls back)."""
    now = clock.now(session)
    chunk = _take(cursor)
    moved = session.execute(
        update(CardholderBatchRow)
        .where(CardholderBatchRow.id == cursor.batch_id, CardholderBatchRow.next_row == cursor.next_row)
        .values(next_row=chunk.next_row)
    )
    if moved.rowcount != 1:  # type: ignore[attr-defined]
        raise LeaseLost(f"batch {cursor.batch_id} was moved on by another runner")
    batch = session.get(CardholderBatchRow, cursor.batch_id, populate_existing=True)
    assert batch is not None
    kept, duplicates = _screen(session, cursor, chunk.valid)
    created, cards, collided = _create(session, cursor, kept, now)
    failures = sorted([*chunk.failures, *duplicates, *collided], key=lambda error: error.row)
    batch.status = "processing"
    batch.processed += chunk.tried
    batch.created += created
    batch.cards_issued += cards
    batch.failed += len(failures)
    for error in failures:
        failed = RowFailed(
            row=error.row, external_id=error.external_id, field=error.field, message=error.message
        )
        _event(session, batch, "row-failed", _wire_json(failed))
    finished = chunk.exhausted or chunk.broken is not None
    if chunk.broken is not None:
        broken = chunk.broken
        failed = RowFailed(
            row=broken.row or chunk.next_row, external_id=None, field=broken.field, message=broken.message
        )
        _event(session, batch, "row-failed", _wire_json(failed))
        batch.status = "failed"
    elif finished:
        batch.status = "completed"
    _event(session, batch, "progress", _wire_json(_progress(batch)))
    if finished:
        batch.finished_at = now
        _event(session, batch, "done", _wire_json(_done(batch)))
    cursor.next_row = chunk.next_row
    return finished


def _mark_processing(session: Session, batch_id: str) -> None:
    batch = session.get(CardholderBatchRow, batch_id)
    if batch is not None and batch.status == "queued":
        batch.status = "processing"


async def run_batch(context: ServerContext, job: ClaimedJob, clock: Clock) -> None:
    """The handler of :data:`JOB_KIND`: process the batch ``job.ref`` chunk by chunk (each chunk its own
    transaction), from wherever its cursor stands (a job taken over resumes there)."""
    now = await context.run(clock.now)
    cursor = await context.run(_load, job.ref, now)
    if cursor is None:
        return
    try:
        await asyncio.to_thread(_open_rows, cursor)
        await context.run(_mark_processing, job.ref)
        finished = False
        while not finished:
            finished = await context.run(_process_chunk, cursor, clock)
            feeds(context).nudge(job.ref)  # this process's streams of the batch see the chunk now
    finally:
        close = getattr(cursor.rows, "close", None)
        if close is not None:
            close()
        cursor.spool.close()


_KICKS: set[asyncio.Task[int]] = set()


def kick(context: ServerContext) -> None:
    """Run the due jobs now (a new batch starts at once, not at the scheduler's next tick, D211)."""
    task = asyncio.get_running_loop().create_task(context.scheduler.run_due())
    _KICKS.add(task)
    task.add_done_callback(_KICKS.discard)


# ------------------------------------------------------------------------------------ streaming


def _read_events(session: Session, batch_id: str, after: int, limit: int) -> Snapshot:
    """The batch's events after ``after`` as feed items (:mod:`paysdk.server.fanout`): the batch's status
    and last event number first (one primary-key read, all a poll costs while nothing is new), then the
    events only when there are some. A batch that is gone (a reset) is finished."""
    row = session.execute(
        select(CardholderBatchRow.status, CardholderBatchRow.last_seq).where(
            CardholderBatchRow.id == batch_id
        )
    ).one_or_none()
    if row is None:
        return Snapshot((), True, None)
    finished = row.status in _FINISHED
    if row.last_seq <= after:
        return Snapshot((), finished, row.last_seq)
    events = session.execute(
        select(CardholderEventRow.seq, CardholderEventRow.event, CardholderEventRow.data)
        .where(CardholderEventRow.batch_id == batch_id, CardholderEventRow.seq > after)
        .order_by(CardholderEventRow.seq)
        .limit(limit)
    )
    items = [FeedItem(seq, format_event(seq, name, data), name == "done") for seq, name, data in events]
    return Snapshot(items, finished, row.last_seq)


_FEEDS: weakref.WeakKeyDictionary[ServerContext, FanOut] = weakref.WeakKeyDictionary()


def feeds(context: ServerContext) -> FanOut:
    """The progress feeds of ``context`` (one reader per batch per event loop, D370)."""
    hub = _FEEDS.get(context)
    if hub is None:
        hub = _FEEDS[context] = FanOut(context, _read_events)
    return hub


def format_event(seq: int, name: str, data: str) -> bytes:
    """One event of the WHATWG event-stream format (the data is one line of JSON)."""
    return f"id: {seq}\nevent: {name}\ndata: {data}\n\n".encode()


async def event_stream(
    context: ServerContext,
    batch_id: str,
    after: int,
    *,
    heartbeat: float | None = HEARTBEAT_SECONDS,
    poll: float = POLL_SECONDS,
) -> AsyncGenerator[bytes, None]:
    """The progress stream of ``batch_id`` after event ``after`` (D188): ``retry`` first, each stored
    event as it appears, ``: heartbeat`` after ``heartbeat`` seconds without one (``None``: never, the
    answer pings, D601); it ends after ``done``
    (at once when ``after`` is past it). The events come from the batch's one reader in this process
    (:func:`feeds`, D370), which reads the database at most every ``poll`` seconds for all its streams."""
    yield f"retry: {RETRY_MS}\n\n".encode()
    chunks = feeds(context).stream(
        batch_id, after, heartbeat=heartbeat, interval=poll, beat=b": heartbeat\n\n"
    )
    async with contextlib.aclosing(chunks) as stream:
        async for chunk in stream:
            yield chunk


@dataclass(frozen=True, slots=True)
class BatchListing:
    """One cardholder batch as the browser console lists it (D723): its file, partner, times and
    progress (:class:`~paysdk.contracts.cardholders.BatchDone`'s counters)."""

    progress: BatchDone
    file_name: str
    partner_id: str
    created_at: datetime
    finished_at: datetime | None


def recent_batches(session: Session, limit: int = 200) -> list[BatchListing]:
    """The newest cardholder batches of every partner first (at most ``limit``)."""
    rows = session.scalars(
        select(CardholderBatchRow)
        .order_by(CardholderBatchRow.created_at.desc(), CardholderBatchRow.id)
        .limit(limit)
    )
    return [
        BatchListing(_done(row), row.file_name, row.partner_id, row.created_at, row.finished_at)
        for row in rows
    ]
