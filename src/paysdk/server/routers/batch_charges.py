"""Batch CSV charges on ``{base_url}/v1/subscriptions/charges/upload-csv`` (D155-D157): HTTP only, the
logic is in :mod:`paysdk.server.services.batch_charges`.

The body is ``multipart/form-data`` with the CSV in the part ``file`` (at most 16 MiB, an upload route of
:mod:`paysdk.server.bodies`); the wallet application token is the bearer (D138). The answer is
``{"success": true, "message", "data": BatchChargeResult}`` (D139, D156); a file error is ``400`` naming
``file`` or the column and charges nothing. The route honours ``Idempotency-Key`` (D17) like every
``POST`` of the family.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.orm import Session
from starlette.responses import Response

from paysdk.contracts.charges_csv import COLUMNS
from paysdk.contracts.subscriptions import BatchChargeResult
from paysdk.server.errors import APIProblem
from paysdk.server.routers._bearer import WalletApplicationDb
from paysdk.server.routers._common import enveloped, route
from paysdk.server.services import batch_charges
from paysdk.server.services.wallet_tokens import Principal

__all__ = ["UPLOAD_CSV_PATH", "router"]

router = APIRouter(tags=["subscriptions"])

UPLOAD_CSV_PATH = "/v1/subscriptions/charges/upload-csv"

_ERRORS = {
    400: "A file error (ownCode null, naming file or the column): not multipart, no file part, not UTF-8, "
    "no header, a missing, unknown or repeated column, no data rows, more than 5,000 rows. Nothing is "
    "charged.",
}


def _declaration() -> dict[str, Any]:
    kwargs = route(
        "Charge subscriptions from a CSV file (one charge per row)",
        auth="wallet-application",
        answer=BatchChargeResult,
        envelope="subscription",
        errors=_ERRORS,
    )
    schema = {
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {
                # The file's bytes (OpenAPI 3.1: a media type, no JSON type).
                "contentMediaType": "text/csv",
                "description": "UTF-8 CSV (BOM allowed, LF or CRLF, RFC 4180 quotes); header columns "
                + ", ".join(COLUMNS)
                + " (the first three required); 1 to 5,000 data rows (D155).",
            }
        },
    }
    kwargs["openapi_extra"]["requestBody"] = {
        "required": True,
        "content": {"multipart/form-data": {"schema": schema}},
    }
    return kwargs


@router.post(UPLOAD_CSV_PATH, **_declaration())
async def upload_csv(request: Request, db: WalletApplicationDb) -> Response:
    """Charge every valid row of the uploaded file in one transaction; one result per data row (D156).
    A reference charged before answers its earlier result and charges nothing (D157)."""
    spool = await batch_charges.receive_file(request.headers.get("content-type"), request.stream())
    try:
        scanned = await asyncio.to_thread(batch_charges.read_file, spool)
    finally:
        spool.close()

    result = await db.run(_charge, db.session, db.now, db.caller, scanned)
    message = (
        f"{result.rows} row(s): {result.charged} charged, {result.declined} declined, "
        f"{result.refused} refused ({result.replayed} answered from earlier uploads)."
    )
    return enveloped(result, message)


def _charge(
    session: Session, now: datetime, app: Principal, scanned: batch_charges.CsvScan | APIProblem
) -> BatchChargeResult:
    """Charge the file's rows, or answer its problem (after the application token was checked)."""
    if not isinstance(scanned, batch_charges.CsvScan):
        raise scanned
    return batch_charges.charge_rows(session, now, app, scanned)
