"""``GET /_sandbox/health``, the readiness probe, in a router of its own: part of the core (D550).

It is the one router a server started by :func:`paysdk.server.boot.serve` includes at start (D303): the
probe answers as soon as uvicorn listens, and the other routers (the rest of the control plane,
:mod:`paysdk.server.routers.sandbox`, and every family's) are imported on the first request that needs
them. So this module imports only what the answer needs, and no family.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.sandbox import Health
from paysdk.server.context import get_context
from paysdk.server.errors import JSONResponse

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox", include_in_schema=False)


@router.get("/health")
async def health(request: Request) -> Response:
    """Liveness, environment and database backend."""
    context = get_context(request)
    now = await context.run(context.clock.now)
    dumped: dict[str, Any] = Health(
        status="ok", environment=context.environment, database=context.db.describe(), now=now
    ).model_dump(by_alias=True, mode="python")
    return JSONResponse(dumped)
