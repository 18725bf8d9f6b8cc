"""Storage of reconciliation reports too long for one answer (D194, D241, D331), on the ``Base`` of
:mod:`.db`.

A report of more than one page (:data:`paysdk.contracts.reconciliation.PAGE_ENTRIES` entries) keeps
every page, its JSON compressed with zlib, so ``GET .../reports/{reportId}/pages/{page}`` answers it
without computing the report again. A client keeps its latest
:data:`paysdk.server.services.reconciliation.KEPT_REPORTS` reports; a report of one page is not stored
(the upload's answer is all of it).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from paysdk.server.core_tables import Base

__all__ = ["RECONCILIATION_RESET_ORDER", "ReconciliationPageRow"]


class ReconciliationPageRow(Base):
    """One page of a stored report (``page`` from 1 to ``pages``): the wire JSON of a
    :class:`~paysdk.contracts.reconciliation.ReconciliationReportPage`, zlib-compressed."""

    __tablename__ = "reconciliation_report_pages"
    __table_args__ = (Index("ix_reconciliation_report_pages_client", "client_id", "created_at"),)

    report_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    page: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"))
    pages: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime]
    data: Mapped[bytes] = mapped_column(LargeBinary)


RECONCILIATION_RESET_ORDER: tuple[type[Base], ...] = (ReconciliationPageRow,)
