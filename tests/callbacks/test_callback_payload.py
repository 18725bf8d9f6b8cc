"""parse_payload: the body of spec 2.4 with exact amounts and D6 dates."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from paysdk._errors import CallbackPayloadError
from paysdk.callbacks import MAX_BODY_BYTES, CallbackPayload, parse_payload

from ._support import make_body


def test_valid_body_parses_with_exact_amount() -> None:
    payload = parse_payload(make_body(amount=Decimal("10.50"), eventId="evt_1"))
    assert isinstance(payload, CallbackPayload)
    assert payload.event_id == "evt_1"
    assert payload.amount == Decimal("10.50")
    assert isinstance(payload.amount, Decimal)
    assert str(payload.amount) == "10.50"
    assert payload.external_id == "order-42"
    assert payload.payment_method_type == "visa"


def test_amount_digits_are_never_rounded_through_float() -> None:
    body = make_body().replace(b'"amount":10.50', b'"amount":12345678901.37')
    assert parse_payload(body).amount == Decimal("12345678901.37")
    assert parse_payload(make_body(amount=7)).amount == Decimal(7)


def test_created_at_is_day_first_in_guatemala_time() -> None:
    payload = parse_payload(make_body(createdAt="02/03/2025 14:05:09"))
    moment = payload.created_at_datetime("America/Guatemala")
    assert moment == datetime(2025, 3, 2, 14, 5, 9, tzinfo=ZoneInfo("America/Guatemala"))
    assert moment.utcoffset() is not None
    assert moment.utcoffset() == ZoneInfo("America/Guatemala").utcoffset(datetime(2025, 3, 2))
    assert moment.isoformat() == "2025-03-02T14:05:09-06:00"


@pytest.mark.parametrize("field", ["eventId", "reference", "amount", "createdAt", "transactionId", "uid"])
def test_missing_field_is_named(field: str) -> None:
    with pytest.raises(CallbackPayloadError) as info:
        parse_payload(make_body(**{field: None}))
    assert str(info.value).startswith(f"{field}:")


def test_optional_fields_may_be_absent() -> None:
    payload = parse_payload(make_body(externalId=None, paymentMethodType=None))
    assert payload.external_id is None


@pytest.mark.parametrize("amount", ["10.50", True, None, [1]])
def test_amount_must_be_a_json_number(amount: object) -> None:
    body = make_body().replace(b'"amount":10.50', b'"amount":' + _json(amount))
    with pytest.raises(CallbackPayloadError, match=r"^amount:"):
        parse_payload(body)


def _json(value: object) -> bytes:
    from paysdk._json import dumps

    return dumps(value)


@pytest.mark.parametrize(
    "created_at", ["2025-01-31 10:00:00", "31/13/2025 10:00:00", "31/01/2025", "13/31/2025 10:00:00"]
)
def test_bad_created_at_is_named(created_at: str) -> None:
    with pytest.raises(CallbackPayloadError, match=r"^createdAt:"):
        parse_payload(make_body(createdAt=created_at))


def test_wrong_type_is_named() -> None:
    with pytest.raises(CallbackPayloadError, match=r"^reference:"):
        parse_payload(make_body(reference=12))


@pytest.mark.parametrize(
    "body",
    [
        b"\xff\xfe{}",  # not UTF-8
        b'{"amount": NaN}',
        b'{"amount": Infinity}',
        b'{"amount": 1e400}',
        b"{not json",
        b"",
    ],
)
def test_undecodable_body_is_refused_as_body(body: bytes) -> None:
    with pytest.raises(CallbackPayloadError, match=r"^body:"):
        parse_payload(body)


def test_nan_inside_a_valid_body_is_refused() -> None:
    body = make_body().replace(b'"amount":10.50', b'"amount":NaN')
    with pytest.raises(CallbackPayloadError, match=r"^body:"):
        parse_payload(body)


@pytest.mark.parametrize("body", [b"[]", b'"text"', b"12", b"null"])
def test_non_object_body_is_refused(body: bytes) -> None:
    with pytest.raises(CallbackPayloadError, match="JSON object"):
        parse_payload(body)


def test_oversized_body_is_refused_before_parsing() -> None:
    with pytest.raises(CallbackPayloadError, match=r"^body:"):
        parse_payload(b" " * (MAX_BODY_BYTES + 1))


def test_error_does_not_echo_input_values() -> None:
    with pytest.raises(CallbackPayloadError) as info:
        parse_payload(make_body(reference=["very-private-looking-value"]))
    assert "very-private-looking-value" not in str(info.value)
    assert info.value.__cause__ is None


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        (b', "amount": 99999.00', "amount"),  # the last one would win: a different amount
        (b', "status": "approved"', "status"),
        (b', "customKeys": {"order": "1", "order": "2"}', "order"),  # nested objects too
    ],
)
def test_a_key_sent_twice_is_refused_naming_it(extra: bytes, key: str) -> None:
    body = make_body(amount=Decimal("10.50"), status="declined", customKeys={})
    if key == "order":
        body = body.replace(b'"customKeys":{}', extra.lstrip(b", "))
    else:
        body = body[:-1] + extra + b"}"
    with pytest.raises(CallbackPayloadError, match=rf"^{key}: appears more than once"):
        parse_payload(body)
    # The same document without the repeat parses.
    if key != "order":
        assert parse_payload(body.replace(extra, b"")).amount == Decimal("10.50")
