"""The control plane, faults, the request log and /openapi.json."""

from __future__ import annotations

import asyncio
import re
from decimal import Decimal
from typing import Any

import httpx
import pytest
from server_helpers import JSON_TYPE, advance, assert_error, auth, body, create_link, dumps, link_body, pay

from paysdk.contracts.sandbox import ClockState, Fault, Health, RequestLogEntry, SandboxClient, TestCard
from paysdk.server.errors import ConnectionDropped


async def test_health(asgi_client: httpx.AsyncClient, db_url: str) -> None:
    health = Health.model_validate(body(await asgi_client.get("/_sandbox/health")))
    assert health.status == "ok"
    assert health.environment == "sandbox"
    assert health.database == db_url.split(":")[0]


async def test_client_defaults(asgi_client: httpx.AsyncClient) -> None:
    response = await asgi_client.post("/_sandbox/clients")
    assert response.status_code == 201
    client = SandboxClient.model_validate(body(response))
    assert re.fullmatch(r"merchant-[0-9a-f]{8}", client.slug)
    assert client.amount_min == Decimal("1.00")
    assert client.amount_max == Decimal("100000.00")
    assert client.channels == ["wa", "sms", "email", "web", "app"]
    assert client.currencies == ["GTQ", "USD"]
    assert client.payment_methods == [
        "zigi",
        "akisiQR",
        "bamPaymentButton",
        "quickPayQR",
        "bancoIndustrial",
        "pronet",
    ]
    assert (client.country, client.timezone) == ("GT", "America/Guatemala")
    assert client.callback_header_name == "X-Callback-Token"
    assert re.fullmatch(r"[0-9a-f]{32}", client.callback_header_value)
    assert client.three_ds is False
    for token in (client.sandbox_token, client.production_token):
        assert re.fullmatch(r"[0-9a-f]{64}", token)
    assert client.sandbox_token != client.production_token
    for key in (client.hook_private_key, client.hook_public_key):
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", key)
    assert client.sandbox_token not in repr(client)
    fetched = SandboxClient.model_validate(body(await asgi_client.get(f"/_sandbox/clients/{client.slug}")))
    assert fetched.sandbox_token == client.sandbox_token
    assert fetched.hook_private_key == "****"  # only its hash is stored (D14)
    assert fetched.hook_public_key == client.hook_public_key


async def test_client_options_and_errors(asgi_client: httpx.AsyncClient) -> None:
    spec = {
        "slug": "Shop_1",
        "amountMin": Decimal("5.00"),
        "amountMax": Decimal("50"),
        "channels": ["web"],
        "currencies": ["USD", "GTQ"],
        "paymentMethods": ["zigi"],
        "threeDS": True,
        "callbackUrl": "https://shop.example/cb",
    }
    created = await asgi_client.post("/_sandbox/clients", content=dumps(spec), headers=JSON_TYPE)
    assert created.status_code == 201, created.text
    client = SandboxClient.model_validate(body(created))
    assert client.three_ds
    assert client.amount_max == Decimal("50.00")
    assert client.currencies == ["USD", "GTQ"]
    assert_error(
        await asgi_client.post("/_sandbox/clients", content=dumps({"slug": "Shop_1"}), headers=JSON_TYPE),
        409,
        None,
    )
    assert_error(await asgi_client.get("/_sandbox/clients/shop_1"), 404, None)
    assert_error(await asgi_client.get("/_sandbox/clients/%00"), 404, None)
    bad: list[dict[str, Any]] = [
        {"slug": "has space"},
        {"amountMin": Decimal("-1")},
        {"amountMin": Decimal("10"), "amountMax": Decimal("5")},
        {"amountMax": Decimal("1.001")},
        {"channels": ["fax"]},
        {"channels": []},
        {"paymentMethods": ["paypal"]},
        {"timezone": "Mars/Base"},
        {"callbackUrl": "ftp://x"},
        {"callbackHeaderName": "Bad Header"},
        {"callbackHeaderValue": "é"},
        {"threeDS": "yes please"},
    ]
    for spec_item in bad:
        assert_error(
            await asgi_client.post("/_sandbox/clients", content=dumps(spec_item), headers=JSON_TYPE),
            409,
            5000,
        )


async def test_reset_wipes_everything(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    await create_link(asgi_client, merchant)
    await advance(asgi_client, 3600)
    await asgi_client.post(
        "/_sandbox/faults", content=dumps({"kind": "latency", "latencyMs": 1, "count": 5}), headers=JSON_TYPE
    )
    assert (await asgi_client.post("/_sandbox/reset")).status_code == 200
    assert (await asgi_client.get(f"/_sandbox/clients/{merchant.slug}")).status_code == 404
    assert body(await asgi_client.get("/_sandbox/requests")) == []
    assert body(await asgi_client.get("/_sandbox/faults")) == []
    clock = ClockState.model_validate(body(await asgi_client.get("/_sandbox/clock")))
    assert clock.offset_seconds == 0
    refused = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
    )
    assert_error(refused, 401, None)


async def test_clock_advance(asgi_client: httpx.AsyncClient) -> None:
    before = ClockState.model_validate(body(await asgi_client.get("/_sandbox/clock")))
    after = await advance(asgi_client, Decimal("90.5"))
    assert Decimal(str(after["offsetSeconds"])) == before.offset_seconds + Decimal("90.5")
    for bad in ({"seconds": 0}, {"seconds": -1}, {"seconds": [1]}, {}):
        assert_error(
            await asgi_client.post("/_sandbox/clock/advance", content=dumps(bad), headers=JSON_TYPE),
            409,
            5000,
            "seconds",
        )


async def test_test_cards(asgi_client: httpx.AsyncClient) -> None:
    cards = [TestCard.model_validate(item) for item in body(await asgi_client.get("/_sandbox/test-cards"))]
    numbers = {card.number: card.outcome for card in cards}
    assert numbers["4242424242424242"] == "approved"
    assert numbers["4000000000000002"] == "declined"
    assert numbers["4000000000009995"] == "declined"
    assert numbers["4000002760003184"] == "three_ds_challenge"


async def test_sandbox_transaction_unknown_is_404(asgi_client: httpx.AsyncClient) -> None:
    assert_error(await asgi_client.get("/_sandbox/transactions/nope"), 404, None)
    assert_error(
        await asgi_client.post("/_sandbox/transactions/nope/simulate", json={"outcome": "paid"}), 404, None
    )
    assert_error(
        await asgi_client.post("/_sandbox/transactions/nope/simulate", json={"outcome": "x"}), 409, 5000
    )


# ------------------------------------------------------------------------------------------ faults


async def test_error_and_rate_limit_faults(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    created = await asgi_client.post(
        "/_sandbox/faults",
        content=dumps({"kind": "error", "route": "POST /transactions", "status": 503}),
        headers=JSON_TYPE,
    )
    fault = Fault.model_validate(body(created))
    assert fault.remaining == 1
    await asgi_client.post(
        "/_sandbox/faults",
        content=dumps({"kind": "rate_limit", "retryAfter": 7, "count": 1}),
        headers=JSON_TYPE,
    )
    failed = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
    )
    assert_error(failed, 503, None)
    limited = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
    )
    assert_error(limited, 429, None)
    assert limited.headers["retry-after"] == "7"
    ok = await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=auth(merchant))
    assert ok.status_code == 200
    assert [item["remaining"] for item in body(await asgi_client.get("/_sandbox/faults"))] == [0, 0]
    # The control plane is never faulted.
    await asgi_client.post(
        "/_sandbox/faults", content=dumps({"kind": "error", "count": 3}), headers=JSON_TYPE
    )
    assert (await asgi_client.get("/_sandbox/health")).status_code == 200
    assert body(await asgi_client.delete("/_sandbox/faults")) == {"deleted": 3}
    assert (
        await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=auth(merchant))
    ).status_code == 200


async def test_latency_fault(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    import time

    await asgi_client.post(
        "/_sandbox/faults",
        content=dumps({"kind": "latency", "latencyMs": 300, "route": "/transactions"}),
        headers=JSON_TYPE,
    )
    start = time.monotonic()
    response = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
    )
    assert response.status_code == 200
    assert time.monotonic() - start >= 0.3


async def test_drop_fault_in_process_raises(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    await asgi_client.post(
        "/_sandbox/faults", content=dumps({"kind": "drop", "route": "POST /transactions"}), headers=JSON_TYPE
    )
    with pytest.raises(ConnectionDropped):
        await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=auth(merchant))
    assert (
        await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=auth(merchant))
    ).status_code == 200
    log = [RequestLogEntry.model_validate(item) for item in body(await asgi_client.get("/_sandbox/requests"))]
    assert [entry.status_code for entry in log] == [0, 200]


async def test_fault_validation(asgi_client: httpx.AsyncClient) -> None:
    for bad in ({"kind": "meteor"}, {"kind": "error", "status": 404}, {"kind": "latency", "count": 0}, {}):
        assert_error(
            await asgi_client.post("/_sandbox/faults", content=dumps(bad), headers=JSON_TYPE), 409, 5000
        )


# ------------------------------------------------------------------------------------- request log


async def test_request_log_masks_secrets(asgi_client: httpx.AsyncClient, merchant_factory: Any) -> None:
    merchant = await merchant_factory(
        callback_header_name="X-Shop-Pass", callback_header_value="hunter2-value"
    )
    await create_link(asgi_client, merchant)
    await asgi_client.post(
        "/transactions-hook",
        content=dumps(
            {
                "privateKey": merchant.hook_private_key,
                "publicKey": merchant.hook_public_key,
                "amount": 5,
                "userId": "+50212345678",
                "channel": "wa",
            }
        ),
        headers={"X-Shop-Pass": "hunter2-value", "Idempotency-Key": "idem-123", "Cookie": "session=abc"},
    )
    raw = (await asgi_client.get("/_sandbox/requests")).text
    for secret in (
        merchant.sandbox_token,
        merchant.hook_private_key,
        merchant.hook_public_key,
        "hunter2-value",
        "idem-123",
        "session=abc",
        "privateKey",
    ):
        assert secret not in raw
    entries = [
        RequestLogEntry.model_validate(item) for item in body(await asgi_client.get("/_sandbox/requests"))
    ]
    assert [(entry.method, entry.path, entry.status_code) for entry in entries] == [
        ("POST", "/transactions", 200),
        ("POST", "/transactions-hook", 200),
    ]
    assert entries[0].headers["authorization"] == "****"
    assert entries[1].headers["x-shop-pass"] == "****"
    # The control plane itself is not logged.
    assert all(not entry.path.startswith("/_sandbox") for entry in entries)
    limited = body(await asgi_client.get("/_sandbox/requests", params={"limit": 1}))
    assert [item["path"] for item in limited] == ["/transactions-hook"]
    assert_error(await asgi_client.get("/_sandbox/requests", params={"limit": 0}), 409, 5000, "limit")
    assert_error(await asgi_client.get("/_sandbox/requests", params={"limit": "x"}), 409, 5000, "limit")


async def test_idempotency_replays_and_refuses_other_bodies(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    headers = {**auth(merchant), "Idempotency-Key": "key-1"}
    raw = dumps(link_body(merchant))
    first = await asgi_client.post("/transactions", content=raw, headers=headers)
    second = await asgi_client.post("/transactions", content=raw, headers=headers)
    assert first.status_code == second.status_code == 200
    assert second.content == first.content
    assert second.headers["idempotent-replayed"] == "true"
    other = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant, amount=Decimal("11.00"))), headers=headers
    )
    assert_error(other, 422, None, "Idempotency-Key")  # the IETF draft's status for a reused key (D17)
    fresh = await asgi_client.post(
        "/transactions", content=raw, headers={**auth(merchant), "Idempotency-Key": "key-2"}
    )
    assert body(fresh)["uid"] != body(first)["uid"]
    # Error answers are replayed too; the same key on another path is independent.
    bad = dumps(link_body(merchant, amount=Decimal("0")))
    err_headers = {**auth(merchant), "Idempotency-Key": "key-3"}
    assert (await asgi_client.post("/transactions", content=bad, headers=err_headers)).status_code == 400
    again = await asgi_client.post("/transactions", content=bad, headers=err_headers)
    assert again.status_code == 400
    assert again.headers["idempotent-replayed"] == "true"
    # After 24 h the key is forgotten.
    await advance(asgi_client, 24 * 3600 + 1)
    later = await asgi_client.post("/transactions", content=raw, headers=headers)
    assert later.status_code == 200
    assert "idempotent-replayed" not in later.headers
    assert body(later)["uid"] != body(first)["uid"]


async def test_idempotency_key_in_progress_is_409_naming_the_header(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, hold_first_request: Any
) -> None:
    held = hold_first_request("/transactions")
    headers = {**auth(merchant), "Idempotency-Key": "slow-1"}
    raw = dumps(link_body(merchant))
    first = asyncio.create_task(asgi_client.post("/transactions", content=raw, headers=headers))
    assert await asyncio.to_thread(held.entered.wait, 20)
    running = await asgi_client.post("/transactions", content=raw, headers=headers)
    assert_error(running, 409, None, "Idempotency-Key")
    assert "in progress" in body(running)["message"]
    assert "idempotent-replayed" not in running.headers
    other_body = dumps(link_body(merchant, amount=Decimal("12.00")))
    assert_error(await asgi_client.post("/transactions", content=other_body, headers=headers), 422, None)
    held.release.set()
    done = await first
    assert done.status_code == 200
    assert "idempotent-replayed" not in done.headers
    replay = await asgi_client.post("/transactions", content=raw, headers=headers)
    assert replay.content == done.content
    assert replay.headers["idempotent-replayed"] == "true"


async def test_idempotency_key_is_scoped_per_credentials_and_5xx_not_stored(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, merchant_factory: Any
) -> None:
    other = await merchant_factory()
    key = {"Idempotency-Key": "shared"}
    a = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers={**auth(merchant), **key}
    )
    b = await asgi_client.post(
        "/transactions", content=dumps(link_body(other)), headers={**auth(other), **key}
    )
    assert a.status_code == b.status_code == 200
    assert body(a)["uid"] != body(b)["uid"]
    await asgi_client.post(
        "/_sandbox/faults", content=dumps({"kind": "error", "route": "/api/*"}), headers=JSON_TYPE
    )
    alt_headers = {**auth(merchant, bearer=True), "Idempotency-Key": "alt-1"}
    payload = dumps({"amount": 5, "userId": "+50212345678", "channel": "wa", "client": merchant.slug})
    failed = await asgi_client.post("/api/v1/integrations/transactions", content=payload, headers=alt_headers)
    assert failed.status_code == 500
    retried = await asgi_client.post(
        "/api/v1/integrations/transactions", content=payload, headers=alt_headers
    )
    assert retried.status_code == 201
    assert "idempotent-replayed" not in retried.headers
    bad_key = await asgi_client.post(
        "/transactions",
        content=dumps(link_body(merchant)),
        headers={**auth(merchant), "Idempotency-Key": "x" * 300},
    )
    assert_error(bad_key, 400, None, "Idempotency-Key")


# ------------------------------------------------------------------------------------------ openapi


async def test_openapi_documents_public_endpoints_only(asgi_client: httpx.AsyncClient) -> None:
    spec = (await asgi_client.get("/openapi.json")).json()
    paths = spec["paths"]
    for path in (
        "/transactions",
        "/transactions-hook",
        "/api/v1/integrations/transactions",
        "/api/v1/integrations/transactions/{uid}/payments",
        "/api/v1/integrations/transactions/{uid}/payment-intents",
        "/api/v1/integrations/transactions/{uid}/dismiss",
    ):
        assert "post" in paths[path], path
    assert not any(path.startswith("/_sandbox") for path in paths)
    create = paths["/transactions"]["post"]
    schema = create["requestBody"]["content"]["application/json"]["schema"]
    assert {"amount", "userId", "channel", "client"} <= set(schema["required"])
    assert create["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/PaymentLink"
    )
    assert "URL" in spec["components"]["schemas"]["PaymentLink"]["properties"]
    assert set(spec["components"]["schemas"]["ErrorBody"]["properties"]) == {"ownCode", "message", "details"}
    assert {"400", "401", "409"} <= set(create["responses"])
    assert paths["/api/v1/integrations/transactions"]["post"]["responses"].get("201")


async def test_pay_after_terminal_and_simulate_expired(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    link = await create_link(asgi_client, merchant)
    expired = await asgi_client.post(
        f"/_sandbox/transactions/{link['uid']}/simulate", json={"outcome": "expired"}
    )
    assert body(expired)["status"] == "expired"
    again = await asgi_client.post(
        f"/_sandbox/transactions/{link['uid']}/pay", json={"cardNumber": "4242424242424242"}
    )
    assert_error(again, 409, None)
    other = await create_link(asgi_client, merchant)
    assert (await pay(asgi_client, other["uid"], "4242424242424242"))["status"] == "approved"
    paid_link = await asgi_client.post(
        f"/_sandbox/transactions/{other['uid']}/simulate", json={"outcome": "paid"}
    )
    assert_error(paid_link, 409, None)
