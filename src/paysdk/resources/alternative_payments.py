"""Alternative payments on direct rails: ``/api/v1/integrations/transactions`` (spec 2.3, 4.1).

Authenticated with ``Authorization: Bearer <merchant token>`` (decision D9). Answers are wrapped in
``{"data": {...}}``; the SDK returns the inner model.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import httpx

from paysdk._errors import ValidationError
from paysdk._pipeline import Operation, data_envelope, optional_timeout, validate_idempotency_key
from paysdk._types import NOT_GIVEN, NotGiven
from paysdk.contracts.alternative_payments import (
    AlternativePayment,
    AlternativePaymentCreate,
    DismissResult,
    PaymentIntent,
    ProcessResult,
)
from paysdk.contracts.common import Channel, Currency
from paysdk.resources._validation import (
    check_amount,
    check_channel,
    check_currency,
    check_custom_keys,
    check_optional_str,
    check_phone,
    check_str,
    path_segment,
)

if TYPE_CHECKING:
    from paysdk._client import AsyncClient, Client

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
    channel: str | Channel,
    client: str,
    user_id: str,
    custom_keys: Mapping[str, Any] | None = None,
    currency: str | Currency | None = None,
    external_id: str | None = None,
    idempotency_key: str | None = None,
    timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
) -> Operation[AlternativePayment]:
    """The validated operation of ``POST /api/v1/integrations/transactions`` (answer 201, ``data``)."""
    # Every field is checked here (naming the argument), so no second pydantic pass: the hot path.
    body = AlternativePaymentCreate.wire_from_checked(
        amount=check_amount(amount),
        channel=check_channel(channel),
        client=check_str(client, "client"),
        user_id=check_phone(user_id),
        custom_keys=check_custom_keys(custom_keys),
        currency=check_currency(currency),
        external_id=check_optional_str(external_id, "external_id"),
    )
    return Operation(
        method="POST",
        path=_PREFIX,
        auth="bearer",
        json=body,
        parse=data_envelope(AlternativePayment.model_validate),
        idempotency_key=validate_idempotency_key(idempotency_key),
        timeout=optional_timeout(timeout),
    )


def _check_data(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValidationError("data", "must be a dict with string keys")
    return dict(value)


def process_operation(
    uid: str,
    *,
    processor: str,
    data: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
) -> Operation[ProcessResult]:
    """The validated operation of ``POST .../transactions/{uid}/payments`` (answer 200, ``data``)."""
    return Operation(
        method="POST",
        path=f"{_PREFIX}/{path_segment(uid, 'uid')}/payments",
        auth="bearer",
        json={"processor": check_str(processor, "processor"), "data": _check_data(data)},
        parse=data_envelope(ProcessResult.model_validate),
        idempotency_key=validate_idempotency_key(idempotency_key),
        timeout=optional_timeout(timeout),
    )


def create_payment_intent_operation(
    uid: str,
    *,
    processor: str,
    idempotency_key: str | None = None,
    timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
) -> Operation[PaymentIntent]:
    """The validated operation of ``POST .../transactions/{uid}/payment-intents`` (decision D12)."""
    return Operation(
        method="POST",
        path=f"{_PREFIX}/{path_segment(uid, 'uid')}/payment-intents",
        auth="bearer",
        json={"processor": check_str(processor, "processor")},
        parse=data_envelope(PaymentIntent.model_validate),
        idempotency_key=validate_idempotency_key(idempotency_key),
        timeout=optional_timeout(timeout),
    )


def dismiss_operation(
    uid: str,
    *,
    idempotency_key: str | None = None,
    timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
) -> Operation[DismissResult]:
    """The validated operation of ``POST .../transactions/{uid}/dismiss`` (no body, decision D13)."""
    return Operation(
        method="POST",
        path=f"{_PREFIX}/{path_segment(uid, 'uid')}/dismiss",
        auth="bearer",
        parse=data_envelope(DismissResult.model_validate),
        idempotency_key=validate_idempotency_key(idempotency_key),
        timeout=optional_timeout(timeout),
    )


# unasync: begin
class AsyncAlternativePayments:
    """Alternative payments (``client.alternative_payments``): pay on a direct rail such as a QR code.

    Flow: :meth:`create` a transaction, then :meth:`process` it on one of its ``payment_methods``
    (for QR rails, ``ProcessResult.png_bytes()`` gives the image), or :meth:`dismiss` it.
    """

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def create(
        self,
        *,
        amount: Decimal | int | str,
        channel: str | Channel,
        client: str,
        user_id: str,
        custom_keys: Mapping[str, Any] | None = None,
        currency: str | Currency | None = None,
        external_id: str | None = None,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,  # noqa: ASYNC109 (an HTTP timeout)
    ) -> AlternativePayment:
        """Create an alternative-payment transaction (``POST /api/v1/integrations/transactions``).

        Arguments are checked as for ``payment_links.create`` (exact amount, E.164 ``user_id``, known
        ``channel`` and ``currency``). Returns the
        :class:`~paysdk.contracts.alternative_payments.AlternativePayment` (``uid``, ``payment_methods``:
        the rails enabled for the client, ``expire_at`` in Unix milliseconds).
        """
        op = create_operation(
            amount=amount,
            channel=channel,
            client=client,
            user_id=user_id,
            custom_keys=custom_keys,
            currency=currency,
            external_id=external_id,
            idempotency_key=idempotency_key,
            timeout=timeout,
        )
        return await self._client._request(op)

    async def process(
        self,
        uid: str,
        *,
        processor: str,
        data: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,  # noqa: ASYNC109 (an HTTP timeout)
    ) -> ProcessResult:
        """Process transaction ``uid`` on the rail ``processor`` (``POST .../{uid}/payments``).

        ``data`` is the rail-specific object (``{}`` when omitted). Returns a
        :class:`~paysdk.contracts.alternative_payments.ProcessResult`: ``type`` ``base64`` (QR PNG data
        URI, see ``png_bytes()``), ``url`` or ``reference`` (decision D11).
        """
        op = process_operation(
            uid, processor=processor, data=data, idempotency_key=idempotency_key, timeout=timeout
        )
        return await self._client._request(op)

    async def create_payment_intent(
        self,
        uid: str,
        *,
        processor: str,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,  # noqa: ASYNC109 (an HTTP timeout)
    ) -> PaymentIntent:
        """Record the customer's choice of rail for ``uid`` (``POST .../{uid}/payment-intents``, D12)."""
        op = create_payment_intent_operation(
            uid, processor=processor, idempotency_key=idempotency_key, timeout=timeout
        )
        return await self._client._request(op)

    async def dismiss(
        self,
        uid: str,
        *,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,  # noqa: ASYNC109 (an HTTP timeout)
    ) -> DismissResult:
        """Dismiss the pending transaction ``uid`` (``POST .../{uid}/dismiss``, decision D13).

        A transaction that is no longer pending answers ``409`` (:class:`~paysdk.ConflictError`).
        """
        op = dismiss_operation(uid, idempotency_key=idempotency_key, timeout=timeout)
        return await self._client._request(op)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class AlternativePayments:
    """Alternative payments (``client.alternative_payments``): pay on a direct rail such as a QR code.

    Flow: :meth:`create` a transaction, then :meth:`process` it on one of its ``payment_methods``
    (for QR rails, ``ProcessResult.png_bytes()`` gives the image), or :meth:`dismiss` it.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def create(
        self,
        *,
        amount: Decimal | int | str,
        channel: str | Channel,
        client: str,
        user_id: str,
        custom_keys: Mapping[str, Any] | None = None,
        currency: str | Currency | None = None,
        external_id: str | None = None,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
    ) -> AlternativePayment:
        """Create an alternative-payment transaction (``POST /api/v1/integrations/transactions``).

        Arguments are checked as for ``payment_links.create`` (exact amount, E.164 ``user_id``, known
        ``channel`` and ``currency``). Returns the
        :class:`~paysdk.contracts.alternative_payments.AlternativePayment` (``uid``, ``payment_methods``:
        the rails enabled for the client, ``expire_at`` in Unix milliseconds).
        """
        op = create_operation(
            amount=amount,
            channel=channel,
            client=client,
            user_id=user_id,
            custom_keys=custom_keys,
            currency=currency,
            external_id=external_id,
            idempotency_key=idempotency_key,
            timeout=timeout,
        )
        return self._client._request(op)

    def process(
        self,
        uid: str,
        *,
        processor: str,
        data: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
    ) -> ProcessResult:
        """Process transaction ``uid`` on the rail ``processor`` (``POST .../{uid}/payments``).

        ``data`` is the rail-specific object (``{}`` when omitted). Returns a
        :class:`~paysdk.contracts.alternative_payments.ProcessResult`: ``type`` ``base64`` (QR PNG data
        URI, see ``png_bytes()``), ``url`` or ``reference`` (decision D11).
        """
        op = process_operation(
            uid, processor=processor, data=data, idempotency_key=idempotency_key, timeout=timeout
        )
        return self._client._request(op)

    def create_payment_intent(
        self,
        uid: str,
        *,
        processor: str,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
    ) -> PaymentIntent:
        """Record the customer's choice of rail for ``uid`` (``POST .../{uid}/payment-intents``, D12)."""
        op = create_payment_intent_operation(
            uid, processor=processor, idempotency_key=idempotency_key, timeout=timeout
        )
        return self._client._request(op)

    def dismiss(
        self,
        uid: str,
        *,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
    ) -> DismissResult:
        """Dismiss the pending transaction ``uid`` (``POST .../{uid}/dismiss``, decision D13).

        A transaction that is no longer pending answers ``409`` (:class:`~paysdk.ConflictError`).
        """
        op = dismiss_operation(uid, idempotency_key=idempotency_key, timeout=timeout)
        return self._client._request(op)
# unasync: generated end
