"""Terminal (POS) payments: ``POST /terminal-payment`` and ``PATCH /terminal-payment/{id}`` (spec 1, 4.4;
decisions D183, D190-D192, D230-D232).

Authenticated with the merchant token (``Authorization``, D9). Money is ``Decimal`` (``int`` and decimal
strings accepted, never ``float``); the answer is a :class:`~paysdk.contracts.terminal.TerminalPayment`
whose ``status`` is a :class:`~paysdk.contracts.terminal.TerminalStatus` that tolerates values this
version does not know. A declined card is a payment (status ``declined``), not an error; a transition the
payment's state does not allow raises :class:`~paysdk.ConflictError` naming ``action`` or ``amount``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal, Unpack

from paysdk._errors import ValidationError
from paysdk._pipeline import CallOptions, Operation, PostCallOptions, apply_call_options
from paysdk.contracts.common import Currency, CurrencyCode
from paysdk.contracts.terminal import CaptureMode, TerminalPayment
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource
from paysdk.resources._validation import (
    check_amount,
    check_currency,
    check_optional_str,
    check_str,
    path_segment,
)

__all__ = [
    "AsyncTerminal",
    "Terminal",
    "capture_operation",
    "create_operation",
    "refund_operation",
    "void_operation",
]

_PATH = "/terminal-payment"


def _check_month(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 12:
        raise ValidationError("expiry_month", "must be an int from 1 to 12")
    return value


def _check_year(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 2000 <= value <= 2199:
        raise ValidationError("expiry_year", "must be a four-digit year (an int)")
    return value


def _check_card_number(value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError("card_number", "must be a string of 12 to 19 digits")
    digits = "".join(ch for ch in value if ch not in " -")
    if not (digits.isascii() and digits.isdigit() and 12 <= len(digits) <= 19):
        raise ValidationError("card_number", "must be 12 to 19 digits (spaces and dashes allowed)")
    return digits


def _check_cvv(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not (value.isascii() and value.isdigit() and 3 <= len(value) <= 4):
        raise ValidationError("cvv", "must be 3 or 4 digits")
    return value


def _check_mode(value: object) -> str:
    if isinstance(value, CaptureMode) and value.is_known:
        return value.value
    if value in ("automatic", "manual"):
        return str(value)
    raise ValidationError("capture_mode", "must be 'automatic' (one-step) or 'manual' (two-step)")


def create_operation(
    *,
    amount: Decimal | int | str,
    currency: Currency | CurrencyCode,
    terminal_id: str,
    card_number: str,
    expiry_month: int,
    expiry_year: int,
    cvv: str | None = None,
    capture_mode: CaptureMode | Literal["automatic", "manual"] = "automatic",
    reference: str | None = None,
    external_id: str | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[TerminalPayment]:
    """Authorize a card read at a terminal (``POST /terminal-payment``, ``201``, D190).

    ``capture_mode`` ``automatic`` (default) captures at once (one-step); ``manual`` only authorizes:
    capture within 7 days with ``capture``, or it lapses. The sandbox test card decides the outcome; a
    declined card answers a payment with status ``declined`` (``decline_reason`` says why). There is no
    ``installments`` argument: terminal payments take none (4.4). Per-call options ``timeout``,
    ``extra_headers``, ``idempotency_key``. Raises :class:`~paysdk.ValidationError` before sending when
    an argument is invalid; :class:`~paysdk.AmountOutOfRangeError` outside the client's range.
    """
    currency_code = check_currency(currency)
    if currency_code is None:
        raise ValidationError("currency", "is required")
    card: dict[str, Any] = {
        "number": _check_card_number(card_number),
        "expiryMonth": _check_month(expiry_month),
        "expiryYear": _check_year(expiry_year),
    }
    checked_cvv = _check_cvv(cvv)
    if checked_cvv is not None:
        card["cvv"] = checked_cvv
    body: dict[str, Any] = {
        "amount": check_amount(amount),
        "currency": currency_code.value,
        "terminalId": check_str(terminal_id, "terminal_id", max_length=64),
        "card": card,
        "captureMode": _check_mode(capture_mode),
    }
    checked_reference = check_optional_str(reference, "reference", max_length=64)
    if checked_reference is not None:
        body["reference"] = checked_reference
    checked_external = check_optional_str(external_id, "external_id")
    if checked_external is not None:
        body["externalId"] = checked_external
    op = Operation(method="POST", path=_PATH, auth="raw", json=body, parse=TerminalPayment.model_validate)
    return apply_call_options(op, options)


def _update(payment_id: str, action: str, amount: object, options: CallOptions) -> Operation[TerminalPayment]:
    body: dict[str, Any] = {"action": action}
    if amount is not None:
        body["amount"] = check_amount(amount)
    op = Operation(
        method="PATCH",
        path=f"{_PATH}/{path_segment(payment_id, 'payment_id')}",
        auth="raw",
        json=body,
        parse=TerminalPayment.model_validate,
    )
    return apply_call_options(op, options)


def capture_operation(
    payment_id: str, amount: Decimal | int | str | None = None, **options: Unpack[CallOptions]
) -> Operation[TerminalPayment]:
    """Capture an authorized payment (``PATCH /terminal-payment/{id}`` ``{action: capture}``, D191):
    ``amount`` at most the authorized amount (default all; the rest is released), once, within 7 days of
    the authorization. Otherwise :class:`~paysdk.ConflictError` naming ``action`` or ``amount``."""
    return _update(payment_id, "capture", amount, options)


def void_operation(payment_id: str, **options: Unpack[CallOptions]) -> Operation[TerminalPayment]:
    """Void a payment (``{action: void}``, D191): an authorization, or a capture the same business day,
    before the 23:30 UTC cutoff closes its batch. Afterwards: :class:`~paysdk.ConflictError` (refund it
    once settled)."""
    return _update(payment_id, "void", None, options)


def refund_operation(
    payment_id: str, amount: Decimal | int | str | None = None, **options: Unpack[CallOptions]
) -> Operation[TerminalPayment]:
    """Refund a settled (or paid-out) payment (``{action: refund}``, D191): ``amount`` at most captured
    less refunded (default the rest; the payment becomes ``refunded`` once nothing is left). Before
    settlement: :class:`~paysdk.ConflictError` naming ``action``."""
    return _update(payment_id, "refund", amount, options)


# unasync: begin
class AsyncTerminal(AsyncResource[M]):
    """Terminal (POS) payments (``client.terminal``): one- and two-step capture, void, refund."""

    create = AsyncEndpoint(create_operation)
    capture = AsyncEndpoint(capture_operation)
    void = AsyncEndpoint(void_operation)
    refund = AsyncEndpoint(refund_operation)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class Terminal(Resource[M]):
    """Terminal (POS) payments (``client.terminal``): one- and two-step capture, void, refund."""

    create = Endpoint(create_operation)
    capture = Endpoint(capture_operation)
    void = Endpoint(void_operation)
    refund = Endpoint(refund_operation)


# unasync: generated end
