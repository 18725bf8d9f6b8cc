"""Storage of merchant onboarding (spec 4.4; decisions D195, D250): leads and their documents, on the
``Base`` of :mod:`.db`.

A document's bytes are never stored: its name, content type, size and SHA-256 are (D250). The sandbox
needs to show that a document arrived intact, not to keep identity papers; nothing can leak what was
never kept, and 20 documents of 10 MiB per lead stay out of the database.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from paysdk.server.core_tables import Base

__all__ = ["ONBOARDING_RESET_ORDER", "LeadDocumentRow", "LeadRow"]


class LeadRow(Base):
    """A merchant lead submitted by a referring client (``referrer_id``); ``client_slug`` once approved."""

    __tablename__ = "onboarding_leads"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    lead_id: Mapped[str] = mapped_column(String(40), unique=True)
    referrer_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16))
    #: The body's ``business``, ``contact``, ``country``, ``channels``, ``currencies`` as validated.
    business: Mapped[dict[str, Any]] = mapped_column(JSON)
    contact: Mapped[dict[str, Any]] = mapped_column(JSON)
    country: Mapped[str] = mapped_column(String(2))
    channels: Mapped[list[Any]] = mapped_column(JSON)
    currencies: Mapped[list[Any]] = mapped_column(JSON)
    client_slug: Mapped[str | None] = mapped_column(String(64), nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime]
    decided_at: Mapped[datetime | None] = mapped_column(nullable=True)


class LeadDocumentRow(Base):
    """One document of a lead: never its bytes (D250). ``seq`` numbers the lead's documents from 1; the
    unique ``(lead, seq)`` keeps two concurrent uploads from both taking the 20th place."""

    __tablename__ = "onboarding_documents"
    __table_args__ = (UniqueConstraint("lead_row_id", "seq", name="ux_onboarding_documents_seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    document_id: Mapped[str] = mapped_column(String(40), unique=True)
    lead_row_id: Mapped[int] = mapped_column(
        ForeignKey("onboarding_leads.id", ondelete="CASCADE"), index=True
    )
    seq: Mapped[int] = mapped_column(Integer)
    file_name: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(32))
    size: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]


#: The tables ``/_sandbox/reset`` empties, children first.
ONBOARDING_RESET_ORDER: tuple[type[Base], ...] = (LeadDocumentRow, LeadRow)
