"""Storage of the backoffice (spec 4.4, 5.3.5-5.3.7; decisions D183-D187, D200-D209): operators,
partners and the partners' cardholders, on the ``Base`` of :mod:`.db`. Backoffice sessions reuse the
wallet's session and refresh-token tables (:mod:`.wallet_tables`) with their own token kinds
(``backoffice_app``, ``backoffice_user``; D184).

* An operator's password is kept as a scrypt hash (D185), like a wallet user's.
* A partner has a surrogate integer key (``id``, what other tables reference) and its ``partner_id``,
  unique per merchant (D200).
* A cardholder of a partner is a wallet user of the partner's merchant (D185): the cardholders an upload
  created are rows of :class:`~paysdk.server.cardholder_tables.PartnerCardholderRow`; an existing wallet
  user made a partner's cardholder through the control plane is one :class:`PartnerEnrollmentRow`
  (D200; a user belongs to at most one partner that way).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from paysdk.server.core_tables import Base

__all__ = ["BACKOFFICE_RESET_ORDER", "OperatorRow", "PartnerEnrollmentRow", "PartnerRow"]


class OperatorRow(Base):
    """A backoffice user (operator) of a merchant (D185): logs in with email and password."""

    __tablename__ = "backoffice_operators"
    __table_args__ = (UniqueConstraint("client_id", "email", name="uq_backoffice_operators_email"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    merchant: Mapped[str] = mapped_column(String(64))
    email: Mapped[str] = mapped_column(String(255))
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime]


class PartnerRow(Base):
    """A partner of a merchant (D185): a company whose cardholders are managed together."""

    __tablename__ = "backoffice_partners"
    __table_args__ = (UniqueConstraint("client_id", "partner_id", name="uq_backoffice_partners_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    merchant: Mapped[str] = mapped_column(String(64))
    partner_id: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime]


class PartnerEnrollmentRow(Base):
    """A wallet user made a partner's cardholder through the control plane (D185, D200)."""

    __tablename__ = "backoffice_partner_cardholders"
    __table_args__ = (Index("ix_backoffice_partner_cardholders_partner", "partner_pk"),)

    user_id: Mapped[str] = mapped_column(ForeignKey("wallet_users.id", ondelete="CASCADE"), primary_key=True)
    partner_pk: Mapped[int] = mapped_column(ForeignKey("backoffice_partners.id", ondelete="CASCADE"))
    created_at: Mapped[datetime]


#: The tables ``/_sandbox/reset`` empties, children first.
BACKOFFICE_RESET_ORDER: tuple[type[Base], ...] = (PartnerEnrollmentRow, PartnerRow, OperatorRow)
