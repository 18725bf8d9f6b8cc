"""Alternative payments on direct rails: ``/api/v1/integrations/transactions`` (spec 2.3, 4.1)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from pydantic import Field

from paysdk.contracts.common import Channel, Currency, Money, NonEmptyStr, WireModel

__all__ = [
    "QR_RAILS",
    "RAILS",
    "AlternativePayment",
    "AlternativePaymentCreate",
    "DismissResult",
    "PaymentIntent",
    "PaymentIntentCreate",
    "ProcessRequest",
    "ProcessResult",
    "RailName",
]

#: Rail identifiers seen in the spec (2.3).
RAILS: tuple[str, ...] = ("zigi", "akisiQR", "bamPaymentButton", "quickPayQR", "bancoIndustrial", "pronet")
#: The rails as literals, for method signatures (``processor=``, ``payment_methods=``): a type checker
#: catches a typo; at run time any rail name is sent and the server judges it (decision D101). A test
#: keeps this equal to :data:`RAILS`.
RailName: TypeAlias = Literal[
    "zigi", "akisiQR", "bamPaymentButton", "quickPayQR", "bancoIndustrial", "pronet"
]
#: Rails whose process result is a QR code PNG as a data URI (decision D11).
QR_RAILS = frozenset({"akisiQR", "quickPayQR"})
#: Rails whose process result is a URL the customer opens (decision D11).
URL_RAILS = frozenset({"zigi", "bamPaymentButton"})
#: Rails whose process result is a payment reference the customer quotes at the bank (decision D11).
REFERENCE_RAILS = frozenset({"bancoIndustrial", "pronet"})


class AlternativePaymentCreate(WireModel):
    """Body of ``POST /api/v1/integrations/transactions`` (spec 2.3; required fields: decision D3)."""

    amount: Money
    channel: Channel
    client: NonEmptyStr
    user_id: NonEmptyStr
    custom_keys: dict[str, Any] | None = None
    currency: Currency | None = None
    external_id: str | None = Field(default=None, max_length=255)


class AlternativePayment(WireModel):
    """``data`` of the create answer (HTTP 201). ``expire_at`` is Unix epoch milliseconds (decision D10)."""

    uid: str
    payment_methods: list[str]
    expire_at: int

    @property
    def expires(self) -> datetime:
        """``expire_at`` as an aware UTC datetime."""
        return datetime.fromtimestamp(self.expire_at / 1000, tz=UTC)


class ProcessRequest(WireModel):
    """Body of ``POST .../transactions/{uid}/payments``."""

    processor: NonEmptyStr
    data: dict[str, Any] = Field(default_factory=dict)


class ProcessResult(WireModel):
    """``data`` of the process answer.

    ``type`` is ``base64`` (QR rails: ``data`` is a ``data:image/png;base64,...`` URI), ``url`` (the
    customer opens ``data``) or ``reference`` (the customer quotes ``data`` at the bank). Decision D11.
    """

    type: Literal["base64", "url", "reference"]
    data: str

    def png_bytes(self) -> bytes:
        """The PNG image of a QR result. Raises ``ValueError`` for other result types."""
        prefix = "data:image/png;base64,"
        if self.type != "base64" or not self.data.startswith(prefix):
            raise ValueError(f"this result is of type {self.type!r}, not a PNG data URI")
        return base64.b64decode(self.data[len(prefix) :], validate=True)


class PaymentIntentCreate(WireModel):
    """Body of ``POST .../transactions/{uid}/payment-intents`` (decision D12): the rail the customer chose."""

    processor: NonEmptyStr


class PaymentIntent(WireModel):
    """``data`` of the payment-intent answer (HTTP 201, decision D12)."""

    intent_id: str
    uid: str
    processor: str
    status: Literal["requires_action"]
    expire_at: int


class DismissResult(WireModel):
    """``data`` of the dismiss answer (HTTP 200, decision D13)."""

    uid: str
    status: Literal["dismissed"]
