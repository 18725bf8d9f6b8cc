"""Raw request bodies: read bytes, parse with :func:`paysdk._json.loads`, validate with a contract model.

Decisions: a body that is not UTF-8 JSON, holds ``NaN``/``Infinity``/``1e400``-like numbers or lone
surrogate escapes is ``400``, ``ownCode: null``, ``details[0].field = "body"`` (D20). A JSON value that is
not an object is ``409 / 5000`` (D20, D3). Contract violations are ``409 / 5000`` naming each field by
its camelCase wire name (D3). Strings holding NUL characters and values nested more than
:data:`MAX_DEPTH` deep are refused as ``409 / 5000`` too, so no input can reach the database in a form
it would reject (which would otherwise be a 500).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from paysdk import _json
from paysdk.server.errors import APIProblem, problem_from_validation

__all__ = ["MAX_BODY_BYTES", "MAX_DEPTH", "parse_json_object", "read_json_object", "validate"]

M = TypeVar("M", bound=BaseModel)

#: Largest accepted request body.
MAX_BODY_BYTES = 1 << 20
#: Deepest accepted nesting of arrays/objects inside a body.
MAX_DEPTH = 16


def _malformed(message: str) -> APIProblem:
    return APIProblem(400, None, f"Malformed request body: {message}.", [("body", message)])


def _scan(value: Any, path: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise APIProblem.invalid_field(path or "body", "is nested too deeply")
    if isinstance(value, str):
        _check_text(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key, path or "body")
            _scan(item, f"{path}.{key}" if path else key, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _scan(item, f"{path}.{index}" if path else str(index), depth + 1)


def _check_text(text: str, field: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _malformed("holds an invalid unicode escape (lone surrogate)") from None
    if "\x00" in text:
        raise APIProblem.invalid_field(field or "body", "must not contain NUL characters")


def parse_json_object(raw: bytes, *, allow_empty: bool = False) -> dict[str, Any]:
    """Parse ``raw`` as a JSON object (see the module docstring for the errors)."""
    if len(raw) > MAX_BODY_BYTES:
        raise APIProblem(413, None, "Request body too large.", [("body", f"exceeds {MAX_BODY_BYTES} bytes")])
    if not raw.strip():
        if allow_empty:
            return {}
        raise _malformed("is empty; a JSON object is required")
    try:
        value = _json.loads(raw)
    except _json.JSONDecodeError as exc:
        raise _malformed(str(exc)) from None
    if not isinstance(value, dict):
        raise APIProblem(
            409, 5000, "Invalid request: the body must be a JSON object.", [("body", "must be a JSON object")]
        )
    # Only a `\u` escape can put a NUL or a lone surrogate into a string (the text is strict UTF-8 JSON),
    # and nesting deeper than MAX_DEPTH needs more brackets than that: a body with neither needs no walk.
    if b"\\u" in raw or raw.count(b"{") + raw.count(b"[") > MAX_DEPTH:
        _scan(value, "", 0)
    return value


async def read_json_object(request: Request, *, allow_empty: bool = False) -> dict[str, Any]:
    """Read and parse the request body (never ``request.json()``)."""
    return parse_json_object(await request.body(), allow_empty=allow_empty)


def validate(model: type[M], data: dict[str, Any]) -> M:
    """Validate ``data`` with a contract model; field errors become ``409 / 5000``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise problem_from_validation(list(exc.errors())) from None
