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
  column. The rows are charged in bulk, as the renewals are (D171, D515): the charges through
  :func:`paysdk.server.services.subscriptions.charge_many` (``source="batch"``) and the rows stored by
  one bulk insert each, the few reads by chunks of references; the same results, charges and stored rows
  as charging the rows one by one (``tests/server/test_server_batch_charges_bulk.py``). A concurrent
  upload of the same reference loses a unique-index race inside a savepoint and answers the winner's
  result: never a second charge, never a 500.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, NamedTuple, cast

from sqlalchemy import Table, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.contracts.charges_csv import BATCH_MAX_ROWS, ChargeRow, CsvFileError, CsvScan, scan
from paysdk.contracts.subscriptions import BatchChargeResult, BatchChargeRowResult
from paysdk.server.db import to_cents
from paysdk.server.errors import APIProblem
from paysdk.server.hotpath import Statement
from paysdk.server.multipart import receive_file_part
from paysdk.server.services import subscriptions
from paysdk.server.services.subscriptions import ChargeRequest
from paysdk.server.services.test_cards import Renewal, SavedCard
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

_BATCH_ROWS: Table = BatchRowRow.__table__  # type: ignore[assignment]
_SUBS: Table = SubscriptionRow.__table__  # type: ignore[assignment]
_PLANS: Table = PlanRow.__table__  # type: ignore[assignment]

#: The file's rows stored, written as one bulk insert (a multi-row ``INSERT`` per chunk on SQLite, an
#: ``executemany`` elsewhere: :class:`paysdk.server.hotpath.Statement`), compiled once.
_INSERT_BATCH_ROWS = Statement(
    insert(_BATCH_ROWS),
    ("client_id", "reference", "fingerprint", "sub_uid", "status", "charge_id", "error", "created_at"),
)


class _Stored(NamedTuple):
    """A row of an earlier upload (plain columns, no ORM object)."""

    reference: str
    fingerprint: str
    sub_uid: str
    status: str
    charge_id: str | None
    error: str | None


class _Sub(NamedTuple):
    """A subscription a row names, with its plan's currency (plain columns, no ORM object)."""

    id: int
    sub_uid: str
    client_id: int
    status: str
    card_brand: str
    card_last4: str
    card_renewal: str
    card_decline_reason: str
    currency: str


@dataclass(frozen=True, slots=True)
class _Pending:
    """A row to charge: what it asks, its subscription and the currency charged."""

    row: ChargeRow
    sub: _Sub
    amount_cents: int
    currency: str


def _fingerprint(sub_uid: str, amount_cents: int, currency: str) -> str:
    return hashlib.sha256(f"{sub_uid}\0{amount_cents}\0{currency}".encode()).hexdigest()


def _refused(row: int, reference: str | None, sub_uid: str | None, error: str) -> BatchChargeRowResult:
    return BatchChargeRowResult(
        row=row, status="refused", reference=reference, subscription_id=sub_uid, error=error
    )


def _from_stored(row: ChargeRow, stored: _Stored) -> BatchChargeRowResult:
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


def _stored(session: Session, client_id: int, references: list[str]) -> dict[str, _Stored]:
    """The rows of earlier uploads among ``references``, by reference (one ``SELECT`` per chunk)."""
    found: dict[str, _Stored] = {}
    connection = session.connection()
    columns = [getattr(_BATCH_ROWS.c, name) for name in _Stored._fields]
    for chunk in _chunks(references):
        for item in connection.execute(
            select(*columns).where(_BATCH_ROWS.c.client_id == client_id, _BATCH_ROWS.c.reference.in_(chunk))
        ):
            found[item.reference] = _Stored._make(item)
    return found


def _subscriptions(session: Session, client_id: int, sub_uids: list[str]) -> dict[str, _Sub]:
    """The client's subscriptions among ``sub_uids`` with their plans' currencies, by ``sub_uid``."""
    found: dict[str, _Sub] = {}
    connection = session.connection()
    columns = [getattr(_SUBS.c, name) for name in _Sub._fields[:-1]]
    for chunk in _chunks(sub_uids):
        for item in connection.execute(
            select(*columns, _PLANS.c.currency)
            .join(_PLANS, _PLANS.c.id == _SUBS.c.plan_id)
            .where(_SUBS.c.client_id == client_id, _SUBS.c.sub_uid.in_(chunk))
        ):
            found[item.sub_uid] = _Sub._make(item)
    return found


def charge_rows(session: Session, now: datetime, principal: Principal, scanned: CsvScan) -> BatchChargeResult:
    """Charge the valid rows of ``scanned`` for ``principal``'s client in the caller's transaction; one
    result per data row, in row order (see the module docstring).

    In bulk (D515), as the renewals charge (D171): the earlier rows and the subscriptions are read by
    chunks of references, every row is answered (replayed, refused) or kept to charge, then the charges
    (:func:`paysdk.server.services.subscriptions.charge_many`) and the rows stored are written by one bulk
    insert each, in a savepoint. A reference another upload stored first (a concurrent upload: the
    unique index of ``(client, reference)``) rolls that savepoint back; the references are read again,
    those now stored answer the winner's result and the rest are written again."""
    client_id = principal.client_id
    results: dict[int, BatchChargeRowResult] = {}
    by_row: dict[int, list[str]] = {}
    for error in scanned.errors:
        by_row.setdefault(error.row, []).append(f"{error.column}: {error.message}")
    for row_number, messages in by_row.items():
        results[row_number] = _refused(row_number, None, None, "; ".join(messages))
    # In reference order: concurrent uploads take the (client, reference) index entries in one order, so
    # two files holding the same references in other orders never deadlock (PostgreSQL); the charges are
    # written in that order too, as one by one they were.
    rows = sorted(scanned.charges or [], key=lambda item: item.reference)
    stored = _stored(session, client_id, [row.reference for row in rows])
    subs = _subscriptions(session, client_id, sorted({row.subscription_id for row in rows}))
    pending: list[_Pending] = []
    for row in rows:
        answered = _answer(row, stored, subs)
        if isinstance(answered, _Pending):
            pending.append(answered)
        else:
            results[row.row] = answered
    while True:  # each lost race answers at least one row, or is raised: it ends
        try:
            with session.begin_nested():  # a savepoint: a lost race on (client, reference) leaves the rest
                results.update(_charge(session, now, client_id, pending))
            break
        except IntegrityError:
            # Another upload stored some of these references first: answer its results, write the rest.
            stored = _stored(session, client_id, [item.row.reference for item in pending])
            again: list[_Pending] = []
            for item in pending:
                answered = _answer(item.row, stored, subs)
                if isinstance(answered, _Pending):
                    again.append(answered)
                else:
                    results[item.row.row] = answered
            if len(again) == len(pending):  # no stored reference explains it: another failure
                raise
            pending = again
    ordered = [results[key] for key in sorted(results)]
    return BatchChargeResult(
        rows=len(ordered),
        charged=sum(1 for item in ordered if item.status == "charged"),
        declined=sum(1 for item in ordered if item.status == "declined"),
        refused=sum(1 for item in ordered if item.status == "refused"),
        replayed=sum(1 for item in ordered if item.replayed),
        results=ordered,
    )


def _answer(
    row: ChargeRow, stored: dict[str, _Stored], subs: dict[str, _Sub]
) -> BatchChargeRowResult | _Pending:
    """The result of ``row`` when it is answered without a charge (replayed or refused), else what to
    charge."""
    found = subs.get(row.subscription_id)
    amount_cents = to_cents(row.amount)
    earlier = stored.get(row.reference)
    if earlier is not None:
        return _replay(row, earlier, found, amount_cents)
    if found is None:
        return _refused(row.row, row.reference, row.subscription_id, "subscriptionId: unknown subscription")
    currency = row.currency or found.currency
    if currency != found.currency:
        return _refused(
            row.row, row.reference, found.sub_uid, f"currency: must be the plan's currency {found.currency}"
        )
    if found.status != "active":
        return _refused(
            row.row, row.reference, found.sub_uid, f"subscriptionId: the subscription is {found.status}"
        )
    return _Pending(row, found, amount_cents, currency)


def _charge(
    session: Session, now: datetime, client_id: int, pending: list[_Pending]
) -> dict[int, BatchChargeRowResult]:
    """Charge every pending row (one bulk insert of charges, one of rows stored); results by row."""
    if not pending:
        return {}
    requests = [
        ChargeRequest(
            subscription_id=item.sub.id,
            client_id=item.sub.client_id,
            card=SavedCard(
                item.sub.card_brand,
                item.sub.card_last4,
                cast(Renewal, item.sub.card_renewal),
                item.sub.card_decline_reason,
            ),
            source="batch",
            amount_cents=item.amount_cents,
            currency=item.currency,
            attempt=1,
            reference=item.row.reference,
        )
        for item in pending
    ]
    charges = subscriptions.charge_many(session, requests, now)
    records: list[dict[str, object]] = []
    results: dict[int, BatchChargeRowResult] = {}
    for item, charge in zip(pending, charges, strict=True):
        approved = charge.status == "approved"
        error = None if approved else f"declined: {charge.reason}"
        records.append(
            {
                "client_id": client_id,
                "reference": item.row.reference,
                "fingerprint": _fingerprint(item.sub.sub_uid, item.amount_cents, item.currency),
                "sub_uid": item.sub.sub_uid,
                "status": "charged" if approved else "declined",
                "charge_id": charge.charge_id,
                "error": error,
                "created_at": now,
            }
        )
        results[item.row.row] = BatchChargeRowResult(
            row=item.row.row,
            status="charged" if approved else "declined",
            reference=item.row.reference,
            subscription_id=item.sub.sub_uid,
            charge_id=charge.charge_id,
            error=error,
        )
    try:
        _INSERT_BATCH_ROWS.run_many(session.connection(), records)
    except sqlite3.IntegrityError as exc:  # the DBAPI's own error on SQLite: raised as SQLAlchemy's
        raise IntegrityError(str(_INSERT_BATCH_ROWS.statement), None, exc) from exc
    return results


def _replay(row: ChargeRow, earlier: _Stored, found: _Sub | None, amount_cents: int) -> BatchChargeRowResult:
    currency = row.currency or (found.currency if found is not None else None)
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
