"""The control plane's onboarding routes (D195): show, approve and reject a lead.

``POST /_sandbox/leads/{leadId}/approve`` answers as ``POST /_sandbox/clients`` does (``201``, the new
client with its sandbox credentials), made by the same service call; its optional body takes the fields
of that route, the lead's channels, currencies and country filling those it leaves out. Not in
``/openapi.json``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.orm import Session
from starlette.responses import Response

from paysdk.contracts.sandbox import SandboxClientCreate
from paysdk.server.bodies import read_json_object, validate
from paysdk.server.context import get_context
from paysdk.server.errors import JSONResponse
from paysdk.server.services import onboarding

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox", include_in_schema=False)


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="python")
    return dumped


@router.get("/leads/{leadId}")
async def get_lead(leadId: str, request: Request) -> Response:
    """The lead with its documents and decision."""
    context = get_context(request)
    return JSONResponse(_dump(await context.run(onboarding.get_lead, leadId)))


@router.post("/leads/{leadId}/approve")
async def approve_lead(leadId: str, request: Request) -> Response:
    """Approve: a new client with sandbox credentials (``POST /_sandbox/clients``'s answer)."""
    context = get_context(request)
    spec = validate(SandboxClientCreate, await read_json_object(request, allow_empty=True))

    def work(session: Session) -> dict[str, Any]:
        return _dump(onboarding.approve(session, context.clock.now(session), leadId, spec))

    return JSONResponse(await context.run(work), status_code=201)


@router.post("/leads/{leadId}/reject")
async def reject_lead(leadId: str, request: Request) -> Response:
    """Reject with ``{reason}``."""
    context = get_context(request)
    raw = await request.body()

    def work(session: Session) -> dict[str, Any]:
        return _dump(onboarding.reject(session, context.clock.now(session), leadId, raw))

    return JSONResponse(await context.run(work))
