"""Batch CSV charges (``POST /v1/subscriptions/charges/upload-csv``, D155-D157).

* :func:`receive_file` reads the multipart body as it streams (the reader every upload route shares,
  :func:`paysdk.server.multipart.read_multipart`) and keeps only the part named ``file``, in a spooled
  temporary file (memory up to :data:`SPOOL_BYTES`, disk beyond; the route's body is at most 16 MiB,
  D156).
* :func:`read_file` validates it with the shared reader (:func:`paysdk.contracts.charges_csv.scan`, the
  SDK's own rules): a file error is ``400`` naming ``file`` or the column; row errors are refused rows.
* :func:`charge_rows` charges every valid row in the caller's transaction (one per file): a row's
  identity is ``(client, reference)`` (:class:`~paysdk.server.subscription_tables.BatchRowRow`); a
  reference charged or declined before answers that result (``replayed``) and charges nothing, unless
  its values differ (then ``refused``, "reference already used"); an unknown or another client's
  subscription, one not ``active``, or a currency other than the plan's is ``refused`` naming the
  column. A charge goes through :func:`paysdk.server.services.subscriptions.charge` (``source="batch"``).
  A concurrent upload of the same reference loses a unique-index race inside a savepoint and answers the
  winner's result: never a second charge, never a 500.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from datetime import datetime
from typing import IO

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.contracts.charges_csv import BATCH_MAX_ROWS, ChargeRow, CsvFileError, CsvScan, scan
from paysdk.contracts.subscriptions import BatchChargeResult, BatchChargeRowResult
from paysdk.server.db import to_cents
from paysdk.server.errors import APIProblem
from paysdk.server.multipart import receive_file_part
from paysdk.server.services import subscriptions
from paysdk.server.services.wallet_tokens import Principal
from paysdk.server.subscription_tables import BatchRowRow, PlanRow, SubscriptionRow

__all__ = [
    "MAX_CSV_BYTES",
    "SPOOL_BYTES",
    "CsvScan",
    "charge_rows",
    "file_problem",
    "read_file",
    "receive_file",
]

#: The largest body of the upload route (D156): :data:`paysdk.server.bodies.UPLOAD_ROUTE_LIMITS`.
MAX_CSV_BYTES = 16 << 20
#: Bytes of the file kept in memory before the spool moves to disk.
SPOOL_BYTES = 1 << 20
_MAX_PARTS = 16
_MAX_HEADER_BYTES = 16 * 1024
_CHUNK = 500


def file_problem(message: str, column: str = "file") -> APIProblem:
    """``400``, ``ownCode`` null, naming ``file`` or the column (D156)."""
    return APIProblem(400, None, f"Invalid batch charge file: {column} {message}.", [(column, message)])


async def receive_file(content_type: str | None, chunks: AsyncIterator[bytes]) -> IO[bytes]:
    """The ``file`` part of a multipart body, in a spooled temporary file positioned at its start (the
    caller closes it). ``400`` naming ``file`` for anything else: not multipart, malformed, no ``file``
    (:func:`paysdk.server.multipart.receive_file_part`)."""
    received = await receive_file_part(
        content_type, chunks, title="Invalid batch charge file", spool_bytes=SPOOL_BYTES
    )
    return received.spool


def read_file(spool: IO[bytes]) -> CsvScan | APIProblem:
    """The file validated (at most :data:`BATCH_MAX_ROWS` data rows), or the ``400`` of a file error
    (returned, so the route can authenticate first)."""
    try:
        return scan(spool, keep_rows=True, max_rows=BATCH_MAX_ROWS)  # type: ignore[arg-type]
    except CsvFileError as exc:
        return file_problem(exc.message, exc.column)


# ------------------------------------------------------------------------------------ charging


def _fingerprint(sub_uid: str, amount_cents: int, currency: str) -> str:
    return hashlib.sha256(f"{sub_uid}\0{amount_cents}\0{currency}".encode()).hexdigest()


def _refused(row: int, reference: str | None, sub_uid: str | None, error: str) -> BatchChargeRowResult:
    return BatchChargeRowResult(
        row=row, status="refused", reference=reference, subscription_id=sub_uid, error=error
    )


def _from_stored(row: ChargeRow, stored: BatchRowRow) -> BatchChargeRowResult:
    return BatchChargeRowResult(
        row=row.row,
        status="charged" if stored.status == "charged" else "declined",
        reference=row.reference,
        subscription_id=stored.sub_uid,
        charge_id=stored.charge_id,
        error=stored.error,
        replayed=True,
    )


def _chunks(values: list[str]) -> list[list[str]]:
    return [values[start : start + _CHUNK] for start in range(0, len(values), _CHUNK)]


def charge_rows(session: Session, now: datetime, principal: Principal, scanned: CsvScan) -> BatchChargeResult:
    """Charge the valid rows of ``scanned`` for ``principal``'s client in the caller's transaction; one
    result per data row, in row order (see the module docstring)."""
    client_id = principal.client_id
    results: dict[int, BatchChargeRowResult] = {}
    by_row: dict[int, list[str]] = {}
    for error in scanned.errors:
        by_row.setdefault(error.row, []).append(f"{error.column}: {error.message}")
    for row_number, messages in by_row.items():
        results[row_number] = _refused(row_number, None, None, "; ".join(messages))
    rows = scanned.charges or []
    stored: dict[str, BatchRowRow] = {}
    for chunk in _chunks([row.reference for row in rows]):
        for found in session.scalars(
            select(BatchRowRow).where(BatchRowRow.client_id == client_id, BatchRowRow.reference.in_(chunk))
        ):
            stored[found.reference] = found
    subs: dict[str, tuple[SubscriptionRow, PlanRow]] = {}
    for chunk in _chunks(sorted({row.subscription_id for row in rows})):
        for sub, plan in session.execute(
            select(SubscriptionRow, PlanRow)
            .join(PlanRow, PlanRow.id == SubscriptionRow.plan_id)
            .where(SubscriptionRow.client_id == client_id, SubscriptionRow.sub_uid.in_(chunk))
        ).all():
            subs[sub.sub_uid] = (sub, plan)
    # In reference order: concurrent uploads take the (client, reference) index entries in one order, so
    # two files holding the same references in other orders never deadlock (PostgreSQL).
    for row in sorted(rows, key=lambda item: item.reference):
        results[row.row] = _charge_row(session, now, client_id, row, stored, subs)
    ordered = [results[key] for key in sorted(results)]
    return BatchChargeResult(
        rows=len(ordered),
        charged=sum(1 for item in ordered if item.status == "charged"),
        declined=sum(1 for item in ordered if item.status == "declined"),
        refused=sum(1 for item in ordered if item.status == "refused"),
        replayed=sum(1 for item in ordered if item.replayed),
        results=ordered,
    )


def _charge_row(
    session: Session,
    now: datetime,
    client_id: int,
    row: ChargeRow,
    stored: dict[str, BatchRowRow],
    subs: dict[str, tuple[SubscriptionRow, PlanRow]],
) -> BatchChargeRowResult:
    found = subs.get(row.subscription_id)
    amount_cents = to_cents(row.amount)
    earlier = stored.get(row.reference)
    if earlier is not None:
        return _replay(row, earlier, found, amount_cents)
    if found is None:
        return _refused(row.row, row.reference, row.subscription_id, "subscriptionId: unknown subscription")
    sub, plan = found
    currency = row.currency or plan.currency
    if currency != plan.currency:
        return _refused(
            row.row, row.reference, sub.sub_uid, f"currency: must be the plan's currency {plan.currency}"
        )
    if sub.status != "active":
        return _refused(
            row.row, row.reference, sub.sub_uid, f"subscriptionId: the subscription is {sub.status}"
        )
    record = BatchRowRow(
        client_id=client_id,
        reference=row.reference,
        fingerprint=_fingerprint(sub.sub_uid, amount_cents, currency),
        sub_uid=sub.sub_uid,
        status="pending",
        created_at=now,
    )
    try:
        with session.begin_nested():  # a savepoint: a lost race on (client, reference) leaves the rest
            session.add(record)
            session.flush()
    except IntegrityError:
        winner = session.scalars(
            select(BatchRowRow).where(
                BatchRowRow.client_id == client_id, BatchRowRow.reference == row.reference
            )
        ).first()
        if winner is None:  # pragma: no cover - the unique index named it
            raise
        stored[row.reference] = winner
        return _replay(row, winner, found, amount_cents)
    charge = subscriptions.charge(
        session,
        sub,
        now=now,
        source="batch",
        amount_cents=amount_cents,
        currency=currency,
        attempt=1,
        reference=row.reference,
    )
    record.status = "charged" if charge.status == "approved" else "declined"
    record.charge_id = charge.charge_id
    record.error = None if charge.status == "approved" else f"declined: {charge.reason}"
    session.flush()
    stored[row.reference] = record
    return BatchChargeRowResult(
        row=row.row,
        status="charged" if record.status == "charged" else "declined",
        reference=row.reference,
        subscription_id=sub.sub_uid,
        charge_id=charge.charge_id,
        error=record.error,
    )


def _replay(
    row: ChargeRow, earlier: BatchRowRow, found: tuple[SubscriptionRow, PlanRow] | None, amount_cents: int
) -> BatchChargeRowResult:
    currency = row.currency or (found[1].currency if found is not None else None)
    same = (
        earlier.sub_uid == row.subscription_id
        and currency is not None
        and earlier.fingerprint == _fingerprint(row.subscription_id, amount_cents, currency)
    )
    if not same:
        return _refused(
            row.row,
            row.reference,
            row.subscription_id,
            "reference: already used by an earlier row with other values (subscription, amount or currency)",
        )
    return _from_stored(row, earlier)
