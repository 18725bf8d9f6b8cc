"""Alternative payments on direct rails: ``/api/v1/integrations/transactions`` (spec 2.3, 4.1).

Authenticated with ``Authorization: Bearer <merchant token>`` (decision D9). Answers are wrapped in
``{"data": {...}}``; the SDK returns the inner model.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Unpack

from paysdk._errors import ValidationError
from paysdk._pipeline import Operation, PostCallOptions, apply_call_options, data_envelope
from paysdk.contracts.alternative_payments import (
    AlternativePayment,
    AlternativePaymentCreate,
    DismissResult,
    PaymentIntent,
    ProcessResult,
    RailName,
)
from paysdk.contracts.common import Channel, ChannelName, Currency, CurrencyCode
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource
from paysdk.resources._validation import (
    check_amount,
    check_channel,
    check_currency,
    check_custom_keys,
    check_optional_str,
    check_str,
    path_segment,
)

__all__ = [
    "AlternativePayments",
    "AsyncAlternativePayments",
    "create_operation",
    "create_payment_intent_operation",
    "dismiss_operation",
    "process_operation",
]

_PREFIX = "/api/v1/integrations/transactions"


def create_operation(
    *,
    amount: Decimal | int | str,
    channel: Channel | ChannelName,
    client: str,
    user_id: str,
    custom_keys: Mapping[str, Any] | None = None,
    currency: Currency | CurrencyCode | None = None,
    external_id: str | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[AlternativePayment]:
    """Create an alternative-payment transaction (``POST /api/v1/integrations/transactions``, 201).

    Arguments are checked as for ``payment_links.create`` (exact amount, known ``channel`` and
    ``currency``), except ``user_id``: any non-empty string here, as the server takes it (the spec shows
    no rule for this endpoint; D24); per-call options ``timeout``, ``extra_headers``, ``idempotency_key``.
    Returns the :class:`~paysdk.contracts.alternative_payments.AlternativePayment` (``uid``,
    ``payment_methods``: the rails enabled for the client, ``expire_at`` in Unix milliseconds).
    """
    # Every field is checked here (naming the argument), so no second pydantic pass: the hot path.
    body = AlternativePaymentCreate.wire_from_checked(
        amount=check_amount(amount),
        channel=check_channel(channel),
        client=check_str(client, "client"),
        user_id=check_str(user_id, "user_id"),
        custom_keys=check_custom_keys(custom_keys),
        currency=check_currency(currency),
        external_id=check_optional_str(external_id, "external_id"),
    )
    op = Operation(
        method="POST",
        path=_PREFIX,
        auth="bearer",
        json=body,
        parse=data_envelope(AlternativePayment.model_validate),
    )
    return apply_call_options(op, options)


def _check_data(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValidationError("data", "must be a dict with string keys")
    return dict(value)


def process_operation(
    uid: str,
    *,
    processor: RailName,
    data: Mapping[str, Any] | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[ProcessResult]:
    """Process transaction ``uid`` on the rail ``processor`` (``POST .../{uid}/payments``).

    ``data`` is the rail-specific object (``{}`` when omitted). Returns a
    :class:`~paysdk.contracts.alternative_payments.ProcessResult`: ``type`` ``base64`` (QR PNG data
    URI, see ``png_bytes()``), ``url`` or ``reference`` (decision D11).
    """
    op = Operation(
        method="POST",
        path=f"{_PREFIX}/{path_segment(uid, 'uid')}/payments",
        auth="bearer",
        json={"processor": check_str(processor, "processor"), "data": _check_data(data)},
        parse=data_envelope(ProcessResult.model_validate),
    )
    return apply_call_options(op, options)


def create_payment_intent_operation(
    uid: str, *, processor: RailName, **options: Unpack[PostCallOptions]
) -> Operation[PaymentIntent]:
    """Record the customer's choice of rail for ``uid`` (``POST .../{uid}/payment-intents``, D12)."""
    op = Operation(
        method="POST",
        path=f"{_PREFIX}/{path_segment(uid, 'uid')}/payment-intents",
        auth="bearer",
        json={"processor": check_str(processor, "processor")},
        parse=data_envelope(PaymentIntent.model_validate),
    )
    return apply_call_options(op, options)


def dismiss_operation(uid: str, **options: Unpack[PostCallOptions]) -> Operation[DismissResult]:
    """Dismiss the pending transaction ``uid`` (``POST .../{uid}/dismiss``, no body, decision D13).

    A transaction that is no longer pending answers ``409`` (:class:`~paysdk.ConflictError`).
    """
    op = Operation(
        method="POST",
        path=f"{_PREFIX}/{path_segment(uid, 'uid')}/dismiss",
        auth="bearer",
        parse=data_envelope(DismissResult.model_validate),
    )
    return apply_call_options(op, options)


# unasync: begin
class AsyncAlternativePayments(AsyncResource[M]):
    """Alternative payments (``client.alternative_payments``): pay on a direct rail such as a QR code.

    Flow: ``create`` a transaction, then ``process`` it on one of its ``payment_methods`` (for QR
    rails, ``ProcessResult.png_bytes()`` gives the image), or ``dismiss`` it.
    """

    create = AsyncEndpoint(create_operation)
    process = AsyncEndpoint(process_operation)
    create_payment_intent = AsyncEndpoint(create_payment_intent_operation)
    dismiss = AsyncEndpoint(dismiss_operation)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class AlternativePayments(Resource[M]):
    """Alternative payments (``client.alternative_payments``): pay on a direct rail such as a QR code.

    Flow: ``create`` a transaction, then ``process`` it on one of its ``payment_methods`` (for QR
    rails, ``ProcessResult.png_bytes()`` gives the image), or ``dismiss`` it.
    """

    create = Endpoint(create_operation)
    process = Endpoint(process_operation)
    create_payment_intent = Endpoint(create_payment_intent_operation)
    dismiss = Endpoint(dismiss_operation)


# unasync: generated end
