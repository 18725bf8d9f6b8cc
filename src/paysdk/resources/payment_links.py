"""Payment links: ``POST /transactions`` and ``POST /transactions-hook`` (spec 2.1, 2.2, 4.1, 5.2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Unpack

import pydantic

from paysdk._credentials import HookKeys
from paysdk._pipeline import Operation, PostCallOptions, apply_call_options
from paysdk._secret import Secret
from paysdk.contracts.common import Channel, ChannelName, Currency, CurrencyCode
from paysdk.contracts.payment_links import PaymentLink, PaymentLinkCreate, PaymentLinkHookCreate
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource
from paysdk.resources._validation import (
    check_ads,
    check_amount,
    check_channel,
    check_currency,
    check_custom_keys,
    check_optional_str,
    check_phone,
    check_secret,
    check_str,
    validation_error_from,
)

__all__ = ["AsyncPaymentLinks", "PaymentLinks", "create_hook_operation", "create_operation"]


def _fields(
    *,
    amount: object,
    user_id: object,
    channel: object,
    currency: object,
    external_id: object,
    ads: object,
    custom_keys: object,
) -> dict[str, Any]:
    return {
        "amount": check_amount(amount),
        "user_id": check_phone(user_id),
        "channel": check_channel(channel),
        "currency": check_currency(currency),
        "external_id": check_optional_str(external_id, "external_id"),
        "ads": check_ads(ads),
        "custom_keys": check_custom_keys(custom_keys),
    }


def create_operation(
    *,
    amount: Decimal | int | str,
    user_id: str,
    channel: Channel | ChannelName,
    client: str,
    currency: Currency | CurrencyCode | None = None,
    external_id: str | None = None,
    ads: Sequence[Any] | None = None,
    custom_keys: Mapping[str, Any] | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[PaymentLink]:
    """Create a payment-link transaction (``POST /transactions``, merchant token, decision D9).

    ``amount`` is a ``Decimal``, ``int`` or decimal string (never ``float``), > 0, at most 2 decimals.
    ``user_id`` is the customer's phone in E.164 form (sent reformatted as E.164). ``channel`` is one
    of ``wa``, ``sms``, ``email``, ``web``, ``app``; ``currency`` one of the spec's currencies
    (``None``: the client's first configured currency). ``ads`` is sent as ``[]`` when omitted.
    Per-call options: ``timeout``, ``extra_headers`` and ``idempotency_key`` (always sent when given;
    retries after the request may have reached the server happen only when the environment honours keys).

    Returns the :class:`~paysdk.contracts.payment_links.PaymentLink` (``uid``, ``reference``,
    ``url``). Raises :class:`~paysdk.ValidationError` before sending anything when an argument is
    invalid, and :class:`~paysdk.APIError` subclasses for error answers (e.g.
    :class:`~paysdk.UnknownClientError`, :class:`~paysdk.AmountOutOfRangeError`).
    """
    fields = _fields(
        amount=amount,
        user_id=user_id,
        channel=channel,
        currency=currency,
        external_id=external_id,
        ads=ads,
        custom_keys=custom_keys,
    )
    # Every field is checked above (naming the argument), so no second pydantic pass: the hot path.
    body = PaymentLinkCreate.wire_from_checked(client=check_str(client, "client"), **fields)
    body["ads"] = fields["ads"]  # always sent, [] when unused (spec 2.1)
    op = Operation(
        method="POST", path="/transactions", auth="raw", json=body, parse=PaymentLink.model_validate
    )
    return apply_call_options(op, options)


def create_hook_operation(
    *,
    private_key: str | Secret,
    public_key: str,
    amount: Decimal | int | str,
    user_id: str,
    channel: Channel | ChannelName,
    client: str | None = None,
    currency: Currency | CurrencyCode | None = None,
    external_id: str | None = None,
    ads: Sequence[Any] | None = None,
    custom_keys: Mapping[str, Any] | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[PaymentLink]:
    """Create a payment link with the hook key pair (``POST /transactions-hook``, spec 5.2.5).

    Authenticated by ``private_key``/``public_key`` in the body; no ``Authorization`` header and no
    merchant token needed (the private key stays a :class:`~paysdk.Secret` until the request is built).
    ``client`` is optional (the key pair identifies the application; when given it must match). Other
    arguments, per-call options and errors as ``create``.
    """
    secret = check_secret(private_key, "private_key")
    fields = _fields(
        amount=amount,
        user_id=user_id,
        channel=channel,
        currency=currency,
        external_id=external_id,
        ads=ads,
        custom_keys=custom_keys,
    )
    slug = None if client is None else check_str(client, "client")
    try:
        body = PaymentLinkHookCreate(
            private_key="placeholder",  # the real value is put back as a Secret below
            public_key=check_str(public_key, "public_key"),
            client=slug,
            **fields,
        ).to_wire()
    except pydantic.ValidationError as exc:
        raise validation_error_from(exc) from None
    body["ads"] = fields["ads"]
    keys = HookKeys(secret, body.pop("publicKey"))
    del body["privateKey"]  # the keys are the call's credential, put in the body when it is sent
    op = Operation(
        method="POST",
        path="/transactions-hook",
        auth="hook_keys",
        credential=keys,
        json=body,
        parse=PaymentLink.model_validate,
    )
    return apply_call_options(op, options)


# unasync: begin
class AsyncPaymentLinks(AsyncResource[M]):
    """Payment links (``client.payment_links``): a hosted checkout page the customer pays on by card."""

    create = AsyncEndpoint(create_operation)
    create_with_hook_keys = AsyncEndpoint(create_hook_operation)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class PaymentLinks(Resource[M]):
    """Payment links (``client.payment_links``): a hosted checkout page the customer pays on by card."""

    create = Endpoint(create_operation)
    create_with_hook_keys = Endpoint(create_hook_operation)


# unasync: generated end
