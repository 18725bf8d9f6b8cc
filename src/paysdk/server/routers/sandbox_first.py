"""The control plane's first routes: ``POST /_sandbox/reset`` and ``POST /_sandbox/clients``, what a
merchant's test suite calls right after the readiness probe (D621).

A router of their own, registered right after the probe's (:mod:`paysdk.server.health`) and before the
rest of the control plane (:mod:`paysdk.server.routers.sandbox`), so that a lazily started server (D303,
D610) answers the first real request of a start by importing and including these two routes only: no
other route's dependencies, no path parameter (whose model field would have FastAPI import
``pydantic.v1`` to rule it out), no service but the clients'. Same answers as every control route
(camelCase JSON of :mod:`paysdk.contracts.sandbox`, the D1 error body; not in ``/openapi.json``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.sandbox import SandboxClientCreate
from paysdk.server.bodies import read_json_object, validate
from paysdk.server.context import get_context
from paysdk.server.errors import JSONResponse
from paysdk.server.routers._common import lane
from paysdk.server.routers._transactions import Db, Transactions
from paysdk.server.services import sandbox

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox", include_in_schema=False)


@router.post("/reset")
async def reset(request: Request) -> Response:
    """Wipe every client, transaction, callback, job, log entry, fault, idempotency record, the live
    feed's kept events and the clock."""
    context = get_context(request)
    # On the event loop holding the database's lock when SQLite's worker is idle (D311): a trip to a
    # worker thread that sat idle while a suite filled the database costs more than the reset's DELETEs.
    await context.brief(context.db.reset)
    context.events.clear()  # the live feed's kept events went with the request log (D651)
    for restore in context.after_reset:  # a seeded server returns to its seed (paysdk.server.seed)
        await context.run(restore)
    return JSONResponse({"status": "reset"})


@router.post("/clients")
async def create_client(request: Request, db: Db) -> Response:
    """Create a client; every field optional (defaults in :mod:`paysdk.server.services.sandbox`)."""
    spec = validate(SandboxClientCreate, await read_json_object(request, allow_empty=True))
    created: dict[str, Any] = (await db.run(sandbox.create_client, db.session, spec, db.now)).model_dump(
        by_alias=True, mode="python"
    )
    return JSONResponse(created, status_code=201)


async def create_client_lane(request: Request) -> Response:
    """:func:`create_client` as a fast lane (D640): a merchant's suite makes a client for every test (the
    ``paysdk_merchant`` fixture), which then skips FastAPI's routing over every route and its dependency
    resolution, as the reset does (D311)."""
    return await create_client(request, Transactions(get_context(request)))


lane(create_client, create_client_lane)
