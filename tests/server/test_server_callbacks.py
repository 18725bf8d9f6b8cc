"""Merchant callbacks over real HTTP on the virtual clock (spec 2.4, 6; D5-D8, D15, D16)."""

from __future__ import annotations

import itertools
import re
import socket
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from server_helpers import (
    JSON_TYPE,
    advance,
    attempts,
    auth,
    create_alternative,
    create_link,
    dumps,
    pay,
    transaction,
)

from paysdk.contracts.callbacks import CallbackPayload
from paysdk.contracts.sandbox import ClockState


async def advance_to(client: httpx.AsyncClient, instant: datetime) -> None:
    """Advance the virtual clock to ``instant`` (from the server's own reading of its clock)."""
    now = ClockState.model_validate_json((await client.get("/_sandbox/clock")).content).now
    assert instant > now, (instant, now)
    await advance(client, Decimal(str((instant - now).total_seconds())))


async def setup(asgi_client: httpx.AsyncClient, merchant_factory: Any, sink: Any, **fields: Any) -> Any:
    return await merchant_factory(callback_url=sink.url, **fields)


async def test_payload_headers_and_exact_amount(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await setup(
        asgi_client, merchant_factory, callback_sink, country="SV", timezone="America/El_Salvador"
    )
    link = await create_link(
        asgi_client, merchant, amount=Decimal("10.50"), externalId="order-1", currency="USD"
    )
    await pay(asgi_client, link["uid"], "4242424242424242")
    assert len(callback_sink.received) == 1  # delivered before /pay answered
    received = callback_sink.received[0]
    assert received.path == "/callbacks"
    assert b'"amount":10.50' in received.body
    payload = CallbackPayload.model_validate(received.json())
    stored = await transaction(asgi_client, link["uid"])
    assert payload.uid == link["uid"]
    assert payload.reference == link["reference"]
    assert payload.status == "approved"
    assert payload.amount == Decimal("10.50")
    assert payload.currency == "USD"
    assert payload.country == "SV"
    assert payload.channel == "WhatsApp"
    assert payload.external_id == "order-1"
    assert payload.payment_method_type == "visa"
    assert re.fullmatch(r"txn_[0-9a-f]{24}", payload.transaction_id)
    assert re.fullmatch(r"\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}", payload.created_at)
    local = stored.created_at.astimezone(ZoneInfo("America/El_Salvador"))
    assert payload.created_at == local.strftime("%d/%m/%Y %H:%M:%S")
    assert received.headers["x-callback-token"] == merchant.callback_header_value
    assert received.headers["x-event-id"] == payload.event_id
    assert received.headers["content-type"] == "application/json"
    [attempt] = await attempts(asgi_client, link["uid"])
    assert attempt.status_code == 200
    assert attempt.final
    assert attempt.next_attempt_at is None
    assert attempt.event_id == payload.event_id


async def test_custom_header_and_every_terminal_status(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await setup(
        asgi_client,
        merchant_factory,
        callback_sink,
        callback_header_name="X-Shop-Secret",
        callback_header_value="s3",
    )
    declined = await create_link(asgi_client, merchant, channel="email")
    await pay(asgi_client, declined["uid"], "4000000000000002")
    alternative = await create_alternative(asgi_client, merchant)
    await asgi_client.post(
        f"/api/v1/integrations/transactions/{alternative['uid']}/dismiss", headers=auth(merchant, bearer=True)
    )
    expiring = await create_link(asgi_client, merchant)
    await advance(asgi_client, 24 * 3600)
    statuses = {
        item.json()["uid"]: (item.json()["status"], item.json()["channel"]) for item in callback_sink.received
    }
    assert statuses[declined["uid"]] == ("declined", "Email")
    assert statuses[alternative["uid"]] == ("dismissed", "Web")
    assert statuses[expiring["uid"]] == ("expired", "WhatsApp")
    assert all(item.headers["x-shop-secret"] == "s3" for item in callback_sink.received)
    assert len(callback_sink.received) == 3


async def test_receiver_down_then_up_is_retried_at_1_2_4_minutes(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await setup(asgi_client, merchant_factory, callback_sink)
    callback_sink.down()
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4242424242424242")
    first = await attempts(asgi_client, link["uid"])
    assert len(first) == 1
    assert first[0].status_code is None
    assert first[0].error
    assert first[0].next_attempt_at is not None
    # The next attempt counts from the attempt's start; ``at`` is its end, which a connection refused
    # slowly on a loaded machine delays by seconds (seen on CI: 2.7 s).
    assert abs((first[0].next_attempt_at - first[0].at) - timedelta(minutes=1)) < timedelta(seconds=5)
    # The virtual clock runs on with the wall clock between requests (seconds on a loaded machine), so
    # each step advances to a point 10 s away from any attempt, measured from the first attempt's start.
    started = first[0].next_attempt_at - timedelta(minutes=1)
    await advance_to(asgi_client, started + timedelta(seconds=50))
    assert len(await attempts(asgi_client, link["uid"])) == 1
    await advance_to(asgi_client, started + timedelta(seconds=190))  # attempts at 1 and 3 min, refused
    assert len(await attempts(asgi_client, link["uid"])) == 3
    callback_sink.up()
    await advance_to(asgi_client, started + timedelta(seconds=430))  # the fourth attempt, at 7 min
    rows = await attempts(asgi_client, link["uid"])
    assert [row.status_code for row in rows] == [None, None, None, 200]
    offsets = [(row.at - rows[0].at).total_seconds() for row in rows]
    for actual, expected in zip(offsets, [0, 60, 180, 420], strict=True):
        assert abs(actual - expected) < 5, offsets
    assert rows[-1].final
    assert len(callback_sink.received) == 1
    await advance(asgi_client, 86400)
    assert len(await attempts(asgi_client, link["uid"])) == 4


async def test_server_errors_are_retried_with_the_same_event_and_bytes(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await setup(asgi_client, merchant_factory, callback_sink)
    callback_sink.respond_with([500, 503, 404])
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4242424242424242")
    await advance(asgi_client, 7 * 60)
    rows = await attempts(asgi_client, link["uid"])
    assert [row.status_code for row in rows] == [500, 503, 404, 200]
    assert [row.attempt for row in rows] == [1, 2, 3, 4]
    assert len({item.body for item in callback_sink.received}) == 1
    assert len({item.headers["x-event-id"] for item in callback_sink.received}) == 1


async def test_410_stops_for_good(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await setup(asgi_client, merchant_factory, callback_sink)
    callback_sink.respond_with([500, 410])
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4242424242424242")
    await advance(asgi_client, 3 * 86400)
    rows = await attempts(asgi_client, link["uid"])
    assert [row.status_code for row in rows] == [500, 410]
    assert rows[-1].final
    assert rows[-1].next_attempt_at is None
    assert len(callback_sink.received) == 2


async def test_2xx_stops(asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any) -> None:
    merchant = await setup(asgi_client, merchant_factory, callback_sink)
    callback_sink.respond_with([204])
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4000000000009995")
    await advance(asgi_client, 86400)
    rows = await attempts(asgi_client, link["uid"])
    assert [row.status_code for row in rows] == [204]
    assert callback_sink.received[0].json()["status"] == "declined"


async def test_duplicate_callback_fault_delivers_twice_with_the_same_event_id(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await setup(asgi_client, merchant_factory, callback_sink)
    fault = await asgi_client.post(
        "/_sandbox/faults", content=dumps({"kind": "duplicate_callback", "count": 1}), headers=JSON_TYPE
    )
    assert fault.status_code == 201
    first = await create_link(asgi_client, merchant)
    await pay(asgi_client, first["uid"], "4242424242424242")
    assert len(callback_sink.received) == 2
    assert callback_sink.received[0].body == callback_sink.received[1].body
    ids = {item.json()["eventId"] for item in callback_sink.received}
    assert ids == {item.headers["x-event-id"] for item in callback_sink.received}
    assert len(ids) == 1
    second = await create_link(asgi_client, merchant)
    await pay(asgi_client, second["uid"], "4242424242424242")
    assert len(callback_sink.received) == 3  # the fault was used up


async def test_delivery_stops_after_7_days(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await setup(asgi_client, merchant_factory, callback_sink)
    callback_sink.down()
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4242424242424242")
    await advance(asgi_client, 8 * 86400)
    rows = await attempts(asgi_client, link["uid"])
    # 1 + 10 doubling waits (1..512 min) + 12 waits of 12 h fit in 7 days.
    assert len(rows) == 23
    waits = [round((b.at - a.at).total_seconds() / 60) for a, b in itertools.pairwise(rows)]
    assert waits[:10] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert waits[10:] == [720] * 12
    assert rows[-1].at - rows[0].at <= timedelta(days=7)
    assert rows[-1].final
    assert all(not row.final for row in rows[:-1])
    callback_sink.up()
    await advance(asgi_client, 86400)
    assert len(await attempts(asgi_client, link["uid"])) == 23
    assert callback_sink.received == []


async def test_no_callback_url_means_no_delivery(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    merchant = await merchant_factory()
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4242424242424242")
    assert await attempts(asgi_client) == []


def test_a_sink_that_is_down_keeps_its_port(callback_sink: Any) -> None:
    """The test receiver refuses deliveries while down, and no other socket of this machine can take its
    port meanwhile (a sink of another test, in another worker, would receive this test's retries)."""
    callback_sink.down()
    with pytest.raises(httpx.ConnectError):
        httpx.post(callback_sink.url, json={}, timeout=30)
    other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with pytest.raises(OSError, match="in use"):
            other.bind(("127.0.0.1", callback_sink.port))
    finally:
        other.close()
    callback_sink.up()
    assert httpx.post(callback_sink.url, json={}, timeout=30).status_code == 200
    assert len(callback_sink.received) == 1
