"""Async tests: the same API through ``paysdk.AsyncClient`` (pytest-asyncio, strict or auto mode)."""

from __future__ import annotations

from decimal import Decimal

import pytest

import paysdk
from paysdk.contracts.sandbox import SandboxClient
from paysdk.testing import CallbackInbox


@pytest.mark.asyncio
async def test_async_link_paid(
    paysdk_async_client: paysdk.AsyncClient, paysdk_merchant: SandboxClient, paysdk_callbacks: CallbackInbox
) -> None:
    link = await paysdk_async_client.payment_links.create(
        amount=Decimal("19.99"), user_id="+50255550123", channel="wa", client=paysdk_merchant.slug
    )
    paid = await paysdk_async_client.sandbox.pay(link.uid, "4242424242424242")
    assert paid.status == "approved"
    callback = paysdk_callbacks.wait_for_uid(link.uid)
    assert callback.amount == Decimal("19.99")
    assert callback.reference == link.reference


@pytest.mark.asyncio
async def test_async_and_sync_clients_see_one_server(
    paysdk_async_client: paysdk.AsyncClient, paysdk_client: paysdk.Client, paysdk_merchant: SandboxClient
) -> None:
    link = await paysdk_async_client.payment_links.create(
        amount=Decimal("3.50"), user_id="+50255550123", channel="sms", client=paysdk_merchant.slug
    )
    assert paysdk_client.sandbox.transaction(link.uid).status == "pending"
