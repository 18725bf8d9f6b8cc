"""Time: the virtual clock expires an unpaid link (and its callback arrives) without waiting a day."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import paysdk
from paysdk.contracts.sandbox import SandboxClient
from paysdk.testing import CallbackInbox, VirtualClock


def test_unpaid_link_expires(
    paysdk_client: paysdk.Client,
    paysdk_merchant: SandboxClient,
    paysdk_clock: VirtualClock,
    paysdk_callbacks: CallbackInbox,
) -> None:
    link = paysdk_client.payment_links.create(
        amount=Decimal("8.00"), user_id="+50255550123", channel="web", client=paysdk_merchant.slug
    )
    held = paysdk_client.sandbox.transaction(link.uid)
    assert held.status == "pending"

    paysdk_clock.advance(held.expire_at - paysdk_clock.now() + timedelta(seconds=1))

    assert paysdk_client.sandbox.transaction(link.uid).status == "expired"
    assert paysdk_callbacks.wait_for_uid(link.uid).status == "expired"
