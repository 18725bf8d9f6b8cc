"""``POST /reports/payfac/conciliation/upload/{affiliation}`` (spec 4.4; D183, D194, D241): HTTP only, the
logic is in :mod:`paysdk.server.services.reconciliation`.

Merchant token in ``Authorization`` (``Bearer `` optional, D9); the affiliation must be the caller's
(``404`` naming ``affiliation`` otherwise). The body is ``multipart/form-data`` with the CSV in the part
``file`` (at most 16 MiB, an upload route of :mod:`paysdk.server.bodies`), read as it streams. The report
is computed, so the route needs no idempotency key: the same file gives the same report (the family
does not honour ``Idempotency-Key``, D241). The answer holds the report's first page and the counts;
a report of more pages is stored and ``GET /reports/payfac/conciliation/reports/{reportId}/pages/{page}``
answers each page (D331).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.reconciliation import (
    COLUMNS,
    MAX_ROWS,
    PAGE_ENTRIES,
    ReconciliationReport,
    ReconciliationReportPage,
)
from paysdk.server.errors import JSONResponse
from paysdk.server.routers._common import answer, header, route
from paysdk.server.routers._transactions import Db, MerchantToken
from paysdk.server.services import reconciliation

__all__ = ["PAGE_PATH", "UPLOAD_PATH", "router"]

router = APIRouter(tags=["reconciliation"])

UPLOAD_PATH = "/reports/payfac/conciliation/upload/{affiliation}"
PAGE_PATH = "/reports/payfac/conciliation/reports/{reportId}/pages/{page}"

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
async def upload_reconciliation(
    affiliation: str, request: Request, db: Db, merchant: MerchantToken
) -> Response:
    """Match each row with the affiliation's settled payments (D194): matched, missing, unknown,
    amount-mismatch and invalid rows, with row numbers (the header is row 1); the first page of the
    report (5,000 entries) and the counts (D331). Changes nothing but the pages it keeps.

    \f
    A page holds :data:`PAGE_ENTRIES` entries."""
    spool = await reconciliation.receive_file(
        request.headers.get("content-type"), header(request, "content-length"), request.stream()
    )
    try:
        scanned = await asyncio.to_thread(reconciliation.read_file, spool)
    finally:
        spool.close()
    context = db.context
    report = await db.run(
        reconciliation.reconcile,
        db.session,
        context.clock,
        context.environment,
        merchant,
        affiliation,
        scanned,
    )
    return answer(report)


_PAGE_ERRORS = {
    404: "The report is unknown, another client's or no longer kept (naming reportId; a client keeps its "
    "latest 10), or the page is past the last (naming page). ownCode null.",
}


@router.get(
    PAGE_PATH,
    **route(
        f"A page of a long reconciliation report ({PAGE_ENTRIES:,} entries)",
        auth="merchant",
        answer=ReconciliationReportPage,
        errors=_PAGE_ERRORS,
    ),
)
async def report_page(reportId: str, page: str, db: Db, merchant: MerchantToken) -> Response:
    """Page ``page`` (1 to ``pages``) of the caller's report ``reportId`` (D331): the entries from
    ``(page - 1) * 5,000`` on, the lists taken in the order matched, amountMismatch, unknown, invalid,
    missing. Reads only."""
    number = int(page) if page.isascii() and page.isdigit() and len(page) <= 9 else 0  # 0: 404 naming page
    body = await db.run(
        reconciliation.report_page, db.session, db.context.environment, merchant, reportId, number
    )
    return Response(body, media_type=JSONResponse.media_type)
