"""Token stores: memory, file (0600, atomic, fcntl lock across processes) and Redis (real server)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import secrets
import stat
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio

import paysdk
from paysdk._secret import Secret
from paysdk._token_stores import AsyncStoreAdapter

REDIS_URL = os.environ.get("PAYSDK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def pair(n: int = 1) -> paysdk.StoredTokens:
    now = time.time()
    return paysdk.StoredTokens(Secret(f"access-{n}"), Secret(f"refresh-{n}"), now + 1800, now + 86400, now)


# ------------------------------------------------------------------------------------ memory


def test_memory_store_round_trip_and_lock() -> None:
    store = paysdk.MemoryTokenStore()
    assert isinstance(store, paysdk.TokenStore)
    assert store.load("k") is None
    with store.lock("k"):
        store.save("k", pair())
    assert store.load("k") == pair() or store.load("k") is not None
    store.delete("k")
    assert store.load("k") is None
    held = threading.Event()
    release = threading.Event()
    order: list[str] = []

    def holder() -> None:
        with store.lock("k"):
            held.set()
            release.wait(5)
            order.append("holder")

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(5)
    timer = threading.Timer(0.05, release.set)
    timer.start()
    with store.lock("k"):
        order.append("second")
    thread.join()
    assert order == ["holder", "second"]
    with store.lock("other"):  # other keys are independent
        pass


# -------------------------------------------------------------------------------------- file


def test_file_store_mode_0600_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "tokens.json"
    store = paysdk.FileTokenStore(path)
    assert store.load("app") is None
    with store.lock("app"):
        store.save("app", pair(1))
        store.save("other", pair(2))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "sub" / "tokens.json.lock").stat().st_mode) == 0o600
    loaded = store.load("app")
    assert loaded is not None
    assert loaded.access_token == "access-1"
    again = paysdk.FileTokenStore(path).load("other")
    assert again is not None
    assert again.refresh_token == "refresh-2"
    with store.lock("app"):
        store.delete("app")
    assert store.load("app") is None
    assert store.load("other") is not None
    assert "access" not in repr(store)
    leftovers = sorted(p.name for p in (tmp_path / "sub").iterdir())
    # no temporary files left: the file, its write lock and the lock of key "app"
    assert leftovers[0] == "tokens.json"
    assert leftovers[-1] == "tokens.json.lock"
    assert len(leftovers) == 3
    assert leftovers[1].startswith("tokens.json.")
    assert leftovers[1].endswith(".lock")
    assert stat.S_IMODE((tmp_path / "sub" / leftovers[1]).stat().st_mode) == 0o600


def test_file_store_locks_are_per_key(tmp_path: Path) -> None:
    """Holding one key's lock (a user session refreshing) never blocks another key of the same file
    (the application pair it needs), in this process or another, and both writes survive."""
    path = tmp_path / "tokens.json"
    store = paysdk.FileTokenStore(path)
    with store.lock("user"):
        with paysdk.FileTokenStore(path).lock("app"):  # a second holder: would deadlock on one lock
            store.save("app", pair(1))
        store.save("user", pair(2))
    loaded_app, loaded_user = store.load("app"), store.load("user")
    assert loaded_app is not None
    assert loaded_app.access_token == "access-1"
    assert loaded_user is not None
    assert loaded_user.access_token == "access-2"


def test_file_store_corrupt_file_counts_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{not json")
    store = paysdk.FileTokenStore(path)
    assert store.load("app") is None
    with store.lock("app"):
        store.save("app", pair())
    assert store.load("app") is not None


def _hold_and_count(path: str, counter: str, rounds: int) -> None:
    """In a child process: under the lock, read-increment-write a counter file (lost updates if not)."""
    store = paysdk.FileTokenStore(path)
    for _ in range(rounds):
        with store.lock("app"):
            value = int(Path(counter).read_text() or "0")
            time.sleep(0.001)
            Path(counter).write_text(str(value + 1))


def test_file_store_lock_excludes_other_processes(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_hold_and_count, args=(str(tmp_path / "t.json"), str(counter), 20))
        for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    _hold_and_count(str(tmp_path / "t.json"), str(counter), 20)
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert counter.read_text() == "80"


def test_file_store_lock_excludes_threads(tmp_path: Path) -> None:
    store = paysdk.FileTokenStore(tmp_path / "t.json")
    inside = 0
    peak = 0
    guard = threading.Lock()

    def work() -> None:
        nonlocal inside, peak
        for _ in range(10):
            with store.lock("app"):
                with guard:
                    inside += 1
                    peak = max(peak, inside)
                time.sleep(0.001)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak == 1


async def test_async_adapter_runs_file_store_in_threads(tmp_path: Path) -> None:
    store = AsyncStoreAdapter.of(paysdk.FileTokenStore(tmp_path / "t.json"))
    async with store.lock("app"):
        await store.save("app", pair(3))
    loaded = await store.load("app")
    assert loaded is not None
    assert loaded.access_token == "access-3"
    async with store.lock("app"):
        await store.delete("app")
    assert await store.load("app") is None


async def test_async_adapter_lock_cancelled_while_waiting_is_released(tmp_path: Path) -> None:
    inner = paysdk.FileTokenStore(tmp_path / "t.json")
    store = AsyncStoreAdapter.of(inner)
    release = threading.Event()
    held = threading.Event()

    def holder() -> None:
        with inner.lock("app"):
            held.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(5)

    async def waiter() -> None:
        async with store.lock("app"):
            pass  # pragma: no cover - cancelled before

    task = asyncio.ensure_future(waiter())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    thread.join()
    await asyncio.sleep(0.1)  # the abandoned acquisition gets the lock and gives it back
    async with asyncio.timeout(5):
        async with store.lock("app"):
            pass


# ------------------------------------------------------------------------------------- redis


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.fail(f"Redis is not reachable at {REDIS_URL}: {exc}", pytrace=False)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
async def async_redis_client() -> AsyncIterator[redis.asyncio.Redis]:
    client = redis.asyncio.Redis.from_url(REDIS_URL, socket_timeout=5)
    try:
        await client.ping()
    except redis.RedisError as exc:
        pytest.fail(f"Redis is not reachable at {REDIS_URL}: {exc}", pytrace=False)
    try:
        yield client
    finally:
        await client.aclose()


def unique_prefix() -> str:
    return f"paysdk-test:{secrets.token_hex(6)}:"


def test_redis_store_round_trip_ttl_and_lock(redis_client: redis.Redis) -> None:
    prefix = unique_prefix()
    store = paysdk.RedisTokenStore(redis_client, prefix=prefix, lock_ttl=2, lock_wait=0.3)
    assert store.load("app") is None
    with store.lock("app"):
        store.save("app", pair(5))
        assert redis_client.exists(prefix + "app:lock") == 1
    assert redis_client.exists(prefix + "app:lock") == 0
    loaded = store.load("app")
    assert loaded is not None
    assert loaded.refresh_token == "refresh-5"
    assert 0 < redis_client.pttl(prefix + "app") <= 86400 * 1000
    # A held lock makes another holder wait, then time out.
    other = paysdk.RedisTokenStore(redis_client, prefix=prefix, lock_wait=0.2)
    with store.lock("app"), pytest.raises(TimeoutError), other.lock("app"):
        pass  # pragma: no cover
    store.delete("app")
    assert store.load("app") is None
    redis_client.delete(prefix + "app", prefix + "app:lock")


def test_redis_lock_release_only_own_token(redis_client: redis.Redis) -> None:
    """A holder whose lease expired must not delete the lock another holder now has."""
    prefix = unique_prefix()
    store = paysdk.RedisTokenStore(redis_client, prefix=prefix, lock_ttl=0.1)
    with store.lock("app"):
        time.sleep(0.2)  # our lease ran out
        redis_client.set(prefix + "app:lock", "someone-else")
    assert redis_client.get(prefix + "app:lock") == b"someone-else"
    redis_client.delete(prefix + "app:lock")


def test_redis_lock_mutual_exclusion_threads(redis_client: redis.Redis) -> None:
    prefix = unique_prefix()
    store = paysdk.RedisTokenStore(redis_client, prefix=prefix)
    inside = 0
    peak = 0
    guard = threading.Lock()

    def work() -> None:
        nonlocal inside, peak
        for _ in range(5):
            with store.lock("app"):
                with guard:
                    inside += 1
                    peak = max(peak, inside)
                time.sleep(0.002)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak == 1


async def test_async_redis_store(async_redis_client: redis.asyncio.Redis) -> None:
    prefix = unique_prefix()
    store = paysdk.AsyncRedisTokenStore(async_redis_client, prefix=prefix)
    assert isinstance(store, paysdk.AsyncTokenStore)
    assert AsyncStoreAdapter.of(store) is store
    async with store.lock("app"):
        await store.save("app", pair(7))
    loaded = await store.load("app")
    assert loaded is not None
    assert loaded.access_token == "access-7"
    inside = 0
    peak = 0

    async def work() -> None:
        nonlocal inside, peak
        async with store.lock("app"):
            inside += 1
            peak = max(peak, inside)
            await asyncio.sleep(0.002)
            inside -= 1

    await asyncio.gather(*(work() for _ in range(10)))
    assert peak == 1
    await store.delete("app")
    assert await store.load("app") is None
    with pytest.raises(paysdk.ValidationError):
        paysdk.Client(environment=paysdk.Environment.local(), token_store=store)  # type: ignore[arg-type]
