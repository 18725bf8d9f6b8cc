"""The hosted checkout as a customer reads it (issue 21, D410-D416): Spanish and English by
``Accept-Language``, amounts with the currency's symbol, the merchant's display name, the test-mode
banner, sentences instead of status words, ``cc-*`` autocomplete tokens, and a declined card that leaves
the link payable (one merchant callback, for the status the link ends in)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import httpx
import pytest
from server_helpers import (
    assert_error,
    attempts,
    auth,
    create_link,
    dumps,
    form_token,
    page_token,
    transaction,
)

from openapi_conformance import checked_server_recorder as server_recorder
from paysdk.contracts.common import Currency
from paysdk.server.pages import CURRENCY_SYMBOLS, format_amount, negotiate_language, text

__all__ = ["server_recorder"]  # every page and form answer checked against /openapi.json (D133)

CARD_FORM = {"expiry": "12/39", "cvc": "123", "name": "Ada Lovelace"}
ES = {"Accept-Language": "es-GT,es;q=0.9,en;q=0.5"}
EN = {"Accept-Language": "en-US,en;q=0.9"}


def text_of(html: str, name: str) -> str | None:
    match = re.search(rf"data-testid='{re.escape(name)}'[^>]*>([^<]*)<", html)
    return match.group(1) if match else None


def visible_text(html: str) -> str:
    """The page's text as a customer reads it (tags, the stylesheet and attribute values removed)."""
    return re.sub(r"<[^>]*>", " ", re.sub(r"<style>.*?</style>", "", html, flags=re.S))


STATUS_WORDS = re.compile(r"\b(pending|approved|declined|expired|dismissed)\b", re.I)


def status_words(html: str) -> list[str]:
    """The internal status words a customer could read on the page (the sandbox's test-card reference,
    for the tester, left out)."""
    return STATUS_WORDS.findall(visible_text(re.sub(r"<details.*?</details>", "", html, flags=re.S)))


@pytest.mark.parametrize(
    ("header", "language"),
    [
        (None, "es"),
        ("", "es"),
        ("en", "en"),
        ("en-US,en;q=0.9", "en"),
        ("es-GT,es;q=0.9,en;q=0.8", "es"),
        ("en;q=0.5,es;q=0.8", "es"),  # quality values decide, not the order
        ("es;q=0.2,en;q=0.7", "en"),
        ("fr-FR,fr;q=0.9,en;q=0.4", "en"),  # the best one we have
        ("fr-FR,de", "es"),  # neither: the default
        ("en;q=0,*", "es"),
        ("es;q=0,*;q=0.5", "en"),  # * stands for the languages not named
        ("*", "es"),
        ("en;q=0.8,es;q=0.8", "en"),  # a tie: the one named first
        ("en;q=bogus,es;q=0.1", "es"),  # a malformed range is ignored
        ("EN-gb", "en"),
        ("es;q=0,en;q=0", "es"),  # nothing acceptable: the default
    ],
)
def test_language_negotiation(header: str | None, language: str) -> None:
    assert negotiate_language(header) == language


@pytest.mark.parametrize(
    ("amount", "currency", "shown"),
    [
        ("125.5", "GTQ", "Q125.50"),
        ("125.50", "USD", "$125.50"),
        ("1234567.891", "HNL", "L1,234,567.89"),
        ("0.125", "CRC", "₡0.12"),  # half to even, Decimal throughout
        ("0.135", "MXN", "MX$0.14"),
        ("1000", "DOP", "RD$1,000.00"),
        ("50000", "COP", "COL$50,000.00"),
        ("10", "SVC", "₡10.00"),
        ("10", "NIO", "C$10.00"),
        ("10", "XYZ", "10.00 XYZ"),
        ("-3.5", "GTQ", "-Q3.50"),
    ],
)
def test_amounts_are_written_with_the_currency_symbol(amount: str, currency: str, shown: str) -> None:
    for language in ("es", "en"):
        assert format_amount(Decimal(amount), currency, language) == shown


def test_every_spec_currency_has_a_symbol_and_every_sentence_both_languages() -> None:
    assert {currency.value for currency in Currency} <= set(CURRENCY_SYMBOLS)
    from paysdk.server.pages import _TEXT

    for key, sentences in _TEXT.items():
        assert set(sentences) == {"es", "en"}, key
        assert all(sentence.strip() for sentence in sentences.values()), key


@pytest.mark.parametrize(("headers", "language"), [(ES, "es"), (EN, "en"), ({}, "es")])
async def test_the_pending_page_in_each_language(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, headers: dict[str, str], language: str
) -> None:
    merchant = await merchant_factory(display_name="  Tienda La Esquina  ", currencies=["GTQ", "USD"])
    assert merchant.display_name == "Tienda La Esquina"
    link = await create_link(asgi_client, merchant, amount=Decimal("1125.5"))
    response = await asgi_client.get(link["URL"], headers=headers)
    assert response.status_code == 200
    assert response.headers["content-language"] == language
    assert "accept-language" in response.headers["vary"].lower()
    html = response.text
    assert f"<html lang='{language}'>" in html
    assert text_of(html, "merchant") == "Tienda La Esquina"
    assert merchant.slug not in visible_text(html)
    assert text_of(html, "amount") == "Q1,125.50"
    assert text_of(html, "currency") == "GTQ"
    assert text_of(html, "test-mode") == text(language, "banner")  # type: ignore[arg-type]
    assert text_of(html, "status") == text(language, "state_pending")  # type: ignore[arg-type]
    assert "data-status='pending'" in html
    assert status_words(html) == []
    heading = "Pagar a" if language == "es" else "Pay"
    assert f"<h1>{heading} <span data-testid='merchant'>" in html
    button = text_of(html, "pay-button")
    assert button == ("Pagar Q1,125.50" if language == "es" else "Pay Q1,125.50")
    # The standard autocomplete tokens, and autofill no longer switched off.
    for testid, token in (
        ("card-number", "cc-number"),
        ("card-expiry", "cc-exp"),
        ("card-cvc", "cc-csc"),
        ("card-name", "cc-name"),
    ):
        field = re.search(rf"<input[^>]*data-testid='{testid}'[^>]*>", html)
        assert field, testid
        assert f"autocomplete='{token}'" in field.group(0), testid
    assert "autocomplete='off'" not in html
    # Every field keeps its label; the strict policy is unchanged (no script, one hashed stylesheet).
    for field_id in ("cardNumber", "expiry", "cvc", "name"):
        assert f"<label for='{field_id}'>" in html
    policy = response.headers["content-security-policy"]
    assert policy.startswith("default-src 'none'; style-src 'sha256-")
    assert "<script" not in html


async def test_the_slug_when_there_is_no_display_name_and_the_name_can_change(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    merchant = await merchant_factory(slug="corner-shop")
    assert merchant.display_name is None
    link = await create_link(asgi_client, merchant)
    assert text_of((await asgi_client.get(link["URL"])).text, "merchant") == "corner-shop"

    changed = await asgi_client.patch("/_sandbox/clients/corner-shop", json={"displayName": "Corner Shop"})
    assert changed.status_code == 200, changed.text
    assert changed.json()["displayName"] == "Corner Shop"
    assert (await asgi_client.get("/_sandbox/clients/corner-shop")).json()["displayName"] == "Corner Shop"
    assert text_of((await asgi_client.get(link["URL"])).text, "merchant") == "Corner Shop"

    cleared = await asgi_client.patch("/_sandbox/clients/corner-shop", json={"displayName": None})
    assert cleared.status_code == 200
    assert cleared.json()["displayName"] is None
    assert text_of((await asgi_client.get(link["URL"])).text, "merchant") == "corner-shop"

    # A name that stays changes nothing else; HTML in a name is shown, never interpreted.
    await asgi_client.patch("/_sandbox/clients/corner-shop", json={"displayName": "<b>Shop & Co</b>"})
    html = (await asgi_client.get(link["URL"])).text
    assert "&lt;b&gt;Shop &amp; Co&lt;/b&gt;" in html
    assert "<b>Shop" not in html


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"displayName": ""}, "displayName"),
        ({"displayName": "   "}, "displayName"),
        ({"displayName": "x" * 81}, "displayName"),
        ({"displayName": "Shop\nname"}, "displayName"),
        ({"displayName": 7}, "displayName"),
    ],
)
async def test_a_bad_display_name_is_refused_and_changes_nothing(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, body: dict[str, Any], field: str
) -> None:
    merchant = await merchant_factory(display_name="Kept")
    refused = await asgi_client.patch(f"/_sandbox/clients/{merchant.slug}", json=body)
    assert_error(refused, 409, 5000, field)
    assert (await asgi_client.get(f"/_sandbox/clients/{merchant.slug}")).json()["displayName"] == "Kept"
    created = await asgi_client.post("/_sandbox/clients", json=body)
    assert_error(created, 409, 5000, field)


async def test_unknown_client_update_is_404(asgi_client: httpx.AsyncClient) -> None:
    missing = await asgi_client.patch("/_sandbox/clients/nobody", json={"displayName": "X"})
    assert missing.status_code == 404


async def test_the_banner_is_on_every_page(asgi_client: httpx.AsyncClient, merchant_factory: Any) -> None:
    from server_helpers import create_alternative

    merchant = await merchant_factory(three_ds=True)
    link = await create_link(asgi_client, merchant)
    token = await page_token(asgi_client, link["URL"])
    challenge = await asgi_client.post(
        "/checkout/pay",
        data={"orderId": link["uid"], "formToken": token, "cardNumber": "4000002760003184", **CARD_FORM},
        headers=EN,
    )
    alternative = await create_alternative(asgi_client, merchant)
    processed = await asgi_client.post(
        f"/api/v1/integrations/transactions/{alternative['uid']}/payments",
        content=dumps({"processor": "bamPaymentButton", "data": {}}),
        headers=auth(merchant, bearer=True),
    )
    assert processed.status_code == 200, processed.text
    pages = {
        "challenge": challenge,
        "rail": await asgi_client.get(
            f"/checkout/rails/bamPaymentButton?orderId={alternative['uid']}", headers=EN
        ),
        "not found": await asgi_client.get("/checkout/?orderId=nope", headers=EN),
        "refused": await asgi_client.post("/checkout/pay", data={"orderId": link["uid"]}, headers=EN),
    }
    assert challenge.status_code == 200
    assert "data-testid='3ds-approve'" in challenge.text
    for name, page in pages.items():
        assert text_of(page.text, "test-mode") == text("en", "banner"), name
        assert status_words(page.text) == [], name
    assert "data-status='challenge'" in challenge.text
    spanish = await asgi_client.get("/checkout/?orderId=nope")
    assert text_of(spanish.text, "status") == "Este enlace de pago no existe."


async def test_the_final_page_says_what_happened_in_a_sentence(
    asgi_client: httpx.AsyncClient, merchant: Any
) -> None:
    link = await create_link(asgi_client, merchant)
    token = await page_token(asgi_client, link["URL"])
    paid = await asgi_client.post(
        "/checkout/pay",
        data={"orderId": link["uid"], "formToken": token, "cardNumber": "4242424242424242", **CARD_FORM},
    )
    assert paid.status_code == 303
    for headers, language in ((ES, "es"), (EN, "en")):
        html = (await asgi_client.get(link["URL"], headers=headers)).text
        assert text_of(html, "status") == text(language, "state_approved")  # type: ignore[arg-type]
        assert "data-status='approved'" in html
        assert status_words(html) == []


async def test_form_errors_in_the_page_language(asgi_client: httpx.AsyncClient, merchant: Any) -> None:
    link = await create_link(asgi_client, merchant)
    token = await page_token(asgi_client, link["URL"])
    data = {"orderId": link["uid"], "formToken": token, "cardNumber": "4242424242424241", **CARD_FORM}
    spanish = await asgi_client.post("/checkout/pay", data=data, headers=ES)
    assert spanish.status_code == 400
    assert text_of(spanish.text, "form-error") == "El número de tarjeta no es válido."
    english = await asgi_client.post("/checkout/pay", data={**data, "expiry": "13/39"}, headers=EN)
    assert text_of(english.text, "form-error") == "The expiry month must be 01 to 12."


async def test_a_declined_card_lets_the_customer_try_another_until_approved(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    """D414: the decline is an attempt (no callback, the link stays payable); the approval of a second
    card ends the link and is the merchant's one callback."""
    merchant = await merchant_factory(callback_url=callback_sink.url, display_name="Corner Shop")
    link = await create_link(asgi_client, merchant, amount=Decimal("125.50"))
    html = (await asgi_client.get(link["URL"], headers=ES)).text
    data = {"orderId": link["uid"], "formToken": form_token(html), **CARD_FORM}
    declined = await asgi_client.post("/checkout/pay", data={**data, "cardNumber": "4000000000009995"})
    assert declined.status_code == 303
    assert declined.headers["location"] == link["URL"]
    again = (await asgi_client.get(link["URL"], headers=ES)).text
    assert "data-status='pending'" in again
    assert text_of(again, "declined") == (
        "Su tarjeta no tiene fondos suficientes. No se cobró nada. Intente con otra tarjeta."
    )
    assert "data-testid='pay-button'" in again
    stored = await transaction(asgi_client, link["uid"])
    assert (stored.status, (stored.model_extra or {})["outcome"]) == ("pending", "insufficient_funds")
    assert await attempts(asgi_client, link["uid"]) == []
    assert callback_sink.received == []

    approved = await asgi_client.post("/checkout/pay", data={**data, "cardNumber": "4242424242424242"})
    assert approved.status_code == 303
    final = (await asgi_client.get(link["URL"], headers=EN)).text
    assert "data-status='approved'" in final
    assert "data-testid='declined'" not in final
    stored = await transaction(asgi_client, link["uid"])
    assert (stored.status, (stored.model_extra or {})["outcome"]) == ("approved", "approved")
    (attempt,) = await attempts(asgi_client, link["uid"])
    assert attempt.status_code == 200
    (received,) = callback_sink.received
    assert received.json()["status"] == "approved"
    assert received.json()["amount"] == Decimal("125.50")


async def test_declines_until_the_link_expires_end_in_one_expired_callback(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    from server_helpers import advance

    merchant = await merchant_factory(callback_url=callback_sink.url)
    link = await create_link(asgi_client, merchant)
    html = (await asgi_client.get(link["URL"])).text
    data = {"orderId": link["uid"], "formToken": form_token(html), **CARD_FORM}
    for card in ("4000000000000002", "4000000000000069"):
        assert (await asgi_client.post("/checkout/pay", data={**data, "cardNumber": card})).status_code == 303
    assert (await transaction(asgi_client, link["uid"])).status == "pending"
    await advance(asgi_client, 24 * 3600 + 1)
    expired = (await asgi_client.get(link["URL"])).text
    assert "data-status='expired'" in expired
    assert "data-testid='pay-button'" not in expired
    late = await asgi_client.post("/checkout/pay", data={**data, "cardNumber": "4242424242424242"})
    assert late.status_code == 303
    assert (await transaction(asgi_client, link["uid"])).status == "expired"
    assert [item.json()["status"] for item in callback_sink.received] == ["expired"]


async def test_the_control_plane_decline_stays_final(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    from server_helpers import pay

    merchant = await merchant_factory(callback_url=callback_sink.url)
    link = await create_link(asgi_client, merchant)
    assert (await pay(asgi_client, link["uid"], "4000000000000002"))["status"] == "declined"
    html = (await asgi_client.get(link["URL"], headers=EN)).text
    assert "data-status='declined'" in html
    assert text_of(html, "status") == text("en", "state_declined")
    assert "data-testid='pay-button'" not in html
    assert [item.json()["status"] for item in callback_sink.received] == ["declined"]
