"""Reconciliation (``POST /reports/payfac/conciliation/upload/{affiliation}``, D194, D241).

* :func:`receive_file` reads the multipart body as it streams (:func:`paysdk.server.multipart.read_multipart`)
  and keeps only the part named ``file``, in a spooled temporary file; more than
  :data:`~paysdk.contracts.reconciliation.MAX_FILE_BYTES` is ``413`` naming ``body``.
* :func:`read_file` validates it a record at a time with the reader the SDK uses
  (:func:`paysdk.contracts.reconciliation.read_reconciliation_csv`): a file error is ``400`` naming
  ``file`` or the column, returned so the route authenticates first; row errors are ``invalid`` rows.
* :func:`reconcile` matches the valid rows with the affiliation's settled terminal payments. It only
  reads: the same file twice gives the same report and changes nothing.

Matching (D194, D241): a payment counts when it settled (``settledAt`` set: ``settled``, ``paid_out``
or ``refunded``) and belongs to the affiliation; its settlement day is its ``settlementDate`` (the batch's
date fixed at capture, D192, whether the job or a processor notification settled it) and its amount the
captured amount less refunds. A row is ``matched`` when its payment settled that day in that
currency for that amount; ``amountMismatch`` when only the amount differs; ``unknown`` otherwise (no such
settled payment of the affiliation, another day or another currency: ``reason`` says which). ``missing``
lists the affiliation's payments settled on a day some valid row names that no valid row names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import IO

from sqlalchemy import select
from sqlalchemy.orm import Session

from paysdk.contracts.reconciliation import (
    MAX_FILE_BYTES,
    MAX_ROWS,
    AmountMismatchRow,
    InvalidRow,
    MatchedRow,
    MissingPayment,
    ReconciliationFileError,
    ReconciliationReport,
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
from paysdk.server.services import terminal
from paysdk.server.terminal_tables import TerminalPaymentRow

__all__ = ["file_problem", "read_file", "receive_file", "reconcile"]

SPOOL_BYTES = 1 << 20
_MAX_PARTS = 16
_CHUNK = 500


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


def reconcile(
    session: Session,
    clock: Clock,
    environment: EnvironmentName,
    credentials: Credentials,
    affiliation: str,
    scanned: ReconciliationScan | APIProblem,
) -> ReconciliationReport:
    """The report of one file for the caller's ``affiliation`` (``404`` naming it when it is not the
    caller's). Reads only."""
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
    matched: list[MatchedRow] = []
    unknown: list[UnknownRow] = []
    mismatch: list[AmountMismatchRow] = []
    for row in scanned.valid:
        payment = found.get(row.payment_id)
        if payment is None:
            unknown.append(
                UnknownRow(
                    row=row.row,
                    payment_id=row.payment_id,
                    reason="no terminal payment of this affiliation has this id",
                )
            )
            continue
        if payment.settled_at is None:
            unknown.append(
                UnknownRow(
                    row=row.row,
                    payment_id=row.payment_id,
                    reason=f"the payment is {payment.status}, not settled",
                )
            )
            continue
        day = payment.settlement_date
        if day != row.settlement_date:
            unknown.append(
                UnknownRow(row=row.row, payment_id=row.payment_id, reason=f"the payment settled on {day}")
            )
            continue
        if payment.currency != row.currency:
            unknown.append(
                UnknownRow(
                    row=row.row, payment_id=row.payment_id, reason=f"the payment is in {payment.currency}"
                )
            )
            continue
        expected = from_cents(payment.captured_cents - payment.refunded_cents)
        if expected != row.amount:
            mismatch.append(
                AmountMismatchRow(
                    row=row.row, payment_id=row.payment_id, expected=expected, actual=row.amount
                )
            )
        else:
            matched.append(MatchedRow(row=row.row, payment_id=row.payment_id))
    named = set(ids)
    missing: list[MissingPayment] = []
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
                missing.append(
                    MissingPayment(
                        payment_id=payment.payment_id,
                        settlement_date=day,
                        amount=from_cents(payment.captured_cents - payment.refunded_cents),
                        currency=payment.currency,
                    )
                )
    return ReconciliationReport(
        affiliation=affiliation,
        file_sha256=scanned.sha256,
        rows=scanned.rows,
        matched=matched,
        missing=missing,
        unknown=unknown,
        amount_mismatch=mismatch,
        invalid=[InvalidRow(row=row, field=field, message=message) for row, field, message in scanned.errors],
    )
