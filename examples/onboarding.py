"""Onboard a sub-merchant, from its lead to its first payment link (async client).

A payfac (the partner, with its own merchant token) submits a lead for a business it refers, attaches
the business's documents, and, once the lead is approved, the new merchant's own sandbox token creates its
first payment link. On the local reference server the control plane approves the lead; on the real
service the provider does.

Run against the local reference server::

    paysdk serve &
    export PAYSDK_BASE_URL=http://127.0.0.1:8000
    export PAYSDK_MERCHANT_TOKEN=...   # the partner's: `paysdk sandbox clients create -o json --show-secrets`
    python examples/onboarding.py [DOCUMENT ...]   # default: the samples in examples/documents/
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from decimal import Decimal
from pathlib import Path

import paysdk

SAMPLES = Path(__file__).resolve().parent / "documents"


async def main(documents: list[Path]) -> int:
    # Show the server's deprecation signals (D196) here too, not only in __main__.
    warnings.simplefilter("default", paysdk.PaysdkDeprecationWarning)
    async with paysdk.AsyncClient() as partner:  # PAYSDK_MERCHANT_TOKEN, PAYSDK_BASE_URL
        try:
            lead = await partner.onboarding.create_lead(
                business={"legal_name": "Tienda Sol S.A.", "trade_name": "Tienda Sol", "tax_id": "1234567-8"},
                contact={"name": "Ana López", "email": "ana@tiendasol.gt", "phone": "+50255550123"},
                country="GT",
                channels=["wa", "web"],
                currencies=["GTQ", "USD"],
            )
            print(f"lead={lead.lead_id} status={lead.status}")
            for path in documents:
                document = await partner.onboarding.upload_document(lead.lead_id, path)
                print(f"document={document.file_name} type={document.content_type} sha256={document.sha256}")
            # The reference server's control plane decides the lead: a new client with sandbox credentials.
            merchant = await partner.sandbox.leads.approve(lead.lead_id)
            print(f"approved: client={merchant.slug}")
        except paysdk.APIError as exc:
            print(f"the API refused: {exc}", file=sys.stderr)
            return 1
    # The new merchant works with its own token from now on.
    async with paysdk.AsyncClient(merchant.sandbox_token) as client:
        link = await client.payment_links.create(
            amount=Decimal("25.00"), user_id="+50255550123", channel="web", client=merchant.slug
        )
    print(f"first payment link: uid={link.uid} checkout={link.url}")
    return 0


if __name__ == "__main__":
    chosen = [Path(arg) for arg in sys.argv[1:]] or sorted(SAMPLES.iterdir())
    raise SystemExit(asyncio.run(main(chosen)))
