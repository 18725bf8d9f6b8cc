"""Parsing the merchant callback body (spec 2.4; decisions D5, D6, D18, D20)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from paysdk._errors import CallbackPayloadError
from paysdk._json import DuplicateKeyError, JSONDecodeError, loads
from paysdk.contracts.callbacks import CallbackPayload

__all__ = ["MAX_BODY_BYTES", "parse_payload"]

#: A callback body is a few hundred bytes; anything beyond this is refused before parsing.
MAX_BODY_BYTES = 64 * 1024


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "body"


def parse_payload(body: bytes) -> CallbackPayload:
    """Parse the raw callback body into a :class:`~paysdk.contracts.callbacks.CallbackPayload`.

    Pass the bytes exactly as received. Numbers are parsed as ``Decimal`` (``amount`` is exact, never a
    ``float``); ``amount`` must be a JSON number and ``createdAt`` must read ``DD/MM/YYYY HH:MM:SS``.
    Raises :class:`~paysdk.CallbackPayloadError` whose message starts with the offending field
    (``body`` for an undecodable or non-object body); input values are not echoed. A key sent twice in
    one object is refused, naming the key (D87): which of the two values counts would otherwise
    depend on the parser.
    """
    if not isinstance(body, bytes | bytearray | memoryview):
        raise TypeError("parse_payload expects the raw body as bytes")
    raw = bytes(body)
    if len(raw) > MAX_BODY_BYTES:
        raise CallbackPayloadError(f"body: larger than {MAX_BODY_BYTES} bytes")
    try:
        data: Any = loads(raw, unique_keys=True)
    except DuplicateKeyError as exc:
        raise CallbackPayloadError(f"{exc.key[:40]}: appears more than once in one object") from None
    except JSONDecodeError as exc:
        raise CallbackPayloadError(f"body: not a valid JSON document ({exc})") from None
    if not isinstance(data, dict):
        raise CallbackPayloadError("body: must be a JSON object")
    amount = data.get("amount")
    if "amount" in data and (isinstance(amount, bool) or not isinstance(amount, int | Decimal)):
        raise CallbackPayloadError("amount: must be a JSON number")
    try:
        payload = CallbackPayload.model_validate(data)
    except PydanticValidationError as exc:
        problems = "; ".join(f"{_location(err['loc'])}: {err['msg']}" for err in exc.errors())
        raise CallbackPayloadError(problems) from None
    try:
        payload.created_at_datetime()
    except ValueError:
        raise CallbackPayloadError("createdAt: must be a date and time DD/MM/YYYY HH:MM:SS") from None
    return payload
