"""Inbound processor webhooks against the REAL reference server (D193, D240): async in process
(ASGITransport) and sync over a uvicorn socket, on SQLite and PostgreSQL.

The processor's calls are made raw (signed here with :func:`paysdk.contracts.processor_webhooks.sign`)
so that every signature fault can be sent; the control plane's helpers (``client.sandbox.processor``)
play the processor through the receivers' own code. Every public exchange is checked against
``/openapi.json`` by the conformance recorder.

The virtual clock only moves forward, so each test moves it to a Monday some weeks ahead first: a capture
at 10:00 UTC joins that day's 23:30 batch, so at 23:45 a ``settled`` notification is allowed and the
settlement job (00:00) has not run yet.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, time, timedelta
from typing import Any

import httpx
import pytest

import paysdk
from paysdk.contracts.processor_webhooks import SIGNATURE_HEADER, sign

from .conftest import Maker, call
from .test_terminal_sdk import _create, move_to, next_weekday

SETTLEMENTS = "/webhooks/settlements"
FEED = "/webhooks/processor-feed"


class Raw:
    """Plain HTTP to the server under test (the processor's side): in process or over the socket."""

    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        self.http: httpx.Client | httpx.AsyncClient
        if kind == "async-asgi":
            app = request.getfixturevalue("app")
            self.http = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://testserver"
            )
        else:
            self.http = httpx.Client(base_url=request.getfixturevalue("live_server"), timeout=60)

    async def post(self, path: str, content: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
        response: httpx.Response = await call(
            self.http.post(
                path, content=content, headers={"Content-Type": "application/json", **(headers or {})}
            )
        )
        return response

    async def close(self) -> None:
        if isinstance(self.http, httpx.AsyncClient):
            await self.http.aclose()
        else:
            self.http.close()


@pytest.fixture
async def raw(kind: str, request: pytest.FixtureRequest) -> AsyncIterator[Raw]:
    client = Raw(kind, request)
    yield client
    await client.close()


async def _monday(make: Maker) -> tuple[Any, Any, datetime]:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client(currencies=["GTQ", "USD"]))
    client = make(merchant_token=merchant.sandbox_token)
    monday = await next_weekday(sandbox, 0, time(10, 0))
    await move_to(sandbox, monday)
    return sandbox, client, monday


def _body(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def _field(response: httpx.Response) -> str:
    assert response.headers["content-type"].startswith("application/json")
    return str(response.json()["details"][0]["field"])


async def _status(sandbox: Any, payment_id: str) -> tuple[str, Any, Any]:
    payment = await call(sandbox.sandbox.terminal.get(payment_id))
    return str(payment.status), payment.settled_at, payment.paid_out_at


@pytest.mark.covers("sandbox.processor.secret")
async def test_signature_faults_change_nothing_and_a_notification_applies_once(make: Maker, raw: Raw) -> None:
    sandbox, client, monday = await _monday(make)
    payment = await _create(client)
    assert payment.status == "captured"
    now = await move_to(sandbox, monday.replace(hour=23, minute=45))
    secret = (await call(sandbox.sandbox.processor.secret())).secret
    assert secret.startswith("psec_")
    assert len(secret) == 69
    t = int(now.timestamp())
    body = _body(notificationId="ntf-1", type="settled", paymentId=payment.id, at=now.isoformat())
    good = sign(secret, body, t)
    faults = {
        "missing": {},
        "malformed": {SIGNATURE_HEADER: "v1=" + "0" * 64},
        "malformed t": {SIGNATURE_HEADER: f"t=soon,v1={'0' * 64}"},
        "short v1": {SIGNATURE_HEADER: f"t={t},v1=abc"},
        "wrong secret": {SIGNATURE_HEADER: sign("psec_" + "1" * 64, body, t)},
        "other body": {SIGNATURE_HEADER: sign(secret, body + b" ", t)},
        "stale t": {SIGNATURE_HEADER: sign(secret, body, t - 301)},
        "future t": {SIGNATURE_HEADER: sign(secret, body, t + 600)},
        "wrong header": {"X-Signature": good},
        "merchant token instead": {"Authorization": "Bearer " + "x" * 20},
    }
    for name, headers in faults.items():
        response = await raw.post(SETTLEMENTS, body, headers)
        assert response.status_code == 401, (name, response.text)
        assert _field(response) == SIGNATURE_HEADER, name
        assert response.json()["ownCode"] is None
        assert secret not in response.text
        feed = _body(
            feedId="f-x",
            events=[{"eventId": "e-x", "type": "settled", "paymentId": payment.id, "at": now.isoformat()}],
        )
        assert (await raw.post(FEED, feed, headers)).status_code == 401, name
    assert await _status(sandbox, payment.id) == ("captured", None, None)

    applied = await raw.post(SETTLEMENTS, body, {SIGNATURE_HEADER: good})
    assert applied.status_code == 200, applied.text
    assert applied.json() == {"notificationId": "ntf-1", "applied": True, "status": "settled", "ignored": []}
    settled = await _status(sandbox, payment.id)
    assert settled[0] == "settled"
    assert settled[1] == now

    again = await raw.post(SETTLEMENTS, body, {SIGNATURE_HEADER: sign(secret, body, t + 1)})
    assert again.status_code == 200
    answer = again.json()
    assert (answer["applied"], answer["status"]) == (False, "settled")
    assert [item["code"] for item in answer["ignored"]] == ["duplicate"]
    assert await _status(sandbox, payment.id) == settled

    # The secret survives a reset of the control plane (kept like the wallet's server keys).
    await call(sandbox.sandbox.reset())
    assert (await call(sandbox.sandbox.processor.secret())).secret == secret


def _v1_by_hand(secret: str, t: int, body: bytes) -> str:
    """D193's ``v1`` written out here (not :func:`sign`): hex HMAC-SHA256 of ``"<t>.<raw body>"``; its
    known answers are in ``tests/foundation/test_processor_signature.py``."""
    return hmac.new(secret.encode("utf-8"), f"{t}.".encode("ascii") + body, hashlib.sha256).hexdigest()


async def test_an_old_signature_with_a_new_timestamp_is_refused(make: Maker, raw: Raw) -> None:
    """A captured delivery replayed later with a fresh ``t=`` and its old ``v1`` is ``401``: the signature
    covers the timestamp, so the tolerance window bounds a replay (D193)."""
    sandbox, client, monday = await _monday(make)
    payment = await _create(client)
    now = await move_to(sandbox, monday.replace(hour=23, minute=45))
    secret = (await call(sandbox.sandbox.processor.secret())).secret
    t = int(now.timestamp())
    body = _body(notificationId="ntf-replay", type="settled", paymentId=payment.id, at=now.isoformat())
    feed = _body(
        feedId="f-replay",
        events=[{"eventId": "e-replay", "type": "settled", "paymentId": payment.id, "at": now.isoformat()}],
    )
    old, old_feed = _v1_by_hand(secret, t, body), _v1_by_hand(secret, t, feed)
    # Replayed with a new t inside the tolerance (the server's clock has not moved): refused.
    for later in (t + 1, t + 200):
        replay = await raw.post(SETTLEMENTS, body, {SIGNATURE_HEADER: f"t={later},v1={old}"})
        assert replay.status_code == 401, replay.text
        assert _field(replay) == SIGNATURE_HEADER
        replay = await raw.post(FEED, feed, {SIGNATURE_HEADER: f"t={later},v1={old_feed}"})
        assert replay.status_code == 401, replay.text
    assert await _status(sandbox, payment.id) == ("captured", None, None)
    # The original, signed by hand, is accepted: the refusal was the timestamp's.
    applied = await raw.post(SETTLEMENTS, body, {SIGNATURE_HEADER: f"t={t},v1={old}"})
    assert applied.status_code == 200, applied.text
    assert applied.json()["applied"] is True
    # A day later the capture is replayed with a current t: still refused, whatever it carries.
    later_now = await move_to(sandbox, now + timedelta(days=1))
    fresh = int(later_now.timestamp())
    replay = await raw.post(SETTLEMENTS, body, {SIGNATURE_HEADER: f"t={fresh},v1={old}"})
    assert replay.status_code == 401, replay.text
    assert _field(replay) == SIGNATURE_HEADER


async def test_bad_bodies_unknown_payments_and_refused_transitions_change_nothing(
    make: Maker, raw: Raw
) -> None:
    sandbox, client, monday = await _monday(make)
    payment = await _create(client)
    secret = (await call(sandbox.sandbox.processor.secret())).secret
    now = await move_to(sandbox, monday.replace(hour=12))
    t = int(now.timestamp())

    def signed(body: bytes) -> dict[str, str]:
        return {SIGNATURE_HEADER: sign(secret, body, t)}

    malformed = b'{"notificationId": "n-1", '
    response = await raw.post(SETTLEMENTS, malformed, signed(malformed))
    assert (response.status_code, _field(response)) == (400, "body")
    wrong_type = _body(notificationId="n-2", type="refunded", paymentId=payment.id, at=now.isoformat())
    response = await raw.post(SETTLEMENTS, wrong_type, signed(wrong_type))
    assert (response.status_code, response.json()["ownCode"], _field(response)) == (409, 5000, "type")
    naive = _body(notificationId="n-3", type="settled", paymentId=payment.id, at="2026-01-05T00:00:00")
    response = await raw.post(SETTLEMENTS, naive, signed(naive))
    assert (response.status_code, _field(response)) == (409, "at")
    future = _body(
        notificationId="n-4", type="settled", paymentId=payment.id, at=(now + timedelta(hours=1)).isoformat()
    )
    response = await raw.post(SETTLEMENTS, future, signed(future))
    assert (response.status_code, _field(response)) == (409, "at")
    unknown = _body(notificationId="n-5", type="settled", paymentId="tpm_" + "0" * 24, at=now.isoformat())
    response = await raw.post(SETTLEMENTS, unknown, signed(unknown))
    assert (response.status_code, _field(response)) == (404, "paymentId")
    too_many = _body(
        feedId="f-1",
        events=[
            {"eventId": f"e{i}", "type": "settled", "paymentId": payment.id, "at": now.isoformat()}
            for i in range(1001)
        ],
    )
    response = await raw.post(FEED, too_many, signed(too_many))
    assert (response.status_code, _field(response)) == (409, "events")
    late_event = _body(
        feedId="f-2",
        events=[
            {"eventId": "ok", "type": "settled", "paymentId": payment.id, "at": now.isoformat()},
            {
                "eventId": "late",
                "type": "settled",
                "paymentId": payment.id,
                "at": (now + timedelta(days=1)).isoformat(),
            },
        ],
    )
    response = await raw.post(FEED, late_event, signed(late_event))
    assert (response.status_code, _field(response)) == (409, "events.1.at")

    # Before the 23:30 cutoff a settlement is refused (recorded as ignored), never a 500.
    early = _body(notificationId="n-6", type="settled", paymentId=payment.id, at=now.isoformat())
    response = await raw.post(SETTLEMENTS, early, signed(early))
    assert response.status_code == 200
    assert response.json()["applied"] is False
    assert [(i["code"], i["reason"]) for i in response.json()["ignored"]] == [
        ("not_allowed", "its batch's cutoff has not passed yet")
    ]
    assert await _status(sandbox, payment.id) == ("captured", None, None)

    with pytest.raises(paysdk.NotFoundError) as caught:
        await call(sandbox.sandbox.processor.settle("tpm_" + "1" * 24))
    assert caught.value.body["details"][0]["field"] == "paymentId"


@pytest.mark.covers("sandbox.processor.feed")
async def test_feed_batch_with_duplicates_and_impossible_transitions(make: Maker, raw: Raw) -> None:
    sandbox, client, monday = await _monday(make)
    first = await _create(client)
    second = await _create(client, amount="20.00")
    manual = await _create(client, amount="30.00", capture_mode="manual")
    now = await move_to(sandbox, monday.replace(hour=23, minute=45))
    at = now.isoformat()
    events = [
        {"eventId": "e-1", "type": "settled", "paymentId": first.id, "at": at},
        {"eventId": "e-1", "type": "settled", "paymentId": first.id, "at": at},  # the same event again
        {"eventId": "e-2", "type": "settled", "paymentId": first.id, "at": at},  # settled already
        {"eventId": "e-3", "type": "voided", "paymentId": second.id, "at": at},  # after the cutoff
        {"eventId": "e-4", "type": "paid_out", "paymentId": manual.id, "at": at},  # never captured
        {"eventId": "e-5", "type": "settled", "paymentId": "tpm_" + "2" * 24, "at": at},  # unknown
        {"eventId": "e-6", "type": "settled", "paymentId": second.id, "at": at},
        {"eventId": "e-7", "type": "paid_out", "paymentId": second.id, "at": at},
    ]
    body = _body(feedId="feed-1", events=events)
    secret = (await call(sandbox.sandbox.processor.secret())).secret
    response = await raw.post(FEED, body, {SIGNATURE_HEADER: sign(secret, body, int(now.timestamp()))})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["feedId"] == "feed-1"
    assert answer["applied"] == ["e-1", "e-6", "e-7"]
    assert [(i["id"], i["code"]) for i in answer["ignored"]] == [
        ("e-1", "duplicate"),
        ("e-2", "not_allowed"),
        ("e-3", "not_allowed"),
        ("e-4", "not_allowed"),
        ("e-5", "unknown_payment"),
    ]
    states = {p.id: await _status(sandbox, p.id) for p in (first, second, manual)}
    assert [s[0] for s in states.values()] == ["settled", "paid_out", "authorized"]

    # The whole batch again (another signature): nothing applies, nothing changes.
    response = await raw.post(FEED, body, {SIGNATURE_HEADER: sign(secret, body, int(now.timestamp()) + 5)})
    assert response.status_code == 200
    assert response.json()["applied"] == []
    assert [i["code"] for i in response.json()["ignored"]] == ["duplicate"] * 5 + ["unknown_payment"] + [
        "duplicate"
    ] * 2
    assert {p.id: await _status(sandbox, p.id) for p in (first, second, manual)} == states

    # The control plane plays the processor through the same receiver.
    delivery = await call(
        sandbox.sandbox.processor.feed(
            [
                {"type": "paid_out", "payment_id": first.id, "event_id": "cp-1"},
                {"type": "paid_out", "payment_id": first.id, "event_id": "cp-1"},
            ]
        )
    )
    assert delivery.result.applied == ["cp-1"]
    assert [i.code for i in delivery.result.ignored] == ["duplicate"]
    assert (await _status(sandbox, first.id))[0] == "paid_out"


@pytest.mark.covers("sandbox.processor.settle", "sandbox.processor.pay_out")
async def test_the_control_plane_settles_and_pays_out_once(make: Maker) -> None:
    sandbox, client, monday = await _monday(make)
    payment = await _create(client, card="5555555555554444")
    early = await call(sandbox.sandbox.processor.settle(payment.id))
    assert early.result.applied is False
    assert early.result.ignored[0].code == "not_allowed"
    assert early.notification.notification_id.startswith("ntf_")
    now = await move_to(sandbox, monday.replace(hour=23, minute=40))
    settled = await call(sandbox.sandbox.processor.settle(payment.id, notification_id="n-settle"))
    assert (settled.result.applied, settled.result.status) == (True, "settled")
    assert now <= settled.notification.at < now + timedelta(minutes=1)
    repeat = await call(sandbox.sandbox.processor.settle(payment.id, notification_id="n-settle"))
    assert (repeat.result.applied, repeat.result.ignored[0].code) == (False, "duplicate")
    paid = await call(sandbox.sandbox.processor.pay_out(payment.id, at=now + timedelta(minutes=1)))
    assert (paid.result.applied, paid.result.status) == (True, "paid_out")
    shown = await call(sandbox.sandbox.terminal.get(payment.id))
    assert shown.paid_out_at == now + timedelta(minutes=1)
    assert shown.settled_at == settled.notification.at
    # The daily job later finds nothing to do for it: its paid-out time stays the processor's.
    await move_to(sandbox, datetime.combine(monday.date() + timedelta(days=4), time(1), tzinfo=UTC))
    assert (await call(sandbox.sandbox.terminal.get(payment.id))).paid_out_at == now + timedelta(minutes=1)


@pytest.mark.parametrize("kind", ["async-asgi"], indirect=True)  # concurrent sends: the async client
async def test_the_same_notification_delivered_at_once_applies_once(make: Maker, raw: Raw, kind: str) -> None:
    """Eight deliveries of one notification (and of one feed event) at the same time: one applies, the
    others are duplicates (the payment row is locked before the id is looked up, D231), never a 500."""
    import asyncio

    sandbox, client, monday = await _monday(make)
    payment = await _create(client)
    other = await _create(client, amount="11.00")
    now = await move_to(sandbox, monday.replace(hour=23, minute=45))
    secret = (await call(sandbox.sandbox.processor.secret())).secret
    t = int(now.timestamp())
    body = _body(notificationId="ntf-race", type="settled", paymentId=payment.id, at=now.isoformat())
    feed = _body(
        feedId="f-race",
        events=[{"eventId": "e-race", "type": "settled", "paymentId": other.id, "at": now.isoformat()}],
    )
    responses = await asyncio.gather(
        *(raw.post(SETTLEMENTS, body, {SIGNATURE_HEADER: sign(secret, body, t + i)}) for i in range(8)),
        *(raw.post(FEED, feed, {SIGNATURE_HEADER: sign(secret, feed, t + i)}) for i in range(8)),
    )
    assert [r.status_code for r in responses] == [200] * 16, [
        r.text for r in responses if r.status_code != 200
    ]
    assert sum(r.json()["applied"] is True for r in responses[:8]) == 1
    assert sum(r.json()["applied"] == ["e-race"] for r in responses[8:]) == 1
    assert (await _status(sandbox, payment.id))[0] == "settled"
    assert (await _status(sandbox, other.id))[0] == "settled"
