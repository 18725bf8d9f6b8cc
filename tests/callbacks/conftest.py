"""Fixtures for the callback receiver tests: bodies, a fake clock, real Redis with a unique prefix."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis
import redis.asyncio

from ._support import REDIS_URL, FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def redis_prefix() -> str:
    return f"paysdk-test:{uuid.uuid4().hex}:"


def _cleanup(client: redis.Redis, prefix: str) -> None:
    keys = list(client.scan_iter(match=prefix + "*"))
    if keys:
        client.delete(*keys)


@pytest.fixture
def redis_client(redis_prefix: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError:
        client.close()
        pytest.fail(f"Redis not reachable at {REDIS_URL}: run `make services` (scripts/ensure-services.sh)")
    yield client
    _cleanup(client, redis_prefix)
    client.close()


@pytest.fixture
async def async_redis_client(redis_prefix: str) -> AsyncIterator[redis.asyncio.Redis]:
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        await client.ping()
    except redis.ConnectionError:
        await client.aclose()
        pytest.fail(f"Redis not reachable at {REDIS_URL}: run `make services` (scripts/ensure-services.sh)")
    yield client
    keys = [key async for key in client.scan_iter(match=redis_prefix + "*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()
