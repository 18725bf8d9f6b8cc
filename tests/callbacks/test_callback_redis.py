"""Redis dedup stores against the real server (unique key prefix per test)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import redis
import redis.asyncio

from paysdk.callbacks import (
    DEFAULT_LEASE,
    DEFAULT_RETENTION,
    AsyncDedupStore,
    AsyncRedisDedupStore,
    DedupStore,
    EventState,
    RedisDedupStore,
)

from ._support import REDIS_URL

pytestmark = pytest.mark.redis


def test_claim_complete_release(redis_client: redis.Redis, redis_prefix: str) -> None:
    store = RedisDedupStore(redis_client, prefix=redis_prefix)
    assert isinstance(store, DedupStore)
    assert store.state("evt_1") is EventState.ABSENT
    assert store.claim("evt_1") is True
    assert store.claim("evt_1") is False
    assert store.state("evt_1") is EventState.PROCESSING
    store.release("evt_1")
    assert store.state("evt_1") is EventState.ABSENT
    assert store.claim("evt_1") is True
    store.complete("evt_1")
    store.release("evt_1")  # no-op after complete
    assert store.state("evt_1") is EventState.DONE
    assert store.claim("evt_1") is False


def test_ttls_are_the_lease_then_the_retention(redis_client: redis.Redis, redis_prefix: str) -> None:
    # Redis expires keys itself; check the TTLs it holds instead of waiting for them.
    store = RedisDedupStore(redis_client, prefix=redis_prefix)
    key = redis_prefix + "evt_1"
    assert store.claim("evt_1")
    lease_ms = redis_client.pttl(key)
    assert DEFAULT_LEASE.total_seconds() * 1000 - 5000 < lease_ms <= DEFAULT_LEASE.total_seconds() * 1000
    store.complete("evt_1")
    retention_ms = redis_client.pttl(key)
    full = DEFAULT_RETENTION.total_seconds() * 1000
    assert full - 5000 < retention_ms <= full
    assert redis_client.get(key) == b"d"


def test_expired_claim_can_be_taken_over(redis_client: redis.Redis, redis_prefix: str) -> None:
    store = RedisDedupStore(redis_client, prefix=redis_prefix)
    assert store.claim("evt_1")
    redis_client.delete(redis_prefix + "evt_1")  # what the lease expiry does on the server
    assert store.claim("evt_1") is True


def test_late_release_does_not_drop_another_instances_claim(
    redis_client: redis.Redis, redis_prefix: str
) -> None:
    slow = RedisDedupStore(redis_client, prefix=redis_prefix)
    other = RedisDedupStore(redis_client, prefix=redis_prefix)
    assert slow.claim("evt_1")
    redis_client.delete(redis_prefix + "evt_1")  # slow's lease ran out
    assert other.claim("evt_1")
    slow.release("evt_1")
    assert other.state("evt_1") is EventState.PROCESSING


def test_shared_by_several_instances(redis_client: redis.Redis, redis_prefix: str) -> None:
    first = RedisDedupStore(redis_client, prefix=redis_prefix)
    other_client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    second = RedisDedupStore(other_client, prefix=redis_prefix)
    assert first.claim("evt_1")
    first.complete("evt_1")
    assert second.claim("evt_1") is False
    assert second.state("evt_1") is EventState.DONE  # decode_responses=True reads the same
    other_client.close()


def test_twenty_threads_one_winner(redis_client: redis.Redis, redis_prefix: str) -> None:
    store = RedisDedupStore(redis_client, prefix=redis_prefix)
    barrier = threading.Barrier(20)

    def attempt(_: int) -> bool:
        barrier.wait()
        return store.claim("evt_race")

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(attempt, range(20)))
    assert results.count(True) == 1


def test_short_retention_is_refused(redis_client: redis.Redis) -> None:
    with pytest.raises(ValueError, match="retention"):
        RedisDedupStore(redis_client, retention=timedelta(days=1))


def test_repr_shows_no_connection_details(redis_client: redis.Redis, redis_prefix: str) -> None:
    assert repr(RedisDedupStore(redis_client, prefix=redis_prefix)) == (
        f"RedisDedupStore(prefix={redis_prefix!r}, retention=10 days, 0:00:00)"
    )


async def test_async_store(async_redis_client: redis.asyncio.Redis, redis_prefix: str) -> None:
    store = AsyncRedisDedupStore(async_redis_client, prefix=redis_prefix)
    assert isinstance(store, AsyncDedupStore)
    assert await store.claim("evt_1") is True
    assert await store.claim("evt_1") is False
    assert await store.state("evt_1") is EventState.PROCESSING
    await store.release("evt_1")
    assert await store.state("evt_1") is EventState.ABSENT
    assert await store.claim("evt_1") is True
    await store.complete("evt_1")
    assert await store.state("evt_1") is EventState.DONE
    assert (
        0 < await async_redis_client.pttl(redis_prefix + "evt_1") <= DEFAULT_RETENTION.total_seconds() * 1000
    )


async def test_async_concurrent_claims_one_winner(
    async_redis_client: redis.asyncio.Redis, redis_prefix: str
) -> None:
    stores = [AsyncRedisDedupStore(async_redis_client, prefix=redis_prefix) for _ in range(20)]
    results = await asyncio.gather(*(store.claim("evt_race") for store in stores))
    assert results.count(True) == 1


async def test_sync_and_async_stores_share_the_keyspace(
    redis_client: redis.Redis, async_redis_client: redis.asyncio.Redis, redis_prefix: str
) -> None:
    sync_store = RedisDedupStore(redis_client, prefix=redis_prefix)
    async_store = AsyncRedisDedupStore(async_redis_client, prefix=redis_prefix)
    assert sync_store.claim("evt_1")
    assert await async_store.claim("evt_1") is False
    sync_store.complete("evt_1")
    assert await async_store.state("evt_1") is EventState.DONE
