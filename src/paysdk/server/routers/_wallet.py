"""What the wallet routers share: credentials from raw headers, the ``{"data": ...}`` answer (D30),
running a service in one transaction with the caller authenticated, and OpenAPI fragments.

Header values that are not ASCII count as absent (D20), so a garbage ``Authorization`` is ``401 / 7102``,
never a 5xx. The bearer token may come with or without the ``Bearer `` prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy.orm import Session
from starlette.requests import Request

from paysdk.contracts.common import ErrorBody
from paysdk.server.context import ServerContext, get_context
from paysdk.server.errors import APIProblem, JSONResponse
from paysdk.server.routers._common import inline_schema
from paysdk.server.services import wallet_tokens
from paysdk.server.services.wallet_tokens import Kind

__all__ = ["authed", "bearer", "data", "doc", "header", "raise_problem", "unauthed"]

T = TypeVar("T")


def header(request: Request, name: str) -> str | None:
    """A header's value as ASCII text (stripped); ``None`` when absent, empty or not ASCII."""
    wanted = name.lower().encode("ascii")
    for key, value in request.scope.get("headers", ()):
        if bytes(key).lower() == wanted:
            try:
                text = bytes(value).decode("ascii").strip()
            except UnicodeDecodeError:
                return None
            return text or None
    return None


def bearer(request: Request) -> str | None:
    """The ``Authorization`` bearer token (``Bearer `` prefix optional)."""
    value = header(request, "authorization")
    if value is not None and value[:7].lower() == "bearer ":
        value = value[7:].strip() or None
    return value


def data(value: Any, status: int = 200) -> JSONResponse:
    """``{"data": ...}`` (D30): a model, or a list of models, in camelCase."""
    if isinstance(value, BaseModel):
        payload: Any = value.model_dump(by_alias=True, exclude_none=True, mode="python")
    elif isinstance(value, list):
        payload = [item.model_dump(by_alias=True, exclude_none=True, mode="python") for item in value]
    else:  # pragma: no cover - every service answers models
        payload = value
    return JSONResponse({"data": payload}, status_code=status)


def raise_problem(result: T | APIProblem) -> T:
    """Raise a problem a service returned (it committed a state change first); pass anything else."""
    if isinstance(result, APIProblem):
        raise result
    return result


async def authed(
    request: Request,
    fn: Callable[..., T],
    *args: Any,
    kind: Kind | None = None,
) -> T:
    """Run ``fn(session, context, now, principal, *args)`` in one transaction, the bearer verified first."""
    context = get_context(request)
    token = bearer(request)

    def work(session: Session) -> T:
        now = context.clock.now(session)
        principal = wallet_tokens.authenticate(session, context, now, token, kind=kind)
        return fn(session, context, now, principal, *args)

    return await context.run(work)


async def unauthed(request: Request, fn: Callable[[Session, ServerContext, datetime], T]) -> T:
    """Run ``fn(session, context, now)`` in one transaction (no bearer)."""
    context = get_context(request)

    def work(session: Session) -> T:
        return fn(session, context, context.clock.now(session))

    return await context.run(work)


# ------------------------------------------------------------------------------------ OpenAPI


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return inline_schema(model.model_json_schema(by_alias=True, mode="serialization"))


_ERRORS = {
    400: "Invalid field (7001, naming it), invalid amount (7304), OTP/reset errors (7202, 7203, 7205-7207).",
    401: "Bad, expired, revoked or wrong-type token (7102-7107); login errors (7101, 7601, 7604, 7616).",
    403: "Missing card permission (7401) or CVV rules (7501, 7502).",
    404: "Unknown user (7201), card (7301) or permission record (7402).",
    409: "Card not active (7302), currency mismatch (7305), not fundable (7307), already linked (7308).",
    422: "Insufficient funds (7303): nothing changed.",
    429: "Too many wrong OTP codes (7204).",
}


def doc(
    summary: str,
    *,
    body: type[BaseModel] | None = None,
    answer: type[BaseModel] | None = None,
    many: bool = False,
    status: int = 200,
    errors: Sequence[int] = (400, 401),
    bare: bool = False,
    secured: bool = True,
) -> dict[str, Any]:
    """Route keyword arguments documenting a wallet endpoint in ``/openapi.json``."""
    responses: dict[int | str, dict[str, Any]] = {
        code: {"model": ErrorBody, "description": _ERRORS[code]} for code in errors
    }
    if answer is not None:
        inner = _schema(answer)
        if many:
            inner = {"type": "array", "items": inner}
        schema = inner if bare else {"type": "object", "properties": {"data": inner}, "required": ["data"]}
        responses[status] = {"description": "Success", "content": {"application/json": {"schema": schema}}}
    extra: dict[str, Any] = {}
    if body is not None:
        extra["requestBody"] = {
            "required": True,
            "description": body.__doc__ or "",
            "content": {"application/json": {"schema": _schema_validation(body)}},
        }
    if secured:
        responses.setdefault(401, {"model": ErrorBody, "description": _ERRORS[401]})
    return {
        "summary": summary,
        "responses": responses,
        "status_code": status,
        "openapi_extra": extra or None,
    }


def _schema_validation(model: type[BaseModel]) -> dict[str, Any]:
    from paysdk.server.routers._common import json_body

    schema: dict[str, Any] = json_body(model)["requestBody"]["content"]["application/json"]["schema"]
    return schema
