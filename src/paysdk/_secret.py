"""A value that never shows itself: merchant tokens, JWTs, refresh tokens, keys, callback header values."""

from __future__ import annotations

import hmac
from typing import Final

from paysdk import _redact

__all__ = ["Secret", "constant_time_equals"]


class Secret:
    """Holds a secret string. ``repr``/``str`` print ``Secret('****')``; use :meth:`reveal` to read it.

    Comparison between secrets is constant time. A ``Secret`` is never pickled or formatted by accident:
    f-strings and logging see only the mask.
    """

    __slots__ = ("_value",)
    MASK: Final = _redact.MASK

    def __init__(self, value: str) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            raise TypeError("a secret must be a str")
        self._value = value

    def reveal(self) -> str:
        """Return the secret itself. Call it only where the value leaves for the wire."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret('{self.MASK}')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Secret):
            return constant_time_equals(self._value, other._value)
        if isinstance(other, str):
            return constant_time_equals(self._value, other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("paysdk.Secret", len(self._value)))

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("paysdk.Secret is not picklable")


def constant_time_equals(a: str | bytes, b: str | bytes) -> bool:
    """Compare two secrets in constant time. Non-ASCII text is compared as UTF-8 bytes."""
    left = a.encode("utf-8") if isinstance(a, str) else a
    right = b.encode("utf-8") if isinstance(b, str) else b
    return hmac.compare_digest(left, right)
