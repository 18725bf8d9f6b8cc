"""The control plane's onboarding routes (D195): show, approve and reject a lead.

``POST /_sandbox/leads/{leadId}/approve`` answers as ``POST /_sandbox/clients`` does (``201``, the new
client with its sandbox credentials), made by the same service call; its optional body takes the fields
of that route, the lead's channels, currencies and country filling those it leaves out. Not in
``/openapi.json``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.sandbox import SandboxClientCreate
from paysdk.server.bodies import read_json_object, validate
from paysdk.server.errors import JSONResponse
from paysdk.server.routers._transactions import Db
from paysdk.server.services import onboarding

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox", include_in_schema=False)


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="python")
    return dumped


@router.get("/leads/{leadId}")
async def get_lead(leadId: str, db: Db) -> Response:
    """The lead with its documents and decision."""
    return JSONResponse(_dump(await db.run(onboarding.get_lead, db.session, leadId)))


@router.post("/leads/{leadId}/approve")
async def approve_lead(leadId: str, request: Request, db: Db) -> Response:
    """Approve: a new client with sandbox credentials (``POST /_sandbox/clients``'s answer)."""
    spec = validate(SandboxClientCreate, await read_json_object(request, allow_empty=True))

    return JSONResponse(
        _dump(await db.run(onboarding.approve, db.session, db.now, leadId, spec)), status_code=201
    )


@router.post("/leads/{leadId}/reject")
async def reject_lead(leadId: str, request: Request, db: Db) -> Response:
    """Reject with ``{reason}``."""
    raw = await request.body()

    return JSONResponse(_dump(await db.run(onboarding.reject, db.session, db.now, leadId, raw)))
