"""Storage of bulk cardholder uploads (spec 4.4, 6.5; decisions D185-D188, D210-D219): batches, the
uploaded file's bytes, the cardholders a batch created and the batch's progress events, on the ``Base``
of :mod:`.db`.

* :class:`CardholderBatchRow`: one upload. ``(partner_pk, file_sha256)`` is unique, so the same file sent
  again for the same partner, even concurrently, finds the first batch (D187). ``next_row`` is the
  processing cursor (the next file row to try): a job taken over by another process resumes there.
* :class:`CardholderFileChunkRow`: the file, in chunks of at most 1 MiB, so whichever server process
  runs the batch's job can read it (D188: no affinity).
* :class:`BatchCardholderRow`: a cardholder a batch created: ``(partner_pk, external_id)`` is unique
  (the row's identity, D186), so no ``externalId`` makes a second cardholder, even under concurrent
  uploads; the wallet user is :class:`~paysdk.server.wallet_tables.WalletUserRow` (``user_id``), enrolled
  as the partner's cardholder in :class:`~paysdk.server.backoffice_tables.PartnerEnrollmentRow`.
* :class:`CardholderEventRow`: the progress stream's events, ``(batch_id, seq)`` the key: ``seq`` is the
  event's ``id`` (D188), so any process streams them and ``Last-Event-ID`` resumes after one.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from paysdk.server.core_tables import Base

__all__ = [
    "CARDHOLDER_RESET_ORDER",
    "BatchCardholderRow",
    "CardholderBatchRow",
    "CardholderEventRow",
    "CardholderFileChunkRow",
]


class CardholderBatchRow(Base):
    """One uploaded file of a partner and its processing state (D187)."""

    __tablename__ = "cardholder_batches"
    __table_args__ = (UniqueConstraint("partner_pk", "file_sha256", name="uq_cardholder_batches_file"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    partner_pk: Mapped[int] = mapped_column(ForeignKey("backoffice_partners.id", ondelete="CASCADE"))
    #: The partner's ``partnerId`` as the answers show it.
    partner_id: Mapped[str] = mapped_column(String(64))
    file_name: Mapped[str] = mapped_column(String(255))
    file_sha256: Mapped[str] = mapped_column(String(64))
    #: ``csv`` or ``xlsx``.
    kind: Mapped[str] = mapped_column(String(8))
    size: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))
    #: Data rows (blank rows not counted), known at upload (D210).
    total: Mapped[int] = mapped_column(Integer)
    #: The last file row of the file (the header is row 1): the end of processing.
    last_row: Mapped[int] = mapped_column(Integer)
    #: The next file row to try (starts at 2).
    next_row: Mapped[int] = mapped_column(Integer)
    processed: Mapped[int] = mapped_column(Integer, default=0)
    created: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    cards_issued: Mapped[int] = mapped_column(Integer, default=0)
    #: The last event's ``seq`` (events are numbered 1, 2, 3 ... per batch).
    last_seq: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)


class CardholderFileChunkRow(Base):
    """Bytes ``[seq * chunk, ...)`` of a batch's file."""

    __tablename__ = "cardholder_file_chunks"

    batch_id: Mapped[str] = mapped_column(
        ForeignKey("cardholder_batches.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class BatchCardholderRow(Base):
    """A cardholder created for a partner by a batch row (D186, D187)."""

    __tablename__ = "cardholder_batch_members"
    __table_args__ = (
        UniqueConstraint("partner_pk", "external_id", name="uq_cardholder_batch_members_external"),
        # A batch's results are read a page at a time in row order (D450).
        Index("ix_cardholder_batch_members_batch_row", "batch_id", "row"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    partner_pk: Mapped[int] = mapped_column(ForeignKey("backoffice_partners.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[str] = mapped_column(String(40), index=True)
    batch_id: Mapped[str] = mapped_column(String(40))
    row: Mapped[int] = mapped_column(Integer)
    card_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    created_at: Mapped[datetime]


class CardholderEventRow(Base):
    """One event of a batch's progress stream (D188): ``seq`` its ``id``, ``event`` its name, ``data`` the
    JSON text sent as the event's data."""

    __tablename__ = "cardholder_events"

    batch_id: Mapped[str] = mapped_column(
        ForeignKey("cardholder_batches.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    event: Mapped[str] = mapped_column(String(16))
    data: Mapped[str] = mapped_column(Text)
    #: Wall-clock time the event was written (the bench measures delivery delay from it).
    written_at: Mapped[datetime]


#: The tables ``/_sandbox/reset`` empties, children first.
CARDHOLDER_RESET_ORDER: tuple[type[Base], ...] = (
    CardholderEventRow,
    BatchCardholderRow,
    CardholderFileChunkRow,
    CardholderBatchRow,
)
