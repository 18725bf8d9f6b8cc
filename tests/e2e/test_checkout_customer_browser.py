"""The hosted checkout as a customer sees it, in a real Chromium at a desktop (1280 px) and a phone
(390 px) width, in Spanish and English (the browser's locale sets ``Accept-Language``; D410-D416): the
test-mode banner, the merchant's display name, the amount with its currency's symbol, the ``cc-*``
autocomplete tokens, labelled fields, no sideways scrolling, and a declined card followed by a second card
that pays (one merchant callback, ``approved``).

``PAYSDK_SCREENSHOTS=docs/images`` saves the screenshots the docs show (``checkout-<lang>-<width>-*.png``).
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

import paysdk

from .conftest import MerchantReceiver

pytestmark = [pytest.mark.browser, pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)]

#: Per language: the browser locale, and what the page says.
WORDS = {
    "es": {
        "locale": "es-GT",
        "banner": "Modo de prueba",
        "heading": "Pagar a Tienda La Esquina",
        "pay": "Pagar Q1,125.50",
        "card": "Número de tarjeta",
        "declined": "Su tarjeta fue rechazada. No se cobró nada. Intente con otra tarjeta.",
        "approved": "Pago recibido. ¡Gracias!",
    },
    "en": {
        "locale": "en-US",
        "banner": "Test mode",
        "heading": "Pay Tienda La Esquina",
        "pay": "Pay Q1,125.50",
        "card": "Card number",
        "declined": "Your card was declined. Nothing was charged. Try another card.",
        "approved": "Payment received. Thank you!",
    },
}
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}


def _shot(page: Page, name: str) -> None:
    folder = os.environ.get("PAYSDK_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"checkout-{name}.png"), full_page=True)


def _fill(page: Page, label: str, card: str) -> None:
    page.get_by_label(label).fill(card)  # the fields are found by their labels (accessible names)
    page.get_by_test_id("card-expiry").fill("12/34")
    page.get_by_test_id("card-cvc").fill("123")
    page.get_by_test_id("card-name").fill("Ana Pérez")
    page.get_by_test_id("pay-button").click()


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("language", list(WORDS))
def test_a_customer_pays_after_a_declined_card(
    live_server: str, merchant_receiver: MerchantReceiver, browser: Browser, language: str, width: str
) -> None:
    words = WORDS[language]
    sandbox = paysdk.Client(environment=paysdk.Environment.local(live_server))
    merchant = sandbox.sandbox.create_client(
        display_name="Tienda La Esquina",
        callback_url=merchant_receiver.url,
        callback_header_value=merchant_receiver.header_value,
    )
    client = paysdk.Client(merchant.sandbox_token, paysdk.Environment.local(live_server))
    link = client.payment_links.create(
        amount=Decimal("1125.50"), user_id="+50255550123", channel="web", client=merchant.slug
    )
    view_width, view_height = WIDTHS[width]
    context = browser.new_context(
        locale=words["locale"], viewport={"width": view_width, "height": view_height}
    )
    page = context.new_page()
    try:
        response = page.goto(link.url)
        assert response is not None
        assert response.headers["content-language"] == language
        expect(page.locator("html")).to_have_attribute("lang", language)
        expect(page.get_by_test_id("test-mode")).to_be_visible()
        expect(page.get_by_test_id("test-mode")).to_contain_text(words["banner"])
        expect(page.get_by_role("heading", level=1)).to_have_text(words["heading"])
        expect(page.get_by_test_id("merchant")).to_have_text("Tienda La Esquina")
        expect(page.get_by_test_id("amount")).to_have_text("Q1,125.50")
        expect(page.get_by_test_id("pay-button")).to_have_text(words["pay"])
        expect(page.get_by_test_id("status")).not_to_contain_text("pending")
        for testid, token in (
            ("card-number", "cc-number"),
            ("card-expiry", "cc-exp"),
            ("card-cvc", "cc-csc"),
            ("card-name", "cc-name"),
        ):
            expect(page.get_by_test_id(testid)).to_have_attribute("autocomplete", token)
        assert page.locator("form").first.get_attribute("autocomplete") is None
        # Nothing scrolls sideways, even at 390 px.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        _shot(page, f"{language}-{view_width}-pay")

        _fill(page, words["card"], "4000000000000002")
        expect(page.get_by_test_id("declined")).to_have_text(words["declined"])
        expect(page.get_by_test_id("status")).to_have_attribute("data-status", "pending")
        expect(page.get_by_test_id("test-mode")).to_be_visible()
        assert client.sandbox.transaction(link.uid).status == "pending"
        _shot(page, f"{language}-{view_width}-declined")

        _fill(page, words["card"], "4242424242424242")
        expect(page.get_by_test_id("status")).to_have_text(words["approved"])
        expect(page.get_by_test_id("status")).to_have_attribute("data-status", "approved")
        expect(page.get_by_test_id("test-mode")).to_be_visible()
        assert page.get_by_test_id("pay-button").count() == 0
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        _shot(page, f"{language}-{view_width}-approved")

        (payload,) = merchant_receiver.wait_for(1)
        assert (payload.uid, payload.status, payload.amount) == (link.uid, "approved", Decimal("1125.50"))
    finally:
        context.close()
        client.close()
        sandbox.close()
