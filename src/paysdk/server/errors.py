"""The error contract of the reference server (spec 7, decisions D1, D3, D20, D21).

Every error answer is ``{"ownCode": int | null, "message": str, "details": [{"field", "message"}]}``.
:class:`APIProblem` is raised by services and routers; the handlers installed by
:func:`install_error_handlers` turn it, FastAPI's ``RequestValidationError`` (never the FastAPI 422 shape),
Starlette's ``HTTPException`` (404 unknown route, 405 method) and any other exception into that body.
An unexpected exception is logged with its traceback (never the request headers or body) and answered
``500``: it is always a bug of the server, never a consequence of the input.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from paysdk import _json
from paysdk.contracts.codes import OWN_CODES, OwnCode

__all__ = [
    "REQUEST_ID_HEADER",
    "REQUEST_ID_SCOPE_KEY",
    "APIProblem",
    "ConnectionDropped",
    "JSONResponse",
    "error_body",
    "install_error_handlers",
    "new_request_id",
    "problem_from_validation",
]

log = logging.getLogger("paysdk.server")

#: The ASGI scope key under which :class:`paysdk.server.asgi.request_id.RequestId` keeps the request's
#: id (D65, ``X-Request-Id``).
REQUEST_ID_SCOPE_KEY = "paysdk.request_id"

#: The header that carries the request's id (D65) on every answer.
REQUEST_ID_HEADER = b"x-request-id"


def new_request_id() -> str:
    """``req_``, 16 hex digits of the wall-clock microseconds and 16 of ``os.urandom`` (time-ordered,
    unique across server instances; about a microsecond, a quarter of a UUIDv7's cost)."""
    return "req_%016x%s" % (time.time_ns() // 1000, os.urandom(8).hex())  # noqa: UP031 (faster)


class JSONResponse(Response):
    """A JSON answer written with :func:`paysdk._json.dumps` (``Decimal`` stays exact)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return _json.dumps(content)


class APIProblem(Exception):
    """An error answer: HTTP ``status``, the spec's ``own_code`` (``None`` when it has none), a sentence
    and ``details`` as ``(field, message)`` pairs.

    An own code must be a row of :data:`paysdk.contracts.codes.OWN_CODES` and go with that row's status:
    anything else is a bug of the server, refused here (``ValueError``) before it reaches a client.
    """

    def __init__(
        self,
        status: int,
        own_code: int | None,
        message: str,
        details: Iterable[tuple[str, str]] = (),
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        if own_code is not None:
            row = OWN_CODES.get(own_code)
            if row is None or row.status != status:
                raise ValueError(f"ownCode {own_code} with HTTP {status} is not in paysdk.contracts.codes")
        self.status = status
        self.own_code = own_code
        self.message = message
        self.details = list(details)
        self.headers = dict(headers or {})

    # Common problems, named after the decision that defines them.
    @classmethod
    def invalid_field(cls, field: str, message: str) -> APIProblem:
        """409 / 5000 naming one field (D3)."""
        return cls(409, OwnCode.INVALID_FIELD, f"Invalid request: {field} {message}.", [(field, message)])

    @classmethod
    def unknown_client(cls, field: str = "client") -> APIProblem:
        """409 / 5004: the slug does not name the caller's client (case-sensitive)."""
        return cls(409, OwnCode.UNKNOWN_CLIENT, "Unknown client.", [(field, "does not name your client")])

    @classmethod
    def not_found(cls, what: str = "Transaction", field: str = "uid") -> APIProblem:
        """404, ownCode null (D21)."""
        return cls(404, None, f"{what} not found.", [(field, "not found")])

    @classmethod
    def conflict(cls, message: str, field: str | None = None) -> APIProblem:
        """409, ownCode null (a state conflict, D11/D13/D17)."""
        return cls(409, None, message, [(field, message)] if field else [])

    def body(self) -> dict[str, Any]:
        """The D1 error body."""
        return error_body(self.own_code, self.message, self.details)

    def response(self) -> JSONResponse:
        """This problem as an HTTP answer."""
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


class ConnectionDropped(Exception):
    """Raised by the ``drop`` fault: under uvicorn the connection is aborted first, so the client sees
    the socket close without an answer; in process (``httpx.ASGITransport``) this exception reaches the
    caller of ``httpx`` instead (ASGITransport re-raises application exceptions)."""


def error_body(own_code: int | None, message: str, details: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """``{"ownCode", "message", "details"}`` (D1)."""
    return {
        "ownCode": int(own_code) if own_code is not None else None,
        "message": message,
        "details": [{"field": field, "message": text} for field, text in details],
    }


def _loc_to_field(loc: Sequence[int | str], prefix: str = "") -> str:
    parts = [str(part) for part in loc if part not in ("body", "query", "path", "header")]
    field = ".".join(parts)
    if prefix:
        return f"{prefix}.{field}" if field else prefix
    return field or "body"


def _clean_message(message: str) -> str:
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


def problem_from_validation(
    errors: Sequence[Mapping[str, Any]], *, status: int = 409, own_code: int | None = OwnCode.INVALID_FIELD
) -> APIProblem:
    """A pydantic/FastAPI validation error as ``409 / 5000`` naming each field by its wire name (D3)."""
    details: list[tuple[str, str]] = []
    for error in errors:
        field = _loc_to_field(tuple(error.get("loc", ())))
        kind = error.get("type", "")
        message = "is required" if kind == "missing" else _clean_message(str(error.get("msg", "is invalid")))
        details.append((field, message))
    if not details:
        details = [("body", "is invalid")]
    fields = ", ".join(dict.fromkeys(field for field, _ in details))
    return APIProblem(status, own_code, f"Invalid request: check {fields}.", details)


def install_error_handlers(app: FastAPI) -> None:
    """Register the D1 handlers on ``app``."""

    async def on_problem(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, APIProblem)
        return exc.response()

    async def on_request_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError | ValidationError)
        return problem_from_validation(list(exc.errors())).response()

    async def on_http_exception(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        messages = {404: "Not found.", 405: "Method not allowed.", 400: "Bad request."}
        message = messages.get(exc.status_code)
        if message is None:
            message = exc.detail if isinstance(exc.detail, str) else "Request refused."
        headers = dict(exc.headers or {})
        return JSONResponse(error_body(None, message), status_code=exc.status_code, headers=headers)

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        if not isinstance(exc, ConnectionDropped):
            # Only the method and path: headers and bodies may hold credentials.
            log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        # Sent by Starlette's outermost layer, around the middlewares: the request id comes from the scope.
        request_id = request.scope.get(REQUEST_ID_SCOPE_KEY)
        headers = {"X-Request-Id": request_id} if isinstance(request_id, str) else None
        return JSONResponse(error_body(None, "Internal server error."), status_code=500, headers=headers)

    app.add_exception_handler(APIProblem, on_problem)
    app.add_exception_handler(RequestValidationError, on_request_validation)
    app.add_exception_handler(ValidationError, on_request_validation)
    app.add_exception_handler(StarletteHTTPException, on_http_exception)
    app.add_exception_handler(Exception, on_unexpected)
