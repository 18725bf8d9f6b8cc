"""Subscriptions (spec 2.6, 3.1, 4.2; decisions D138-D154): ``client.subscriptions``.

Every call goes to ``{base_url}`` under ``/v1/subscriptions`` with the wallet application access token
as bearer (D138): build the client with ``Client(wallet=paysdk.WalletCredentials(merchant, key))``; the
token is logged in lazily, shared with ``client.wallet`` and renewed after a 401 the wallet's way.
Answers are the ``{success, message, data}`` envelope of 2.6 (D139); the SDK returns ``data`` as a
model of :mod:`paysdk.contracts.subscriptions`.

A subscription is created only by a verified card (``verify_card`` with
``should_create_subscription=True``, then the customer pays the verification's hosted checkout, or
``client.sandbox.pay`` does it headlessly). The spec has no on-demand charge and the SDK invents none
(D154); the renewals run on the server's schedule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Unpack

from paysdk._errors import ValidationError
from paysdk._pipeline import CallOptions, Operation, PostCallOptions, list_of
from paysdk.contracts.subscriptions import Subscription, SubscriptionCharge, VerifyCard
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource, operation
from paysdk.resources._validation import check_email, check_optional_str, check_str, path_segment
from paysdk.resources.batch_charges import AsyncBatchCharges, BatchCharges

if TYPE_CHECKING:
    from paysdk._client import AsyncClient, Client

__all__ = [
    "AsyncSubscriptions",
    "Subscriptions",
    "cancel_operation",
    "payment_history_operation",
    "update_email_operation",
    "verify_card_operation",
]

_ROOT = "/v1/subscriptions"
_ONLY_CARD = "must not be given when should_create_subscription is False (only the card is verified)"
#: Subscription and plan ids are at most 64 characters (``paysdk.contracts.subscriptions``).
_ID_LENGTH = 64


#: The family's operations (:func:`~paysdk.resources._base.operation` with its defaults).
_op = functools.partial(operation, root=_ROOT, base="base", auth="wallet_app")


def envelope(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Unwrap the ``{success, message, data}`` envelope of the subscription answers (2.6, D139) and
    parse its ``data``; an answer without it (or with ``success`` false) is not a success."""

    def unwrap(body: Any) -> Any:
        if not isinstance(body, dict) or "data" not in body:
            raise ValueError("answer has no 'data' member")
        if body.get("success") is not True:
            raise ValueError("answer's 'success' is not true")
        return parse(body["data"])

    return unwrap


def _id(value: object, field: str) -> str:
    check_str(value, field, max_length=_ID_LENGTH)
    return path_segment(value, field)


def verify_card_operation(
    *,
    should_create_subscription: bool,
    plan_id: str | None = None,
    email: str | None = None,
    external_id: str | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[VerifyCard]:
    """Start a card verification (``POST /v1/subscriptions/verify-card``, D140).

    With ``should_create_subscription=True``, ``plan_id`` (a plan of your client, made on the control
    plane) and ``email`` (the subscription's notification address) are required: once the customer's
    card verifies on the hosted checkout (``result.url``), the subscription ``result.sub_uid`` is
    created ``active`` with that card as its default method. With ``False`` only the card is verified
    (``plan_id`` and ``email`` are not sent). ``external_id`` is echoed in the verification's callback.

    Returns the :class:`~paysdk.contracts.subscriptions.VerifyCard` (``uid``, ``reference``, ``url``,
    ``sub_uid``, ``status`` ``pending``, ``expire_at``). Raises :class:`~paysdk.ValidationError`
    naming the argument before sending anything; :class:`~paysdk.NotFoundError` for an unknown plan.
    """
    if not isinstance(should_create_subscription, bool):
        raise ValidationError("should_create_subscription", "must be True or False")
    body: dict[str, Any] = {"shouldCreateSubscription": should_create_subscription}
    if should_create_subscription:
        if plan_id is None:
            raise ValidationError("plan_id", "is required when should_create_subscription is True")
        if email is None:
            raise ValidationError("email", "is required when should_create_subscription is True")
        body["planId"] = check_str(plan_id, "plan_id", max_length=_ID_LENGTH)
        body["email"] = check_email(email, "email")
    else:
        # The server ignores them (D140); given with False they are a mistake worth naming (D165).
        for value, name in ((plan_id, "plan_id"), (email, "email")):
            if value is not None:
                raise ValidationError(name, _ONLY_CARD)
    external = check_optional_str(external_id, "external_id")
    if external is not None:
        body["externalId"] = external
    return _op("POST", "/verify-card", envelope(VerifyCard.model_validate), options, json=body)


def cancel_operation(sub_uid: str, **options: Unpack[CallOptions]) -> Operation[Subscription]:
    """Cancel subscription ``sub_uid`` at once (``DELETE /v1/subscriptions/{subUid}``, D152).

    Returns the :class:`~paysdk.contracts.subscriptions.Subscription`, ``cancelled``. Cancelling a
    cancelled subscription again returns it unchanged (a retried call is harmless); an ``inactive`` or
    ``expired`` one raises :class:`~paysdk.ConflictError`, an unknown one :class:`~paysdk.NotFoundError`.
    A cancelled subscription never becomes active again.
    """
    return _op("DELETE", "/" + _id(sub_uid, "sub_uid"), envelope(Subscription.model_validate), options)


def update_email_operation(
    subscription_id: str, email: str, **options: Unpack[CallOptions]
) -> Operation[Subscription]:
    """Change the notification email of subscription ``subscription_id`` (``PUT /v1/subscriptions``,
    D151): the only field that can change, in any state; the status never moves.

    Returns the :class:`~paysdk.contracts.subscriptions.Subscription`. Raises
    :class:`~paysdk.ValidationError` for an email of the wrong form (D96) before sending anything.
    """
    body = {
        "subscriptionId": check_str(subscription_id, "subscription_id", max_length=_ID_LENGTH),
        "email": check_email(email, "email"),
    }
    return _op("PUT", "", envelope(Subscription.model_validate), options, json=body)


def payment_history_operation(
    subscription_id: str, **options: Unpack[CallOptions]
) -> Operation[list[SubscriptionCharge]]:
    """Every charge of subscription ``subscription_id``, oldest first, declined attempts and batch
    charges included (``GET /v1/subscriptions/payment-history?subscriptionId=``, D150): a flat list,
    no paging, in every state (empty until the first renewal runs).
    """
    params = {"subscriptionId": check_str(subscription_id, "subscription_id", max_length=_ID_LENGTH)}
    parse = envelope(list_of(SubscriptionCharge.model_validate))
    return _op("GET", "/payment-history", parse, options, params=params)


# unasync: begin
class AsyncSubscriptions(AsyncResource[M]):
    """Subscriptions (``client.subscriptions``): card verification that creates a subscription,
    cancellation, the notification email and the payment history (wallet application token, D138)."""

    verify_card = AsyncEndpoint(verify_card_operation)
    cancel = AsyncEndpoint(cancel_operation)
    update_email = AsyncEndpoint(update_email_operation)
    payment_history = AsyncEndpoint(payment_history_operation)

    def __init__(self, client: AsyncClient, *, raw: bool = False) -> None:
        super().__init__(client, raw=raw)
        #: Batch CSV charges (D155-D158): ``upload_csv``, and ``read_csv``/``upload_part`` for journals.
        self.charges: AsyncBatchCharges[M] = AsyncBatchCharges(client, raw=raw)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class Subscriptions(Resource[M]):
    """Subscriptions (``client.subscriptions``): card verification that creates a subscription,
    cancellation, the notification email and the payment history (wallet application token, D138)."""

    verify_card = Endpoint(verify_card_operation)
    cancel = Endpoint(cancel_operation)
    update_email = Endpoint(update_email_operation)
    payment_history = Endpoint(payment_history_operation)

    def __init__(self, client: Client, *, raw: bool = False) -> None:
        super().__init__(client, raw=raw)
        #: Batch CSV charges (D155-D158): ``upload_csv``, and ``read_csv``/``upload_part`` for journals.
        self.charges: BatchCharges[M] = BatchCharges(client, raw=raw)


# unasync: generated end
