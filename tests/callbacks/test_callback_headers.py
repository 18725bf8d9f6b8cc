"""verify_header: static header auth (spec 5.4, D15) without leaking values."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paysdk._errors import CallbackAuthenticationError
from paysdk._secret import Secret, constant_time_equals
from paysdk.callbacks import DEFAULT_HEADER_NAME, CallbackReceiver, verify_header

from ._support import OLD_TOKEN, TOKEN

NAME = DEFAULT_HEADER_NAME


def _refused(headers: dict[str, str], accepted: str | Secret | list[str | Secret] = TOKEN) -> str:
    with pytest.raises(CallbackAuthenticationError) as info:
        verify_header(headers, header_name=NAME, accepted_values=accepted)
    text = f"{info.value} {info.value!r} {info.value.args}"
    for secret in (TOKEN, OLD_TOKEN, *(value for value in headers.values() if value)):
        assert secret not in text
    return str(info.value)


def test_matching_value_is_accepted() -> None:
    verify_header({NAME: TOKEN}, header_name=NAME, accepted_values=TOKEN)
    verify_header({NAME: TOKEN}, header_name=NAME, accepted_values=Secret(TOKEN))


def test_mismatch_is_refused_without_showing_values() -> None:
    message = _refused({NAME: "wrong-value-123"})
    assert "does not match" in message
    assert NAME in message


def test_prefix_of_the_value_is_refused() -> None:
    _refused({NAME: TOKEN[:-1]})
    _refused({NAME: TOKEN + "0"})
    _refused({NAME: ""})


def test_missing_header_is_refused() -> None:
    assert "missing" in _refused({"X-Other": TOKEN})


@pytest.mark.parametrize("spelling", ["x-callback-token", "X-CALLBACK-TOKEN", "x-Callback-Token"])
def test_header_name_is_case_insensitive(spelling: str) -> None:
    verify_header({spelling: TOKEN}, header_name=NAME, accepted_values=TOKEN)
    verify_header({NAME: TOKEN}, header_name=spelling, accepted_values=TOKEN)


def test_rotation_accepts_both_values() -> None:
    accepted: list[str | Secret] = [Secret(TOKEN), OLD_TOKEN]
    verify_header({NAME: TOKEN}, header_name=NAME, accepted_values=accepted)
    verify_header({NAME: OLD_TOKEN}, header_name=NAME, accepted_values=accepted)
    _refused({NAME: "neither"}, accepted)


def test_rotation_compares_every_value_without_early_exit() -> None:
    calls: list[tuple[bytes | str, bytes | str]] = []

    def spy(a: str | bytes, b: str | bytes) -> bool:
        calls.append((a, b))
        return constant_time_equals(a, b)

    with mock.patch("paysdk.callbacks._headers.constant_time_equals", spy):
        verify_header({NAME: TOKEN}, header_name=NAME, accepted_values=[TOKEN, OLD_TOKEN, "third"])
    assert len(calls) == 3  # matched on the first, still compared the other two


@pytest.mark.parametrize("value", ["tökén", "caf\u00e9", "\u2603", "abc\udcff"])
def test_non_ascii_value_is_refused(value: str) -> None:
    assert "not ASCII" in _refused({NAME: value})


def test_header_sent_twice_with_different_values_is_refused() -> None:
    message = _refused({NAME: TOKEN, NAME.lower(): "other"})
    assert "more than once" in message


def test_accepted_values_are_checked_at_configuration() -> None:
    with pytest.raises(ValueError, match="at least one"):
        verify_header({NAME: TOKEN}, header_name=NAME, accepted_values=[])
    with pytest.raises(ValueError, match="empty") as empty:
        CallbackReceiver(NAME, [TOKEN, ""])
    assert TOKEN not in str(empty.value)
    with pytest.raises(ValueError, match="ASCII") as non_ascii:
        CallbackReceiver(NAME, ["sécret-value"])
    assert "sécret" not in str(non_ascii.value)
    with pytest.raises(ValueError, match="header_name"):
        verify_header({NAME: TOKEN}, header_name=" ", accepted_values=TOKEN)


def test_receiver_repr_hides_accepted_values() -> None:
    receiver = CallbackReceiver(NAME, [TOKEN, Secret(OLD_TOKEN)])
    text = f"{receiver!r} {receiver}"
    assert TOKEN not in text
    assert OLD_TOKEN not in text
    assert "2 secret(s)" in text


_MESSAGES = {
    f"callback header {NAME!r} {reason}"
    for reason in ("is missing", "is not ASCII", "does not match any accepted value")
}


@given(presented=st.text(max_size=64))
def test_errors_are_fixed_sentences_whatever_is_presented(presented: str) -> None:
    if presented == TOKEN:
        return
    with pytest.raises(CallbackAuthenticationError) as info:
        verify_header({NAME: presented}, header_name=NAME, accepted_values=TOKEN)
    assert str(info.value) in _MESSAGES  # nothing presented or expected is interpolated
