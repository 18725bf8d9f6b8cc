"""Storage of the inbound processor webhooks (D193): the processor secret, on the ``Base`` of :mod:`.db`.

The secret is kept like the wallet's server keys (D33): one per environment, generated on first use and
never emptied by ``/_sandbox/reset``, so a processor (or a test) configured with it keeps working across
resets. Which notifications and events were applied is recorded by the terminal family
(:class:`paysdk.server.terminal_tables.ProcessorEventRow`), in the transaction that applies them.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from paysdk.server.core_tables import Base

__all__ = ["ProcessorSecretRow"]


class ProcessorSecretRow(Base):
    """The secret the processor signs its calls with (D193): one per environment, kept across resets."""

    __tablename__ = "processor_secrets"

    environment: Mapped[str] = mapped_column(String(16), primary_key=True)
    secret: Mapped[str] = mapped_column(String(80))
    created_at: Mapped[datetime]
