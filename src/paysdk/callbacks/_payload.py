"""Parsing a callback body into its kind's model (spec 2.4; decisions D5, D6, D18, D20, D87, D340)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from paysdk._errors import CallbackPayloadError
from paysdk._json import DuplicateKeyError, JSONDecodeError, loads
from paysdk.contracts.callbacks import (
    Callback,
    PaymentCallback,
    SubscriptionCallback,
    UnknownCallback,
    callback_kind,
    callback_model,
)

__all__ = ["MAX_BODY_BYTES", "parse_callback", "parse_payload"]

#: A callback body is a few hundred bytes; anything beyond this is refused before parsing.
MAX_BODY_BYTES = 64 * 1024


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "body"


def _object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, Decimal-exact, with no key twice (D87)."""
    if not isinstance(body, bytes | bytearray | memoryview):
        raise TypeError("expected the raw body as bytes")
    raw = bytes(body)
    if len(raw) > MAX_BODY_BYTES:
        raise CallbackPayloadError(f"body: larger than {MAX_BODY_BYTES} bytes")
    try:
        data: Any = loads(raw, unique_keys=True)
    except DuplicateKeyError as exc:
        raise CallbackPayloadError(f"{exc.key[:40]}: appears more than once in one object") from None
    except JSONDecodeError as exc:
        raise CallbackPayloadError(f"body: not a valid JSON document ({exc})") from None
    if not isinstance(data, dict):
        raise CallbackPayloadError("body: must be a JSON object")
    return data


M = TypeVar("M", bound=BaseModel)


def _validated(model: type[M], data: dict[str, Any]) -> M:
    try:
        return model.model_validate(data)
    except PydanticValidationError as exc:
        problems = "; ".join(f"{_location(err['loc'])}: {err['msg']}" for err in exc.errors())
        raise CallbackPayloadError(problems) from None


def _payment(data: dict[str, Any]) -> PaymentCallback:
    amount = data.get("amount")
    if "amount" in data and (isinstance(amount, bool) or not isinstance(amount, int | Decimal)):
        raise CallbackPayloadError("amount: must be a JSON number")
    payload = _validated(PaymentCallback, data)
    try:
        payload.created_at_datetime()
    except ValueError:
        raise CallbackPayloadError("createdAt: must be a date and time DD/MM/YYYY HH:MM:SS") from None
    return payload


def parse_callback(body: bytes) -> Callback:
    """Parse the raw body of any callback into its kind's model (D340).

    The kind comes from the body's own fields (:func:`~paysdk.contracts.callbacks.callback_kind`):
    ``event`` when present (``"subscriptionSuspended"``: a
    :class:`~paysdk.contracts.callbacks.SubscriptionCallback`), else the payment callback of spec 2.4
    (:class:`~paysdk.contracts.callbacks.PaymentCallback`, checked as :func:`parse_payload` does) when it
    carries ``transactionId`` or ``uid``. Any other JSON object is an
    :class:`~paysdk.contracts.callbacks.UnknownCallback` holding the parsed body: never an error, so a
    kind this version does not know is acknowledged rather than retried for 7 days. A known kind with a
    missing or malformed field, and a body that is not a JSON object, raise
    :class:`~paysdk.CallbackPayloadError` naming the field (values are not echoed).
    """
    data = _object(body)
    model = callback_model(callback_kind(data))
    if model is PaymentCallback:
        return _payment(data)
    if model is SubscriptionCallback:
        return _validated(SubscriptionCallback, data)
    return UnknownCallback(data)


def parse_payload(body: bytes) -> PaymentCallback:
    """Parse the raw body of a payment callback into a :class:`~paysdk.contracts.callbacks.PaymentCallback`.

    Pass the bytes exactly as received. Numbers are parsed as ``Decimal`` (``amount`` is exact, never a
    ``float``); ``amount`` must be a JSON number and ``createdAt`` must read ``DD/MM/YYYY HH:MM:SS``.
    Raises :class:`~paysdk.CallbackPayloadError` whose message starts with the offending field
    (``body`` for an undecodable or non-object body); input values are not echoed. A key sent twice in
    one object is refused, naming the key (D87): which of the two values counts would otherwise
    depend on the parser. For a body of any kind (a ``subsCallback`` too) use :func:`parse_callback`.
    """
    return _payment(_object(body))
