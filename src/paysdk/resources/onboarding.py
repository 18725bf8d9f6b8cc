"""Merchant onboarding: ``POST /leads`` and ``POST /leads/files/upload/{fileName}`` (spec 4.4; D183, D195,
D250-D252), ``client.onboarding``.

Both calls take the merchant token of the client (the referring partner, a payfac onboarding a
sub-merchant). A lead is decided outside the API: on the reference server, ``client.sandbox.leads.approve``
creates the new client, whose sandbox token then works with the rest of the SDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Unpack

import pydantic

from paysdk._errors import ValidationError
from paysdk._file_upload import FileInput, FileUpload
from paysdk._pipeline import CallOptions, Operation, PostCallOptions, apply_call_options
from paysdk.contracts.common import Channel, ChannelName, Currency, CurrencyCode
from paysdk.contracts.onboarding import (
    DOCUMENT_TYPES,
    MAX_DOCUMENT_BYTES,
    Lead,
    LeadBusiness,
    LeadContact,
    LeadCreate,
    LeadDocument,
    check_document_name,
    document_type,
)
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource
from paysdk.resources._validation import check_str, path_segment, validation_error_from

__all__ = ["AsyncOnboarding", "Onboarding", "create_lead_operation", "upload_document_operation"]

_SNAKE = {"legalName": "legal_name", "tradeName": "trade_name", "taxId": "tax_id"}


def _model_fields(value: object, name: str) -> Any:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, mode="python")
    if not isinstance(value, Mapping):
        raise ValidationError(name, "must be a mapping (or the contract model) of its fields")
    return dict(value)


def create_lead_operation(
    *,
    business: LeadBusiness | Mapping[str, Any],
    contact: LeadContact | Mapping[str, Any],
    country: str,
    channels: Sequence[Channel | ChannelName],
    currencies: Sequence[Currency | CurrencyCode],
    **options: Unpack[PostCallOptions],
) -> Operation[Lead]:
    """Submit a merchant lead (``POST /leads``, D195) for the business you refer.

    ``business``: ``legal_name``, ``tax_id`` (1-32 letters, digits, spaces, ``.``, ``/``, ``-``), and
    optionally ``trade_name`` and ``website`` (http or https); ``contact``: ``name``, ``email`` and
    optionally ``phone`` (E.164); either as a mapping (snake_case or camelCase keys) or as
    :class:`~paysdk.contracts.onboarding.LeadBusiness` / ``LeadContact``. ``country``: where the business
    operates, one of :data:`~paysdk.contracts.onboarding.LEAD_COUNTRIES`; ``channels`` and ``currencies``:
    what it asks for (at least one of each, no repeats).

    Returns the :class:`~paysdk.contracts.onboarding.Lead`, ``submitted``. Raises
    :class:`~paysdk.ValidationError` naming the argument (``business.tax_id``...) before sending anything.
    """
    fields = {
        "business": _model_fields(business, "business"),
        "contact": _model_fields(contact, "contact"),
        "country": country,
        "channels": [str(c) for c in channels] if isinstance(channels, Sequence) else channels,
        "currencies": [str(c) for c in currencies] if isinstance(currencies, Sequence) else currencies,
    }
    if isinstance(channels, str) or isinstance(currencies, str):
        raise ValidationError("channels" if isinstance(channels, str) else "currencies", "must be a list")
    try:
        body = LeadCreate.model_validate(fields).model_dump(by_alias=True, exclude_none=True, mode="json")
    except pydantic.ValidationError as exc:
        error = validation_error_from(exc)
        parts = [_SNAKE.get(part, part) for part in error.field.split(".")]
        raise ValidationError(".".join(parts), error.message) from None
    op: Operation[Lead] = Operation(
        method="POST",
        path="/leads",
        auth="raw",
        json=body,
        parse=Lead.model_validate,
        expected=frozenset({201}),
    )
    return apply_call_options(op, options) if options else op


def _file_name(file: object, file_name: str | None) -> str:
    if file_name is not None:
        return check_str(file_name, "file_name")
    if isinstance(file, FileUpload) and file.filename:
        return file.filename
    source = file.source if isinstance(file, FileUpload) else file
    if isinstance(source, str | os.PathLike):
        return Path(os.fsdecode(source)).name
    named = getattr(source, "name", None)
    if isinstance(named, str) and named:
        return Path(named).name
    raise ValidationError("file_name", "is required when file is not a path or a named file")


def upload_document_operation(
    lead_id: str, file: FileInput, file_name: str | None = None, **options: Unpack[CallOptions]
) -> Operation[LeadDocument]:
    """Attach a document to lead ``lead_id`` (``POST /leads/files/upload/{fileName}?leadId=``, D195).

    ``file``: a path, a binary file object, ``bytes``, or a :class:`paysdk.FileUpload`; streamed as the
    raw body, never read whole. ``file_name`` defaults to the path's (or file object's) name; its
    extension (``.pdf``, ``.png``, ``.jpg``/``.jpeg``) gives the ``Content-Type`` sent (a ``FileUpload``'s
    own ``content_type`` is sent as given), and the server
    checks the file's leading bytes agree (else :class:`~paysdk.APIError` ``415``). At most 10 MiB (a
    larger file of known size is refused before sending, a stream is cut by the server's ``413``) and 20
    documents per lead (:class:`~paysdk.ConflictError`); an empty file is
    :class:`~paysdk.BadRequestError`.

    Returns the :class:`~paysdk.contracts.onboarding.LeadDocument` (``size``, ``sha256``: compare them
    with your file). Raises :class:`~paysdk.ValidationError` for another extension before sending.
    """
    from paysdk._uploads import file_source, raw_body  # only when uploading

    name = _file_name(file, file_name)
    try:
        check_document_name(name)
    except ValueError as exc:
        raise ValidationError("file_name", str(exc)) from None
    content_type = document_type(name)
    if content_type is None:
        raise ValidationError("file_name", f"must end with {', '.join(DOCUMENT_TYPES)} (pdf, png or jpg)")
    if isinstance(file, FileUpload) and file.content_type is not None:
        content_type = file.content_type  # the caller's own type is sent as given: the server judges it
    source = file_source(file, "file", filename=name, content_type=content_type)
    if source.size is not None and source.size > MAX_DOCUMENT_BYTES:
        # Refused here: a server refusing a large body mid-stream closes the connection, and the answer
        # (413) would be lost as a connection error.
        raise ValidationError(
            "file", f"is {source.size} bytes; a document may have at most {MAX_DOCUMENT_BYTES}"
        )
    op: Operation[LeadDocument] = Operation(
        method="POST",
        path="/leads/files/upload/" + path_segment(name, "file_name"),
        auth="raw",
        params={"leadId": check_str(lead_id, "lead_id", max_length=40)},
        upload=raw_body(source),
        parse=LeadDocument.model_validate,
        expected=frozenset({201}),
    )
    return apply_call_options(op, options) if options else op


# unasync: begin
class AsyncOnboarding(AsyncResource[M]):
    """Merchant onboarding (``client.onboarding``): submit a lead, attach its documents (D195)."""

    create_lead = AsyncEndpoint(create_lead_operation)
    upload_document = AsyncEndpoint(upload_document_operation)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class Onboarding(Resource[M]):
    """Merchant onboarding (``client.onboarding``): submit a lead, attach its documents (D195)."""

    create_lead = Endpoint(create_lead_operation)
    upload_document = Endpoint(upload_document_operation)


# unasync: generated end
