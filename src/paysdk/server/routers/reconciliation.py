"""``POST /reports/payfac/conciliation/upload/{affiliation}`` (spec 4.4; D183, D194, D241): HTTP only, the
logic is in :mod:`paysdk.server.services.reconciliation`.

Merchant token in ``Authorization`` (``Bearer `` optional, D9); the affiliation must be the caller's
(``404`` naming ``affiliation`` otherwise). The body is ``multipart/form-data`` with the CSV in the part
``file`` (at most 16 MiB, an upload route of :mod:`paysdk.server.bodies`), read as it streams. The report
is computed, nothing is stored, so the route needs no idempotency key: the same file gives the same
report (the family does not honour ``Idempotency-Key``, D241).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.reconciliation import COLUMNS, MAX_ROWS, ReconciliationReport
from paysdk.server.context import get_context
from paysdk.server.routers._common import answer, credentials, header, route
from paysdk.server.services import reconciliation

__all__ = ["UPLOAD_PATH", "router"]

router = APIRouter(tags=["reconciliation"])

UPLOAD_PATH = "/reports/payfac/conciliation/upload/{affiliation}"

_ERRORS = {
    400: "A file error (ownCode null, naming file or the column): not multipart, no file part, not UTF-8, "
    f"a missing, unknown or repeated column, more than {MAX_ROWS:,} rows. Row errors are not errors: "
    "they are the report's invalid rows.",
    404: "The affiliation is not the caller's (ownCode null, naming affiliation).",
}


def _declaration() -> dict[str, Any]:
    kwargs = route(
        "Reconcile the daily settlement CSV with the affiliation's settled terminal payments",
        auth="merchant",
        answer=ReconciliationReport,
        errors=_ERRORS,
    )
    schema = {
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {
                "contentMediaType": "text/csv",
                "description": "UTF-8 CSV (BOM allowed, LF or CRLF, RFC 4180 quotes); header columns "
                + ", ".join(COLUMNS)
                + f", each once, in any order; at most {MAX_ROWS:,} data rows (D194).",
            }
        },
    }
    kwargs["openapi_extra"]["requestBody"] = {
        "required": True,
        "content": {"multipart/form-data": {"schema": schema}},
    }
    return kwargs


@router.post(UPLOAD_PATH, **_declaration())
async def upload_reconciliation(affiliation: str, request: Request) -> Response:
    """Match each row with the affiliation's settled payments (D194): matched, missing, unknown,
    amount-mismatch and invalid rows, with row numbers (the header is row 1). Changes nothing."""
    context = get_context(request)
    spool = await reconciliation.receive_file(
        request.headers.get("content-type"), header(request, "content-length"), request.stream()
    )
    try:
        scanned = await asyncio.to_thread(reconciliation.read_file, spool)
    finally:
        spool.close()
    report = await context.run(
        reconciliation.reconcile,
        context.clock,
        context.environment,
        credentials(request),
        affiliation,
        scanned,
    )
    return answer(report)
