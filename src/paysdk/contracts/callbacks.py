"""The merchant generic callback (spec 2.4, 5.4, 6)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from pydantic import Field

from paysdk.contracts.common import DecimalNumber, WireModel

__all__ = ["CALLBACK_CREATED_AT_FORMAT", "DEFAULT_TIMEZONE", "CallbackPayload", "format_created_at"]

#: ``createdAt`` is day/month/year then time, in the client's timezone (decision D6).
CALLBACK_CREATED_AT_FORMAT = "%d/%m/%Y %H:%M:%S"
#: The spec's default client timezone (8).
DEFAULT_TIMEZONE = "America/Guatemala"


class CallbackPayload(WireModel):
    """What the service POSTs to the merchant's callback URL when a transaction reaches a terminal status.

    ``event_id`` is the deduplication key (decision D5): stable across every delivery attempt of one event.
    ``created_at`` stays the wire string; use :meth:`created_at_datetime` for an aware datetime.
    """

    event_id: str = Field(min_length=1, max_length=200)
    reference: str
    uid: str
    country: str
    currency: str
    channel: str
    status: str
    amount: DecimalNumber
    external_id: str | None = None
    created_at: str
    transaction_id: str
    payment_method_type: str | None = None

    def created_at_datetime(self, timezone: str = DEFAULT_TIMEZONE) -> datetime:
        """Parse ``createdAt`` (``DD/MM/YYYY HH:MM:SS``) as a time in ``timezone`` (the client's)."""
        naive = datetime.strptime(self.created_at, CALLBACK_CREATED_AT_FORMAT)
        return naive.replace(tzinfo=ZoneInfo(timezone))


def format_created_at(moment: datetime, timezone: str = DEFAULT_TIMEZONE) -> str:
    """Format an aware datetime as the callback's ``createdAt`` in ``timezone``."""
    return moment.astimezone(ZoneInfo(timezone)).strftime(CALLBACK_CREATED_AT_FORMAT)
