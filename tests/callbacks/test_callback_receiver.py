"""CallbackReceiver: verify, parse, claim, run once, release on failure (sync and asyncio)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import redis.asyncio

from paysdk._errors import CallbackAuthenticationError, CallbackPayloadError
from paysdk.callbacks import (
    DEFAULT_HEADER_NAME,
    AsyncRedisDedupStore,
    CallbackOutcome,
    CallbackPayload,
    CallbackReceiver,
    EventState,
    MemoryDedupStore,
    SQLiteDedupStore,
)

from ._support import OLD_TOKEN, TOKEN, make_body

HEADERS = {"content-type": "application/json", "x-callback-token": TOKEN}


class Boom(RuntimeError):
    pass


def test_first_delivery_runs_the_handler_and_duplicates_are_acknowledged() -> None:
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN)
    seen: list[CallbackPayload] = []
    body = make_body(eventId="evt_1", createdAt="15/06/2025 08:30:00")

    first = receiver.handle(HEADERS, body, seen.append)
    assert first.status_code == 200
    assert first.outcome is CallbackOutcome.PROCESSED
    assert first.processed
    assert not first.duplicate
    assert isinstance(first.payload, CallbackPayload)
    assert first.payload.amount == Decimal("10.50")
    assert first.created_at == datetime(2025, 6, 15, 8, 30, tzinfo=ZoneInfo("America/Guatemala"))

    for _ in range(3):
        again = receiver.handle(HEADERS, body, seen.append)
        assert again.status_code == 200
        assert again.duplicate
        assert again.outcome is CallbackOutcome.DUPLICATE
    assert len(seen) == 1
    assert first.response_body() == {"outcome": "processed", "eventId": "evt_1"}


def test_bad_header_is_401_and_the_handler_does_not_run() -> None:
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN)
    seen: list[CallbackPayload] = []
    for headers in ({}, {"x-callback-token": "nope"}, {"x-callback-token": "ñandú"}):
        result = receiver.handle(headers, make_body(), seen.append)
        assert result.status_code == 401
        assert result.outcome is CallbackOutcome.UNAUTHORIZED
        assert isinstance(result.error, CallbackAuthenticationError)
        assert result.payload is None
        assert TOKEN not in str(result.response_body())
    assert seen == []


def test_bad_header_is_checked_before_the_body() -> None:
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN)
    assert receiver.handle({}, b"not json", lambda payload: None).status_code == 401


def test_bad_body_is_400_naming_the_field() -> None:
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN)
    result = receiver.handle(HEADERS, make_body(eventId=None), lambda payload: None)
    assert result.status_code == 400
    assert isinstance(result.error, CallbackPayloadError)
    assert result.response_body()["message"].startswith("eventId:")


def test_rotation_accepts_old_and_new_values() -> None:
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, [TOKEN, OLD_TOKEN])
    assert receiver.handle({"X-Callback-Token": OLD_TOKEN}, make_body(), lambda p: None).status_code == 200
    assert receiver.handle({"X-Callback-Token": TOKEN}, make_body(), lambda p: None).status_code == 200


def test_handler_failure_releases_so_the_redelivery_is_processed(tmp_path: Path) -> None:
    store = SQLiteDedupStore(tmp_path / "e.sqlite3")
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN, store=store)
    body = make_body(eventId="evt_fail")
    attempts: list[str] = []

    def flaky(payload: CallbackPayload) -> None:
        attempts.append(payload.event_id)
        if len(attempts) == 1:
            raise Boom("database down")

    with pytest.raises(Boom):
        receiver.handle(HEADERS, body, flaky)
    assert store.state("evt_fail") is EventState.ABSENT
    assert receiver.handle(HEADERS, body, flaky).outcome is CallbackOutcome.PROCESSED
    assert receiver.handle(HEADERS, body, flaky).outcome is CallbackOutcome.DUPLICATE
    assert attempts == ["evt_fail", "evt_fail"]
    store.close()


def test_duplicate_while_processing_is_409_so_it_is_retried() -> None:
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN)
    body = make_body(eventId="evt_slow")
    started, finish = threading.Event(), threading.Event()

    def slow(payload: CallbackPayload) -> None:
        started.set()
        assert finish.wait(10)

    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(receiver.handle, HEADERS, body, slow)
        assert started.wait(10)
        during = receiver.handle(HEADERS, body, slow)
        assert during.outcome is CallbackOutcome.IN_PROGRESS
        assert during.status_code == 409
        assert during.duplicate
        finish.set()
        assert first.result(10).status_code == 200
    assert receiver.handle(HEADERS, body, slow).outcome is CallbackOutcome.DUPLICATE


def test_twenty_concurrent_deliveries_run_the_handler_once(tmp_path: Path) -> None:
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN, store=SQLiteDedupStore(tmp_path / "e.db"))
    body = make_body(eventId="evt_storm")
    calls: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(20)

    def handler(payload: CallbackPayload) -> None:
        with lock:
            calls.append(payload.event_id)

    def deliver(_: int) -> int:
        barrier.wait()
        return receiver.handle(HEADERS, body, handler).status_code

    with ThreadPoolExecutor(max_workers=20) as pool:
        statuses = list(pool.map(deliver, range(20)))
    assert calls == ["evt_storm"]
    assert set(statuses) <= {200, 409}
    assert receiver.handle(HEADERS, body, handler).status_code == 200


class _AsyncMemoryStore:
    """An asyncio store over MemoryDedupStore: enough to exercise the async code paths."""

    def __init__(self) -> None:
        self.inner = MemoryDedupStore()

    async def claim(self, event_id: str) -> bool:
        return self.inner.claim(event_id)

    async def complete(self, event_id: str) -> None:
        self.inner.complete(event_id)

    async def release(self, event_id: str) -> None:
        self.inner.release(event_id)

    async def state(self, event_id: str) -> EventState:
        return self.inner.state(event_id)


def test_handle_refuses_an_async_handler_and_releases() -> None:
    store = MemoryDedupStore()
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN, store=store)

    async def handler(payload: CallbackPayload) -> None:
        pass

    with pytest.raises(TypeError, match="ahandle"):
        receiver.handle(HEADERS, make_body(eventId="evt_async_handler"), handler)  # type: ignore[arg-type]
    assert store.state("evt_async_handler") is EventState.ABSENT


def test_handle_refuses_an_async_store() -> None:
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN, store=_AsyncMemoryStore())
    with pytest.raises(TypeError, match="ahandle"):
        receiver.handle(HEADERS, make_body(), lambda payload: None)


@pytest.mark.redis
async def test_ahandle_with_async_redis_store(
    async_redis_client: redis.asyncio.Redis, redis_prefix: str
) -> None:
    store = AsyncRedisDedupStore(async_redis_client, prefix=redis_prefix)
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN, store=store)
    body = make_body(eventId="evt_async")
    seen: list[str] = []

    async def handler(payload: CallbackPayload) -> None:
        await asyncio.sleep(0)
        seen.append(payload.event_id)
        if len(seen) == 1:
            raise Boom("first attempt fails")

    with pytest.raises(Boom):
        await receiver.ahandle(HEADERS, body, handler)
    assert await store.state("evt_async") is EventState.ABSENT
    results = await asyncio.gather(*(receiver.ahandle(HEADERS, body, handler) for _ in range(10)))
    assert [r.outcome for r in results].count(CallbackOutcome.PROCESSED) == 1
    assert seen == ["evt_async", "evt_async"]
    assert (await receiver.ahandle(HEADERS, body, handler)).outcome is CallbackOutcome.DUPLICATE


async def test_ahandle_with_sync_store_and_sync_handler(tmp_path: Path) -> None:
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN, store=MemoryDedupStore())
    seen: list[CallbackPayload] = []
    body = make_body()
    assert (await receiver.ahandle(HEADERS, body, seen.append)).status_code == 200
    assert (await receiver.ahandle(HEADERS, body, seen.append)).duplicate
    assert (await receiver.ahandle({}, body, seen.append)).status_code == 401
    assert (await receiver.ahandle(HEADERS, b"[]", seen.append)).status_code == 400
    assert len(seen) == 1


async def test_ahandle_releases_when_cancelled() -> None:
    store = MemoryDedupStore()
    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN, store=store)
    started = asyncio.Event()

    async def hangs(payload: CallbackPayload) -> None:
        started.set()
        await asyncio.sleep(3600)

    task = asyncio.create_task(receiver.ahandle(HEADERS, make_body(eventId="evt_cancel"), hangs))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.state("evt_cancel") is EventState.ABSENT


# ------------------------------------------------------------------ dispatch by kind (D340)


def test_each_kind_runs_its_own_handler_and_a_kind_without_one_is_acknowledged_once() -> None:
    from paysdk._json import dumps
    from paysdk.callbacks import PaymentCallback, SubscriptionCallback, UnknownCallback

    receiver = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN)
    payments: list[PaymentCallback] = []
    subs: list[SubscriptionCallback] = []
    unknown: list[UnknownCallback] = []
    subs_body = dumps(
        {
            "eventId": "evt_s",
            "event": "subscriptionSuspended",
            "subUid": "sub_1",
            "status": "inactive",
            "planId": "p",
            "client": "acme",
            "attempts": 1,
            "renewalDate": "2026-11-01",
            "reason": "Declined",
            "occurredAt": "2026-11-02T00:00:00Z",
        }
    )
    new_kind = b'{"eventId": "evt_n", "event": "brandNew"}'

    def handle(body: bytes) -> CallbackOutcome:
        return receiver.handle(
            HEADERS, body, payments.append, on_subscription=subs.append, on_unknown=unknown.append
        ).outcome

    assert handle(make_body(eventId="evt_p")) is CallbackOutcome.PROCESSED
    assert handle(subs_body) is CallbackOutcome.PROCESSED
    assert handle(new_kind) is CallbackOutcome.PROCESSED
    assert handle(new_kind) is CallbackOutcome.DUPLICATE
    assert [p.event_id for p in payments] == ["evt_p"]
    assert [s.sub_uid for s in subs] == ["sub_1"]
    assert [u.kind for u in unknown] == ["brandNew"]
    result = receiver.handle(HEADERS, subs_body, payments.append)
    assert result.outcome is CallbackOutcome.DUPLICATE
    # A payment-only receiver (the handler of before issue 20) acknowledges the other kinds: no 400.
    fresh = CallbackReceiver(DEFAULT_HEADER_NAME, TOKEN)
    for body in (subs_body, new_kind):
        answered = fresh.handle(HEADERS, body, payments.append)
        assert answered.status_code == 200
        assert answered.response_body()["eventId"] in ("evt_s", "evt_n")
    assert fresh.handle(HEADERS, subs_body, payments.append).outcome is CallbackOutcome.DUPLICATE
    assert len(payments) == 1
    assert result.created_at == datetime(2026, 11, 1, 18, 0, tzinfo=ZoneInfo("America/Guatemala"))
