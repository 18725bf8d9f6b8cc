"""Payment links: ``POST /transactions`` and ``POST /transactions-hook`` (spec 2.1, 2.2, 4.1)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from paysdk.contracts.common import Channel, Currency, Money, NonEmptyStr, WireModel

__all__ = [
    "PaymentLink",
    "PaymentLinkCreate",
    "PaymentLinkHookCreate",
    "TransactionStatus",
]


class PaymentLinkCreate(WireModel):
    """Body of ``POST /transactions`` (spec 2.1).

    Required (decision D3): ``amount``, ``userId``, ``channel``, ``client``. ``ads`` defaults to ``[]``;
    ``currency`` defaults to the client's first configured currency.
    """

    amount: Money
    user_id: NonEmptyStr
    channel: Channel
    client: NonEmptyStr
    currency: Currency | None = None
    external_id: str | None = Field(default=None, max_length=255)
    ads: list[Any] = Field(default_factory=list)
    custom_keys: dict[str, Any] | None = None


class PaymentLinkHookCreate(PaymentLinkCreate):
    """Body of ``POST /transactions-hook``: the transaction fields plus the body credentials (spec 5.2.5).

    ``client`` is optional here: the key pair already identifies the application.
    """

    private_key: NonEmptyStr
    public_key: NonEmptyStr
    client: NonEmptyStr | None = None  # type: ignore[assignment]


class PaymentLink(WireModel):
    """Answer of ``POST /transactions`` (spec 2.2). ``url`` is the wire field ``URL``."""

    uid: str
    reference: str
    url: str = Field(alias="URL")


class TransactionStatus:
    """Statuses of a payment-link transaction (decision D8). Terminal ones trigger the merchant callback."""

    PENDING = "pending"
    APPROVED = "approved"
    DECLINED = "declined"
    EXPIRED = "expired"
    DISMISSED = "dismissed"
    TERMINAL = frozenset({APPROVED, DECLINED, EXPIRED, DISMISSED})
