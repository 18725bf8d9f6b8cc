"""Single-flight refresh against the REAL reference server (uvicorn socket, SQLite and PostgreSQL).

One application credential is logged in and stored; then the virtual clock moves 31 minutes, so the
server answers 401/7103 while the SDK's local clock still thinks the token valid. Many threads in two
processes (sharing a FileTokenStore or a RedisTokenStore), or 50 asyncio tasks, then call the wallet
at once: the server must see exactly ONE ``POST /rest/auth/refresh``.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio

import paysdk

REDIS_URL = os.environ.get("PAYSDK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
THREADS_PER_PROCESS = 25  # two processes: 50 threads in all


def _store(kind: str, where: str) -> Any:
    if kind == "file":
        return paysdk.FileTokenStore(where)
    return paysdk.RedisTokenStore(redis.Redis.from_url(REDIS_URL), prefix=where)


def _worker(
    base_url: str, slug: str, key: str, user_id: str, kind: str, where: str, barrier: Any, threads: int
) -> None:
    """One process: ``threads`` threads share one client and call the wallet at the same moment."""
    client = paysdk.Client(
        environment=paysdk.Environment.local(base_url),
        wallet=paysdk.WalletCredentials(slug, key),
        token_store=_store(kind, where),
        timeout=60,
    )
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def work() -> None:
        try:
            start.wait()
            client.wallet.cards.list(user_id)
        except BaseException as exc:
            errors.append(exc)

    barrier.wait(60)  # both processes are ready
    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(120)
    client.close()
    if errors:
        raise SystemExit(f"{len(errors)} calls failed: {errors[0]!r}")


def refresh_count(client: paysdk.Client) -> int:
    return sum(
        1
        for entry in client.sandbox.requests()
        if entry.method == "POST" and entry.path.endswith("/auth/refresh")
    )


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.fail(f"Redis is not reachable at {REDIS_URL}: {exc}", pytrace=False)
    prefix = f"paysdk-e2e:{secrets.token_hex(6)}:"
    yield prefix
    for name in client.scan_iter(prefix + "*"):
        client.delete(name)
    client.close()


def _setup(base_url: str) -> tuple[paysdk.Client, str, str, str]:
    sandbox = paysdk.Client(environment=paysdk.Environment.local(base_url))
    merchant = sandbox.sandbox.create_client()
    assert merchant.signing_private_key is not None
    user = sandbox.sandbox.create_user(merchant.slug, "ana", f"ana-{secrets.token_hex(3)}@x.io", "password-1")
    return sandbox, merchant.slug, merchant.signing_private_key, user.user_id


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_two_processes_50_threads_one_refresh(
    live_server: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = str(tmp_path / "tokens.json") if kind == "file" else request.getfixturevalue("redis_prefix")
    sandbox, slug, key, user_id = _setup(live_server)
    with paysdk.Client(
        environment=paysdk.Environment.local(live_server),
        wallet=paysdk.WalletCredentials(slug, key),
        token_store=_store(kind, where),
    ) as first:
        first.wallet.login()  # the stored pair every process will find
    sandbox.sandbox.advance_clock(1860)  # expired on the server, not on the SDK's clock
    assert refresh_count(sandbox) == 0
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    processes = [
        context.Process(
            target=_worker,
            args=(live_server, slug, key, user_id, kind, where, barrier, THREADS_PER_PROCESS),
        )
        for _ in range(2)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(180)
        assert process.exitcode == 0
    assert refresh_count(sandbox) == 1
    logins = [e for e in sandbox.sandbox.requests() if e.path.endswith("/auth/login")]
    assert len(logins) == 1  # nobody fell back to a login
    sandbox.close()


@pytest.mark.parametrize("kind", ["memory", "file", "redis"])
async def test_50_asyncio_tasks_one_refresh(
    live_server: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    sandbox, slug, key, user_id = await asyncio.to_thread(_setup, live_server)
    store: Any
    if kind == "memory":
        store = paysdk.MemoryTokenStore()
    elif kind == "file":
        store = paysdk.FileTokenStore(tmp_path / "tokens.json")
    else:
        prefix = request.getfixturevalue("redis_prefix")
        store = paysdk.AsyncRedisTokenStore(redis.asyncio.Redis.from_url(REDIS_URL), prefix=prefix)
    async with paysdk.AsyncClient(
        environment=paysdk.Environment.local(live_server),
        wallet=paysdk.WalletCredentials(slug, key),
        token_store=store,
        timeout=60,
    ) as client:
        await client.wallet.cards.list(user_id)
        await client.sandbox.advance_clock(1860)
        results = await asyncio.gather(*(client.wallet.cards.list(user_id) for _ in range(50)))
        assert len(results) == 50
        entries = await client.sandbox.requests()
    refreshes = [e for e in entries if e.method == "POST" and e.path.endswith("/auth/refresh")]
    assert len(refreshes) == 1
    sandbox.close()


def test_dead_refresh_token_recovers_by_login(live_server: str, tmp_path: Path) -> None:
    """A crash after the server rotated but before the store saved: the stored refresh token is
    spent (7105 revokes its family); the SDK logs in again once, never loops."""
    sandbox, slug, key, user_id = _setup(live_server)
    store = paysdk.FileTokenStore(tmp_path / "tokens.json")
    credentials = paysdk.WalletCredentials(slug, key)
    with paysdk.Client(
        environment=paysdk.Environment.local(live_server), wallet=credentials, token_store=store
    ) as client:
        client.wallet.login()
        manager = client._wallet_manager()
        stale = store.load(manager.key)
        assert stale is not None
        # Simulate the crash: rotate the refresh token behind the store's back.
        client._request(paysdk._wallet_auth.app_refresh_operation(stale.refresh_token))
        sandbox.sandbox.advance_clock(1860)
        assert client.wallet.cards.list(user_id) == []
    entries = sandbox.sandbox.requests()
    assert sum(1 for e in entries if e.path.endswith("/auth/refresh")) == 2  # the "lost" one + one 7105
    assert sum(1 for e in entries if e.path.endswith("/auth/login")) == 2
    sandbox.close()
