"""The core's tables of the reference server: the declarative :class:`Base` every table of the server is
mapped on, and the rows of the core (clients, transactions, callbacks, jobs, the request log, faults,
idempotency, the clock). Each API family declares its own tables in its ``*_tables`` module.

Kept apart from :mod:`paysdk.server.db` (the engine, sessions, schema check and reset) so that a server
can start, check its schema and answer its readiness probe without importing SQLAlchemy's ORM or mapping
a table (:mod:`paysdk.server.boot`, issue 12, D310): the mapped classes are imported by the first module
that needs them.

Money is stored as scaled integers (``amount_cents``, D18); times as :class:`paysdk.server.db.UTCDateTime`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from paysdk.server.sqltypes import UTCDateTime

__all__ = [
    "CORE_TABLES",
    "Base",
    "CallbackAttemptRow",
    "CallbackEventRow",
    "ClientRow",
    "ClockRow",
    "FaultRow",
    "IdempotencyRow",
    "JobRow",
    "RequestLogRow",
    "TransactionRow",
]


class Base(DeclarativeBase):
    """Declarative base of every server table."""

    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime,
        dict[str, Any]: JSON,
        list[Any]: JSON,
    }


class ClientRow(Base):
    """A merchant client (application): its slug, limits, rails, tokens and callback registration.

    The merchant tokens are kept (the control plane shows them again, sandbox only) together with their
    SHA-256, which is what requests are looked up by. The hook key pair is kept only as
    SHA-256 of ``privateKey + ":" + publicKey`` (D14); the public key is kept for display.
    """

    __tablename__ = "clients"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    #: What the hosted checkout calls the merchant (D413); ``None``: the slug.
    display_name: Mapped[str | None] = mapped_column(String(80), nullable=True, default=None)
    amount_min_cents: Mapped[int] = mapped_column(BigInteger)
    amount_max_cents: Mapped[int] = mapped_column(BigInteger)
    channels: Mapped[list[Any]] = mapped_column(JSON)
    currencies: Mapped[list[Any]] = mapped_column(JSON)
    payment_methods: Mapped[list[Any]] = mapped_column(JSON)
    country: Mapped[str] = mapped_column(String(2))
    timezone: Mapped[str] = mapped_column(String(64))
    callback_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    callback_header_name: Mapped[str] = mapped_column(String(100))
    callback_header_value: Mapped[str] = mapped_column(String(500))
    three_ds: Mapped[bool] = mapped_column(Boolean, default=False)
    sandbox_token: Mapped[str] = mapped_column(String(64))
    sandbox_token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    production_token: Mapped[str] = mapped_column(String(64))
    production_token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    hook_public_key: Mapped[str] = mapped_column(String(64))
    hook_keys_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]


class TransactionRow(Base):
    """A payment-link or alternative-payment transaction (D8 statuses)."""

    __tablename__ = "transactions"
    __table_args__ = (
        Index("ix_transactions_client", "client_id"),
        # The scheduler's expiries: pending transactions by expire_at (see paysdk.server.scheduler).
        Index("ix_transactions_expiry", "status", "expire_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uid: Mapped[str] = mapped_column(String(64), unique=True)
    reference: Mapped[str] = mapped_column(String(32), unique=True)
    kind: Mapped[str] = mapped_column(String(32))
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    channel: Mapped[str] = mapped_column(String(8))
    user_id: Mapped[str] = mapped_column(String(255))
    external_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    custom_keys_json: Mapped[str | None] = mapped_column(Text, nullable=True)  # exact JSON (Decimals kept)
    processor: Mapped[str | None] = mapped_column(String(32), nullable=True)
    payment_reference: Mapped[str | None] = mapped_column(String(32), nullable=True)
    intent_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    challenge_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    outcome: Mapped[str | None] = mapped_column(String(40), nullable=True)
    outcome_message: Mapped[str | None] = mapped_column(String(255), nullable=True)
    transaction_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    payment_method_type: Mapped[str | None] = mapped_column(String(40), nullable=True)
    created_at: Mapped[datetime]
    expire_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class CallbackEventRow(Base):
    """One outbound event (a merchant callback: one terminal status of one transaction; later a
    subscription's ``subsCallback``). ``payload`` is the exact JSON; ``uid`` what it is about."""

    __tablename__ = "callback_events"

    event_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    #: ``transaction.status`` for the payment-link callback (``None`` in rows of older versions).
    event_type: Mapped[str | None] = mapped_column(String(64), nullable=True)
    uid: Mapped[str] = mapped_column(String(64), index=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(Text)
    header_name: Mapped[str] = mapped_column(String(100))
    header_value: Mapped[str] = mapped_column(String(500))
    payload: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default="pending")  # pending|delivered|gone|exhausted
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    first_attempt_at: Mapped[datetime | None] = mapped_column(nullable=True)


class CallbackAttemptRow(Base):
    """One HTTP delivery attempt of a callback event."""

    __tablename__ = "callback_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    event_id: Mapped[str] = mapped_column(ForeignKey("callback_events.event_id", ondelete="CASCADE"))
    uid: Mapped[str] = mapped_column(String(64), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    url: Mapped[str] = mapped_column(Text)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    at: Mapped[datetime]
    next_attempt_at: Mapped[datetime | None] = mapped_column(nullable=True)
    final: Mapped[bool] = mapped_column(Boolean, default=False)


class JobRow(Base):
    """A timed job (written only by :mod:`paysdk.server.jobs`): ``kind`` names its handler (``callback``:
    ref = event id; a family's kinds), ``due_at`` is virtual time, the lease wall-clock time."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_due", "status", "due_at", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))
    ref: Mapped[str] = mapped_column(String(64))
    due_at: Mapped[datetime]
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending|running|done|failed
    created_at: Mapped[datetime]
    #: Runs started (``None`` in rows of older versions: 0).
    attempts: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    #: The runner that holds (or last held) the job, and until when (wall clock) it holds it.
    lease_owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(nullable=True)
    #: A recurring job's interval in microseconds of virtual time.
    every_us: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class RequestLogRow(Base):
    """One public request, metadata only (no bodies), credentials masked before storage."""

    __tablename__ = "request_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    method: Mapped[str] = mapped_column(String(16))
    path: Mapped[str] = mapped_column(Text)
    status_code: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime]
    headers: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: The ``X-Request-Id`` of the answer (D65); ``None`` in rows written before it existed.
    request_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: Milliseconds from the request's arrival to the end of its answer; ``None`` in older rows.
    duration_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)


class FaultRow(Base):
    """An injected fault and how many uses remain."""

    __tablename__ = "faults"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(32))
    route: Mapped[str] = mapped_column(String(300))
    count: Mapped[int] = mapped_column(Integer)
    remaining: Mapped[int] = mapped_column(Integer)
    status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    latency_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    retry_after: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: ``stream_cut``: events sent before the stream's connection is dropped.
    after_events: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime]


class IdempotencyRow(Base):
    """A stored answer for an ``Idempotency-Key`` (D17).

    ``scope`` hashes the key, method, path and credentials.
    """

    __tablename__ = "idempotency"

    scope: Mapped[str] = mapped_column(String(64), primary_key=True)
    body_sha256: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16))  # in_progress|done
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    content_type: Mapped[str | None] = mapped_column(String(100), nullable=True)
    response_body: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]


class ClockRow(Base):
    """The virtual clock: microseconds ahead of the wall clock (single row, id 1)."""

    __tablename__ = "clock"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    offset_us: Mapped[int] = mapped_column(BigInteger, default=0)


#: The core's tables (clients, transactions, callbacks, jobs, the request log, faults, idempotency, the
#: clock), in deletion order for a reset (children first). Each API family registers its own tables
#: (:mod:`paysdk.server.families`); they are emptied before these.
CORE_TABLES: tuple[type[Base], ...] = (
    CallbackAttemptRow,
    CallbackEventRow,
    JobRow,
    TransactionRow,
    ClientRow,
    RequestLogRow,
    FaultRow,
    IdempotencyRow,
    ClockRow,
)
