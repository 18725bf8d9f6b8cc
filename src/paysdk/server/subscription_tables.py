"""Storage of subscriptions (spec 2.6, 3.1, 3.3, 4.2; decisions D138-D165), on the ``Base`` of :mod:`.db`.

Decisions kept here:

* Money is a scaled integer (``amount_cents``, D18), never ``float``.
* Dates of the schedule (``anchor_date``, ``next_renewal_date``, ``ends_on``) are calendar dates in the
  client's timezone; ``due_at`` is the UTC instant the next attempt is due (the local midnight of the
  renewal date, or a retry time), which is what the charge process selects by (``ix_subscriptions_due``).
* **At most one successful renewal charge per period, enforced by the database**: a partial unique index
  on ``(subscription_id, period)`` of approved renewal charges (``ux_subscription_charges_paid``), and one
  on ``(subscription_id, period, attempt)`` of renewal charges; a charge and the subscription's advance
  are written in one transaction, conditional on the period and attempts it read.
* A batch CSV row's identity is ``(client, reference)`` (``subscription_batch_rows``, D155/D157): a row
  seen before answers its stored result, never a second charge.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Date,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    UniqueConstraint,
    event,
    text,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from paysdk.server.core_tables import Base

__all__ = [
    "SUBSCRIPTION_RESET_ORDER",
    "BatchRowRow",
    "PlanRow",
    "SubscriptionChargeRow",
    "SubscriptionRow",
    "VerificationRow",
]


class PlanRow(Base):
    """A plan of a client (created on the control plane only, D141); never changed once created."""

    __tablename__ = "subscription_plans"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    plan_id: Mapped[str] = mapped_column(String(64), unique=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    interval: Mapped[str] = mapped_column(String(8))
    interval_count: Mapped[int] = mapped_column(Integer)
    term: Mapped[int | None] = mapped_column(Integer, nullable=True)
    daily_attempts: Mapped[int] = mapped_column(Integer)
    interval_attempt_hours: Mapped[int] = mapped_column(Integer)
    grace_days: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime]


class SubscriptionRow(Base):
    """A subscription (D142). ``period`` is the index of the next period to charge (0: the anchor date);
    ``attempts`` the failed attempts of that period. The default method is kept as a processor keeps a
    saved card, never its number (D351): ``card_brand`` and ``card_last4`` (shown), ``card_token`` (the
    payment method's random id) and what the sandbox test card does when charged off-session
    (``card_renewal``, ``card_decline_reason``: :class:`paysdk.server.services.test_cards.SavedCard`)."""

    __tablename__ = "subscriptions"
    __table_args__ = (Index("ix_subscriptions_due", "status", "due_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    sub_uid: Mapped[str] = mapped_column(String(40), unique=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"), index=True)
    plan_id: Mapped[int] = mapped_column(ForeignKey("subscription_plans.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16))
    email: Mapped[str] = mapped_column(String(254))
    card_token: Mapped[str] = mapped_column(String(40))
    card_brand: Mapped[str] = mapped_column(String(16))
    card_last4: Mapped[str] = mapped_column(String(4))
    card_renewal: Mapped[str] = mapped_column(String(48))
    card_decline_reason: Mapped[str] = mapped_column(String(40))
    anchor_date: Mapped[date] = mapped_column(Date)
    period: Mapped[int] = mapped_column(Integer)
    next_renewal_date: Mapped[date] = mapped_column(Date)
    due_at: Mapped[datetime]
    attempts: Mapped[int] = mapped_column(Integer)
    ends_on: Mapped[date | None] = mapped_column(Date, nullable=True)
    verification_uid: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    cancelled_at: Mapped[datetime | None] = mapped_column(nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(nullable=True)


#: The rows of the two partial unique indexes of ``subscription_charges`` (see the module's docstring).
_PAID_WHERE = "source = 'renewal' AND status = 'approved'"
_ATTEMPT_WHERE = "source = 'renewal'"


class SubscriptionChargeRow(Base):
    """One charge of a subscription's default method: a renewal attempt or a batch CSV row (D150)."""

    __tablename__ = "subscription_charges"
    __table_args__ = (
        Index("ix_subscription_charges_sub", "subscription_id", "id"),
        # At most one approved renewal charge per period, whatever runs (D145).
        Index(
            "ux_subscription_charges_paid",
            "subscription_id",
            "period",
            unique=True,
            sqlite_where=text(_PAID_WHERE),
        ),
        # One row per attempt of a period.
        Index(
            "ux_subscription_charges_attempt",
            "subscription_id",
            "period",
            "attempt",
            unique=True,
            sqlite_where=text(_ATTEMPT_WHERE),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    charge_id: Mapped[str] = mapped_column(String(40), unique=True)
    subscription_id: Mapped[int] = mapped_column(ForeignKey("subscriptions.id", ondelete="CASCADE"))
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(String(8))
    period: Mapped[int | None] = mapped_column(Integer, nullable=True)
    attempt: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(40))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    renewal_date: Mapped[date | None] = mapped_column(Date, nullable=True)
    reference: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime]


class VerificationRow(Base):
    """What a verify-card transaction creates once the card verifies (D140): the reserved ``sub_uid`` (or
    none when ``shouldCreateSubscription`` was false), the plan, the notification email and what is kept
    of the card (as on the subscription, never its number, D351)."""

    __tablename__ = "subscription_verifications"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    transaction_uid: Mapped[str] = mapped_column(String(64), unique=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    sub_uid: Mapped[str | None] = mapped_column(String(40), nullable=True, unique=True)
    plan_id: Mapped[int | None] = mapped_column(
        ForeignKey("subscription_plans.id", ondelete="CASCADE"), nullable=True
    )
    email: Mapped[str | None] = mapped_column(String(254), nullable=True)
    #: The card given on the checkout, as a saved card (kept from the card form to a 3-D Secure
    #: challenge's answer): the subscription's default method once the card verifies. ``None`` until a
    #: card is given.
    card_brand: Mapped[str | None] = mapped_column(String(16), nullable=True)
    card_last4: Mapped[str | None] = mapped_column(String(4), nullable=True)
    card_renewal: Mapped[str | None] = mapped_column(String(48), nullable=True)
    card_decline_reason: Mapped[str | None] = mapped_column(String(40), nullable=True)
    created_at: Mapped[datetime]


class BatchRowRow(Base):
    """A batch CSV row already processed (D157): its identity ``(client, reference)``, what it asked
    (``fingerprint``: subscription, amount, currency) and its result, answered again on a re-upload."""

    __tablename__ = "subscription_batch_rows"
    __table_args__ = (UniqueConstraint("client_id", "reference", name="ux_subscription_batch_rows_ref"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    reference: Mapped[str] = mapped_column(String(64))
    fingerprint: Mapped[str] = mapped_column(String(64))
    sub_uid: Mapped[str] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(16))
    charge_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    error: Mapped[str | None] = mapped_column(String(255), nullable=True)
    created_at: Mapped[datetime]


#: The order ``/_sandbox/reset`` empties them in (children first).
SUBSCRIPTION_RESET_ORDER: tuple[type[Base], ...] = (
    BatchRowRow,
    SubscriptionChargeRow,
    VerificationRow,
    SubscriptionRow,
    PlanRow,
)


def _partial_indexes_on_postgresql(target: Table, connection: Connection, **kw: Any) -> None:
    """Give the partial indexes their PostgreSQL ``WHERE`` before the table is created on PostgreSQL.

    Declared on the ``Index`` (``postgresql_where=``), the option would import SQLAlchemy's PostgreSQL
    dialect with this module, i.e. at every start of a server on SQLite (~20 ms of CPU, issue 12, D307);
    the tables are only ever created by ``Base.metadata.create_all`` (``Database.create_schema``), which
    runs this first.
    """
    if connection.dialect.name != "postgresql":
        return
    wheres = {"ux_subscription_charges_paid": _PAID_WHERE, "ux_subscription_charges_attempt": _ATTEMPT_WHERE}
    for index in target.indexes:
        where = wheres.get(str(index.name))
        if where is not None:
            index.dialect_kwargs["postgresql_where"] = text(where)


event.listen(SubscriptionChargeRow.__table__, "before_create", _partial_indexes_on_postgresql)
