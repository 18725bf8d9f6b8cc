"""Bulk cardholder upload and its progress stream on ``{cms_base_url}`` (spec 4.4, 6.5; decisions
D185-D188, D210-D219). HTTP only; the logic is in :mod:`paysdk.server.services.cardholders`.

* ``POST /app/partners/{partnerId}/cardholders/upload`` (backoffice user token, D184): the file in the
  multipart part ``file`` (an upload route of :mod:`paysdk.server.bodies`). The file is received and read
  whole before the token is checked in the transaction that stores the batch (a file fault is ``400``
  either way, like the batch charge upload). ``202`` ``{"data": CardholderUpload}`` for a new batch,
  ``200`` with ``duplicate: true`` for a file already sent for the partner (D187, D211).
* ``GET /app/partners/{partnerId}/cardholders/batch/{batchId}/progress``: ``text/event-stream`` (D188),
  ``Last-Event-ID`` (header, or ``?lastEventId=``) resumes. A ``stream_cut`` fault of the control plane
  drops the connection after N events (tests of a reconnect).
* ``GET /app/partners/{partnerId}/cardholders/batch/{batchId}/results/pages/{page}`` (our extension,
  D450): the rows the batch created with their cardholder and card ids, a page of 5,000 in row order.
* ``GET /app/partners/{partnerId}/cardholders/lookup?externalId=|email=`` (our extension, D451): one
  cardholder of the partner.
"""

from __future__ import annotations

import asyncio
import functools
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session
from starlette.responses import Response

from paysdk.contracts.cardholders import (
    COLUMNS,
    MAX_DATA_ROWS,
    RESULTS_PAGE_ENTRIES,
    CardholderMatch,
    CardholderResultsPage,
    CardholderUpload,
)
from paysdk.contracts.sandbox import Fault
from paysdk.server import faults
from paysdk.server.backoffice_tables import PartnerRow
from paysdk.server.context import ServerContext, get_context
from paysdk.server.errors import APIProblem
from paysdk.server.routers._common import BACKOFFICE_ERRORS, bearer, data, only, route
from paysdk.server.routers._transactions import Transactions
from paysdk.server.services import backoffice
from paysdk.server.services import cardholders as service

__all__ = ["LOOKUP_PATH", "PROGRESS_PATH", "RESULTS_PATH", "UPLOAD_PATH", "router"]

router = APIRouter(tags=["backoffice"])

UPLOAD_PATH = "/app/partners/{partnerId}/cardholders/upload"
PROGRESS_PATH = "/app/partners/{partnerId}/cardholders/batch/{batchId}/progress"
RESULTS_PATH = "/app/partners/{partnerId}/cardholders/batch/{batchId}/results/pages/{page}"
LOOKUP_PATH = "/app/partners/{partnerId}/cardholders/lookup"

_UPLOAD_ERRORS = {
    **only(BACKOFFICE_ERRORS, 401),
    400: "A file error (ownCode null, naming file or the column, with the row): not multipart, no file "
    "part, a name not ending in .csv or .xlsx, content that does not match it, not UTF-8, broken quoting, "
    "a corrupt workbook, a missing, unknown or repeated column, no data rows, more than 200,000 data "
    "rows, a cell over 1,024 characters (D186, D210). No batch is made.",
    404: "Unknown partner, or another merchant's (ownCode null, naming partnerId).",
}
_PROGRESS_ERRORS = {
    **only(BACKOFFICE_ERRORS, 401),
    400: "A Last-Event-ID that is not a whole number (ownCode null, naming Last-Event-ID).",
    404: "Unknown partner or batch, or another partner's batch (ownCode null, naming partnerId or batchId).",
}


def _upload_declaration() -> dict[str, Any]:
    kwargs = route(
        "Upload a cardholder file (csv or xlsx) for a partner; rows are processed in the background",
        auth="backoffice-user",
        answer=CardholderUpload,
        envelope=True,
        status=202,
        errors=_UPLOAD_ERRORS,
    )
    kwargs["responses"][200] = {
        "description": "The same file was uploaded for this partner before: its first batch, "
        "duplicate true, nothing created (D187).",
        "model": kwargs["response_model"],
    }
    schema = {
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {
                "contentMediaType": "application/octet-stream",
                "description": "A .csv (UTF-8, BOM allowed, RFC 4180) or .xlsx (first worksheet) file named "
                "by the part's filename; header row 1 with the columns "
                + ", ".join(COLUMNS)
                + f" (the first five required); at most {MAX_DATA_ROWS:,} data rows (D186).",
            }
        },
    }
    kwargs["openapi_extra"]["requestBody"] = {
        "required": True,
        "content": {"multipart/form-data": {"schema": schema}},
    }
    return kwargs


def _progress_declaration() -> dict[str, Any]:
    kwargs = route(
        "Stream a cardholder batch's progress (Server-Sent Events: progress, row-failed, done)",
        auth="backoffice-user",
        errors=_PROGRESS_ERRORS,
    )
    kwargs["responses"][200] = {
        "description": "text/event-stream (D188): events progress {batchId, status, total, processed, "
        "created, failed}, row-failed {row, externalId, field, message}, done {batchId, status, total, "
        "processed, created, failed, cardsIssued}; id = the event's number within the batch; "
        "Last-Event-ID resumes; a finished batch replays and closes.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
    kwargs["openapi_extra"]["parameters"] = [
        {
            "name": "Last-Event-ID",
            "in": "header",
            "required": False,
            "schema": {"type": "string"},
            "description": "Resume after this event id.",
        },
        {
            "name": "lastEventId",
            "in": "query",
            "required": False,
            "schema": {"type": "string"},
            "description": "Resume after this event id (for clients that cannot set the header).",
        },
    ]
    return kwargs


def _partner(
    session: Session, context: ServerContext, now: datetime, token: str | None, *, partner_id: str
) -> PartnerRow:
    """The partner ``partner_id`` of the operator whose token this is (401 before 404)."""
    principal = backoffice.operator_principal(session, context, now, token)
    partner = backoffice.partner_for(session, principal, partner_id)
    session.expunge(partner)
    return partner


async def partner_db(request: Request) -> Transactions[PartnerRow]:
    """The dependency of :data:`PartnerDb`: transactions whose caller is the path's partner, the
    operator's token verified first in each (reads the path only: no parameter of its own)."""
    verify = functools.partial(_partner, partner_id=request.path_params["partnerId"])
    return Transactions(get_context(request), bearer(request), verify)


#: A partner's routes: :attr:`~._transactions.Transactions.caller` is the partner of ``{partnerId}``.
PartnerDb = Annotated[Transactions[PartnerRow], Depends(partner_db)]


@router.post(UPLOAD_PATH, **_upload_declaration())
async def upload(request: Request, partnerId: str, db: PartnerDb) -> Response:
    """Receive and check the file, store it as a batch and queue its job (D186, D187)."""
    received = await service.receive_file(request.headers.get("content-type"), request.stream())
    try:
        # A file this partner sent before is answered before it is read again (D330).
        earlier = await db.run(service.known_upload, db.session, db.caller, received)
        if earlier is not None:
            return data(earlier, 200)
        scanned: service.FileScan | APIProblem
        try:
            scanned = await asyncio.to_thread(service.scan_file, received)
        except APIProblem as exc:
            scanned = exc
        answer, created = await db.run(_accept, db.session, db.now, db.caller, received, scanned)
    finally:
        received.close()
    if created:
        service.kick(db.context)
    return data(answer, 202 if created else 200)


def _accept(
    session: Session,
    now: datetime,
    partner: PartnerRow,
    received: service.ReceivedFile,
    scanned: service.FileScan | APIProblem,
) -> tuple[CardholderUpload, bool]:
    """Accept a scanned file, or answer its problem (after the partner's token and id were checked)."""
    if isinstance(scanned, APIProblem):
        raise scanned
    return service.accept_upload(session, now, partner, received, scanned)


def _last_event_id(request: Request) -> int:
    raw = request.headers.get("last-event-id")
    field = "Last-Event-ID"
    if raw is None:
        raw, field = request.query_params.get("lastEventId"), "lastEventId"
    if raw is None or not raw.strip():
        return 0
    value = raw.strip()
    if not value.isdigit() or len(value) > 12:
        raise APIProblem(
            400, None, f"Invalid {field}: must be an event id (a whole number).", [(field, "invalid")]
        )
    return int(value)


@router.get(PROGRESS_PATH, **_progress_declaration())
async def progress(request: Request, partnerId: str, batchId: str, db: PartnerDb) -> Response:
    """The batch's events after ``Last-Event-ID`` (D188), from the database: any process serves them."""
    from paysdk.server.adapters.uvicorn import abort_connection

    after = _last_event_id(request)
    batch_id, cut = await db.run(
        _stream_start, db.session, db.caller, batchId, request.method, request.url.path
    )
    from paysdk.server.sse import EventStream  # sse-starlette: loaded with the first stream

    # sse-starlette's ping is the heartbeat (the feed's setting, D601): the source sends none of its own.
    return EventStream(
        service.event_stream(db.context, batch_id, after, heartbeat=None),
        ping=db.context.events.heartbeat,
        cut_after=None if cut is None else (cut.after_events or 0),
        abort=functools.partial(abort_connection, request.scope),
    )


def _stream_start(
    session: Session, partner: PartnerRow, batch_id: str, method: str, path: str
) -> tuple[str, Fault | None]:
    """One transaction: the stream's token and batch, then (only then) a stream_cut fault's use."""
    return service.batch_of(session, partner, batch_id).id, faults.take_stream_fault(session, method, path)


@router.get(
    RESULTS_PATH,
    **route(
        f"A page of a cardholder batch's created rows with their cardholder and card ids "
        f"({RESULTS_PAGE_ENTRIES:,} a page, row order; our extension, D450)",
        auth="backoffice-user",
        answer=CardholderResultsPage,
        envelope=True,
        errors={
            **only(BACKOFFICE_ERRORS, 401),
            404: "Unknown partner or batch, another partner's batch, or a page past the last (ownCode "
            "null, naming partnerId, batchId or page).",
        },
    ),
)
async def results(partnerId: str, batchId: str, page: str, db: PartnerDb) -> Response:
    """Page ``page`` (1 to ``pages``) of the rows batch ``batchId`` created (D450)."""
    number = int(page) if page.isascii() and page.isdigit() and len(page) <= 9 else 0  # 0: 404 naming page
    return data(await db.run(service.results_page, db.session, db.caller, batchId, number))


@router.get(
    LOOKUP_PATH,
    **route(
        "Find a partner's cardholder by externalId or email (our extension, D451)",
        auth="backoffice-user",
        answer=CardholderMatch,
        envelope=True,
        errors={
            **only(BACKOFFICE_ERRORS, 401),
            400: "Neither or both of externalId and email (ownCode null, naming externalId).",
            404: "Unknown partner, or no such cardholder of the partner (ownCode null, naming partnerId, "
            "externalId or email).",
        },
    ),
)
async def lookup(
    partnerId: str, db: PartnerDb, externalId: str | None = None, email: str | None = None
) -> Response:
    """The partner's cardholder with this ``externalId`` (from its upload) or email (D451)."""
    return data(await db.run(service.lookup, db.session, db.caller, externalId, email))
