"""The exact-JSON layer and the Secret type, on which every component relies."""

from __future__ import annotations

import json
import pickle
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paysdk import _json
from paysdk._secret import Secret, constant_time_equals
from paysdk.contracts.common import Channel, parse_money

decimals = st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-(10**12), max_value=10**12)
json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | decimals | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_dumps_then_loads_is_exact(value: Any) -> None:
    assert _json.loads(_json.dumps(value)) == value


@given(json_values)
def test_fast_and_reference_encoders_agree(value: Any) -> None:
    assert _json.dumps(value) == _json._slow_dumps(value)


@given(decimals)
def test_decimal_digits_are_kept(value: Decimal) -> None:
    text = _json.dumps({"amount": value})
    assert text == b'{"amount":' + format(value, "f").encode() + b"}"
    assert _json.loads(text)["amount"] == value


def test_numbers_parse_as_decimal_never_float() -> None:
    parsed = _json.loads(b'{"a": 0.1, "b": 10.50, "c": 3}')
    assert parsed == {"a": Decimal("0.1"), "b": Decimal("10.50"), "c": 3}
    assert all(not isinstance(v, float) for v in parsed.values())


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": -Infinity}',
        b'{"a": 1e400}',
        b'{"a": 1' + b"0" * 80 + b"}",
        b"\xff\xfe{}",
        b'{"a": ',
        b"",
    ],
)
def test_loads_refuses_what_no_amount_can_be(body: bytes) -> None:
    with pytest.raises(_json.JSONDecodeError):
        _json.loads(body)


@given(json_values, st.sampled_from(["", " ", "\n\t"]))
def test_loads_reads_what_json_loads_reads(value: Any, space: str) -> None:
    """The kept decoders (made once, not per call) read any document as ``json.loads`` with the same
    hooks would, whitespace around it included; the duplicate-key one too where keys differ."""
    text = space + _json.dumps(value).decode() + space
    expected = json.loads(text, parse_float=Decimal)
    assert _json.loads(text) == expected
    assert _json.loads(text.encode()) == expected
    assert _json.loads(text, unique_keys=True) == expected  # a dict's keys are unique


def test_loads_refuses_a_byte_order_mark_and_a_duplicate_key_only_when_asked() -> None:
    for body in ("\ufeff{}", b"\xef\xbb\xbf{}"):
        with pytest.raises(_json.JSONDecodeError, match="Unexpected UTF-8 BOM"):
            _json.loads(body)
    assert _json.loads('{"a": 1, "a": 2}') == {"a": 2}
    with pytest.raises(_json.DuplicateKeyError, match="'a'"):
        _json.loads('{"a": 1, "a": 2}', unique_keys=True)
    assert _json.loads('{"a": 1, "b": {"a": 2}}', unique_keys=True) == {"a": 1, "b": {"a": 2}}


def test_dumps_writes_enums_as_values_and_refuses_non_finite() -> None:
    assert _json.dumps({"channel": Channel.WA}) == b'{"channel":"wa"}'
    with pytest.raises(ValueError, match="non-finite"):
        _json.dumps({"a": Decimal("NaN")})
    with pytest.raises(ValueError, match="JSON"):
        _json.dumps({"a": float("inf")})


def test_dumps_survives_strings_that_look_like_its_marker() -> None:
    value = {"note": "\x00paysdk-decimal\x00", "amount": Decimal("1.10")}
    assert _json.loads(_json.dumps(value)) == value


@pytest.mark.parametrize("bad", [1.5, True, float("nan"), "NaN", "abc", Decimal("Infinity"), 0, -1, "0.001"])
def test_parse_money_refuses(bad: object) -> None:
    with pytest.raises(ValueError, match="amount"):
        parse_money(bad)


def test_parse_money_accepts_exact_forms() -> None:
    assert parse_money("10.50") == Decimal("10.50")
    assert parse_money(7) == Decimal(7)
    assert parse_money(Decimal("1.100")) == Decimal("1.100")


def test_secret_never_shows_itself() -> None:
    token = "f" * 64
    secret = Secret(token)
    for shown in (repr(secret), str(secret), f"{secret}", f"{secret!r}", "{}".format(secret)):  # noqa: UP032
        assert token not in shown
    assert secret.reveal() == token
    assert secret == token
    assert secret == Secret(token)
    assert secret != "g" * 64
    with pytest.raises(TypeError):
        pickle.dumps(secret)


def test_constant_time_equals_handles_non_ascii() -> None:
    assert constant_time_equals("clé", "clé")
    assert not constant_time_equals("clé", "cle")
    assert constant_time_equals(b"abc", "abc")
