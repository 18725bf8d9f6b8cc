"""The console's family pages (issue 23; D723): subscriptions with their timeline, wallet cards with
movements and pending items, backoffice batches with progress, terminal payments with their dates; each
answers with and without data and shows what the control plane's JSON answers, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx
from cardholder_kit import Backoffice, csv_file, person
from server_helpers import JSON_TYPE, auth, dumps
from wallet.kit import Kit

C = "/_sandbox/console"


async def _post(client: httpx.AsyncClient, path: str, payload: dict[str, Any], status: int = 201) -> Any:
    response = await client.post(path, content=dumps(payload), headers=JSON_TYPE)
    assert response.status_code == status, response.text
    return json.loads(response.content)


async def test_family_pages_answer_without_data(asgi_client: httpx.AsyncClient) -> None:
    for path, table_id in (
        ("/subscriptions", "subscriptions"),
        ("/wallet", "cards"),
        ("/batches", "batches"),
        ("/terminal", "terminal"),
    ):
        response = await asgi_client.get(C + path)
        assert response.status_code == 200, path
        assert f"id='{table_id}-empty'" in response.text
    for path in ("/subscriptions/sub_nope", "/wallet/cards/card_nope"):
        missing = await asgi_client.get(C + path)
        assert missing.status_code == 404, path
        assert "id='message'" in missing.text


async def test_subscription_timeline(asgi_client: httpx.AsyncClient, merchant_factory: Any) -> None:
    merchant = await merchant_factory()
    plan = await _post(
        asgi_client, "/_sandbox/plans", {"client": merchant.slug, "name": "Gold", "amount": 12.5}
    )
    created = await _post(
        asgi_client,
        "/_sandbox/subscriptions",
        {"planId": plan["planId"], "email": "ana@example.com", "cardNumber": "4000000000000341"},
    )
    [sub_uid] = created["subUids"]
    await _post(asgi_client, "/_sandbox/clock/advance", {"seconds": 2 * 86400}, status=200)
    api = (await asgi_client.get(f"/_sandbox/subscriptions/{sub_uid}")).json()
    assert api["charges"], api  # the renewal ran (and, with this card, failed)
    listing = (await asgi_client.get(C + "/subscriptions")).text
    assert sub_uid in listing
    assert "Gold" in listing
    page = (await asgi_client.get(f"{C}/subscriptions/{sub_uid}?lang=en")).text
    assert "id='subscription-timeline'" in page
    for charge in api["charges"]:
        assert charge["chargeId"] in page
    assert api["status"] in page
    assert "ana@example.com" in page
    assert f"id='next-renewal'>{api['nextRenewalDate']}<" in page
    assert api["nextAttemptAt"][:19] in page
    outbox = (await asgi_client.get("/_sandbox/outbox")).json()
    emails = [email for email in outbox if email["data"].get("subUid") == sub_uid]
    assert emails
    for email in emails:
        assert email["subject"] in page


async def test_wallet_card_movements_and_pending(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    kit = Kit(asgi_client, await merchant_factory())
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    card_id = card["cardId"]
    assert (await kit.fund(card_id, "100")).status_code == 200
    captured = await _post(asgi_client, f"/_sandbox/cards/{card_id}/charges", {"amount": 10, "capture": True})
    held = await _post(asgi_client, f"/_sandbox/cards/{card_id}/charges", {"amount": Decimal("2.5")})
    movements = await kit.movements(card_id)
    now = await kit.card(card_id)
    listing = (await asgi_client.get(C + "/wallet")).text
    assert card["maskedPan"] in listing
    page = (await asgi_client.get(f"{C}/wallet/cards/{card_id}")).text
    assert card_id in page
    pending = page.split("id='card-pending'")[1].split("</table>")[0]
    moved = page.split("id='card-movements'")[1].split("</table>")[0]
    assert held["chargeId"] in pending  # authorized: a pending item
    assert captured["chargeId"] not in pending  # captured: a movement (its reference), not pending
    assert captured["chargeId"] in moved
    assert len(movements) == 2
    for movement in movements:
        assert movement["type"] in page
    assert f"{Decimal(str(now['availableBalance'])):.4f}" in page
    assert f"{Decimal(str(now['pendingDebits'])):.4f}" in page


async def test_batches_show_progress(asgi_client: httpx.AsyncClient, merchant_factory: Any) -> None:
    merchant = await merchant_factory()
    office = Backoffice(asgi_client, merchant)
    partner = await office.partner()
    upload = await office.upload(partner, csv_file([person(1), person(2)]))
    assert upload.status_code in (200, 201, 202), upload.text
    batch_id = upload.json()["data"]["batchId"]
    page = (await asgi_client.get(C + "/batches")).text
    assert batch_id in page
    assert f"id='progress-{batch_id}'" in page
    assert "data-live='refresh'" in page
    assert "<div id='live'>" in page


async def test_terminal_payments_show_their_dates(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    merchant = await merchant_factory()
    body = {
        "amount": 25,
        "currency": merchant.currencies[0],
        "terminalId": "POS-7",
        "card": {"number": "4242424242424242", "expiryMonth": 12, "expiryYear": 2030, "cvv": "123"},
    }
    created = await asgi_client.post("/terminal-payment", content=dumps(body), headers=auth(merchant))
    assert created.status_code == 201, created.text
    payment = created.json()
    payment = payment.get("data", payment)
    api = (await asgi_client.get(f"/_sandbox/terminal/payments/{payment['id']}")).json()
    page = (await asgi_client.get(C + "/terminal")).text
    assert payment["id"] in page
    assert api["capturedAt"][:19] in page
    assert api["settlementDate"] in page
    assert api["payoutDate"] in page
