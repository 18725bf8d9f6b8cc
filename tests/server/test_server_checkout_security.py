"""The hosted checkout's page headers (D93) and its form token and origin checks (D94), in process.

The browser side (a hostile page framing the checkout or posting to it) is in
``tests/e2e/test_hostile_pages.py``.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import httpx
import pytest
from server_helpers import create_alternative, create_link, form_token, page_token, transaction

from openapi_conformance import checked_server_recorder as server_recorder
from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app

__all__ = ["server_recorder"]  # every page and form answer checked against /openapi.json (D133)

CARD = {"cardNumber": "4000000000000002", "expiry": "12/39", "cvc": "123", "name": "Mallory"}


def _directives(policy: str) -> dict[str, str]:
    return {part.split(" ", 1)[0]: part.split(" ", 1)[1] for part in (p.strip() for p in policy.split(";"))}


async def test_every_checkout_answer_carries_the_page_headers(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    merchant = await merchant_factory(three_ds=True)
    link = await create_link(asgi_client, merchant)
    page = await asgi_client.get(link["URL"])
    token = form_token(page.text)
    challenge = await asgi_client.post(
        "/checkout/pay",
        data={"orderId": link["uid"], "formToken": token, **CARD, "cardNumber": "4000002760003184"},
    )
    assert challenge.status_code == 200
    answers = [
        page,
        challenge,
        await asgi_client.get("/checkout/?orderId=unknown"),
        await asgi_client.post("/checkout/pay", data={"orderId": link["uid"], **CARD}),
    ]
    for answer in answers:
        headers = answer.headers
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["cache-control"] == "no-store"
        assert headers["x-content-type-options"] == "nosniff"
        policy = _directives(headers["content-security-policy"])
        assert policy["default-src"] == "'none'"
        assert policy["frame-ancestors"] == "'none'"
        assert policy["form-action"] == "'self' http://testserver"
        assert policy["base-uri"] == "'none'"
        assert "script-src" not in policy  # no script at all: default-src 'none'
        assert "<script" not in answer.text
        # The one inline stylesheet is allowed by its hash, nothing else inline.
        style = re.search(r"<style>(.*?)</style>", answer.text, re.S)
        assert style is not None
        digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
        assert policy["style-src"] == f"'sha256-{digest}'"
        assert " style=" not in answer.text


async def test_form_post_without_or_with_a_wrong_token_is_403_and_changes_nothing(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    link = await create_link(asgi_client, merchant)
    other = await create_link(asgi_client, merchant)
    other_token = await page_token(asgi_client, other["URL"])
    for extra in ({}, {"formToken": ""}, {"formToken": other_token}, {"formToken": other_token[:-1] + "A"}):
        refused = await asgi_client.post("/checkout/pay", data={"orderId": link["uid"], **CARD, **extra})
        assert refused.status_code == 403, extra
        assert refused.headers["content-type"].startswith("text/html")
        assert "data-status='forbidden'" in refused.text
    assert (await transaction(asgi_client, link["uid"])).status == "pending"
    # The page's own token works.
    token = await page_token(asgi_client, link["URL"])
    paid = await asgi_client.post("/checkout/pay", data={"orderId": link["uid"], "formToken": token, **CARD})
    assert paid.status_code == 303
    declined = await transaction(asgi_client, link["uid"])  # the page's decline leaves it payable (D414)
    assert (declined.status, (declined.model_extra or {})["outcome"]) == ("pending", "generic_decline")


@pytest.mark.parametrize(
    "origin", ["http://127.0.0.1:9999", "https://attacker.example", "http://testserver:81"]
)
async def test_cross_origin_post_is_refused_even_with_the_token(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, origin: str
) -> None:
    link = await create_link(asgi_client, merchant)
    token = await page_token(asgi_client, link["URL"])
    refused = await asgi_client.post(
        "/checkout/pay", data={"orderId": link["uid"], "formToken": token, **CARD}, headers={"Origin": origin}
    )
    assert refused.status_code == 403
    assert "data-testid='card-number'" not in refused.text
    stored = await transaction(asgi_client, link["uid"])
    assert stored.status == "pending"
    assert (stored.model_extra or {}).get("outcome") is None


@pytest.mark.parametrize("origin", ["http://testserver", "null", None])
async def test_own_null_or_no_origin_with_the_token_pays(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, origin: str | None
) -> None:
    """``null``: what a browser sends from the checkout's own page under ``Referrer-Policy: no-referrer``;
    none: a non-browser client. The token decides (D94)."""
    link = await create_link(asgi_client, merchant)
    token = await page_token(asgi_client, link["URL"])
    headers = {"Origin": origin} if origin else {}
    paid = await asgi_client.post(
        "/checkout/pay", data={"orderId": link["uid"], "formToken": token, **CARD}, headers=headers
    )
    assert paid.status_code == 303
    declined = await transaction(asgi_client, link["uid"])  # the page's decline leaves it payable (D414)
    assert (declined.status, (declined.model_extra or {})["outcome"]) == ("pending", "generic_decline")


async def test_challenge_and_rail_forms_need_the_token_too(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    merchant = await merchant_factory(three_ds=True)
    link = await create_link(asgi_client, merchant)
    token = await page_token(asgi_client, link["URL"])
    challenge = await asgi_client.post(
        "/checkout/pay",
        data={"orderId": link["uid"], "formToken": token, **CARD, "cardNumber": "4000002760003184"},
    )
    challenge_id = re.search(r"name='challengeId' value='([^']+)'", challenge.text)
    assert challenge_id is not None
    answer = {"orderId": link["uid"], "challengeId": challenge_id.group(1), "result": "approve"}
    assert (await asgi_client.post("/checkout/3ds", data=answer)).status_code == 403
    foreign = await asgi_client.post(
        "/checkout/3ds", data={**answer, "formToken": token}, headers={"Origin": "http://attacker.example"}
    )
    assert foreign.status_code == 403
    assert (await transaction(asgi_client, link["uid"])).status == "pending"
    approved = await asgi_client.post("/checkout/3ds", data={**answer, "formToken": token})
    assert approved.status_code == 303
    assert (await transaction(asgi_client, link["uid"])).status == "approved"

    uid = (await create_alternative(asgi_client, merchant))["uid"]
    process = await asgi_client.post(
        f"/api/v1/integrations/transactions/{uid}/payments",
        content=b'{"processor": "zigi", "data": {}}',
        headers={"Authorization": f"Bearer {merchant.sandbox_token}"},
    )
    assert process.status_code == 200
    rail = f"/checkout/rails/zigi?orderId={uid}"
    forged = await asgi_client.post("/checkout/rails/zigi", data={"orderId": uid, "outcome": "paid"})
    assert forged.status_code == 403
    assert (await transaction(asgi_client, uid)).status == "pending"
    token = await page_token(asgi_client, rail)
    paid = await asgi_client.post(
        "/checkout/rails/zigi", data={"orderId": uid, "formToken": token, "outcome": "paid"}
    )
    assert paid.status_code == 303
    assert (await transaction(asgi_client, uid)).status == "approved"


async def test_token_is_the_same_on_every_instance_over_the_database(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, db_url: str
) -> None:
    """The key lives in the database (derived from the server's signing key): a page rendered by one
    instance posts to another over the same database."""
    link = await create_link(asgi_client, merchant)
    token = await page_token(asgi_client, link["URL"])
    other = create_app(db_url, start_ticker=False)
    try:
        transport = httpx.ASGITransport(app=other)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            assert await page_token(client, link["URL"]) == token
    finally:
        other.state.paysdk.db.dispose()
