"""What payment links and alternative payments share: ids, lookup, the terminal transition, the view.

Decisions: uids are version-7 UUID strings and ``reference`` is ``PL-``/``AP-``/``CV-`` + 16 uppercase base32
characters, both time-ordered (so inserts append to their indexes), and
``transactionId`` is ``txn_`` + 24 hex (D22). Statuses follow D8: ``pending`` moves once to one of
``approved``, ``declined``, ``expired``, ``dismissed``; the move is a conditional
``UPDATE ... WHERE status = 'pending'`` so two concurrent requests can never both finish a transaction,
and the merchant callback event is written in the same database transaction (at-least-once, D16).
"""

from __future__ import annotations

import base64
import re
import secrets
import time
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from paysdk import _json
from paysdk.contracts.alternative_payments import AlternativePaymentCreate
from paysdk.contracts.payment_links import PaymentLinkCreate, TransactionStatus
from paysdk.contracts.sandbox import SandboxTransaction
from paysdk.server.clock import Clock
from paysdk.server.context import virtual_now
from paysdk.server.core_tables import ClientRow, TransactionRow
from paysdk.server.db import from_cents
from paysdk.server.errors import APIProblem
from paysdk.server.hotpath import Statement, deferring
from paysdk.server.services.common import check_against_client

__all__ = [
    "CARD_KINDS",
    "KIND_ALTERNATIVE",
    "KIND_LINK",
    "KIND_VERIFICATION",
    "PREFIX_VERIFICATION",
    "create_pending",
    "expire_if_due",
    "finish",
    "insert_pending",
    "load",
    "new_reference",
    "new_transaction_id",
    "new_uid",
    "recent",
    "sandbox_view",
    "valid_uid",
    "virtual_now",
]

KIND_LINK = "payment_link"
KIND_ALTERNATIVE = "alternative_payment"
#: A card verification of ``POST /v1/subscriptions/verify-card`` (D140): amount ``0.00``, paid on the
#: hosted checkout's card form like a link; reference ``CV-...``.
KIND_VERIFICATION = "card_verification"
PREFIX_VERIFICATION = "CV-"
#: The kinds paid with a card on the hosted checkout (and ``/_sandbox/transactions/{uid}/pay``).
CARD_KINDS = (KIND_LINK, KIND_VERIFICATION)
_UID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MS_MASK = (1 << 48) - 1
_REF_MS_MASK = (1 << 45) - 1
_RAND_B_MASK = (1 << 62) - 1
#: RFC 4648 base32 digits -> the same characters in ASCII order (value 0 is "2", value 31 is "Z").
_SORTABLE_BASE32 = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"234567ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def new_uid() -> str:
    """A transaction uid: a version-7 UUID (RFC 9562; D22): 48 bits of Unix time in milliseconds, then
    74 random bits. Time-ordered, so a new transaction is written at the end of the uid index instead of
    on a random page of it."""
    random = secrets.randbits(74)
    value = (
        (time.time_ns() // 1_000_000 & _MS_MASK) << 80
        | 0x7 << 76  # version 7
        | (random >> 62) << 64
        | 0b10 << 62  # the RFC 9562 variant
        | random & _RAND_B_MASK
    )
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def new_reference(prefix: str) -> str:
    """``PL-`` or ``AP-`` + 16 base32 characters (D22): 45 bits of Unix time in milliseconds, then 35
    random bits, written with the digits ``2-7A-Z`` in that (ASCII) order, so references sort by creation
    time and a batch of new ones is written to the end of the reference index instead of one random page
    of it each."""
    value = (time.time_ns() // 1_000_000 & _REF_MS_MASK) << 35 | secrets.randbits(35)
    return prefix + base64.b32encode(value.to_bytes(10, "big")).translate(_SORTABLE_BASE32).decode("ascii")


def new_transaction_id() -> str:
    """``txn_`` + 24 hex (D22)."""
    return "txn_" + secrets.token_hex(12)


def valid_uid(uid: str) -> bool:
    """Whether ``uid`` could be a uid at all (anything else is a 404 without a database query)."""
    return bool(_UID.match(uid))


def load(
    session: Session,
    uid: str,
    *,
    kind: str | tuple[str, ...] | None = None,
    client: ClientRow | None = None,
    lock: bool = False,
) -> tuple[TransactionRow, ClientRow]:
    """The transaction and its client; ``404`` (D21) when unknown, of another kind (``kind``: one kind or
    a tuple of them) or another client."""
    if not valid_uid(uid):
        raise APIProblem.not_found()
    statement = select(TransactionRow).where(TransactionRow.uid == uid)
    if lock:
        statement = statement.with_for_update()
    row = session.scalars(statement).first()
    kinds = (kind,) if isinstance(kind, str) else kind
    if row is None or (kinds is not None and row.kind not in kinds):
        raise APIProblem.not_found()
    if client is not None and row.client_id != client.id:
        raise APIProblem.not_found()
    owner = client if client is not None else session.get(ClientRow, row.client_id)
    assert owner is not None
    return row, owner


_TRANSACTIONS = cast(Table, TransactionRow.__table__)
_REFERENCE_TAKEN = Statement(
    select(_TRANSACTIONS.c.id).where(_TRANSACTIONS.c.reference == bindparam("reference"))
)
_NEW_COLUMNS = (
    "uid",
    "reference",
    "status",
    "kind",
    "client_id",
    "amount_cents",
    "currency",
    "channel",
    "user_id",
    "external_id",
    "custom_keys_json",
    "created_at",
    "expire_at",
    "updated_at",
)
_INSERT_TRANSACTION = Statement(insert(_TRANSACTIONS), _NEW_COLUMNS)


def insert_pending(connection: Connection, prefix: str, values: dict[str, Any]) -> tuple[str, str]:
    """Insert a ``pending`` transaction (Core) with a fresh uid and a ``prefix`` reference.

    ``values`` holds every other column. Returns ``(uid, reference)``. In a group commit's fast way the
    insert is collected (:meth:`Statement.insert`) and the unique constraint stands in for the look at
    the reference: a reference drawn twice fails the batch's inserts, and the calls run again one by one,
    each looking as here.
    """
    uid = new_uid()
    reference = new_reference(prefix)
    while not deferring(connection) and _REFERENCE_TAKEN.rows(connection, {"reference": reference}):
        reference = new_reference(prefix)  # pragma: no cover - 35 random bits per millisecond
    _INSERT_TRANSACTION.insert(
        connection, {"uid": uid, "reference": reference, "status": TransactionStatus.PENDING, **values}
    )
    return uid, reference


def create_pending(
    connection: Connection,
    clock: Clock,
    client: ClientRow,
    body: PaymentLinkCreate | AlternativePaymentCreate,
    *,
    kind: str,
    prefix: str,
    lifetime: timedelta,
) -> tuple[str, str, datetime]:
    """A new ``pending`` transaction of ``client``: the body checked against the client (slug, channel,
    currency, amount range: decision D4), then inserted (Core, group-commit aware). Its ``expire_at``
    is its expiry: the scheduler expires pending transactions by it (no job row; see
    :mod:`paysdk.server.scheduler`). Returns ``(uid, reference, expire_at)``."""
    checked = check_against_client(
        client,
        slug=body.client,
        channel=body.channel.value,
        currency=body.currency.value if body.currency is not None else None,
        amount=body.amount,
    )
    now = virtual_now(connection, clock)
    expire_at = now + lifetime
    custom_keys = _json.dumps(body.custom_keys).decode("utf-8") if body.custom_keys is not None else None
    uid, reference = insert_pending(
        connection,
        prefix,
        {
            "kind": kind,
            "client_id": client.id,
            "amount_cents": checked.amount_cents,
            "currency": checked.currency,
            "channel": body.channel.value,
            "user_id": body.user_id,
            "external_id": body.external_id,
            "custom_keys_json": custom_keys,
            "created_at": now,
            "expire_at": expire_at,
            "updated_at": now,
        },
    )
    return uid, reference, expire_at


def finish(
    session: Session,
    tx: TransactionRow,
    client: ClientRow,
    status: str,
    *,
    now: datetime,
    outcome: str,
    message: str,
    payment_method_type: str | None = None,
) -> bool:
    """Move ``tx`` from ``pending`` to the terminal ``status`` and queue the merchant callback.

    Returns ``False`` (and changes nothing) when the transaction was no longer pending.
    """
    from paysdk.server.services import callbacks  # local import: callbacks imports this module

    assert status in TransactionStatus.TERMINAL
    transaction_id = new_transaction_id()
    result = session.execute(
        update(TransactionRow)
        .where(TransactionRow.id == tx.id, TransactionRow.status == TransactionStatus.PENDING)
        .values(
            status=status,
            outcome=outcome,
            outcome_message=message[:255],
            transaction_id=transaction_id,
            payment_method_type=payment_method_type,
            challenge_id=None,
            updated_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    if getattr(result, "rowcount", 0) != 1:
        session.refresh(tx)
        return False
    session.refresh(tx)
    callbacks.enqueue(session, tx, client, now=now)
    return True


def expire_if_due(session: Session, tx: TransactionRow, client: ClientRow, now: datetime) -> None:
    """Expire a pending transaction whose ``expire_at`` has passed (the job may not have run yet)."""
    if tx.status == TransactionStatus.PENDING and now >= tx.expire_at:
        finish(session, tx, client, TransactionStatus.EXPIRED, now=now, outcome="expired", message="Expired.")


def custom_keys(tx: TransactionRow) -> Any:
    """The stored ``customKeys`` (exact JSON) or ``None``."""
    return _json.loads(tx.custom_keys_json) if tx.custom_keys_json is not None else None


def sandbox_view(tx: TransactionRow, client: ClientRow) -> SandboxTransaction:
    """The control plane's view of a transaction."""
    extra: dict[str, Any] = {
        "outcome": tx.outcome,
        "outcomeMessage": tx.outcome_message,
        "transactionId": tx.transaction_id,
        "paymentMethodType": tx.payment_method_type,
        "paymentReference": tx.payment_reference,
        "customKeys": custom_keys(tx),
    }
    return SandboxTransaction.model_validate(
        {
            "uid": tx.uid,
            "reference": tx.reference,
            "kind": tx.kind,
            "client": client.slug,
            "status": tx.status,
            "amount": from_cents(tx.amount_cents),
            "currency": tx.currency,
            "channel": tx.channel,
            "userId": tx.user_id,
            "externalId": tx.external_id,
            "processor": tx.processor,
            "createdAt": tx.created_at,
            "expireAt": tx.expire_at,
            "updatedAt": tx.updated_at,
            **{key: value for key, value in extra.items() if value is not None},
        }
    )


def recent(session: Session, limit: int = 200, client: str | None = None) -> list[SandboxTransaction]:
    """The newest transactions first (at most ``limit``; ``client``: of that slug only), as
    ``GET /_sandbox/transactions/{uid}`` answers each (the browser console, D723)."""
    statement = (
        select(TransactionRow, ClientRow)
        .join(ClientRow, ClientRow.id == TransactionRow.client_id)
        .order_by(TransactionRow.created_at.desc(), TransactionRow.uid)
        .limit(limit)
    )
    if client is not None:
        statement = statement.where(ClientRow.slug == client)
    return [sandbox_view(tx, owner) for tx, owner in session.execute(statement).all()]
