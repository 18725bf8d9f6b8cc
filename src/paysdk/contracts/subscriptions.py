"""Subscriptions, the scheduled charge process and batch CSV charges (spec 2.6, 3.1, 3.3, 4.2, 6.2-6.4).

The wire models the SDK and the reference server share; the decisions behind them are D138-D165 in
``docs/spec-decisions.md`` (the spec shows only ``shouldCreateSubscription``, the states, the retry
settings' names and the payment-history envelope).

* Public calls live on ``{base_url}`` under ``/v1/subscriptions`` and take the wallet application
  token as bearer (D138). Success answers are the ``{success, message, data}`` envelope of 2.6
  (:class:`SubscriptionEnvelope`); errors are D1's body.
* Plans and subscriptions in bulk come from the control plane only (``/_sandbox/plans``,
  ``/_sandbox/subscriptions``); ``GET /_sandbox/subscriptions/{subUid}`` is the read the spec lacks.
* Money is ``Decimal`` end to end (a JSON number on the wire; a CSV cell is text with at most 2 decimals).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import Field, StrictBool

from paysdk.contracts.common import DecimalNumber, Money, NoFormula, WireModel

__all__ = [
    "BATCH_MAX_ROWS",
    "DEFAULT_INTERVAL_ATTEMPT_HOURS",
    "BatchChargeResult",
    "BatchChargeRowResult",
    "BatchRowStatus",
    "ChargeSource",
    "ChargeStatus",
    "Interval",
    "PaymentMethod",
    "Plan",
    "PlanCreate",
    "SandboxSubscription",
    "SandboxSubscriptionsCreate",
    "SandboxSubscriptionsCreated",
    "SubsCallback",
    "Subscription",
    "SubscriptionCharge",
    "SubscriptionEmailUpdate",
    "SubscriptionEnvelope",
    "SubscriptionStatus",
    "VerifyCard",
    "VerifyCardRequest",
]

#: Exactly four states (spec 3.1).
SubscriptionStatus: TypeAlias = Literal["active", "cancelled", "expired", "inactive"]
#: A plan's billing interval unit (D141); ``intervalCount`` of them make one period.
Interval: TypeAlias = Literal["day", "week", "month", "year"]
#: A charge's outcome (D150).
ChargeStatus: TypeAlias = Literal["approved", "declined"]
#: What made a charge: the scheduled charge process or a batch CSV row (D150, D154).
ChargeSource: TypeAlias = Literal["renewal", "batch"]
#: A batch row's result (D156): charged (approved), declined (the card declined; the charge is in the
#: payment history), refused (the row was not charged: invalid, unknown or inactive subscription ...).
BatchRowStatus: TypeAlias = Literal["charged", "declined", "refused"]

#: Spec 8: a batch charge file holds at most 5,000 rows (the header not counted).
BATCH_MAX_ROWS = 5000
#: Spec 2.6 / 8: the default ``intervalAttempt``.
DEFAULT_INTERVAL_ATTEMPT_HOURS = 24


# ------------------------------------------------------------------------------------ public API


class VerifyCardRequest(WireModel):
    """Body of ``POST /v1/subscriptions/verify-card`` (D140). ``planId`` and ``email`` are required when
    ``shouldCreateSubscription`` is true; ``externalId`` is echoed in the transaction's callback."""

    should_create_subscription: StrictBool
    plan_id: str | None = Field(default=None, min_length=1, max_length=64)
    email: str | None = Field(default=None, min_length=3, max_length=254)
    external_id: str | None = Field(default=None, max_length=255)


class VerifyCard(WireModel):
    """``data`` of the verify-card answer: the verification transaction and its hosted checkout (``URL``,
    as in 2.2), the subscription id reserved for it (``None`` when no subscription is to be created)."""

    uid: str
    reference: str
    url: str = Field(alias="URL")
    sub_uid: str | None = None
    status: str = "pending"
    expire_at: datetime


class SubscriptionEmailUpdate(WireModel):
    """Body of ``PUT /v1/subscriptions``: the subscription and its new notification email, nothing else
    (any other field is ``400`` naming it, D151)."""

    subscription_id: str = Field(min_length=1, max_length=64)
    email: str = Field(min_length=3, max_length=254)


class PaymentMethod(WireModel):
    """A subscription's default payment method as shown: brand and last four digits, never the number."""

    brand: str
    last4: str


class Subscription(WireModel):
    """A subscription as the public API answers it (D153). ``nextRenewalDate`` is a date in the client's
    timezone; ``None`` once the subscription is no longer active."""

    sub_uid: str
    status: SubscriptionStatus
    plan_id: str
    email: str
    next_renewal_date: date | None = None
    default_payment_method: PaymentMethod
    created_at: datetime
    cancelled_at: datetime | None = None
    ended_at: datetime | None = None


class SubscriptionCharge(WireModel):
    """One charge of a subscription: an item of the payment history (D150), newest last."""

    charge_id: str
    subscription_id: str
    source: ChargeSource
    status: ChargeStatus
    reason: str
    amount: DecimalNumber
    currency: str
    attempt: int
    period: int | None = None
    renewal_date: date | None = None
    reference: str | None = None
    payment_method: PaymentMethod
    created_at: datetime


class SubscriptionEnvelope(WireModel):
    """The ``{success, message, data}`` envelope of the subscription answers (spec 2.6, 7)."""

    success: bool
    message: str


# ------------------------------------------------------------------------------------ batch charges


class BatchChargeRowResult(WireModel):
    """The result of one CSV row (D156): ``row`` is its line number in the file (the header is row 1)."""

    row: int
    status: BatchRowStatus
    reference: str | None = None
    subscription_id: str | None = None
    charge_id: str | None = None
    error: str | None = None
    #: The row was charged (or declined) by an earlier upload: this is that earlier result (D157).
    replayed: bool = False


class BatchChargeResult(WireModel):
    """``data`` of ``POST /v1/subscriptions/charges/upload-csv`` (D156): counts and one result per row."""

    rows: int
    charged: int
    declined: int
    refused: int
    replayed: int
    results: list[BatchChargeRowResult]


# ------------------------------------------------------------------------------------ callbacks
# The ``subsCallback`` model is paysdk.contracts.callbacks.SubscriptionCallback, with every callback
# kind (D340); ``SubsCallback`` here is that class (see ``__getattr__`` at the end).


# ------------------------------------------------------------------------------------ control plane


class PlanCreate(WireModel):
    """Body of ``POST /_sandbox/plans`` (D141). ``term``: the number of periods of a fixed-term plan
    (``None``: open-ended). ``intervalAttempt``: hours between attempts (default 24, spec 2.6);
    ``graceDays``: days after the renewal date within which retries happen (``None``: no bound)."""

    client: str = Field(min_length=1, max_length=64)
    plan_id: str | None = Field(default=None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    name: Annotated[str, Field(max_length=120), NoFormula] | None = None
    amount: Money
    currency: str | None = Field(default=None, min_length=3, max_length=3)
    interval: Interval = "month"
    interval_count: int = Field(default=1, ge=1, le=366)
    term: int | None = Field(default=None, ge=1, le=1200)
    daily_attempts: int = Field(default=3, ge=1, le=24)
    interval_attempt: int = Field(default=DEFAULT_INTERVAL_ATTEMPT_HOURS, ge=1, le=24 * 31)
    grace_days: int | None = Field(default=None, ge=0, le=365)


class Plan(WireModel):
    """A plan as the control plane answers it."""

    plan_id: str
    client: str
    name: str
    amount: DecimalNumber
    currency: str
    interval: Interval
    interval_count: int
    term: int | None = None
    daily_attempts: int
    interval_attempt: int
    grace_days: int | None = None
    created_at: datetime


class SandboxSubscriptionsCreate(WireModel):
    """Body of ``POST /_sandbox/subscriptions``: ``count`` active subscriptions of a plan at once, for
    tests and benchmarks (D142). ``startDate``: the first renewal date (the anchor, a date in the
    client's timezone; default: today there). ``cardNumber``: a test card, the default method."""

    plan_id: str = Field(min_length=1, max_length=64)
    count: int = Field(default=1, ge=1, le=100_000)
    email: str | None = Field(default=None, min_length=3, max_length=254)
    card_number: str = "4242424242424242"
    start_date: date | None = None


class SandboxSubscriptionsCreated(WireModel):
    """The answer of ``POST /_sandbox/subscriptions``."""

    count: int
    sub_uids: list[str]


class SandboxSubscription(Subscription):
    """``GET /_sandbox/subscriptions/{subUid}``: the subscription with what the public API does not show
    (D142): its client and timezone, the anchor, the period being charged, the failed attempts of that
    period and when the next attempt is due, the fixed term's end, and every charge."""

    client: str
    timezone: str
    anchor_date: date
    period: int
    attempts: int
    next_attempt_at: datetime | None = None
    ends_on: date | None = None
    plan: Plan
    charges: list[SubscriptionCharge] = Field(default_factory=list)


if TYPE_CHECKING:
    from paysdk.contracts.callbacks import SubscriptionCallback as SubsCallback


def __getattr__(name: str) -> Any:
    """``SubsCallback``: the ``subsCallback`` model, now
    :class:`paysdk.contracts.callbacks.SubscriptionCallback` with every callback kind (D340)."""
    if name == "SubsCallback":
        from paysdk.contracts.callbacks import SubscriptionCallback

        return SubscriptionCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
