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


# ------------------------------------------------------------------ every kind (D340)


def _subs_body(**overrides: object) -> bytes:
    from paysdk._json import dumps

    body: dict[str, object] = {
        "eventId": "evt_subs",
        "event": "subscriptionSuspended",
        "subUid": "sub_1",
        "status": "inactive",
        "planId": "plan_1",
        "client": "acme",
        "attempts": 3,
        "renewalDate": "2026-11-01",
        "lastChargeId": None,
        "reason": "Declined",
        "occurredAt": "2026-11-02T00:00:00Z",
    }
    body.update(overrides)
    return dumps({key: value for key, value in body.items() if value != "<drop>"})


def test_parse_callback_tells_the_kinds_apart_by_their_own_fields() -> None:
    from datetime import date

    from paysdk.callbacks import PaymentCallback, SubscriptionCallback, UnknownCallback, parse_callback

    payment = parse_callback(make_body(eventId="evt_pay"))
    assert isinstance(payment, PaymentCallback)
    assert (payment.kind, payment.event_type) == ("payment", "transaction.approved")
    subs = parse_callback(_subs_body())
    assert isinstance(subs, SubscriptionCallback)
    assert (subs.kind, subs.event_type, subs.renewal_date) == (
        "subscriptionSuspended",
        "subscription.suspended",
        date(2026, 11, 1),
    )
    assert subs.occurred_at_datetime("UTC").isoformat() == "2026-11-02T00:00:00+00:00"
    for body, kind, event_id in [
        (_subs_body(event="subscriptionRenewed"), "subscriptionRenewed", "evt_subs"),
        (b'{"eventId": "evt_x", "event": 7}', None, "evt_x"),
        (b'{"eventId": 5, "something": "else"}', None, None),
        (b"{}", None, None),
    ]:
        unknown = parse_callback(body)
        assert isinstance(unknown, UnknownCallback), body
        assert (unknown.kind, unknown.event_id) == (kind, event_id)
    assert "Declined" not in repr(parse_callback(_subs_body(event="new")))  # keys only, never values


@pytest.mark.parametrize("field", ["subUid", "occurredAt", "eventId"])
def test_a_known_kind_with_a_missing_field_is_refused_naming_it(field: str) -> None:
    from paysdk.callbacks import parse_callback

    with pytest.raises(CallbackPayloadError, match=rf"^{field}:"):
        parse_callback(_subs_body(**{field: "<drop>"}))
    with pytest.raises(CallbackPayloadError, match=r"^uid:"):
        parse_callback(make_body(uid=None))  # transactionId still names a payment


def test_parse_payload_stays_the_payment_parser() -> None:
    with pytest.raises(CallbackPayloadError, match=r"^reference:"):
        parse_payload(_subs_body())
