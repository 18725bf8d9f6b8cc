"""Merchant onboarding (spec 4.4: ``POST /leads``, ``POST /leads/files/upload/{fileName}``; D183, D195,
D250-D252): the wire models the SDK and the reference server share.

A payfac (the referring partner, with its own merchant token) submits a lead for a sub-merchant, attaches
its documents, and the lead is decided: on the reference server through the control plane
(``/_sandbox/leads/{leadId}/approve`` creates a client whose sandbox credentials work with the rest of the
SDK, or ``.../reject``). Documents are pdf, png or jpg, at most 10 MiB each and 20 per lead; the server
keeps their name, type, size and SHA-256, never their bytes (D250).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal, TypeAlias

from pydantic import AfterValidator, Field

from paysdk.contracts.common import Channel, Currency, NoFormula, NonEmptyStr, WireModel
from paysdk.contracts.wallet import Email, check_visible

__all__ = [
    "DOCUMENT_TYPES",
    "LEAD_COUNTRIES",
    "MAX_DOCUMENTS",
    "MAX_DOCUMENT_BYTES",
    "SNIFF_BYTES",
    "Lead",
    "LeadBusiness",
    "LeadContact",
    "LeadCreate",
    "LeadDocument",
    "LeadReject",
    "LeadStatus",
    "check_document_name",
    "document_type",
    "sniff_document",
]

#: The countries the service onboards merchants in (D251): those of the spec's currencies.
LEAD_COUNTRIES: tuple[str, ...] = ("CO", "CR", "DO", "GT", "HN", "MX", "SV")
#: Largest document, in bytes (D195): 10 MiB.
MAX_DOCUMENT_BYTES = 10 << 20
#: Documents a lead may hold (D195).
MAX_DOCUMENTS = 20
#: File name extension -> the document's content type (D195).
DOCUMENT_TYPES: dict[str, str] = {
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
}
#: The leading bytes of each content type (its magic number).
_MAGIC: dict[str, tuple[bytes, ...]] = {
    "application/pdf": (b"%PDF-",),
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
}
#: Bytes :func:`sniff_document` needs to decide.
SNIFF_BYTES = 8

#: A lead's states (D195); the SDK keeps any other value a newer server sends as it is.
LeadStatus: TypeAlias = Literal["submitted", "approved", "rejected"]

_PHONE = re.compile(r"^\+[1-9][0-9]{6,14}$")
_TAX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ./-]{0,31}$")


def _phone(value: str) -> str:
    if not _PHONE.match(value):
        raise ValueError("must be a phone number in E.164 form, e.g. +50212345678")
    return value


def _tax_id(value: str) -> str:
    if not _TAX_ID.match(value):
        raise ValueError("must be 1-32 letters, digits, spaces, '.', '/' or '-'")
    return value


def _website(value: str) -> str:
    if not re.match(r"^https?://[^\s/?#]+\.[^\s/?#]+([/?#]\S*)?$", value):
        raise ValueError("must be an http(s) address, e.g. https://example.com")
    return value


def _country(value: str) -> str:
    if value not in LEAD_COUNTRIES:
        raise ValueError(f"must be one of {', '.join(LEAD_COUNTRIES)} (ISO 3166 alpha-2, upper case)")
    return value


def _unique(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise ValueError("must not repeat a value")
    return values


Name = Annotated[NonEmptyStr, Field(max_length=200), NoFormula]
Phone = Annotated[str, AfterValidator(_phone)]


class LeadBusiness(WireModel):
    """The business being onboarded: legal and trade names, tax id, website."""

    legal_name: Name
    trade_name: Name | None = None
    tax_id: Annotated[NonEmptyStr, AfterValidator(_tax_id)]
    website: Annotated[NonEmptyStr, AfterValidator(_website)] | None = None


class LeadContact(WireModel):
    """The person to contact about the lead."""

    name: Name
    email: Email
    phone: Phone | None = None


class LeadCreate(WireModel):
    """Body of ``POST /leads`` (D195)."""

    business: LeadBusiness
    contact: LeadContact
    country: Annotated[str, AfterValidator(_country)]
    channels: Annotated[list[Channel], Field(min_length=1), AfterValidator(_unique)]
    currencies: Annotated[list[Currency], Field(min_length=1), AfterValidator(_unique)]


class LeadDocument(WireModel):
    """One attached document (``201`` of ``POST /leads/files/upload/{fileName}``): its bytes are not kept,
    their size and SHA-256 are (D250)."""

    document_id: str
    lead_id: str
    file_name: str
    content_type: str
    size: int
    sha256: str


class Lead(WireModel):
    """A merchant lead (``201`` of ``POST /leads``; ``GET /_sandbox/leads/{leadId}``). ``client_slug``
    once approved; ``reason`` once rejected; ``decided_at`` when either happened."""

    lead_id: str
    status: str
    business: LeadBusiness
    contact: LeadContact
    country: str
    channels: list[str]
    currencies: list[str]
    documents: list[LeadDocument] = Field(default_factory=list)
    created_at: datetime
    client_slug: str | None = None
    reason: str | None = None
    decided_at: datetime | None = None


class LeadReject(WireModel):
    """Body of ``POST /_sandbox/leads/{leadId}/reject``."""

    reason: Annotated[NonEmptyStr, Field(max_length=500)]


def check_document_name(file_name: str) -> str:
    """``file_name`` when it can name a lead's document (D383): 1-255 characters, no slash or backslash,
    and none of the characters refused in usernames (D96: controls, format characters such as the
    bidirectional override U+202E that shows ``fdp.jpg`` for ``gpj.pdf``, ...); else ``ValueError``."""
    if not file_name or len(file_name) > 255:
        raise ValueError("must be 1-255 characters")
    if "/" in file_name or "\\" in file_name:
        raise ValueError("must not contain a slash or a backslash")
    check_visible(file_name)
    return file_name


def document_type(file_name: str) -> str | None:
    """The content type a file name's extension stands for (:data:`DOCUMENT_TYPES`), ``None`` for others."""
    dot = file_name.rfind(".")
    return DOCUMENT_TYPES.get(file_name[dot:].lower()) if dot > 0 else None


def sniff_document(head: bytes) -> str | None:
    """The content type the leading bytes of a file show (pdf, png, jpeg), ``None`` when none."""
    for content_type, signatures in _MAGIC.items():
        if any(head.startswith(signature) for signature in signatures):
            return content_type
    return None
