"""Use the reference server as a sandbox in your own test suite: a merchant, a paid link, the callback,
and time moved forward on the virtual clock. No real money, no network beyond localhost.

    paysdk serve &
    PAYSDK_BASE_URL=http://127.0.0.1:8000 python examples/sandbox_in_your_tests.py
"""

from __future__ import annotations

import os
from decimal import Decimal

import paysdk

environment = paysdk.Environment.local(os.environ.get("PAYSDK_BASE_URL", "http://127.0.0.1:8000"))

with paysdk.Client(environment=environment) as sandbox:
    # A merchant whose callbacks go to an address nobody listens on: deliveries will be retried.
    merchant = sandbox.sandbox.create_client(callback_url="http://127.0.0.1:9/unreachable")

    with paysdk.Client(merchant.sandbox_token, environment) as client:
        link = client.payment_links.create(
            amount=Decimal("42.00"), user_id="+50255550123", channel="web", client=merchant.slug
        )

    paid = sandbox.sandbox.pay(link.uid, "4242424242424242")  # the Stripe-style approving test card
    print(f"{link.reference}: {paid.status}")

    sandbox.sandbox.advance_clock(3600)  # an hour of virtual time: every retry that fell due has run
    attempts = sandbox.sandbox.callbacks(link.uid)
    print(f"callback attempts after an hour: {len(attempts)} (receiver down, retried with backoff)")
    assert paid.status == "approved"
    assert len(attempts) > 1
