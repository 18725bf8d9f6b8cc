"""The hosted checkout in a real Chromium: each test-card path ends with a verified merchant callback. A
declined card (or failed challenge) on the page leaves the link payable (D414): the customer pays with
another card and the merchant gets one callback, for the approval."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

import paysdk

from .conftest import MerchantReceiver

pytestmark = [pytest.mark.browser, pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)]


def _link_for(live_server: str, receiver: MerchantReceiver, amount: str) -> tuple[paysdk.Client, str, str]:
    sandbox = paysdk.Client(environment=paysdk.Environment.local(live_server))
    merchant = sandbox.sandbox.create_client(
        callback_url=receiver.url, callback_header_value=receiver.header_value, three_ds=True
    )
    client = paysdk.Client(merchant.sandbox_token, paysdk.Environment.local(live_server))
    link = client.payment_links.create(
        amount=Decimal(amount),
        user_id="+50255550123",
        channel="web",
        client=merchant.slug,
        external_id="order-7",
    )
    sandbox.close()
    return client, link.uid, link.url


def _pay(page: Page, card: str) -> None:
    page.get_by_test_id("card-number").fill(card)
    page.get_by_test_id("card-expiry").fill("12/34")
    page.get_by_test_id("card-cvc").fill("123")
    page.get_by_test_id("card-name").fill("Ana Pérez")
    page.get_by_test_id("pay-button").click()


@pytest.mark.parametrize(
    ("card", "challenge", "status"),
    [
        ("4242424242424242", None, "approved"),
        ("4000000000000002", None, "declined"),
        ("4000002760003184", "3ds-approve", "approved"),
        ("4000002760003184", "3ds-fail", "declined"),
    ],
    ids=["approve", "decline", "3ds-approve", "3ds-fail"],
)
def test_checkout_outcome_reaches_the_merchant(
    live_server: str,
    merchant_receiver: MerchantReceiver,
    page: Page,
    card: str,
    challenge: str | None,
    status: str,
    tmp_path: Path,
) -> None:
    client, uid, url = _link_for(live_server, merchant_receiver, "125.50")
    page.goto(url)
    expect(page.get_by_test_id("amount")).to_have_text("Q125.50")
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "pending")

    _pay(page, card)
    if challenge is not None:
        page.get_by_test_id(challenge).click()
    if status == "declined":  # the link stays payable: another card approves it
        expect(page.get_by_test_id("declined")).to_be_visible()
        expect(page.get_by_test_id("status")).to_have_attribute("data-status", "pending")
        assert client.sandbox.transaction(uid).status == "pending"
        _pay(page, "4242424242424242")
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "approved")

    # The final state is shown again on reload, with no card form.
    page.reload()
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "approved")
    assert page.get_by_test_id("pay-button").count() == 0

    (payload,) = merchant_receiver.wait_for(1)
    assert payload.uid == uid
    assert payload.status == "approved"
    assert payload.amount == Decimal("125.50")
    assert payload.external_id == "order-7"
    assert payload.channel == "Web"
    assert merchant_receiver.results[0].status_code == 200
    client.close()


def test_checkout_without_3ds_approves_the_challenge_card(
    live_server: str, merchant_receiver: MerchantReceiver, page: Page
) -> None:
    sandbox = paysdk.Client(environment=paysdk.Environment.local(live_server))
    merchant = sandbox.sandbox.create_client(
        callback_url=merchant_receiver.url,
        callback_header_value=merchant_receiver.header_value,
        three_ds=False,
    )
    client = paysdk.Client(merchant.sandbox_token, paysdk.Environment.local(live_server))
    link = client.payment_links.create(amount=10, user_id="+50255550123", channel="wa", client=merchant.slug)
    page.goto(link.url)
    _pay(page, "4000 0027 6000 3184")
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "approved")
    assert page.get_by_test_id("3ds-approve").count() == 0
    assert merchant_receiver.wait_for(1)[0].status == "approved"
    client.close()
    sandbox.close()


def test_invalid_card_number_shows_a_form_error_and_keeps_the_link_payable(
    live_server: str, merchant_receiver: MerchantReceiver, page: Page
) -> None:
    client, uid, url = _link_for(live_server, merchant_receiver, "5.00")
    page.goto(url)
    _pay(page, "4242424242424241")  # fails the Luhn check
    expect(page.get_by_test_id("form-error")).to_be_visible()
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "pending")
    assert client.sandbox.transaction(uid).status == "pending"
    assert merchant_receiver.processed == []
    client.close()


def test_unknown_order_is_a_not_found_page(live_server: str, page: Page) -> None:
    response = page.goto(f"{live_server}/checkout/?orderId=does-not-exist")
    assert response is not None
    assert response.status == 404
    expect(page.get_by_test_id("status")).to_be_visible()
