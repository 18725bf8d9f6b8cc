"""The control plane's deprecation marks (D196, D253-D255): ``PUT``, ``DELETE`` and ``GET
/_sandbox/deprecations``. See :mod:`paysdk.server.deprecations`. Not in ``/openapi.json``.

``PUT {operation, deprecatedAt?, sunset?, link?}`` answers the mark; ``DELETE ?operation=`` removes one
(every mark without it) and answers ``{"removed": n}``; ``GET`` lists them.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from paysdk.contracts.deprecations import DeprecationSet
from paysdk.server import deprecations
from paysdk.server.bodies import read_json_object, validate
from paysdk.server.errors import JSONResponse
from paysdk.server.routers._transactions import Db

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox", include_in_schema=False)

_METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options", "trace"})


def _operations(request: Request) -> frozenset[str]:
    """The public operations as ``/openapi.json`` names them (its schema is built once per app)."""
    paths: dict[str, Any] = request.app.openapi().get("paths", {})
    return frozenset(
        f"{method.upper()} {path}" for path, item in paths.items() for method in item if method in _METHODS
    )


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="python")
    return dumped


@router.put("/deprecations")
async def put_deprecation(request: Request, db: Db) -> Response:
    """Mark an operation deprecated (again: replace its mark)."""
    spec = validate(DeprecationSet, await read_json_object(request))
    known = _operations(request)

    return JSONResponse(_dump(await db.run(deprecations.put, db.session, db.now, spec, known)))


@router.delete("/deprecations")
async def clear_deprecations(
    request: Request, db: Db, operation: Annotated[str | None, Query(max_length=300)] = None
) -> Response:
    """Remove one operation's mark, or all of them."""
    removed = await db.run(deprecations.clear, db.session, operation, _operations(request))
    return JSONResponse({"removed": removed})


@router.get("/deprecations")
async def list_deprecations(db: Db) -> Response:
    """Every marked operation."""
    marks = await db.run(deprecations.list_all, db.session)
    return JSONResponse([_dump(mark) for mark in marks])
