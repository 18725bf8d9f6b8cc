"""The control plane plays the processor (``client.sandbox.processor``, D193, D240): the secret it signs
with, a signed settlement notification (``settle``, ``pay_out``) and a signed feed batch (``feed``), each
delivered through the inbound receivers' own code path. Only against ``paysdk serve``; no merchant token.
Merchants never call the inbound webhooks, so the SDK has no other method for them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Unpack

import pydantic

from paysdk._errors import ValidationError
from paysdk._pipeline import CallOptions, Operation
from paysdk.contracts.processor_webhooks import (
    ProcessorInfo,
    SandboxFeed,
    SandboxFeedDelivery,
    SandboxSettlement,
    SandboxSettlementDelivery,
)
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource, control_operation
from paysdk.resources._validation import validation_error_from

__all__ = [
    "AsyncSandboxProcessor",
    "SandboxProcessor",
    "feed_operation",
    "pay_out_operation",
    "reveal_secret_operation",
    "secret_operation",
    "settle_operation",
]

_ROOT = "/_sandbox/processor"


#: The family's operations (:func:`~paysdk.resources._base.operation` with its defaults).
_op = functools.partial(control_operation, root=_ROOT)


def _body(model: type[pydantic.BaseModel], **fields: Any) -> dict[str, Any]:
    try:
        instance = model.model_validate(fields)
    except pydantic.ValidationError as exc:
        raise validation_error_from(exc) from None
    return instance.model_dump(by_alias=True, exclude_none=True, mode="json")


def secret_operation(**options: Unpack[CallOptions]) -> Operation[ProcessorInfo]:
    """The processor secret and signature scheme (``GET /_sandbox/processor``, D193): what a processor
    signs ``X-Processor-Signature`` with. The secret survives ``/_sandbox/reset``. A server bound to a
    non-loopback address answers it as ``****``: :meth:`reveal_secret` answers it in full."""
    return _op("GET", "", ProcessorInfo.model_validate, options)


def reveal_secret_operation(**options: Unpack[CallOptions]) -> Operation[ProcessorInfo]:
    """The processor secret in full on any server (``POST /_sandbox/processor/reveal``, D273): a server
    bound to a non-loopback address answers :meth:`secret` with ``****``. Changes nothing."""
    return _op("POST", "/reveal", ProcessorInfo.model_validate, options, idempotent=True)


def _settlement(
    type: str, payment_id: str, notification_id: str | None, at: datetime | None, options: CallOptions
) -> Operation[SandboxSettlementDelivery]:
    body = _body(SandboxSettlement, payment_id=payment_id, type=type, notification_id=notification_id, at=at)
    return _op("POST", "/settlements", SandboxSettlementDelivery.model_validate, options, json=body)


def settle_operation(
    payment_id: str,
    *,
    notification_id: str | None = None,
    at: datetime | None = None,
    **options: Unpack[CallOptions],
) -> Operation[SandboxSettlementDelivery]:
    """Deliver a signed ``settled`` notification for ``payment_id`` to ``POST /webhooks/settlements``
    (``POST /_sandbox/processor/settlements``, D193): ``notification_id`` defaults to a new one (pass
    the same id twice to see the second change nothing), ``at`` to the virtual clock's now. Answers the
    notification sent and the receiver's result (``applied``, ``status``, ``ignored``)."""
    return _settlement("settled", payment_id, notification_id, at, options)


def pay_out_operation(
    payment_id: str,
    *,
    notification_id: str | None = None,
    at: datetime | None = None,
    **options: Unpack[CallOptions],
) -> Operation[SandboxSettlementDelivery]:
    """Deliver a signed ``paid_out`` notification for ``payment_id`` (as :meth:`settle`)."""
    return _settlement("paid_out", payment_id, notification_id, at, options)


def feed_operation(
    events: Sequence[Mapping[str, Any]],
    *,
    feed_id: str | None = None,
    **options: Unpack[CallOptions],
) -> Operation[SandboxFeedDelivery]:
    """Deliver a signed feed batch to ``POST /webhooks/processor-feed`` (``POST /_sandbox/processor/feed``,
    D240). ``events``: mappings with ``type`` (``settled``, ``paid_out``, ``voided``), ``payment_id`` and
    optionally ``event_id`` (default a new one; repeat one to see it applied once) and ``at`` (default
    now); 1 to 1,000 of them. Answers the batch sent and the receiver's result (``applied`` event ids,
    ``ignored`` with reasons)."""
    if isinstance(events, Mapping | str | bytes) or not isinstance(events, Sequence):
        raise ValidationError("events", "must be a list of events")
    body = _body(SandboxFeed, feed_id=feed_id, events=list(events))
    return _op("POST", "/feed", SandboxFeedDelivery.model_validate, options, json=body)


# unasync: begin
class AsyncSandboxProcessor(AsyncResource[M]):
    """The control plane playing the processor (``client.sandbox.processor``, D193, D240)."""

    secret = AsyncEndpoint(secret_operation)
    reveal_secret = AsyncEndpoint(reveal_secret_operation)
    settle = AsyncEndpoint(settle_operation)
    pay_out = AsyncEndpoint(pay_out_operation)
    feed = AsyncEndpoint(feed_operation)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class SandboxProcessor(Resource[M]):
    """The control plane playing the processor (``client.sandbox.processor``, D193, D240)."""

    secret = Endpoint(secret_operation)
    reveal_secret = Endpoint(reveal_secret_operation)
    settle = Endpoint(settle_operation)
    pay_out = Endpoint(pay_out_operation)
    feed = Endpoint(feed_operation)


# unasync: generated end
