"""The terminal resource's pure parts: the operation builders (what they send, every argument checked
before anything is sent, naming it) and the tolerant status enums of the contract (D190, D230)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import paysdk
from paysdk.contracts.terminal import CaptureMode, TerminalPayment, TerminalStatus
from paysdk.resources import terminal

GOOD: dict[str, Any] = {
    "amount": "10.50",
    "currency": "GTQ",
    "terminal_id": "POS-1",
    "card_number": "4242 4242 4242 4242",
    "expiry_month": 12,
    "expiry_year": 2030,
}


def test_create_sends_the_documented_body() -> None:
    op = terminal.create_operation(
        **GOOD, cvv="123", capture_mode=CaptureMode.MANUAL, reference="R", external_id="E"
    )
    assert (op.method, op.path, op.auth) == ("POST", "/terminal-payment", "raw")
    assert op.json == {
        "amount": Decimal("10.50"),
        "currency": "GTQ",
        "terminalId": "POS-1",
        "card": {"number": "4242424242424242", "expiryMonth": 12, "expiryYear": 2030, "cvv": "123"},
        "captureMode": "manual",
        "reference": "R",
        "externalId": "E",
    }
    plain = terminal.create_operation(**GOOD)
    assert plain.json is not None
    assert plain.json["captureMode"] == "automatic"
    assert "installments" not in plain.json


def test_patch_operations() -> None:
    capture = terminal.capture_operation("tpm_1", Decimal("5"))
    assert (capture.method, capture.path, capture.json) == (
        "PATCH",
        "/terminal-payment/tpm_1",
        {"action": "capture", "amount": Decimal("5")},
    )
    assert terminal.capture_operation("tpm_1").json == {"action": "capture"}
    assert terminal.void_operation("tpm/1").path == "/terminal-payment/tpm%2F1"
    assert terminal.refund_operation("tpm_1", "2.25").json == {"action": "refund", "amount": Decimal("2.25")}


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"amount": 1.5}, "amount"),
        ({"amount": "0"}, "amount"),
        ({"amount": "1.234"}, "amount"),
        ({"currency": None}, "currency"),
        ({"currency": "EUR"}, "currency"),
        ({"terminal_id": ""}, "terminal_id"),
        ({"terminal_id": "x" * 65}, "terminal_id"),
        ({"card_number": "4242"}, "card_number"),
        ({"card_number": 4242424242424242}, "card_number"),
        ({"card_number": "4242 4242 4242 424x"}, "card_number"),
        ({"expiry_month": 0}, "expiry_month"),
        ({"expiry_month": True}, "expiry_month"),
        ({"expiry_month": "12"}, "expiry_month"),
        ({"expiry_year": 30}, "expiry_year"),
        ({"cvv": "12"}, "cvv"),
        ({"cvv": 123}, "cvv"),
        ({"capture_mode": "later"}, "capture_mode"),
        ({"reference": "r" * 65}, "reference"),
        ({"external_id": "x" * 256}, "external_id"),
    ],
)
def test_create_refuses_bad_arguments_naming_them(overrides: dict[str, Any], field: str) -> None:
    with pytest.raises(paysdk.ValidationError) as refused:
        terminal.create_operation(**{**GOOD, **overrides})
    assert refused.value.field == field
    assert "4242" not in str(refused.value)


def test_patch_refuses_bad_arguments_naming_them() -> None:
    for build in (terminal.capture_operation, terminal.refund_operation):
        with pytest.raises(paysdk.ValidationError) as amount:
            build("tpm_1", 2.5)  # type: ignore[arg-type]
        assert amount.value.field == "amount"
    with pytest.raises(paysdk.ValidationError) as missing:
        terminal.void_operation("")
    assert missing.value.field == "payment_id"


def _payment(**overrides: Any) -> TerminalPayment:
    data = {
        "id": "tpm_1",
        "status": "captured",
        "captureMode": "automatic",
        "amount": 10.5,
        "currency": "GTQ",
        "capturedAmount": 10.5,
        "refundedAmount": 0,
        "terminalId": "POS-1",
        "cardLast4": "4242",
        "affiliation": "1234567890",
        "createdAt": "2026-11-23T10:00:00Z",
        "settlementDate": "2026-11-24",
    }
    return TerminalPayment.model_validate({**data, **overrides})


def test_statuses_tolerate_values_this_version_does_not_know() -> None:
    known = _payment()
    assert known.status is TerminalStatus.CAPTURED
    assert known.status.is_known
    assert str(known.status) == "captured"
    newer = _payment(status="chargeback_pending", captureMode="deferred", brandNewField=1)
    assert newer.status.name == "UNKNOWN"
    assert newer.status.value == "chargeback_pending"
    assert newer.status == "chargeback_pending"
    assert not newer.status.is_known
    assert newer.capture_mode.value == "deferred"
    assert not newer.capture_mode.is_known
    assert TerminalStatus("paid_out") is TerminalStatus.PAID_OUT
    assert [member.value for member in TerminalStatus] == [
        "authorized",
        "captured",
        "settled",
        "paid_out",
        "refunded",
        "voided",
        "lapsed",
        "declined",
    ]
    with pytest.raises(ValueError, match="not a valid"):
        TerminalStatus(3)  # type: ignore[arg-type]


def test_money_is_decimal() -> None:
    payment = _payment()
    assert payment.amount == Decimal("10.5")
    assert isinstance(payment.refunded_amount, Decimal)
    assert paysdk.TerminalPayment is TerminalPayment
    assert paysdk.TerminalStatus is TerminalStatus
    assert paysdk.CaptureMode is CaptureMode
