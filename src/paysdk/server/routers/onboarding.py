"""Merchant onboarding on ``{base_url}``: ``POST /leads`` and ``POST /leads/files/upload/{fileName}``
(spec 4.4; D183, D195, D250-D252). HTTP only; the logic is in :mod:`paysdk.server.services.onboarding`.

Both take the referring partner's merchant token (D183). The upload's body is the raw file (``Content-Type``
``application/pdf``, ``image/png`` or ``image/jpeg``), at most 10 MiB (an upload route of
:mod:`paysdk.server.bodies`); it is read as a stream and hashed, never kept (D250).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from paysdk.contracts.onboarding import (
    DOCUMENT_TYPES,
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENTS,
    Lead,
    LeadCreate,
    LeadDocument,
)
from paysdk.server.routers._common import answer, header, route
from paysdk.server.routers._transactions import Db, MerchantToken
from paysdk.server.services import onboarding

__all__ = ["LEADS_PATH", "UPLOAD_PATH", "router"]

router = APIRouter(tags=["onboarding"])

LEADS_PATH = "/leads"
UPLOAD_PATH = "/leads/files/upload/{fileName}"

_LEAD_ERRORS = {
    400: "Malformed JSON body (ownCode null, D20).",
    409: "A missing, mistyped or unknown-value field (5000, naming it, D183).",
}
_UPLOAD_ERRORS = {
    400: "An empty file (ownCode null, naming file).",
    404: "An unknown lead, or another referrer's (ownCode null, naming leadId).",
    409: f"No leadId (5000); or the lead is decided, or already holds {MAX_DOCUMENTS} documents "
    "(ownCode null, naming leadId).",
    415: "The file name's extension, the Content-Type and the file's leading bytes do not agree on pdf, "
    "png or jpeg (ownCode null, naming file).",
}


@router.post(
    LEADS_PATH,
    **route(
        "Submit a merchant lead (onboarding)",
        auth="merchant",
        body=LeadCreate,
        answer=Lead,
        status=201,
        errors=_LEAD_ERRORS,
    ),
)
async def create_lead(request: Request, db: Db, merchant: MerchantToken) -> Response:
    """A lead for a sub-merchant, submitted by the referring partner (its merchant token, D183, D195)."""
    raw = await request.body()
    lead = await db.run(onboarding.create_lead, db.session, db.now, db.context.environment, merchant, raw)
    return answer(lead, 201)


def _upload_declaration() -> dict[str, Any]:
    kwargs = route(
        "Attach a document to a lead (pdf, png or jpg, at most 10 MiB)",
        auth="merchant",
        answer=LeadDocument,
        status=201,
        errors=_UPLOAD_ERRORS,
    )
    media = sorted(set(DOCUMENT_TYPES.values()))
    kwargs["openapi_extra"]["requestBody"] = {
        "required": True,
        "description": f"The file itself, at most {MAX_DOCUMENT_BYTES} bytes; its Content-Type must be the "
        "one its name's extension stands for (.pdf, .png, .jpg/.jpeg), and its leading bytes must show it.",
        "content": {kind: {"schema": {"contentMediaType": kind}} for kind in media},
    }
    return kwargs


FileName = Annotated[
    str, Path(alias="fileName", description="The document's name; its extension gives its type.")
]
LeadId = Annotated[str | None, Query(alias="leadId", description="The lead the document belongs to.")]


@router.post(UPLOAD_PATH, **_upload_declaration())
async def upload_document(
    request: Request, file_name: FileName, db: Db, merchant: MerchantToken, lead_id: LeadId = None
) -> Response:
    """Check what can be checked before reading (token, lead, name, type, room), stream the body through a
    hash, then record the document, checking it all again (D195, D250)."""
    environment = db.context.environment
    content_type = header(request, "content-type")
    await db.run(onboarding.check_upload, db.session, environment, merchant, lead_id, file_name, content_type)
    scan = await onboarding.read_document(request.stream())
    document = await db.run(
        onboarding.attach_document,
        db.session,
        db.now,
        environment,
        merchant,
        lead_id,
        file_name,
        content_type,
        scan,
    )
    return answer(document, 201)
