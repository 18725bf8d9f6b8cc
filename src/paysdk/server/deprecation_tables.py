"""Storage of deprecation marks (D196, D254): one row per marked public operation, emptied by
``/_sandbox/reset``, shared by every server process over the database."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from paysdk.server.core_tables import Base

__all__ = ["DeprecationRow"]


class DeprecationRow(Base):
    """A public operation marked deprecated: ``operation`` is ``"METHOD /path"`` as in ``/openapi.json``."""

    __tablename__ = "deprecations"

    operation: Mapped[str] = mapped_column(String(300), primary_key=True)
    deprecated_at: Mapped[datetime]
    sunset: Mapped[datetime | None] = mapped_column(nullable=True)
    link: Mapped[str | None] = mapped_column(String(500), nullable=True)
    created_at: Mapped[datetime]
