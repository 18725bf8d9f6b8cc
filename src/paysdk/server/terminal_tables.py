"""Storage of terminal payments (spec 1, 4.4; D190-D194), on the ``Base`` of :mod:`.db`.

* Money is a scaled integer (``*_cents``, D18), never ``float``: ``amount_cents`` authorized,
  ``captured_cents`` captured (0 until then), ``refunded_cents`` the sum of the refunds.
* ``settlement_date`` and ``payout_date`` are the dates the rules of :mod:`paysdk.server.business_days`
  give once captured; the daily settlement job selects by ``(status, settlement_date)`` and
  ``(status, payout_date)``.
* Each client has one affiliation number (:class:`TerminalAffiliationRow`, D194): 10 digits, assigned at
  its first terminal payment (or by the control plane), unique.
* Each processor notification or event (and each transition the settlement job makes) is applied at most
  once: its id is a row of :class:`ProcessorEventRow` (D193), written in the transaction that applies it.
"""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import BigInteger, Date, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from paysdk.server.core_tables import Base

__all__ = [
    "TERMINAL_RESET_ORDER",
    "ProcessorEventRow",
    "TerminalAffiliationRow",
    "TerminalPaymentRow",
    "TerminalRefundRow",
]


class TerminalAffiliationRow(Base):
    """A client's affiliation number (D194)."""

    __tablename__ = "terminal_affiliations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"), unique=True)
    affiliation: Mapped[str] = mapped_column(String(10), unique=True)
    created_at: Mapped[datetime]


class TerminalPaymentRow(Base):
    """A terminal payment (D190, D191). ``card_first_digit`` decides the payout delay (D192); the number
    itself is never kept."""

    __tablename__ = "terminal_payments"
    __table_args__ = (
        Index("ix_terminal_payments_client", "client_id", "id"),
        Index("ix_terminal_payments_settle", "status", "settlement_date"),
        Index("ix_terminal_payments_payout", "status", "payout_date"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    payment_id: Mapped[str] = mapped_column(String(32), unique=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    affiliation: Mapped[str] = mapped_column(String(10), index=True)
    status: Mapped[str] = mapped_column(String(16))
    capture_mode: Mapped[str] = mapped_column(String(16))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    captured_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    refunded_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    currency: Mapped[str] = mapped_column(String(3))
    terminal_id: Mapped[str] = mapped_column(String(64))
    reference: Mapped[str | None] = mapped_column(String(64), nullable=True)
    external_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    card_last4: Mapped[str] = mapped_column(String(4))
    card_first_digit: Mapped[str] = mapped_column(String(1))
    decline_reason: Mapped[str | None] = mapped_column(String(40), nullable=True)
    authorized_at: Mapped[datetime | None] = mapped_column(nullable=True)
    capture_before: Mapped[datetime | None] = mapped_column(nullable=True)
    captured_at: Mapped[datetime | None] = mapped_column(nullable=True)
    settlement_date: Mapped[date | None] = mapped_column(Date, nullable=True)
    settled_at: Mapped[datetime | None] = mapped_column(nullable=True)
    payout_date: Mapped[date | None] = mapped_column(Date, nullable=True)
    paid_out_at: Mapped[datetime | None] = mapped_column(nullable=True)
    voided_at: Mapped[datetime | None] = mapped_column(nullable=True)
    lapsed_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class TerminalRefundRow(Base):
    """One refund of a settled terminal payment (D191); their sum is ``refunded_cents``."""

    __tablename__ = "terminal_refunds"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    refund_id: Mapped[str] = mapped_column(String(32), unique=True)
    payment_id: Mapped[int] = mapped_column(
        ForeignKey("terminal_payments.id", ondelete="CASCADE"), index=True
    )
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime]


class ProcessorEventRow(Base):
    """A processor notification or feed event (D193), or a settlement-job transition, that was applied
    or ignored: ``event_id`` is unique, so the same one never applies twice. ``outcome`` is ``applied`` or
    ``ignored`` (``reason`` says why)."""

    __tablename__ = "terminal_processor_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    event_id: Mapped[str] = mapped_column(String(128), unique=True)
    payment_id: Mapped[str] = mapped_column(String(32), index=True)
    type: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime]
    outcome: Mapped[str] = mapped_column(String(8))
    reason: Mapped[str | None] = mapped_column(String(255), nullable=True)
    created_at: Mapped[datetime]


#: ``/_sandbox/reset`` empties these, children first.
TERMINAL_RESET_ORDER = (ProcessorEventRow, TerminalRefundRow, TerminalPaymentRow, TerminalAffiliationRow)
