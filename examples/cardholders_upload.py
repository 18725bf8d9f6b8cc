"""Bulk cardholder upload with live progress: upload a partner's .csv or .xlsx file as a backoffice
operator, follow the batch's Server-Sent Events as rows are processed (a dropped connection resumes by
itself with Last-Event-ID), then print the failed rows. Asyncio, so one process can follow many batches.

    export PAYSDK_BASE_URL=http://127.0.0.1:8000          # paysdk serve
    export PAYSDK_BACKOFFICE_MERCHANT=my-store
    export PAYSDK_WALLET_PRIVATE_KEY=...                 # base64 seed: signingPrivateKey of the client
    export PAYSDK_BACKOFFICE_EMAIL=ops@example.com       # an operator (control plane, D185)
    export PAYSDK_BACKOFFICE_PASSWORD=...
    export PAYSDK_PARTNER_ID=ptn_...                     # a partner of the merchant
    python examples/cardholders_upload.py holders.csv
"""

from __future__ import annotations

import asyncio
import os
import sys

import paysdk
from paysdk.resources.cardholders import BatchDoneEvent, BatchProgressEvent, RowFailedEvent


async def main(path: str) -> None:
    credentials = paysdk.BackofficeCredentials(
        os.environ["PAYSDK_BACKOFFICE_MERCHANT"],
        os.environ["PAYSDK_WALLET_PRIVATE_KEY"],
        user=paysdk.BackofficeUser(
            os.environ["PAYSDK_BACKOFFICE_EMAIL"], os.environ["PAYSDK_BACKOFFICE_PASSWORD"]
        ),
    )
    partner_id = os.environ["PAYSDK_PARTNER_ID"]
    async with paysdk.AsyncClient(backoffice=credentials) as client:
        cardholders = client.backoffice.cardholders
        batch = await cardholders.upload(partner_id, path)  # streamed from disk; the answer comes at once
        print(f"batch {batch.batch_id} {batch.status}" + (" (uploaded before)" if batch.duplicate else ""))

        failed: list[RowFailedEvent] = []
        async with cardholders.progress(partner_id, batch.batch_id) as stream:
            async for event in stream:
                if isinstance(event, BatchProgressEvent):
                    print(f"  {event.data.processed}/{event.data.total or '?'} processed")
                elif isinstance(event, RowFailedEvent):
                    failed.append(event)
                elif isinstance(event, BatchDoneEvent):
                    done = event.data
                    print(f"done: {done.created} created, {done.failed} failed, {done.cards_issued} cards")
        for event in failed:
            print(
                f"  row {event.data.row} ({event.data.external_id}): {event.data.field}: {event.data.message}"
            )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
