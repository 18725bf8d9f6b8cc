"""Terminal (POS) payments with one- and two-step capture, settlement and payout (spec 1, 4.4; D190-D192).

The wire models the SDK and the reference server share. ``POST /terminal-payment`` creates a payment
(:class:`TerminalPaymentCreate`, answered ``201`` with :class:`TerminalPayment`); ``PATCH
/terminal-payment/{id}`` captures, voids or refunds it (:class:`TerminalPaymentUpdate`). Both take the
merchant token and use the payment-link error codes (D183).

Statuses and capture modes are string enums that tolerate values this version does not know: an unknown
value read from an answer becomes a member named ``UNKNOWN`` carrying the value, so a newer server never
breaks an older SDK (:class:`TerminalStatus`, :class:`CaptureMode`).
"""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum
from typing import Any, ClassVar, Literal, TypeAlias

from pydantic import Field, StrictInt, StrictStr

from paysdk.contracts.common import DecimalNumber, Money, WireModel

__all__ = [
    "AFFILIATION_LENGTH",
    "CaptureMode",
    "TerminalAction",
    "TerminalAffiliation",
    "TerminalCard",
    "TerminalPayment",
    "TerminalPaymentCreate",
    "TerminalPaymentUpdate",
    "TerminalStatus",
]

#: Digits of a client's affiliation number (D194).
AFFILIATION_LENGTH = 10


class _OpenEnum(StrEnum):
    """A string enum that takes any string: an unknown value becomes a pseudo-member named ``UNKNOWN``
    (``.value`` is the value received; ``is_known`` is false), never a validation error."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if not isinstance(value, str):
            return None
        member = str.__new__(cls, value)
        member._name_ = "UNKNOWN"
        member._value_ = value
        return member

    @property
    def is_known(self) -> bool:
        """Whether this version of paysdk knows the value."""
        return self._name_ != "UNKNOWN"


class TerminalStatus(_OpenEnum):
    """A terminal payment's state (D191)."""

    AUTHORIZED = "authorized"
    CAPTURED = "captured"
    SETTLED = "settled"
    PAID_OUT = "paid_out"
    REFUNDED = "refunded"
    VOIDED = "voided"
    LAPSED = "lapsed"
    DECLINED = "declined"


class CaptureMode(_OpenEnum):
    """``automatic``: authorized and captured at once (one-step); ``manual``: authorized, captured by a
    ``PATCH`` within 7 days (two-step)."""

    AUTOMATIC = "automatic"
    MANUAL = "manual"


#: What ``PATCH /terminal-payment/{id}`` does (D191).
TerminalAction: TypeAlias = Literal["capture", "void", "refund"]


class TerminalCard(WireModel):
    """The card read at the terminal (a sandbox test card decides the outcome, D190). Never echoed: the
    answer shows ``cardLast4`` only."""

    number: StrictStr = Field(min_length=12, max_length=23, repr=False)
    expiry_month: StrictInt = Field(ge=1, le=12)
    expiry_year: StrictInt = Field(ge=2000, le=2199)
    cvv: StrictStr | None = Field(default=None, pattern=r"^[0-9]{3,4}$", repr=False)


class TerminalPaymentCreate(WireModel):
    """Body of ``POST /terminal-payment`` (D190). A top-level ``installments`` field (even ``null``) is
    refused (``409 / 5000`` naming it): terminal payments take no installments (4.4)."""

    amount: Money
    currency: StrictStr = Field(min_length=3, max_length=3)
    terminal_id: StrictStr = Field(min_length=1, max_length=64)
    card: TerminalCard
    capture_mode: Literal["automatic", "manual"] = "automatic"
    reference: StrictStr | None = Field(default=None, min_length=1, max_length=64)
    external_id: StrictStr | None = Field(default=None, min_length=1, max_length=255)

    #: The field the spec names as absent from a terminal payment (4.4): refused, not ignored (D190).
    REFUSED_FIELDS: ClassVar[tuple[str, ...]] = ("installments",)


class TerminalPaymentUpdate(WireModel):
    """Body of ``PATCH /terminal-payment/{id}`` (D191): ``capture`` (``amount`` at most the authorized
    amount, default all), ``void`` (no amount) or ``refund`` (``amount`` at most captured minus refunded,
    default the rest). An action other than these three is ``409`` naming ``action``."""

    action: StrictStr = Field(min_length=1, max_length=32)
    amount: Money | None = None


class TerminalPayment(WireModel):
    """A terminal payment as answered (D190). Money is ``Decimal``; ``settlementDate`` and ``payoutDate``
    are the business days the payment settles and is paid out on (set at capture, D192), the ``...At``
    instants when it happened."""

    id: str
    status: TerminalStatus
    capture_mode: CaptureMode
    amount: DecimalNumber
    currency: str
    captured_amount: DecimalNumber
    refunded_amount: DecimalNumber
    terminal_id: str
    reference: str | None = None
    external_id: str | None = None
    card_last4: str
    affiliation: str
    decline_reason: str | None = None
    authorized_at: datetime | None = None
    capture_before: datetime | None = None
    captured_at: datetime | None = None
    settlement_date: date | None = None
    settled_at: datetime | None = None
    payout_date: date | None = None
    paid_out_at: datetime | None = None
    voided_at: datetime | None = None
    lapsed_at: datetime | None = None
    created_at: datetime


class TerminalAffiliation(WireModel):
    """``GET /_sandbox/terminal/affiliation?client=`` (D194): the client's affiliation number."""

    client: str
    affiliation: str
