"""Sync tests: a payment link paid through the control plane, its callback received and verified."""

from __future__ import annotations

from decimal import Decimal

from shop import Shop

import paysdk
from paysdk.contracts.sandbox import SandboxClient
from paysdk.testing import CallbackInbox, SandboxServer

PHONE = "+50255550123"


def test_paid_link_books_the_order(
    paysdk_client: paysdk.Client, paysdk_merchant: SandboxClient, paysdk_callbacks: CallbackInbox
) -> None:
    shop = Shop(paysdk_client, paysdk_merchant.slug)
    uid, url = shop.checkout(Decimal("42.00"), PHONE)
    assert url.startswith("http")

    paid = paysdk_client.sandbox.pay(uid, "4242424242424242")  # the approving test card
    assert paid.status == "approved"

    callback = paysdk_callbacks.wait_for_uid(uid)
    shop.on_callback(callback)
    assert shop.orders[uid] == "paid"
    assert shop.paid_total == Decimal("42.00")


def test_declined_card_leaves_the_order_unpaid(
    paysdk_client: paysdk.Client, paysdk_merchant: SandboxClient, paysdk_callbacks: CallbackInbox
) -> None:
    shop = Shop(paysdk_client, paysdk_merchant.slug)
    uid, _ = shop.checkout(Decimal("10.00"), PHONE)
    assert paysdk_client.sandbox.pay(uid, "4000000000000002").status == "declined"
    shop.on_callback(paysdk_callbacks.wait_for_uid(uid))
    assert shop.orders[uid] == "declined"
    assert shop.paid_total == 0


def test_each_test_starts_from_the_seed(paysdk_server: SandboxServer) -> None:
    # The fixtures reset the server before every test: merchants made by other tests are gone,
    # the seeded one is back with the token written in seed.json.
    seeded = paysdk_server.seeded_merchant("corner-shop")
    assert seeded.sandbox_token == "8c63fc0776dece4d20d32e10bafdb8c7391624cfb48c08818174e71152326332"
    with paysdk_server.client(seeded.sandbox_token) as client:
        link = client.payment_links.create(
            amount=Decimal("5.00"), user_id=PHONE, channel="wa", client="corner-shop"
        )
    assert link.reference
