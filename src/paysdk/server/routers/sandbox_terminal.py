"""Control-plane additions of terminal payments under ``/_sandbox/terminal`` (D194).

``GET /_sandbox/terminal/affiliation?client=`` answers the client's affiliation number (assigned now when
it has none); ``GET /_sandbox/terminal/payments/{id}`` reads one payment of any client. Left out of
``/openapi.json``; never logged, faulted or idempotent (like the rest of ``/_sandbox``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from sqlalchemy.orm import Session
from starlette.responses import Response

from paysdk.server.context import get_context
from paysdk.server.errors import APIProblem, JSONResponse
from paysdk.server.services import terminal

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox/terminal", include_in_schema=False)


@router.get("/affiliation")
async def affiliation(request: Request, client: str | None = Query(default=None)) -> Response:
    """The affiliation number of the client ``client`` (its slug); ``404`` naming ``client``."""
    context = get_context(request)
    if not client:
        raise APIProblem.invalid_field("client", "is required (a client slug)")

    def work(session: Session) -> Any:
        return terminal.sandbox_affiliation(session, client, context.clock.now(session))

    value = await context.run(work)
    return JSONResponse(value.model_dump(by_alias=True, mode="python"))


@router.get("/payments/{payment_id}")
async def payment(payment_id: str, request: Request) -> Response:
    """One terminal payment (any client's); ``404`` naming ``id``."""
    context = get_context(request)
    value = await context.run(terminal.get_payment, payment_id)
    return JSONResponse(value.model_dump(by_alias=True, exclude_none=True, mode="python"))
