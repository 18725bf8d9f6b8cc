"""The hosted checkout: HTML states, card outcomes, 3-D Secure, 404 page, expiry (D8, D19)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import httpx
import pytest
from server_helpers import advance, create_link, form_token, page_token, pay, transaction

from openapi_conformance import checked_server_recorder as server_recorder
from paysdk.contracts.sandbox import SandboxClient

__all__ = ["server_recorder"]  # every page and form answer checked against /openapi.json (D133)

CARD_FORM = {"expiry": "12/39", "cvc": "123", "name": "Ada Lovelace"}


def text_of(html: str, name: str) -> str | None:
    match = re.search(rf"data-testid='{re.escape(name)}'[^>]*>([^<]*)<", html)
    return match.group(1) if match else None


def state_of(html: str) -> str | None:
    """The state a page shows (its ``status`` element's ``data-status``; the text is a sentence, D415)."""
    match = re.search(r"data-testid='status' data-status='([^']*)'", html)
    return match.group(1) if match else None


async def submit(
    client: httpx.AsyncClient, uid: str, card: str, token: str | None = None, **form: str
) -> httpx.Response:
    """Post the card form as its page would (with the page's form token unless ``token`` is given)."""
    token = token if token is not None else await page_token(client, f"/checkout/?orderId={uid}")
    data = {"orderId": uid, "formToken": token, "cardNumber": card, **CARD_FORM, **form}
    return await client.post("/checkout/pay", data=data)


async def test_pending_page_shows_summary_and_form(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    link = await create_link(asgi_client, merchant, amount=Decimal("1234.5"), currency="USD")
    response = await asgi_client.get(link["URL"])
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    assert text_of(html, "amount") == "$1,234.50"
    assert text_of(html, "currency") == "USD"
    assert text_of(html, "merchant") == merchant.slug
    assert text_of(html, "reference") == link["reference"]
    assert state_of(html) == "pending"
    for name in ("card-number", "card-expiry", "card-cvc", "card-name", "pay-button"):
        assert f"data-testid='{name}'" in html
    assert "<script" not in html
    assert "http://" not in html.split("<form")[0].replace("http://testserver", "")
    # Without the trailing slash too.
    assert (await asgi_client.get(f"/checkout?orderId={link['uid']}")).status_code == 200


@pytest.mark.parametrize(
    ("card", "status", "outcome"),
    [
        ("4242424242424242", "approved", "approved"),
        ("4242 4242 4242 4242", "approved", "approved"),
        # A decline on the page leaves the link payable (D414): pending, the decline's outcome kept.
        ("4000000000000002", "pending", "generic_decline"),
        ("4000000000009995", "pending", "insufficient_funds"),
        ("4000002760003184", "approved", "approved"),  # 3-D Secure disabled for this client: approves
        ("4111111111111111", "pending", "card_declined"),  # Luhn-valid, unknown
    ],
)
async def test_card_outcomes_through_the_form(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, card: str, status: str, outcome: str
) -> None:
    link = await create_link(asgi_client, merchant)
    response = await submit(asgi_client, link["uid"], card)
    assert response.status_code == 303
    assert response.headers["location"] == link["URL"]
    page = (await asgi_client.get(response.headers["location"])).text
    assert state_of(page) == status
    assert ("data-testid='pay-button'" in page) == (status == "pending")
    assert ("data-testid='declined'" in page) == (status == "pending")
    stored = await transaction(asgi_client, link["uid"])
    assert stored.status == status
    assert (stored.model_extra or {})["outcome"] == outcome


async def test_invalid_card_is_a_form_error_and_changes_nothing(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    link = await create_link(asgi_client, merchant)
    response = await submit(asgi_client, link["uid"], "4242424242424241")
    assert response.status_code == 400
    assert text_of(response.text, "form-error")
    assert "data-testid='pay-button'" in response.text
    assert "4242424242424241" not in response.text  # the card number is never echoed
    for bad in ({"expiry": "13/30"}, {"expiry": "01/20"}, {"expiry": "soon"}, {"cvc": "1"}, {"name": " "}):
        again = await submit(asgi_client, link["uid"], "4242424242424242", **bad)
        assert again.status_code == 400, bad
    assert (await transaction(asgi_client, link["uid"])).status == "pending"


@pytest.mark.parametrize(("button", "status"), [("approve", "approved"), ("fail", "pending")])
async def test_three_ds_challenge_page(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, button: str, status: str
) -> None:
    merchant = await merchant_factory(three_ds=True)
    link = await create_link(asgi_client, merchant)
    challenge = await submit(asgi_client, link["uid"], "4000002760003184")
    assert challenge.status_code == 200
    html = challenge.text
    assert "data-testid='3ds-approve'" in html
    assert "data-testid='3ds-fail'" in html
    assert (await transaction(asgi_client, link["uid"])).status == "pending"
    challenge_id = re.search(r"name='challengeId' value='([^']+)'", html)
    assert challenge_id
    token = form_token(html)
    wrong = await asgi_client.post(
        "/checkout/3ds",
        data={"orderId": link["uid"], "formToken": token, "challengeId": "3ds_forged", "result": "approve"},
    )
    assert wrong.status_code == 303
    assert (await transaction(asgi_client, link["uid"])).status == "pending"
    answer = await asgi_client.post(
        "/checkout/3ds",
        data={
            "orderId": link["uid"],
            "formToken": token,
            "challengeId": challenge_id.group(1),
            "result": button,
        },
    )
    assert answer.status_code == 303
    page = (await asgi_client.get(answer.headers["location"])).text
    assert state_of(page) == status  # a failed challenge leaves the link payable (D414)
    assert ("data-testid='declined'" in page) == (button == "fail")


async def test_three_ds_through_the_control_plane(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    merchant = await merchant_factory(three_ds=True)
    first = await create_link(asgi_client, merchant)
    needs = await pay(asgi_client, first["uid"], "4000002760003184")
    assert needs["status"] == "pending"
    assert needs["outcome"] == "three_ds_required"
    assert (await pay(asgi_client, first["uid"], "4000002760003184", "approve"))["status"] == "approved"
    second = await create_link(asgi_client, merchant)
    assert (await pay(asgi_client, second["uid"], "4000002760003184", "fail"))["status"] == "declined"


async def test_control_plane_pay_errors(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    link = await create_link(asgi_client, merchant)
    bad = await asgi_client.post(
        f"/_sandbox/transactions/{link['uid']}/pay", json={"cardNumber": "4242424242424241"}
    )
    assert bad.status_code == 409
    assert bad.json()["ownCode"] == 5000
    await pay(asgi_client, link["uid"], "4242424242424242")
    again = await asgi_client.post(
        f"/_sandbox/transactions/{link['uid']}/pay", json={"cardNumber": "4242424242424242"}
    )
    assert again.status_code == 409
    assert again.json()["ownCode"] is None
    unknown = await asgi_client.post(
        "/_sandbox/transactions/nope/pay", json={"cardNumber": "4242424242424242"}
    )
    assert unknown.status_code == 404


async def test_unknown_order_is_a_404_page(asgi_client: httpx.AsyncClient) -> None:
    for url in (
        "/checkout/?orderId=unknown",
        "/checkout/",
        "/checkout/?orderId=%00%ff",
        "/checkout/rails/zigi",
    ):
        response = await asgi_client.get(url)
        assert response.status_code == 404, url
        assert response.headers["content-type"].startswith("text/html")
    posted = await asgi_client.post("/checkout/pay", content=b"\xff\x00garbage")
    assert posted.status_code == 404


async def test_link_expires_after_24_hours(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    link = await create_link(asgi_client, merchant)
    await advance(asgi_client, 24 * 3600 - 60)
    pending = (await asgi_client.get(link["URL"])).text
    assert state_of(pending) == "pending"
    await advance(asgi_client, 61)
    page = (await asgi_client.get(link["URL"])).text
    assert state_of(page) == "expired"
    assert "data-testid='pay-button'" not in page
    late = await submit(asgi_client, link["uid"], "4242424242424242", form_token(pending))
    assert late.status_code == 303
    assert (await transaction(asgi_client, link["uid"])).status == "expired"


async def test_dismissed_alternative_is_not_a_checkout_link(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    from server_helpers import create_alternative

    uid = (await create_alternative(asgi_client, merchant))["uid"]
    assert (await asgi_client.get(f"/checkout/?orderId={uid}")).status_code == 404
