"""A card verified on the hosted checkout in a real Chromium, over a real socket (D140): the subscription
is then ``active`` on the control plane with that card as its default method, and the merchant receives
the verification's callback like a payment link's. Every public exchange is checked against
``/openapi.json`` (the e2e suite's ``server_recorder``)."""

from __future__ import annotations

import base64
import secrets
from decimal import Decimal
from typing import Any

import httpx
import nacl.signing
import pytest
from playwright.sync_api import Page, expect

from paysdk import _json
from paysdk._jwt import sign_merchant

from .conftest import MerchantReceiver

pytestmark = [pytest.mark.browser, pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)]

JSON_TYPE = {"Content-Type": "application/json"}


def _post(http: httpx.Client, path: str, payload: Any, headers: dict[str, str] | None = None) -> Any:
    response = http.post(path, content=_json.dumps(payload), headers=headers or JSON_TYPE)
    assert response.status_code in (200, 201), response.text
    return _json.loads(response.content)


def _verification(http: httpx.Client, receiver: MerchantReceiver, *, three_ds: bool) -> dict[str, Any]:
    """A client (callbacks to ``receiver``), a plan and a verify-card with the flag true: its ``data``."""
    merchant = _post(
        http,
        "/_sandbox/clients",
        {
            "callbackUrl": receiver.url,
            "callbackHeaderValue": receiver.header_value,
            "threeDS": three_ds,
            "timezone": "America/Guatemala",
        },
    )
    key = nacl.signing.SigningKey(base64.b64decode(merchant["signingPrivateKey"]))
    login = _post(
        http,
        "/rest/auth/login",
        {"merchant": merchant["slug"], "signature": sign_merchant(key, merchant["slug"])},
        headers={},
    )
    token = login["data"]["accessToken"]
    plan_id = "monthly-" + secrets.token_hex(3)
    _post(
        http, "/_sandbox/plans", {"client": merchant["slug"], "planId": plan_id, "amount": Decimal("19.90")}
    )
    answer = _post(
        http,
        "/v1/subscriptions/verify-card",
        {"shouldCreateSubscription": True, "planId": plan_id, "email": "ana@example.com"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer["success"] is True
    data: dict[str, Any] = answer["data"]
    data["planId"] = plan_id
    return data


@pytest.mark.parametrize(
    ("card", "three_ds", "challenge", "status"),
    [
        ("5555555555554444", False, None, "approved"),
        ("4000002500003155", True, "3ds-approve", "approved"),
        ("4000002500003155", True, "3ds-fail", "declined"),
        ("4000000000000002", False, None, "declined"),
    ],
    ids=["verify", "3ds-approve", "3ds-fail", "decline"],
)
# A declined card (or failed challenge) on the page leaves the verification payable (D414): the customer
# verifies another card, and the merchant gets one callback, for the approval.
def test_a_card_verified_in_chromium_creates_the_subscription(
    live_server: str,
    merchant_receiver: MerchantReceiver,
    page: Page,
    card: str,
    three_ds: bool,
    challenge: str | None,
    status: str,
) -> None:
    with httpx.Client(base_url=live_server, timeout=30) as http:
        verification = _verification(http, merchant_receiver, three_ds=three_ds)
        assert verification["URL"].startswith(live_server + "/checkout/")

        page.goto(verification["URL"])
        expect(page.get_by_test_id("purpose")).to_have_text("Card verification, no charge")
        expect(page.get_by_test_id("amount")).to_have_text("Q0.00")
        expect(page.get_by_test_id("status")).to_have_attribute("data-status", "pending")
        expect(page.get_by_test_id("pay-button")).to_have_text("Verify card")
        page.get_by_test_id("card-number").fill(card)
        page.get_by_test_id("card-expiry").fill("12/34")
        page.get_by_test_id("card-cvc").fill("123")
        page.get_by_test_id("card-name").fill("Ana Pérez")
        page.get_by_test_id("pay-button").click()
        if challenge is not None:
            page.get_by_test_id(challenge).click()
        if status == "declined":
            expect(page.get_by_test_id("declined")).to_be_visible()
            expect(page.get_by_test_id("status")).to_have_attribute("data-status", "pending")
            assert http.get(f"/_sandbox/subscriptions/{verification['subUid']}").status_code == 404
            card = "5555555555554444"
            page.get_by_test_id("card-number").fill(card)
            page.get_by_test_id("card-expiry").fill("12/34")
            page.get_by_test_id("card-cvc").fill("123")
            page.get_by_test_id("card-name").fill("Ana Pérez")
            page.get_by_test_id("pay-button").click()
        expect(page.get_by_test_id("status")).to_have_attribute("data-status", "approved")
        page.reload()
        assert page.get_by_test_id("pay-button").count() == 0

        (payload,) = merchant_receiver.wait_for(1)
        assert payload.uid == verification["uid"]
        assert payload.status == "approved"
        assert payload.amount == Decimal("0.00")

        shown = http.get(f"/_sandbox/subscriptions/{verification['subUid']}")
        assert shown.status_code == 200, shown.text
        sub = _json.loads(shown.content)
        assert sub["status"] == "active"
        assert sub["planId"] == verification["planId"]
        assert sub["defaultPaymentMethod"] == {
            "brand": "mastercard" if card.startswith("5") else "visa",
            "last4": card[-4:],
        }
        assert sub["nextRenewalDate"] == sub["anchorDate"]
        assert card not in shown.text
