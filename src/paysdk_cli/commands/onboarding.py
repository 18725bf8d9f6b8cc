"""``paysdk leads``: merchant onboarding (``POST /leads``, ``POST /leads/files/upload/{fileName}``; spec 4.4,
D195). The profile's merchant token is the referring partner's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, cast

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit

__all__ = ["LEAD_COLUMNS", "app", "lead_record"]

app = new_app(
    "Merchant onboarding: a lead and its documents.\n\n"
    "Uses the profile's merchant token (the referring partner's). On the reference server, "
    "`paysdk sandbox lead approve` decides it."
)

#: The table columns of a lead.
LEAD_COLUMNS = [
    "leadId",
    "status",
    "legalName",
    "taxId",
    "country",
    "channels",
    "currencies",
    "documentCount",
]
_DOCUMENT_COLUMNS = ["documentId", "fileName", "contentType", "size", "sha256"]
#: What a narrow terminal never hides (D430): the SHA-256 the guide says to compare with the file's.
_DOCUMENT_KEEP = ["fileName", "sha256"]


def lead_record(lead: Any) -> dict[str, Any]:
    """A lead as its wire mapping, plus ``legalName``, ``taxId`` and ``documentCount`` for tables."""
    data: dict[str, Any] = lead.to_wire()
    data.setdefault("documents", [])
    return {
        **data,
        "legalName": lead.business.legal_name,
        "taxId": lead.business.tax_id,
        "documentCount": len(lead.documents),
    }


@app.command("create")
def create(
    ctx: typer.Context,
    legal_name: Annotated[str, typer.Option("--legal-name", help="The business's legal name.")],
    tax_id: Annotated[str, typer.Option("--tax-id", help="Its tax id (NIT, RFC...).")],
    contact_name: Annotated[str, typer.Option("--contact-name", help="Who to contact about the lead.")],
    contact_email: Annotated[str, typer.Option("--contact-email", help="Their email address.")],
    country: Annotated[str, typer.Option("--country", help="Where it operates: GT, SV, HN, CR, DO, MX, CO.")],
    channel: Annotated[list[str], typer.Option("--channel", help="A channel it asks for, repeatable.")],
    currency: Annotated[list[str], typer.Option("--currency", help="A currency it asks for, repeatable.")],
    trade_name: Annotated[str | None, typer.Option("--trade-name", help="Its trade name.")] = None,
    website: Annotated[str | None, typer.Option("--website", help="Its website (http or https).")] = None,
    contact_phone: Annotated[
        str | None, typer.Option("--contact-phone", help="The contact's phone, E.164.")
    ] = None,
) -> None:
    """Submit a merchant lead and print it (its leadId is what `leads upload --lead` takes)."""
    st = state(ctx)
    business = {"legal_name": legal_name, "tax_id": tax_id, "trade_name": trade_name, "website": website}
    contact = {"name": contact_name, "email": contact_email, "phone": contact_phone}
    with open_client(st) as sdk:
        lead = sdk.onboarding.create_lead(
            business={k: v for k, v in business.items() if v is not None},
            contact={k: v for k, v in contact.items() if v is not None},
            country=country,
            channels=cast("Any", channel),  # checked by the SDK, naming the option's field
            currencies=cast("Any", currency),
        )
    emit(st.output, lead_record(lead), columns=LEAD_COLUMNS, title=f"Lead {lead.lead_id}")


@app.command("upload")
def upload(
    ctx: typer.Context,
    files: Annotated[
        list[Path],
        typer.Argument(help="Documents: .pdf, .png or .jpg, at most 10 MiB each.", metavar="FILES"),
    ],
    lead: Annotated[str, typer.Option("--lead", help="The lead's leadId.")],
) -> None:
    """Attach documents to a lead, one request per file; prints each document's size and SHA-256.

    Every file's name is checked first (.pdf, .png, .jpg or .jpeg): a wrong one sends nothing."""
    from paysdk.contracts.onboarding import DOCUMENT_TYPES, document_type

    st = state(ctx)
    for path in files:
        if document_type(path.name) is None:
            kinds = ", ".join(DOCUMENT_TYPES)
            raise typer.BadParameter(f"{str(path)!r} must end with {kinds}", param_hint="FILE")
    records = []
    with open_client(st) as sdk:
        for path in files:
            document = sdk.onboarding.upload_document(lead, path)
            records.append(document.to_wire())
    emit(st.output, records, columns=_DOCUMENT_COLUMNS, keep=_DOCUMENT_KEEP, title=f"Documents of {lead}")
