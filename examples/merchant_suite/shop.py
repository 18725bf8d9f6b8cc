"""The merchant's code under test: a tiny shop that sells through payment links and books callbacks.

In a real project this is your application; the tests next to it use the paysdk fixtures.
"""

from __future__ import annotations

from decimal import Decimal

import paysdk
from paysdk.contracts.callbacks import CallbackPayload

__all__ = ["Shop"]


class Shop:
    """Creates a payment link per order and marks the order paid when the approved callback arrives."""

    def __init__(self, client: paysdk.Client, merchant: str) -> None:
        self.client = client
        self.merchant = merchant
        self.orders: dict[str, str] = {}  # link uid -> order status
        self.paid_total = Decimal("0.00")

    def checkout(self, amount: Decimal, phone: str) -> tuple[str, str]:
        """Open an order: ``(uid, payment URL)``."""
        link = self.client.payment_links.create(
            amount=amount, user_id=phone, channel="web", client=self.merchant
        )
        self.orders[link.uid] = "open"
        return link.uid, link.url

    def on_callback(self, payload: CallbackPayload) -> None:
        """What the merchant's callback endpoint does with a verified callback."""
        if payload.status == "approved" and self.orders.get(payload.uid) == "open":
            self.orders[payload.uid] = "paid"
            self.paid_total += payload.amount
        elif payload.uid in self.orders and self.orders[payload.uid] == "open":
            self.orders[payload.uid] = payload.status
