"""Reconciliation (``POST /reports/payfac/conciliation/upload/{affiliation}``, D194, D241).

* :func:`receive_file` reads the multipart body as it streams (:func:`paysdk.server.multipart.read_multipart`)
  and keeps only the part named ``file``, in a spooled temporary file; more than
  :data:`~paysdk.contracts.reconciliation.MAX_FILE_BYTES` is ``413`` naming ``body``.
* :func:`read_file` validates it a record at a time with the reader the SDK uses
  (:func:`paysdk.contracts.reconciliation.read_reconciliation_csv`): a file error is ``400`` naming
  ``file`` or the column, returned so the route authenticates first; row errors are ``invalid`` rows.
* :func:`reconcile` matches the valid rows with the affiliation's settled terminal payments. It changes
  nothing but the stored pages of a long report: the same file twice gives the same report.

Matching (D194, D241): a payment counts when it settled (``settledAt`` set: ``settled``, ``paid_out``
or ``refunded``) and belongs to the affiliation; its settlement day is its ``settlementDate`` (the batch's
date fixed at capture, D192, whether the job or a processor notification settled it) and its amount the
captured amount less refunds. A row is ``matched`` when its payment settled that day in that
currency for that amount; ``amountMismatch`` when only the amount differs; ``unknown`` otherwise (no such
settled payment of the affiliation, another day or another currency: ``reason`` says which). ``missing``
lists the affiliation's payments settled on a day some valid row names that no valid row names.

The answer is bounded (D331): its lists hold the report's first page (:data:`PAGE_ENTRIES` entries,
the lists taken in the order matched, amount mismatch, unknown, invalid, missing) and ``counts`` the
whole lists. A report of more pages is stored, every page's wire JSON zlib-compressed
(:mod:`paysdk.server.reconciliation_tables`), and :func:`report_page` answers a page of it; a client
keeps its latest :data:`KEPT_REPORTS` reports. Entries are tuples until their page is made, so the
models of one page at a time exist.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime
from typing import IO, Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from paysdk import _json
from paysdk.contracts.common import WireModel
from paysdk.contracts.reconciliation import (
    MAX_FILE_BYTES,
    MAX_ROWS,
    PAGE_ENTRIES,
    AmountMismatchRow,
    InvalidRow,
    MatchedRow,
    MissingPayment,
    ReconciliationCounts,
    ReconciliationFileError,
    ReconciliationReport,
    ReconciliationReportPage,
    ReconciliationScan,
    UnknownRow,
    read_reconciliation_csv,
)
from paysdk.server.auth import Credentials, EnvironmentName, authenticate_token
from paysdk.server.bodies import BodyRefused
from paysdk.server.clock import Clock
from paysdk.server.db import from_cents
from paysdk.server.errors import APIProblem
from paysdk.server.multipart import receive_file_part
from paysdk.server.reconciliation_tables import ReconciliationPageRow
from paysdk.server.services import terminal
from paysdk.server.services.wallet_common import new_id
from paysdk.server.terminal_tables import TerminalPaymentRow

__all__ = [
    "KEPT_REPORTS",
    "file_problem",
    "page_wire",
    "read_file",
    "receive_file",
    "reconcile",
    "report_page",
]

SPOOL_BYTES = 1 << 20
_MAX_PARTS = 16
_CHUNK = 500
#: Reports of more than one page a client keeps (its latest, D331).
KEPT_REPORTS = 10


def file_problem(message: str, column: str = "file") -> APIProblem:
    """``400``, ``ownCode`` null, naming ``file`` or the column (D194)."""
    return APIProblem(400, None, f"Invalid reconciliation file: {column} {message}.", [(column, message)])


async def _bounded(chunks: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes]:
    seen = 0
    async for chunk in chunks:
        seen += len(chunk)
        if seen > limit:
            raise BodyRefused.too_large(limit)
        yield chunk


async def receive_file(
    content_type: str | None, content_length: str | None, chunks: AsyncIterator[bytes]
) -> IO[bytes]:
    """The ``file`` part of the multipart body in a spooled temporary file at its start (the caller
    closes it). ``413`` naming ``body`` past 16 MiB (declared or streamed); ``400`` naming ``file`` for
    anything else: not multipart, malformed, no ``file`` part
    (:func:`paysdk.server.multipart.receive_file_part`)."""
    if content_length is not None and content_length.isdigit() and int(content_length) > MAX_FILE_BYTES:
        raise BodyRefused.too_large(MAX_FILE_BYTES)
    received = await receive_file_part(
        content_type,
        _bounded(chunks, MAX_FILE_BYTES),
        title="Invalid reconciliation file",
        spool_bytes=SPOOL_BYTES,
    )
    return received.spool


def read_file(spool: IO[bytes]) -> ReconciliationScan | APIProblem:
    """The file read and validated, or the ``400`` of a file error (returned: the route authenticates
    first)."""
    try:
        return read_reconciliation_csv(spool, max_rows=MAX_ROWS)  # type: ignore[arg-type]
    except ReconciliationFileError as exc:
        return file_problem(exc.message, exc.column)


#: The report's lists in page order (D331): name, entry model, and the fields of an entry's tuple.
_SECTIONS: tuple[tuple[str, type[WireModel], tuple[str, ...]], ...] = (
    ("matched", MatchedRow, ("row", "payment_id")),
    ("amount_mismatch", AmountMismatchRow, ("row", "payment_id", "expected", "actual")),
    ("unknown", UnknownRow, ("row", "payment_id", "reason")),
    ("invalid", InvalidRow, ("row", "field", "message")),
    ("missing", MissingPayment, ("payment_id", "settlement_date", "amount", "currency")),
)

_Entries = dict[str, Sequence[tuple[Any, ...]]]


def _slices(entries: _Entries, page: int) -> Iterator[tuple[str, Sequence[Any]]]:
    """Each list's entries on page ``page`` (from 1): the entries ``(page - 1) * PAGE_ENTRIES`` on of
    the lists taken in :data:`_SECTIONS` order."""
    start = (page - 1) * PAGE_ENTRIES
    stop = start + PAGE_ENTRIES
    offset = 0
    for name, _model, _fields in _SECTIONS:
        items = entries[name]
        low, high = max(start - offset, 0), min(stop - offset, len(items))
        yield name, items[low:high] if low < high else ()
        offset += len(items)


def _page_models(entries: _Entries, page: int) -> dict[str, list[Any]]:
    """The models of page ``page``'s entries, by list (the upload's answer)."""
    slices = dict(_slices(entries, page))
    return {
        name: [model(**dict(zip(fields, item, strict=True))) for item in slices[name]]
        for name, model, fields in _SECTIONS
    }


def page_wire(lists: _Entries, report_id: str, page: int, pages: int) -> dict[str, Any]:
    """The wire dict of :class:`ReconciliationReportPage` ``page`` from its entries' tuples by list
    (as stored), made without validating each entry again (the server made them;
    ``tests/server/test_server_reconciliation_pages.py`` holds it equal to the models' ``to_wire()``)."""
    wire = {
        name: [
            model.wire_from_checked(**dict(zip(fields, item, strict=True))) for item in lists.get(name, ())
        ]
        for name, model, fields in _SECTIONS
    }
    return ReconciliationReportPage.wire_from_checked(report_id=report_id, page=page, pages=pages, **wire)


def _store(session: Session, client_id: int, now: datetime, entries: _Entries, pages: int) -> str:
    """Store every page of a long report and forget the client's reports past the latest
    :data:`KEPT_REPORTS`; the report's id. A page is stored as its entries' tuples by list (JSON,
    zlib-compressed): 400,000 entries as wire dicts took seconds, as tuples a fraction of that."""
    report_id = new_id("rcr")
    for page in range(1, pages + 1):
        lists = {name: items for name, items in _slices(entries, page) if items}
        session.add(
            ReconciliationPageRow(
                report_id=report_id,
                page=page,
                client_id=client_id,
                pages=pages,
                created_at=now,
                data=zlib.compress(_json.dumps(lists), 1),
            )
        )
        session.flush()
    kept = (
        select(ReconciliationPageRow.report_id)
        .where(ReconciliationPageRow.client_id == client_id, ReconciliationPageRow.page == 1)
        .order_by(ReconciliationPageRow.created_at.desc(), ReconciliationPageRow.report_id)
    )
    old = list(session.scalars(kept.offset(KEPT_REPORTS)))
    if report_id in old:  # the clock went back: keep the report just made
        old.remove(report_id)
    if old:
        session.execute(delete(ReconciliationPageRow).where(ReconciliationPageRow.report_id.in_(old)))
    return report_id


def reconcile(
    session: Session,
    clock: Clock,
    environment: EnvironmentName,
    credentials: Credentials,
    affiliation: str,
    scanned: ReconciliationScan | APIProblem,
) -> ReconciliationReport:
    """The report of one file for the caller's ``affiliation`` (``404`` naming it when it is not the
    caller's): its first page, with the counts; a report of more pages is stored (D331)."""
    client = authenticate_token(session, credentials, environment)
    if terminal.affiliation_for(session, client.id) != affiliation:
        raise APIProblem.not_found("Affiliation", "affiliation")
    if isinstance(scanned, APIProblem):
        raise scanned
    mine = (TerminalPaymentRow.affiliation == affiliation, TerminalPaymentRow.client_id == client.id)
    columns = (
        TerminalPaymentRow.payment_id,
        TerminalPaymentRow.status,
        TerminalPaymentRow.settled_at,
        TerminalPaymentRow.settlement_date,
        TerminalPaymentRow.captured_cents,
        TerminalPaymentRow.refunded_cents,
        TerminalPaymentRow.currency,
    )
    ids = [row.payment_id for row in scanned.valid]
    found = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        for item in session.execute(select(*columns).where(*mine, TerminalPaymentRow.payment_id.in_(chunk))):
            found[item.payment_id] = item
    # Entries are kept as tuples (the models of one page at a time are made, D331).
    matched: list[tuple[Any, ...]] = []
    unknown: list[tuple[Any, ...]] = []
    mismatch: list[tuple[Any, ...]] = []
    for row in scanned.valid:
        payment = found.get(row.payment_id)
        if payment is None:
            unknown.append((row.row, row.payment_id, "no terminal payment of this affiliation has this id"))
            continue
        if payment.settled_at is None:
            unknown.append((row.row, row.payment_id, f"the payment is {payment.status}, not settled"))
            continue
        day = payment.settlement_date
        if day != row.settlement_date:
            unknown.append((row.row, row.payment_id, f"the payment settled on {day}"))
            continue
        if payment.currency != row.currency:
            unknown.append((row.row, row.payment_id, f"the payment is in {payment.currency}"))
            continue
        expected = from_cents(payment.captured_cents - payment.refunded_cents)
        if expected != row.amount:
            mismatch.append((row.row, row.payment_id, expected, row.amount))
        else:
            matched.append((row.row, row.payment_id))
    named = set(ids)
    missing: list[tuple[Any, ...]] = []
    for day in sorted({row.settlement_date for row in scanned.valid}):
        query = (
            select(*columns)
            .where(
                *mine,
                TerminalPaymentRow.settlement_date == day,
                TerminalPaymentRow.settled_at.is_not(None),
            )
            .order_by(TerminalPaymentRow.payment_id)
        )
        for payment in session.execute(query):
            if payment.payment_id not in named:
                amount = from_cents(payment.captured_cents - payment.refunded_cents)
                missing.append((payment.payment_id, day, amount, payment.currency))
    entries: _Entries = {
        "matched": matched,
        "amount_mismatch": mismatch,
        "unknown": unknown,
        "invalid": scanned.errors,
        "missing": missing,
    }
    total = sum(len(items) for items in entries.values())
    pages = max(1, -(-total // PAGE_ENTRIES))
    report_id = _store(session, client.id, clock.now(session), entries, pages) if pages > 1 else None
    return ReconciliationReport(
        affiliation=affiliation,
        file_sha256=scanned.sha256,
        rows=scanned.rows,
        counts=ReconciliationCounts(
            matched=len(matched),
            missing=len(missing),
            unknown=len(unknown),
            amount_mismatch=len(mismatch),
            invalid=len(scanned.errors),
            invalid_rows=len({row for row, _field, _message in scanned.errors}),
        ),
        pages=pages,
        report_id=report_id,
        **_page_models(entries, 1),
    )


def report_page(
    session: Session,
    environment: EnvironmentName,
    credentials: Credentials,
    report_id: str,
    page: int,
) -> bytes:
    """The JSON answer of page ``page`` of the caller's report ``report_id`` (D331). An unknown report,
    another client's or one no longer kept is ``404`` naming ``reportId``; a page past the last is
    ``404`` naming ``page`` (as is ``0``, what the route passes for a page that is not a number)."""
    client = authenticate_token(session, credentials, environment)
    first = session.get(ReconciliationPageRow, (report_id, 1))
    if first is None or first.client_id != client.id:
        raise APIProblem.not_found("Reconciliation report", "reportId")
    stored = first if page == 1 else session.get(ReconciliationPageRow, (report_id, page))
    if stored is None or not 1 <= page <= first.pages:
        raise APIProblem(
            404,
            None,
            f"Reconciliation report page not found: the report has {first.pages} pages.",
            [("page", f"must be 1 to {first.pages}")],
        )
    lists = _json.loads(zlib.decompress(stored.data))
    return _json.dumps(page_wire(lists, report_id, page, first.pages))
