"""Control-plane additions of the backoffice under ``/_sandbox/backoffice`` (D185, D200).

Operators (backoffice users) and partners exist only through here (4.4 shows no way to create them),
and an existing wallet user can be made a partner's cardholder. Left out of ``/openapi.json``; never
logged, faulted or idempotent (like the rest of ``/_sandbox``). Bare camelCase answers; creations answer
``201``; contract errors ``409 / 5000`` naming the field; an unknown merchant, partner or user ``404``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.responses import Response

from paysdk.contracts.backoffice import (
    SandboxOperatorCreate,
    SandboxPartnerCardholderCreate,
    SandboxPartnerCreate,
)
from paysdk.server.bodies import read_json_object, validate
from paysdk.server.errors import APIProblem, JSONResponse
from paysdk.server.routers._transactions import Db
from paysdk.server.services import backoffice

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox/backoffice", include_in_schema=False)


def _answer(value: BaseModel | list[Any] | dict[str, Any], status: int = 200) -> Response:
    if isinstance(value, list):
        body: Any = [item.model_dump(by_alias=True, mode="python", exclude_none=True) for item in value]
    elif isinstance(value, BaseModel):
        body = value.model_dump(by_alias=True, mode="python", exclude_none=True)
    else:
        body = value
    return JSONResponse(body, status_code=status)


def _merchant(value: str | None) -> str:
    if value is None or not value.strip():
        raise APIProblem.invalid_field("merchant", "is required")
    return value.strip()


@router.post("/operators")
async def create_operator(request: Request, db: Db) -> Response:
    """A backoffice operator of a merchant (D185); a generated password is shown once."""
    spec = validate(SandboxOperatorCreate, await read_json_object(request))

    return _answer(await db.run(backoffice.create_operator, db.session, db.now, spec), 201)


@router.get("/operators")
async def list_operators(db: Db, merchant: str | None = None) -> Response:
    """The merchant's operators, oldest first (never a password)."""
    slug = _merchant(merchant)

    return _answer(await db.run(backoffice.list_operators, db.session, slug))


@router.post("/partners")
async def create_partner(request: Request, db: Db) -> Response:
    """A partner of a merchant (D185): ``partnerId`` generated when omitted."""
    spec = validate(SandboxPartnerCreate, await read_json_object(request))

    return _answer(await db.run(backoffice.create_partner, db.session, db.now, spec), 201)


@router.get("/partners")
async def list_partners(db: Db, merchant: str | None = None) -> Response:
    """The merchant's partners, oldest first."""
    slug = _merchant(merchant)

    return _answer(await db.run(backoffice.list_partners, db.session, slug))


@router.post("/partners/{partner_id}/cardholders")
async def enroll_cardholder(partner_id: str, request: Request, db: Db) -> Response:
    """An existing wallet user of the merchant becomes the partner's cardholder (D200)."""
    spec = validate(SandboxPartnerCardholderCreate, await read_json_object(request))

    return _answer(await db.run(backoffice.sandbox_enroll, db.session, db.now, partner_id, spec), 201)
