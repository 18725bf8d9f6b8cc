"""Control-plane additions of terminal payments under ``/_sandbox/terminal`` (D194).

``GET /_sandbox/terminal/affiliation?client=`` answers the client's affiliation number (assigned now when
it has none); ``GET /_sandbox/terminal/payments/{id}`` reads one payment of any client. Left out of
``/openapi.json``; never logged, faulted or idempotent (like the rest of ``/_sandbox``).
"""

from __future__ import annotations

from fastapi import APIRouter, Query
from starlette.responses import Response

from paysdk.server.errors import APIProblem, JSONResponse
from paysdk.server.routers._transactions import Db
from paysdk.server.services import terminal

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox/terminal", include_in_schema=False)


@router.get("/affiliation")
async def affiliation(db: Db, client: str | None = Query(default=None)) -> Response:
    """The affiliation number of the client ``client`` (its slug); ``404`` naming ``client``."""
    if not client:
        raise APIProblem.invalid_field("client", "is required (a client slug)")

    value = await db.run(terminal.sandbox_affiliation, db.session, client, db.now)
    return JSONResponse(value.model_dump(by_alias=True, mode="python"))


@router.get("/payments/{payment_id}")
async def payment(payment_id: str, db: Db) -> Response:
    """One terminal payment (any client's); ``404`` naming ``id``."""
    value = await db.run(terminal.get_payment, db.session, payment_id)
    return JSONResponse(value.model_dump(by_alias=True, exclude_none=True, mode="python"))
