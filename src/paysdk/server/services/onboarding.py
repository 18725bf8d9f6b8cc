"""Merchant onboarding (spec 4.4; decisions D183, D195, D250-D252): leads, their documents, and the control
plane's decision.

* ``POST /leads`` (:func:`create_lead`) with the referring partner's merchant token: the body of
  :class:`paysdk.contracts.onboarding.LeadCreate` (``409 / 5000`` naming a missing, mistyped or unknown
  field, D183); ``201`` with the lead, ``submitted``.
* ``POST /leads/files/upload/{fileName}?leadId=`` (:func:`check_upload`, :func:`read_document`,
  :func:`attach_document`): the raw file as the body. The name's extension, the ``Content-Type`` and the
  file's leading bytes must agree (``415`` naming ``file``); an empty file is ``400``; more than 10 MiB
  is ``413`` (the body bound of the route, :data:`paysdk.server.bodies.UPLOAD_ROUTE_LIMITS`); a 21st
  document, or a document for a decided lead, is ``409`` naming ``leadId`` (D252); an unknown lead, or
  another referrer's, ``404`` naming ``leadId``. The bytes are hashed as they stream and never stored
  (D250). Nothing is written before the whole file has arrived and passed.
* The control plane: :func:`get_lead`, :func:`approve` (a new client made by
  :func:`paysdk.server.services.sandbox.create_client`, the very path of ``POST /_sandbox/clients``,
  with the lead's channels, currencies and country unless the body says otherwise), :func:`reject`. A
  decided lead cannot be decided again (``409``).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.contracts.common import Channel, Currency
from paysdk.contracts.onboarding import (
    DOCUMENT_TYPES,
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENTS,
    SNIFF_BYTES,
    Lead,
    LeadCreate,
    LeadDocument,
    LeadReject,
    check_document_name,
    document_type,
    sniff_document,
)
from paysdk.contracts.sandbox import SandboxClient, SandboxClientCreate
from paysdk.contracts.wallet import email_key
from paysdk.server.auth import Credentials, EnvironmentName, authenticate_token
from paysdk.server.bodies import parse_json_object, validate
from paysdk.server.core_tables import ClientRow
from paysdk.server.errors import APIProblem
from paysdk.server.onboarding_tables import LeadDocumentRow, LeadRow
from paysdk.server.services import sandbox

__all__ = [
    "DocumentScan",
    "approve",
    "attach_document",
    "check_upload",
    "create_lead",
    "get_lead",
    "read_document",
    "reject",
]

_LEAD_FIELD = "leadId"
_TYPES = ", ".join(sorted(set(DOCUMENT_TYPES.values())))
_EXTENSIONS = ", ".join(DOCUMENT_TYPES)


def _unsupported(message: str) -> APIProblem:
    return APIProblem(415, None, f"Unsupported document: {message}.", [("file", message)])


# ------------------------------------------------------------------------------------------- leads


def create_lead(
    session: Session, now: datetime, environment: EnvironmentName, credentials: Credentials, raw: bytes
) -> Lead:
    """``POST /leads``: the referring client is the token's; the lead starts ``submitted``."""
    referrer = authenticate_token(session, credentials, environment)
    body = validate(LeadCreate, parse_json_object(raw))
    row = LeadRow(
        lead_id="lead_" + secrets.token_hex(12),
        referrer_id=referrer.id,
        status="submitted",
        business=body.business.to_wire(),
        contact={**body.contact.to_wire(), "email": email_key(body.contact.email)},
        country=body.country,
        channels=[channel.value for channel in body.channels],
        currencies=[currency.value for currency in body.currencies],
        created_at=now,
    )
    session.add(row)
    session.flush()
    return _view(session, row)


def _documents(session: Session, row: LeadRow) -> list[LeadDocument]:
    found = session.scalars(
        select(LeadDocumentRow).where(LeadDocumentRow.lead_row_id == row.id).order_by(LeadDocumentRow.seq)
    )
    return [_document(row, doc) for doc in found]


def _document(lead: LeadRow, doc: LeadDocumentRow) -> LeadDocument:
    return LeadDocument(
        document_id=doc.document_id,
        lead_id=lead.lead_id,
        file_name=doc.file_name,
        content_type=doc.content_type,
        size=doc.size,
        sha256=doc.sha256,
    )


def _view(session: Session, row: LeadRow) -> Lead:
    return Lead.model_validate(
        {
            "leadId": row.lead_id,
            "status": row.status,
            "business": row.business,
            "contact": row.contact,
            "country": row.country,
            "channels": list(row.channels),
            "currencies": list(row.currencies),
            "documents": _documents(session, row),
            "createdAt": row.created_at,
            "clientSlug": row.client_slug,
            "reason": row.reason,
            "decidedAt": row.decided_at,
        }
    )


def _lead(session: Session, lead_id: str, referrer: ClientRow | None = None) -> LeadRow:
    """The lead ``lead_id`` (of ``referrer`` when given): else ``404`` naming ``leadId``, the same answer
    for an unknown lead and another referrer's."""
    row = session.scalar(select(LeadRow).where(LeadRow.lead_id == lead_id))
    if row is None or (referrer is not None and row.referrer_id != referrer.id):
        raise APIProblem.not_found("Lead", _LEAD_FIELD)
    return row


# ------------------------------------------------------------------------------------------- documents


def _lead_id(lead_id: str | None) -> str:
    if lead_id is None or not lead_id.strip():
        raise APIProblem.invalid_field(_LEAD_FIELD, "is required (the query parameter ?leadId=)")
    if len(lead_id) > 40:
        raise APIProblem.not_found("Lead", _LEAD_FIELD)
    return lead_id.strip()


def _file_type(file_name: str, content_type: str | None) -> str:
    """The document's content type from its name and ``Content-Type``: ``415`` unless they agree."""
    try:
        check_document_name(file_name)
    except ValueError as exc:
        raise APIProblem.invalid_field("fileName", str(exc)) from None
    wanted = document_type(file_name)
    if wanted is None:
        raise _unsupported(f"the file name must end with {_EXTENSIONS} (pdf, png or jpg documents)")
    media = (content_type or "").partition(";")[0].strip().lower()
    if media != wanted:
        shown = media or "none"
        raise _unsupported(f"Content-Type {shown} does not match {file_name!r}: send {wanted}")
    return wanted


def check_upload(
    session: Session,
    environment: EnvironmentName,
    credentials: Credentials,
    lead_id: str | None,
    file_name: str,
    content_type: str | None,
) -> str:
    """Everything an upload can be refused for before its bytes are read: the token (``401``), the lead
    (``409``/``404`` naming ``leadId``), the name and type (``415``), the lead's state and room (``409``).
    Returns the document's content type."""
    referrer = authenticate_token(session, credentials, environment)
    lead = _lead(session, _lead_id(lead_id), referrer)
    wanted = _file_type(file_name, content_type)
    _room(session, lead)
    return wanted


def _room(session: Session, lead: LeadRow) -> int:
    """The next document number of ``lead``: ``409`` naming ``leadId`` when it is decided or full."""
    if lead.status != "submitted":
        raise APIProblem.conflict(
            f"Lead {lead.lead_id} is {lead.status}: documents can be attached only while it is submitted.",
            _LEAD_FIELD,
        )
    count = session.scalar(select(func.count()).where(LeadDocumentRow.lead_row_id == lead.id)) or 0
    if count >= MAX_DOCUMENTS:
        raise APIProblem.conflict(
            f"Lead {lead.lead_id} already has {MAX_DOCUMENTS} documents, the most a lead may hold.",
            _LEAD_FIELD,
        )
    return count + 1


@dataclass(frozen=True, slots=True)
class DocumentScan:
    """What was read of an uploaded file: its size, SHA-256 and the type its leading bytes show."""

    size: int
    sha256: str
    sniffed: str | None


async def read_document(chunks: AsyncIterator[bytes]) -> DocumentScan:
    """Hash and measure the body as it streams (never held whole); ``400`` naming ``file`` when it is
    empty. More than 10 MiB never gets here: the route's body bound answers ``413`` first."""
    digest = hashlib.sha256()
    head = b""
    size = 0
    async for chunk in chunks:
        if not chunk:
            continue
        if len(head) < SNIFF_BYTES:
            head += chunk[: SNIFF_BYTES - len(head)]
        digest.update(chunk)
        size += len(chunk)
    if size == 0:
        raise APIProblem(400, None, "The document is empty.", [("file", "is empty (0 bytes)")])
    if size > MAX_DOCUMENT_BYTES:  # pragma: no cover - the body bound refuses it while it streams
        raise APIProblem(
            413, None, "Request body too large.", [("file", f"exceeds {MAX_DOCUMENT_BYTES} bytes")]
        )
    return DocumentScan(size=size, sha256=digest.hexdigest(), sniffed=sniff_document(head))


def attach_document(
    session: Session,
    now: datetime,
    environment: EnvironmentName,
    credentials: Credentials,
    lead_id: str | None,
    file_name: str,
    content_type: str | None,
    scan: DocumentScan,
) -> LeadDocument:
    """Record the document (everything checked again in this transaction: the lead may have been
    decided, or filled, while the file streamed)."""
    wanted = check_upload(session, environment, credentials, lead_id, file_name, content_type)
    if scan.sniffed != wanted:
        shown = scan.sniffed or "no pdf, png or jpeg"
        raise _unsupported(f"the file's content is {shown}, not the {wanted} its name and Content-Type say")
    lead = _lead(session, _lead_id(lead_id))
    row = LeadDocumentRow(
        document_id="doc_" + secrets.token_hex(12),
        lead_row_id=lead.id,
        seq=_room(session, lead),
        file_name=file_name,
        content_type=wanted,
        size=scan.size,
        sha256=scan.sha256,
        created_at=now,
    )
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:  # a concurrent upload took this place: count again
        raise APIProblem.conflict(
            f"Another document of lead {lead.lead_id} was attached at the same time; send this one again.",
            _LEAD_FIELD,
        ) from None
    return _document(lead, row)


# ------------------------------------------------------------------------------------------- control plane


def get_lead(session: Session, lead_id: str) -> Lead:
    """``GET /_sandbox/leads/{leadId}``."""
    return _view(session, _lead(session, lead_id))


def _undecided(lead: LeadRow) -> None:
    if lead.status != "submitted":
        raise APIProblem.conflict(f"Lead {lead.lead_id} is already {lead.status}.", _LEAD_FIELD)


def _decide(session: Session, lead: LeadRow, now: datetime, **values: Any) -> None:
    """Move ``lead`` out of ``submitted``, conditionally: of two concurrent decisions one wins, the other
    is ``409`` and its transaction (a client it made) is rolled back."""
    done = session.execute(
        update(LeadRow)
        .where(LeadRow.id == lead.id, LeadRow.status == "submitted")
        .values(decided_at=now, **values)
        .execution_options(synchronize_session=False)
    )
    if getattr(done, "rowcount", 1) != 1:
        raise APIProblem.conflict(f"Lead {lead.lead_id} was decided meanwhile.", _LEAD_FIELD)
    session.refresh(lead)


def approve(session: Session, now: datetime, lead_id: str, spec: SandboxClientCreate) -> SandboxClient:
    """``POST /_sandbox/leads/{leadId}/approve``: the client of ``POST /_sandbox/clients`` (the same
    service call), with the lead's channels, currencies and country where ``spec`` gives none."""
    lead = _lead(session, lead_id)
    _undecided(lead)
    fill: dict[str, Any] = {}
    if spec.channels is None:
        fill["channels"] = [Channel(value) for value in lead.channels]
    if spec.currencies is None:
        fill["currencies"] = [Currency(value) for value in lead.currencies]
    if spec.country is None:
        fill["country"] = lead.country
    client = sandbox.create_client(session, spec.model_copy(update=fill), now)
    _decide(session, lead, now, status="approved", client_slug=client.slug)
    return client


def reject(session: Session, now: datetime, lead_id: str, raw: bytes) -> Lead:
    """``POST /_sandbox/leads/{leadId}/reject {reason}``."""
    body = validate(LeadReject, parse_json_object(raw))
    lead = _lead(session, lead_id)
    _undecided(lead)
    _decide(session, lead, now, status="rejected", reason=body.reason)
    return _view(session, lead)
