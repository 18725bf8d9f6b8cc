"""Exact JSON for money: numbers become :class:`decimal.Decimal`, never ``float``.

Python's :mod:`json` parses ``10.0001`` as a float and accepts ``NaN``, ``Infinity`` and ``1e400``.
Every JSON body paysdk reads (SDK responses, server requests, callback payloads) goes through
:func:`loads`, which parses non-integers as ``Decimal`` and refuses non-finite numbers; every body it
writes goes through :func:`dumps`, which writes a ``Decimal`` as a plain JSON number with the exact
digits it holds (``Decimal("10.50")`` is written ``10.50``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any

__all__ = ["DuplicateKeyError", "JSONDecodeError", "dumps", "loads"]

#: The largest integer digit count accepted: a 1e400-style number is refused rather than kept.
_MAX_NUMBER_CHARS = 64


class JSONDecodeError(ValueError):
    """The bytes are not a JSON document paysdk accepts (malformed, non-UTF-8 or non-finite numbers)."""


class DuplicateKeyError(JSONDecodeError):
    """An object of the document has the same key twice (``loads(..., unique_keys=True)``); ``key``."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key[:40]!r}")
        self.key = key


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKeyError(key)
        result[key] = value
    return result


def _parse_float(text: str) -> Decimal:
    if len(text) > _MAX_NUMBER_CHARS:
        raise JSONDecodeError(f"number too long: {text[:20]}...")
    try:
        value = Decimal(text)
    except InvalidOperation as exc:  # pragma: no cover - json only hands valid number text
        raise JSONDecodeError(f"invalid number {text!r}") from exc
    if not value.is_finite() or abs(value.adjusted()) > 30:
        raise JSONDecodeError(f"number out of range: {text}")
    return value


def _parse_int(text: str) -> int:
    if len(text) > _MAX_NUMBER_CHARS:
        raise JSONDecodeError(f"number too long: {text[:20]}...")
    return int(text)


def _parse_constant(name: str) -> Any:
    raise JSONDecodeError(f"{name} is not valid JSON")


#: The two decoders :func:`loads` uses, made once: ``json.loads`` with keyword arguments builds a decoder
#: and its scanner for every document (about half the cost of parsing a small body).
_DECODER = json.JSONDecoder(parse_float=_parse_float, parse_int=_parse_int, parse_constant=_parse_constant)
_UNIQUE_DECODER = json.JSONDecoder(
    parse_float=_parse_float,
    parse_int=_parse_int,
    parse_constant=_parse_constant,
    object_pairs_hook=_unique_object,
)


def loads(data: bytes | str, *, unique_keys: bool = False) -> Any:
    """Parse a JSON document; non-integer numbers become ``Decimal``.

    Raises :class:`JSONDecodeError` for malformed JSON, invalid UTF-8, ``NaN``/``Infinity`` and
    numbers whose magnitude no amount could have. ``unique_keys``: an object with the same key twice
    raises :class:`DuplicateKeyError` (otherwise the last one wins, as in :mod:`json`).
    """
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONDecodeError(f"body is not UTF-8 (byte {exc.start})") from exc
    else:
        text = data
    if text.startswith("\ufeff"):  # what json.loads refuses before decoding, in its words
        raise JSONDecodeError(
            "malformed JSON: Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"
        )
    try:
        return (_UNIQUE_DECODER if unique_keys else _DECODER).decode(text)
    except JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:
        raise JSONDecodeError(f"malformed JSON: {exc}") from None


def _decimal_text(value: Decimal) -> str:
    if not value.is_finite():
        raise ValueError("non-finite Decimal cannot be written as JSON")
    return format(value, "f")


def _encode(obj: Any, out: list[str]) -> None:
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, Enum):
        _encode(obj.value, out)
    elif isinstance(obj, str):
        out.append(json.dumps(obj, ensure_ascii=False))
    elif isinstance(obj, int):
        out.append(str(int(obj)))
    elif isinstance(obj, Decimal):
        out.append(_decimal_text(obj))
    elif isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError("non-finite float cannot be written as JSON")
        out.append(repr(obj))
    elif isinstance(obj, datetime | date):
        out.append(json.dumps(obj.isoformat()))
    elif isinstance(obj, Mapping):
        out.append("{")
        first = True
        for key, value in obj.items():
            if not first:
                out.append(",")
            first = False
            out.append(json.dumps(str(key), ensure_ascii=False))
            out.append(":")
            _encode(value, out)
        out.append("}")
    elif isinstance(obj, Sequence) and not isinstance(obj, bytes | bytearray):
        out.append("[")
        for index, value in enumerate(obj):
            if index:
                out.append(",")
            _encode(value, out)
        out.append("]")
    else:
        raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _slow_dumps(obj: Any) -> bytes:
    out: list[str] = []
    _encode(obj, out)
    return "".join(out).encode("utf-8")


_MARK = "\x00paysdk-decimal\x00"
_MARK_JSON = '"\\u0000paysdk-decimal\\u0000"'


def dumps(obj: Any) -> bytes:
    """Serialize ``obj`` to compact UTF-8 JSON, writing ``Decimal`` as an exact JSON number.

    Fast path: the C encoder walks the structure and calls back only for values it does not know
    (``Decimal``, dates), which are written as a marker string and then replaced by their exact text.
    A document whose own strings contain a NUL character takes the pure-Python encoder instead.
    """
    numbers: list[str] = []

    def default(value: Any) -> Any:
        if isinstance(value, Decimal):
            numbers.append(_decimal_text(value))
            return _MARK
        if isinstance(value, datetime | date):
            return value.isoformat()
        if isinstance(value, Mapping):
            return dict(value)
        if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            return list(value)
        raise TypeError(f"{type(value).__name__} is not JSON serializable")

    try:
        text = json.dumps(obj, default=default, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:
        raise ValueError(f"cannot write JSON: {exc}") from None
    if not numbers:
        return text.encode("utf-8")
    parts = text.split(_MARK_JSON)
    if len(parts) != len(numbers) + 1 or "\\u0000" in text.replace(_MARK_JSON, ""):
        return _slow_dumps(obj)
    out = [parts[0]]
    for number, part in zip(numbers, parts[1:], strict=True):
        out.append(number)
        out.append(part)
    return "".join(out).encode("utf-8")
