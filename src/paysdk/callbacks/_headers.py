"""Static-header authentication of the merchant callback (spec 5.4; decision D15)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from paysdk._errors import CallbackAuthenticationError
from paysdk._secret import Secret, constant_time_equals

__all__ = ["DEFAULT_HEADER_NAME", "AcceptedValues", "normalize_accepted_values", "verify_header"]

#: The header the reference server sends when the client registered no other name (decision D15).
DEFAULT_HEADER_NAME = "X-Callback-Token"

#: One accepted header value, or several during a rotation (old and new accepted at once).
AcceptedValues = str | Secret | Sequence[str | Secret]


def _digest(value: str) -> bytes:
    # Comparing fixed-size digests keeps the comparison time independent of the values' lengths.
    return hashlib.sha256(value.encode("ascii")).digest()


def normalize_accepted_values(accepted_values: AcceptedValues) -> tuple[Secret, ...]:
    """Check the configured values and wrap each in :class:`Secret`.

    Raises ``ValueError`` (never showing a value) when there is none, or one is empty or not ASCII:
    HTTP header values are ASCII, so such a value could never match.
    """
    if isinstance(accepted_values, str | Secret):
        items: Sequence[str | Secret] = [accepted_values]
    else:
        items = list(accepted_values)
    if not items:
        raise ValueError("accepted_values: at least one accepted header value is required")
    secrets: list[Secret] = []
    for index, item in enumerate(items):
        if not isinstance(item, str | Secret):
            raise TypeError(f"accepted_values[{index}]: must be a str or Secret")
        secret = item if isinstance(item, Secret) else Secret(item)
        text = secret.reveal()
        if not text:
            raise ValueError(f"accepted_values[{index}]: must not be empty")
        if not text.isascii():
            raise ValueError(f"accepted_values[{index}]: must be ASCII (header values are ASCII)")
        secrets.append(secret)
    return tuple(secrets)


def _check_header_name(header_name: str) -> str:
    if not isinstance(header_name, str) or not header_name.strip():
        raise ValueError("header_name: must be a non-empty header name")
    return header_name.strip()


def _presented_values(headers: Mapping[str, str], header_name: str) -> list[str]:
    wanted = header_name.lower()
    # items() rather than a lookup: plain dicts are case-sensitive, and multi-dicts (Starlette's
    # Headers) list a header sent twice once per occurrence.
    return [value for key, value in headers.items() if isinstance(key, str) and key.lower() == wanted]


def verify_header(
    headers: Mapping[str, str],
    *,
    header_name: str,
    accepted_values: AcceptedValues,
) -> None:
    """Check that the callback carries ``header_name`` with one of ``accepted_values``.

    The header name is matched case-insensitively. The presented value is compared in constant time
    with *every* accepted value (no early exit), so several values can be accepted during a rotation
    without revealing which one matched. Raises
    :class:`~paysdk.CallbackAuthenticationError` when the header is missing, sent more than once with
    different values, not ASCII, or matches none; the message names the header, never a value.
    """
    name = _check_header_name(header_name)
    accepted = normalize_accepted_values(accepted_values)
    presented = _presented_values(headers, name)
    if not presented:
        raise CallbackAuthenticationError(f"callback header {name!r} is missing")
    if len(set(presented)) > 1:
        raise CallbackAuthenticationError(f"callback header {name!r} was sent more than once")
    value = presented[0]
    if not isinstance(value, str) or not value.isascii():
        raise CallbackAuthenticationError(f"callback header {name!r} is not ASCII")
    presented_digest = _digest(value)
    matched = False
    for secret in accepted:
        # Non-short-circuiting: every accepted value is compared whatever the earlier results.
        matched |= constant_time_equals(presented_digest, _digest(secret.reveal()))
    if not matched:
        raise CallbackAuthenticationError(f"callback header {name!r} does not match any accepted value")
