"""Client-side validation: bad arguments raise ValidationError naming the field, and nothing is sent."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import paysdk
from paysdk.resources import payment_links, sandbox, wallet

from .conftest import HarnessFactory


def recording(sent: list[httpx.Request]) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    return handler


GOOD: dict[str, Any] = {
    "amount": Decimal("10.10"),
    "user_id": "+50223456789",
    "channel": "wa",
    "client": "shop",
}

BAD_LINK_ARGS = [
    ("user_id", "12345"),
    ("user_id", "+1 555"),
    ("user_id", "50223456789"),  # no "+"
    ("user_id", "0050223456789"),  # an international prefix instead of "+"
    ("user_id", "+0502234567"),  # no country code starts with 0
    ("user_id", "+1234567890123456"),  # 16 digits: E.164 allows 15
    ("user_id", "+1 800 FLOWERS"),  # letters
    ("user_id", "+502 2345 6789 ext. 12"),  # an extension
    ("user_id", "++50223456789"),
    ("user_id", "+"),
    ("user_id", "not a phone"),
    ("user_id", ""),
    ("user_id", 50223456789),
    ("amount", 10.1),
    ("amount", float("nan")),
    ("amount", Decimal("NaN")),
    ("amount", Decimal("Infinity")),
    ("amount", "NaN"),
    ("amount", "ten"),
    ("amount", 0),
    ("amount", Decimal("-1")),
    ("amount", Decimal("10.001")),
    ("amount", True),
    ("amount", None),
    ("channel", "telegram"),
    ("channel", "WA"),
    ("channel", None),
    ("currency", "EUR"),
    ("currency", "gtq"),
    ("client", ""),
    ("client", "   "),
    ("client", None),
    ("external_id", 12),
    ("external_id", "x" * 256),
    ("ads", "none"),
    ("custom_keys", ["a"]),
    ("custom_keys", {1: "a"}),
    ("idempotency_key", ""),
    ("idempotency_key", "has\nnewline"),
    ("idempotency_key", "é"),
    ("timeout", None),
    ("timeout", -1),
    ("timeout", float("inf")),
]


@pytest.mark.parametrize(("field", "value"), BAD_LINK_ARGS)
def test_payment_link_arguments(make_harness: HarnessFactory, field: str, value: Any) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    harness = make_harness(handler)
    with pytest.raises(paysdk.ValidationError) as info:
        harness.call(lambda c: c.payment_links.create(**{**GOOD, field: value}))
    assert info.value.field == field
    assert isinstance(info.value, ValueError)
    assert field in str(info.value)
    assert sent == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("user_id", ""),
        ("user_id", "   "),
        ("amount", 1.5),
        ("channel", "fax"),
        ("currency", "BTC"),
        ("client", ""),
    ],
)
def test_alternative_payment_arguments(make_harness: HarnessFactory, field: str, value: Any) -> None:
    sent: list[httpx.Request] = []
    harness = make_harness(recording(sent))
    args = {**GOOD, field: value}
    with pytest.raises(paysdk.ValidationError) as info:
        harness.call(lambda c: c.alternative_payments.create(**args))
    assert info.value.field == field
    assert sent == []


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: c.alternative_payments.process("", processor="akisiQR"), "uid"),
        (lambda c: c.alternative_payments.process("u1", processor=""), "processor"),
        (lambda c: c.alternative_payments.process("u1", processor="zigi", data=[1]), "data"),
        (lambda c: c.alternative_payments.create_payment_intent("u1", processor=" "), "processor"),
        (lambda c: c.alternative_payments.dismiss(None), "uid"),
        (
            lambda c: c.payment_links.create_with_hook_keys(private_key="", public_key="p", **GOOD),
            "private_key",
        ),
        (
            lambda c: c.payment_links.create_with_hook_keys(private_key="k", public_key="", **GOOD),
            "public_key",
        ),
    ],
)
def test_other_arguments(make_harness: HarnessFactory, call: Any, field: str) -> None:
    sent: list[httpx.Request] = []
    harness = make_harness(recording(sent))
    with pytest.raises(paysdk.ValidationError) as info:
        harness.call(call)
    assert info.value.field == field
    assert sent == []


@pytest.mark.parametrize(
    ("given_phone", "e164"),
    [
        ("+50223456789", "+50223456789"),
        ("+502 2345 6789", "+50223456789"),
        ("+1 (650) 253-0000", "+16502530000"),
        (" +502.2345.6789 ", "+50223456789"),
        ("+502\u00a02345\u20136789", "+50223456789"),  # a no-break space and an en dash, as pasted
        ("+290 1234", "+2901234"),  # 7 digits: Saint Helena, among the shortest in service
        ("+999123456789", "+999123456789"),  # a shape the SDK takes; no country has +999: the server's 409
        ("+50200000000", "+50200000000"),  # possible, not valid: the server decides (D525)
    ],
)
def test_phone_reformatted(given_phone: str, e164: str) -> None:
    op = payment_links.create_operation(**{**GOOD, "user_id": given_phone})
    assert op.json["userId"] == e164


def test_channel_and_currency_enums_accepted() -> None:
    from paysdk.contracts.common import Channel, Currency

    op = payment_links.create_operation(**{**GOOD, "channel": Channel.EMAIL, "currency": Currency.MXN})
    assert (op.json["channel"], op.json["currency"]) == ("email", "MXN")


@given(st.decimals(min_value=Decimal("0.01"), max_value=Decimal("99999999"), places=2))
def test_valid_amounts_sent_exactly(amount: Decimal) -> None:
    from paysdk import _json
    from paysdk._pipeline import ClientConfig, build_request

    from .support import TOKEN, keyed_environment

    op = payment_links.create_operation(**{**GOOD, "amount": amount})
    request = build_request(op, ClientConfig(keyed_environment(), paysdk.Secret(TOKEN)), None)
    sent = _json.loads(request.content)["amount"]
    assert Decimal(sent) == amount
    assert str(sent) == str(amount)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_floats_always_refused(amount: float) -> None:
    with pytest.raises(paysdk.ValidationError):
        payment_links.create_operation(**{**GOOD, "amount": amount})


def test_validation_error_does_not_echo_secret_values() -> None:
    secret = "super-secret-private-key"
    with pytest.raises(paysdk.ValidationError) as info:
        payment_links.create_hook_operation(
            private_key=secret, public_key="p", amount=1, user_id="bad", channel="wa"
        )
    assert secret not in str(info.value)


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: wallet.user_login_operation("an\u202ea", "pw"), "username"),
        (lambda: wallet.user_login_operation("\u200b", "pw"), "username"),
        (lambda: wallet.otp_request_operation("no-at.example.com"), "email"),
        (lambda: wallet.otp_verify_operation("a@@example.com", "123456"), "email"),
        (lambda: wallet.password_reset_operation("a b@example.com", "pw123456", "pw123456", "t"), "email"),
        (lambda: sandbox.create_user_operation("shop", "an\u200ba", "a@example.com", "pw123456"), "username"),
        (lambda: sandbox.create_user_operation("shop", "ana", "a@localhost", "pw123456"), "email"),
    ],
)
def test_wallet_usernames_and_emails_checked_before_sending(build: Callable[[], Any], field: str) -> None:
    """The SDK applies the server's username and email rules (D96) before a request is built."""
    with pytest.raises(paysdk.ValidationError) as info:
        build()
    assert info.value.field == field


def test_wallet_usernames_and_emails_accepted() -> None:
    assert wallet.user_login_operation("ＡＮＡ", "pw").json["username"] == "ＡＮＡ"
    assert wallet.otp_request_operation(" josé@correo.example.gt ").json["email"] == "josé@correo.example.gt"
