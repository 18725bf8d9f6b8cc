"""Batch charges of subscriptions from a CSV file, safe to run twice: a plan and subscriptions made on
the control plane, a CSV file written, uploaded with the SDK, one result per row, then the same file
uploaded again to show that no row is charged twice (the server answers each row's earlier result).

    paysdk serve &
    PAYSDK_BASE_URL=http://127.0.0.1:8000 python examples/batch_charges.py

The same file from a shell: ``paysdk charges upload charges.csv --report results.csv`` (see
docs/subscriptions.md).
"""

from __future__ import annotations

import os
import tempfile
from decimal import Decimal
from pathlib import Path

import paysdk

environment = paysdk.Environment.local(os.environ.get("PAYSDK_BASE_URL", "http://127.0.0.1:8000"))

# The control plane (no credentials): a merchant, a monthly plan, three subscriptions on the approving
# test card and one on a card that declines every off-session charge.
with paysdk.Client(environment=environment) as sandbox:
    merchant = sandbox.sandbox.create_client()
    plan = sandbox.sandbox.plans.create(merchant.slug, amount=Decimal("25.00"), name="Coffee box")
    subs = sandbox.sandbox.subscriptions.create(plan.plan_id, count=3).sub_uids
    declining = sandbox.sandbox.subscriptions.create(plan.plan_id, card_number="4000000000000341").sub_uids[0]

assert merchant.signing_private_key is not None
# Subscription calls take the wallet application token (D138): the merchant's Ed25519 signing key.
wallet = paysdk.WalletCredentials(merchant=merchant.slug, private_key=merchant.signing_private_key)

with tempfile.TemporaryDirectory() as directory:
    path = Path(directory) / "charges.csv"
    # Money is text with at most 2 decimals; `reference` is each row's identity (unique per merchant).
    path.write_text(
        "subscriptionId,amount,reference,description\n"
        f"{subs[0]},25.00,2026-03-{subs[0][-6:]},March box\n"
        f'{subs[1]},30.50,2026-03-{subs[1][-6:]},"March box, large"\n'
        f"{subs[2]},25.00,2026-03-{subs[2][-6:]},March box\n"
        f"{declining},25.00,2026-03-{declining[-6:]},March box\n",
        encoding="utf-8",
    )

    with paysdk.Client(environment=environment, wallet=wallet) as client:
        # Every row is validated locally first (nothing is sent when one is invalid), then sent in
        # parts of at most 5,000 rows, each with its own Idempotency-Key.
        report = client.subscriptions.charges.upload_csv(path)
        for row in report.results:
            print(f"row {row.row}: {row.status} {row.charge_id or ''} {row.error or ''}".rstrip())
        print(f"charged {report.charged}, declined {report.declined}, refused {report.refused}")

        # The same file again (a re-run script, a retried job): nothing is charged a second time.
        again = client.subscriptions.charges.upload_csv(path)
        same = [row.charge_id for row in again.results] == [row.charge_id for row in report.results]
        print(f"uploaded again: {again.charged} charged rows answered with their earlier charge: {same}")

        history = client.subscriptions.payment_history(subs[1])
        batch = [(c.reference, str(c.amount)) for c in history if c.source == "batch"]
        print(f"batch charges in the payment history of {subs[1]}: {batch}")

assert report.charged == 3
assert report.declined == 1
assert same
assert len(batch) == 1
