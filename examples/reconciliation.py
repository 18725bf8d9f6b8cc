"""Settle terminal payments through the processor's webhooks, then reconcile the day's CSV (sync client).

The control plane plays the processor (``client.sandbox.processor``): it signs a ``settled`` notification
and delivers it to ``POST /webhooks/settlements``; a second delivery of the same notification changes
nothing. Then the daily reconciliation file is uploaded and its report printed.

Run against the local reference server::

    paysdk serve &
    export PAYSDK_BASE_URL=http://127.0.0.1:8000
    export PAYSDK_MERCHANT_TOKEN=...   # from `paysdk sandbox clients create -o json --show-secrets`
    python examples/reconciliation.py

It moves the server's virtual clock forward: run it against a sandbox of your own.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from decimal import Decimal

import paysdk


def advance_to(client: paysdk.Client, target: datetime) -> None:
    """Move the virtual clock to ``target`` (jobs due on the way run)."""
    now = client.sandbox.clock().now
    if target > now:
        client.sandbox.advance_clock(Decimal((target - now) // timedelta(microseconds=1)).scaleb(-6))


def next_monday(client: paysdk.Client) -> datetime:
    today = client.sandbox.clock().now.astimezone(UTC).date()
    day = today + timedelta(days=7 - today.weekday())
    return datetime.combine(day, time(10, 0), tzinfo=UTC)


def main() -> int:
    with paysdk.Client() as client:
        monday = next_monday(client)
        advance_to(client, monday)
        payments = [
            client.terminal.create(
                amount=Decimal(amount),
                currency="GTQ",
                terminal_id="POS-001",
                card_number="4242424242424242",
                expiry_month=12,
                expiry_year=2030,
            )
            for amount in ("12.00", "30.50")
        ]
        # After the 23:30 UTC cutoff and before the 00:00 settlement run: the processor says "settled".
        advance_to(client, monday.replace(hour=23, minute=45))
        for payment in payments:
            delivery = client.sandbox.processor.settle(payment.id, notification_id=f"settle-{payment.id}")
            print(f"notification applied={delivery.result.applied} status={delivery.result.status}")
        again = client.sandbox.processor.settle(payments[0].id, notification_id=f"settle-{payments[0].id}")
        print(f"same notification again applied={again.result.applied} code={again.result.ignored[0].code}")

        day = payments[0].settlement_date
        lines = ["settlementDate,paymentId,amount,currency", f"{day},{payments[0].id},12.00,GTQ"]
        lines.append(f"{day},{payments[1].id},30.00,GTQ")  # the processor's file says 30.00
        lines.append(f"{day},tpm_000000000000000000000000,5.00,GTQ")
        report = client.reconciliation.upload(payments[0].affiliation, "\n".join(lines).encode())
        counts = (len(report.matched), len(report.amount_mismatch), len(report.unknown))
        print("matched={} mismatch={} unknown={}".format(*counts))
        for item in report.amount_mismatch:
            print(f"row {item.row}: {item.payment_id} expected {item.expected}, file says {item.actual}")
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
