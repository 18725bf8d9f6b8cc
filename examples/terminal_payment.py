"""A terminal (POS) payment's whole life on the sandbox's virtual clock (sync client): two-step capture,
settlement after the 23:30 UTC cutoff, payout T+1 for a Visa test card, then a partial refund.

Run against the local reference server::

    paysdk serve &
    export PAYSDK_BASE_URL=http://127.0.0.1:8000
    export PAYSDK_MERCHANT_TOKEN=...   # from `paysdk sandbox clients create -o json --show-secrets`
    python examples/terminal_payment.py

It moves the server's virtual clock forward (``client.sandbox.advance_clock``): run it against a sandbox
of your own, never one shared with other tests.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal

import paysdk


def advance_to(client: paysdk.Client, target: datetime) -> None:
    """Move the virtual clock to ``target`` (the settlement job runs at each 00:00 UTC on the way)."""
    now = client.sandbox.clock().now
    if target > now:
        client.sandbox.advance_clock(Decimal((target - now) // timedelta(microseconds=1)).scaleb(-6))


def main() -> int:
    with paysdk.Client() as client:
        try:
            # Two-step: authorize only, then capture less than authorized (the rest is released).
            payment = client.terminal.create(
                amount=Decimal("80.00"),
                currency="GTQ",
                terminal_id="POS-001",
                card_number="4242424242424242",
                expiry_month=12,
                expiry_year=2030,
                capture_mode="manual",
                reference="ticket-1001",
            )
            print(f"id={payment.id} status={payment.status} capture_before={payment.capture_before}")
            payment = client.terminal.capture(payment.id, Decimal("72.50"))
            print(f"status={payment.status} captured={payment.captured_amount}")
            print(f"settlement_date={payment.settlement_date} payout_date={payment.payout_date}")
            if payment.payout_date is None:
                print("no payout date: the capture failed", file=sys.stderr)
                return 1

            # A refund before settlement is refused: void the same business day, or refund once settled.
            try:
                client.terminal.refund(payment.id)
            except paysdk.ConflictError as exc:
                print(f"refund refused before settlement: {exc.message}")

            advance_to(client, datetime.combine(payment.payout_date, time(0, 1), tzinfo=UTC))
            payment = client.sandbox.terminal.get(payment.id)
            print(
                f"status={payment.status} settled_at={payment.settled_at} paid_out_at={payment.paid_out_at}"
            )

            payment = client.terminal.refund(payment.id, Decimal("12.50"))
            print(f"status={payment.status} refunded={payment.refunded_amount}")
        except paysdk.APIError as exc:
            print(f"the API refused: {exc}", file=sys.stderr)
            return 1
        except paysdk.APIConnectionError as exc:
            print(f"could not reach the API: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
