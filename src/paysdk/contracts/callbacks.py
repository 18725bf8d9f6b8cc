"""Every kind of callback the service POSTs to the merchant's callback URL (spec 2.4, 5.4, 6; D340).

One place for the SDK's receivers and the reference server, which builds each payload from these models:

* :class:`PaymentCallback` (the merchant generic callback of spec 2.4): a payment-link or alternative
  payment transaction reached a terminal status (D8). It names no ``event``.
* :class:`SubscriptionCallback` (the ``subsCallback``, D148): the scheduled charge process suspended a
  subscription (``"event": "subscriptionSuspended"``).
* :class:`UnknownCallback`: any other body, a kind this SDK version does not know, handed over raw.

:func:`callback_kind` tells them apart from the payload's own fields: ``event``, when present, names the
kind; a body without it is the payment callback when it carries ``transactionId`` or ``uid``. Every
callback has a top-level ``eventId``, its deduplication key (D5). ``CallbackPayload`` is the payment
callback's name before issue 20, kept as an alias.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, ClassVar, Literal, TypeAlias
from zoneinfo import ZoneInfo

from pydantic import Field

from paysdk.contracts.common import DecimalNumber, WireModel
from paysdk.contracts.subscriptions import SubscriptionStatus

__all__ = [
    "CALLBACK_CREATED_AT_FORMAT",
    "DEFAULT_TIMEZONE",
    "MAX_EVENT_ID_LENGTH",
    "PAYMENT_KIND",
    "Callback",
    "CallbackPayload",
    "KnownCallback",
    "PaymentCallback",
    "SubscriptionCallback",
    "UnknownCallback",
    "callback_kind",
    "callback_model",
    "format_created_at",
]

#: ``createdAt`` is day/month/year then time, in the client's timezone (decision D6).
CALLBACK_CREATED_AT_FORMAT = "%d/%m/%Y %H:%M:%S"
#: The spec's default client timezone (8).
DEFAULT_TIMEZONE = "America/Guatemala"
#: The longest ``eventId`` receivers deduplicate on (the dedup stores' key bound).
MAX_EVENT_ID_LENGTH = 200
#: The kind of the payment callback, which names no ``event`` (:func:`callback_kind`).
PAYMENT_KIND = "payment"


class PaymentCallback(WireModel):
    """What the service POSTs to the merchant's callback URL when a transaction reaches a terminal status.

    ``event_id`` is the deduplication key (decision D5): stable across every delivery attempt of one event.
    ``created_at`` stays the wire string; use :meth:`created_at_datetime` for an aware datetime.
    """

    #: The server's event type prefix: ``transaction.<status>`` (D8).
    EVENT_TYPE_PREFIX: ClassVar[str] = "transaction."

    event_id: str = Field(min_length=1, max_length=MAX_EVENT_ID_LENGTH)
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

    @property
    def kind(self) -> str:
        """``"payment"`` (:data:`PAYMENT_KIND`)."""
        return PAYMENT_KIND

    @property
    def event_type(self) -> str:
        """The server's event type, ``transaction.<status>``."""
        return self.EVENT_TYPE_PREFIX + self.status

    def to_body(self) -> dict[str, Any]:
        """The JSON body as the service sends it (:meth:`to_wire`: ``amount`` an exact number, unset
        optionals left out)."""
        return self.to_wire()

    def created_at_datetime(self, timezone: str = DEFAULT_TIMEZONE) -> datetime:
        """Parse ``createdAt`` (``DD/MM/YYYY HH:MM:SS``) as a time in ``timezone`` (the client's)."""
        naive = datetime.strptime(self.created_at, CALLBACK_CREATED_AT_FORMAT)
        return naive.replace(tzinfo=ZoneInfo(timezone))

    def occurred_at_datetime(self, timezone: str = DEFAULT_TIMEZONE) -> datetime:
        """When it happened, as an aware datetime: :meth:`created_at_datetime` (same for every kind)."""
        return self.created_at_datetime(timezone)


#: The payment callback's name before issue 20 (D340).
CallbackPayload = PaymentCallback


class SubscriptionCallback(WireModel):
    """The ``subsCallback`` the scheduled charge process sends when a subscription is suspended (D148).

    ``event`` names the kind; ``occurred_at`` is an aware datetime (UTC on the wire).
    """

    #: The server's event type of each ``event`` value.
    EVENT_TYPES: ClassVar[dict[str, str]] = {"subscriptionSuspended": "subscription.suspended"}

    event_id: str = Field(min_length=1, max_length=MAX_EVENT_ID_LENGTH)
    event: Literal["subscriptionSuspended"]
    sub_uid: str
    status: SubscriptionStatus
    plan_id: str
    client: str
    attempts: int
    renewal_date: date
    last_charge_id: str | None = None
    reason: str
    occurred_at: datetime

    @property
    def kind(self) -> str:
        """The ``event`` value, e.g. ``"subscriptionSuspended"``."""
        return self.event

    @property
    def event_type(self) -> str:
        """The server's event type, e.g. ``subscription.suspended``."""
        return self.EVENT_TYPES[self.event]

    def to_body(self) -> dict[str, Any]:
        """The JSON body as the service sends it: dates as ISO strings, ``lastChargeId`` always present."""
        return self.model_dump(by_alias=True, mode="json")

    def occurred_at_datetime(self, timezone: str = DEFAULT_TIMEZONE) -> datetime:
        """``occurredAt`` in ``timezone`` (a naive value is taken as UTC)."""
        moment = self.occurred_at if self.occurred_at.tzinfo else self.occurred_at.replace(tzinfo=UTC)
        return moment.astimezone(ZoneInfo(timezone))


@dataclass(frozen=True)
class UnknownCallback:
    """A callback of a kind this SDK version does not know, handed over raw (D340).

    ``data`` is the JSON object exactly as parsed (numbers as ``Decimal``). Receivers acknowledge it
    (``2xx``, deduplicated on :attr:`event_id` when it has one) instead of refusing it, so a new kind the
    service starts sending is never retried for 7 days.
    """

    data: Mapping[str, Any]

    @property
    def event_id(self) -> str | None:
        """``eventId`` when it is a usable key (a non-empty string of at most 200 characters)."""
        value = self.data.get("eventId")
        if isinstance(value, str) and 0 < len(value) <= MAX_EVENT_ID_LENGTH:
            return value
        return None

    @property
    def kind(self) -> str | None:
        """The ``event`` value when it is a string (the kind's name), else ``None``."""
        value = self.data.get("event")
        return value if isinstance(value, str) else None

    def to_wire(self) -> dict[str, Any]:
        """The body as received (a copy)."""
        return dict(self.data)

    def to_body(self) -> dict[str, Any]:
        """The body as received (a copy), like the known kinds' ``to_body``."""
        return dict(self.data)

    def occurred_at_datetime(self, timezone: str = DEFAULT_TIMEZONE) -> datetime | None:
        """Not known for an unknown kind: ``None``."""
        return None

    def __repr__(self) -> str:  # the values may be anything: show the keys only
        return f"UnknownCallback(kind={self.kind!r}, event_id={self.event_id!r}, keys={sorted(self.data)!r})"


#: The kinds this version knows.
KnownCallback: TypeAlias = PaymentCallback | SubscriptionCallback
#: What a receiver hands over: a known kind's model, or the raw :class:`UnknownCallback`.
Callback: TypeAlias = PaymentCallback | SubscriptionCallback | UnknownCallback

_BY_EVENT: dict[str, type[SubscriptionCallback]] = dict.fromkeys(
    SubscriptionCallback.EVENT_TYPES, SubscriptionCallback
)


def callback_kind(data: Mapping[str, Any]) -> str | None:
    """The kind a callback body names by its own fields: its ``event`` when present (a string), else
    ``"payment"`` when it carries ``transactionId`` or ``uid`` (spec 2.4 names no event), else ``None``."""
    if "event" in data:
        event = data["event"]
        return event if isinstance(event, str) else None
    if "transactionId" in data or "uid" in data:
        return PAYMENT_KIND
    return None


def callback_model(kind: str | None) -> type[PaymentCallback] | type[SubscriptionCallback] | None:
    """The model of a kind (:func:`callback_kind`), or ``None`` for a kind this version does not know."""
    if kind == PAYMENT_KIND:
        return PaymentCallback
    return _BY_EVENT.get(kind) if kind is not None else None


def format_created_at(moment: datetime, timezone: str = DEFAULT_TIMEZONE) -> str:
    """Format an aware datetime as the callback's ``createdAt`` in ``timezone``."""
    return moment.astimezone(ZoneInfo(timezone)).strftime(CALLBACK_CREATED_AT_FORMAT)
