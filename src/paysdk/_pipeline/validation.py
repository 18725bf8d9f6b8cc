"""Validation of what the clients and the resource builders are given (timeouts, retries, tokens,
headers), and the per-call options applied to an operation."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final, TypeVar

import httpx

from paysdk._errors import ValidationError
from paysdk._pipeline.deadlines import attempt_seconds
from paysdk._pipeline.operations import IDEMPOTENCY_HEADER, RETRY_COUNT_HEADER, Operation, PostCallOptions
from paysdk._redact import SENSITIVE_HEADERS, is_sensitive_name
from paysdk._secret import Secret
from paysdk._types import NOT_GIVEN, NotGiven

__all__ = [
    "CALL_OPTION_NAMES",
    "MANAGED_HEADERS",
    "apply_call_options",
    "is_sensitive_header",
    "optional_timeout",
    "validate_headers",
    "validate_idempotency_key",
    "validate_max_response_bytes",
    "validate_max_retries",
    "validate_timeout",
    "validate_token",
    "validate_total_timeout",
]

T = TypeVar("T")


def validate_timeout(value: object, field_name: str = "timeout") -> httpx.Timeout:
    """A number of seconds or an :class:`httpx.Timeout`; ``None`` (no timeout at all) is refused."""
    if value is None:
        raise ValidationError(
            field_name, "None would disable every timeout; pass seconds or an httpx.Timeout"
        )
    if isinstance(value, httpx.Timeout):
        if value.connect is None or value.read is None:
            raise ValidationError(field_name, "connect and read timeouts must be set")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValidationError(field_name, "must be a number of seconds or an httpx.Timeout")
    seconds = float(value)
    if not seconds > 0 or seconds == float("inf"):
        raise ValidationError(field_name, "must be a positive, finite number of seconds")
    return httpx.Timeout(seconds)


def optional_timeout(value: float | httpx.Timeout | NotGiven) -> httpx.Timeout | None:
    """A per-call ``timeout=`` argument: ``NOT_GIVEN`` means the client's timeout."""
    if value is NOT_GIVEN or isinstance(value, NotGiven):
        return None
    return validate_timeout(value)


def validate_max_retries(value: object) -> int:
    """A non-negative ``int``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError("max_retries", "must be an int >= 0")
    return value


def validate_total_timeout(value: object, timeout: httpx.Timeout) -> float:
    """Seconds a whole call may take: positive, finite, and at least one attempt's ``timeout``."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValidationError("total_timeout", "must be a number of seconds")
    seconds = float(value)
    if not 0 < seconds < math.inf:
        raise ValidationError("total_timeout", "must be a positive, finite number of seconds")
    if seconds < attempt_seconds(timeout):
        raise ValidationError(
            "total_timeout",
            f"{seconds:g} s is shorter than one attempt's timeout ({attempt_seconds(timeout):g} s): "
            "raise total_timeout too",
        )
    return seconds


def validate_max_response_bytes(value: object) -> int:
    """A positive ``int``: the largest answer read, in bytes."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError("max_response_bytes", "must be an int >= 1 (bytes)")
    return value


_HEADER_VALUE = re.compile(r"[\x21-\x7e]+( [\x21-\x7e]+)*")


def validate_token(value: object) -> Secret | None:
    """The merchant token as a :class:`Secret` (``None``/empty: not configured). Never echoes it."""
    if value is None:
        return None
    if not isinstance(value, str | Secret):
        raise ValidationError("merchant_token", "must be a str or paysdk.Secret")
    text = value.reveal() if isinstance(value, Secret) else value
    secret = Secret(text)
    if not text:
        return None
    if not _HEADER_VALUE.fullmatch(text) or " " in text:
        raise ValidationError("merchant_token", "must be printable ASCII without spaces")
    return secret


def validate_idempotency_key(value: object) -> str | None:
    """A caller's idempotency key: 1-255 printable ASCII characters, or ``None``."""
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= 255 or not _HEADER_VALUE.fullmatch(value):
        raise ValidationError("idempotency_key", "must be 1-255 printable ASCII characters")
    return value


_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def validate_headers(
    value: Mapping[str, str] | None, field_name: str = "default_headers"
) -> tuple[tuple[str, str], ...]:
    """Headers (``default_headers`` of a client, ``extra_headers`` of a call) as pairs of ASCII
    strings: names are HTTP tokens, values hold no line break. Errors name ``field_name`` and the
    header, never its value."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValidationError(field_name, "must be a mapping of header names to values")
    pairs: list[tuple[str, str]] = []
    for name, text in value.items():
        if not isinstance(name, str) or not isinstance(text, str) or not name.isascii() or not text.isascii():
            raise ValidationError(field_name, "names and values must be ASCII strings")
        if not _HEADER_NAME.fullmatch(name):
            raise ValidationError(field_name, f"{name!r} is not a valid header name")
        if "\n" in text or "\r" in text or "\x00" in text:
            raise ValidationError(field_name, f"value of {name} holds a line break or NUL")
        pairs.append((name, text))
    return tuple(pairs)


#: Headers the SDK writes itself: ``extra_headers`` may not set them (use the matching argument).
MANAGED_HEADERS: Final = frozenset(
    {
        "authorization",
        "content-type",
        "content-length",
        "transfer-encoding",
        "host",
        IDEMPOTENCY_HEADER.lower(),
        RETRY_COUNT_HEADER.lower(),
    }
)
#: The names :func:`apply_call_options` knows (:class:`PostCallOptions`).
CALL_OPTION_NAMES: Final = frozenset(PostCallOptions.__annotations__)


def is_sensitive_header(name: str) -> bool:
    """Whether a header's value is masked in errors, logs and :class:`ResponseInfo`."""
    key = name.lower()
    return key in SENSITIVE_HEADERS or is_sensitive_name(key)


def apply_call_options(op: Operation[T], options: Mapping[str, Any]) -> Operation[T]:
    """``op`` with the per-call options (:class:`PostCallOptions`) applied: the ONE place they are checked
    and put on an operation. Every SDK method passes its ``**options`` here (through its operation
    builder); ``client.with_options(timeout=..., default_headers=...)`` uses the same validators, and
    :func:`build_request` lets a call's options win over the client's.

    Raises :class:`~paysdk.ValidationError` naming the option (``timeout``, ``idempotency_key`` on a
    call that is not a ``POST``, ``extra_headers`` with a bad or SDK-managed header) before anything is
    sent, and :class:`TypeError` for an unknown option, as Python does for an unknown keyword.
    """
    if not options:
        return op
    unknown = set(options) - CALL_OPTION_NAMES
    if unknown:
        raise TypeError(f"unexpected keyword argument {min(unknown)!r}")
    changes: dict[str, Any] = {}
    timeout = options.get("timeout", NOT_GIVEN)
    if not isinstance(timeout, NotGiven):
        changes["timeout"] = validate_timeout(timeout)
    key = options.get("idempotency_key")
    if key is not None:
        if op.method.upper() != "POST":
            raise ValidationError("idempotency_key", f"only POST calls take one; this call is {op.method}")
        changes["idempotency_key"] = validate_idempotency_key(key)
    extra = validate_headers(options.get("extra_headers"), "extra_headers")
    if extra:
        own = {name.lower() for name in op.headers or ()}
        for name, _ in extra:
            if name.lower() in MANAGED_HEADERS or name.lower() in own:
                raise ValidationError("extra_headers", f"{name} is set by the SDK for this call")
        changes["extra_headers"] = tuple(
            (name, Secret(text) if is_sensitive_header(name) else text) for name, text in extra
        )
    return dataclasses.replace(op, **changes) if changes else op
