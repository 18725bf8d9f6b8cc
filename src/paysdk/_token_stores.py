"""Where token pairs (wallet, backoffice) live between calls, and the lock that keeps refreshes single-flight.

A refresh token is single-use (spec 5.3.4, D35): if two holders of one credential refresh at once, the
second presents a used token and the server revokes the whole family. So every holder that shares a
credential must share a store, and refresh only while holding the store's lock:

* :class:`MemoryTokenStore` (default): one process; a lock per key.
* :class:`FileTokenStore`: one host, any number of processes (the CLI's store). A JSON file, mode
  0600, replaced atomically; the lock of a key is an OS file lock (``fcntl.flock``; ``msvcrt.locking``
  on Windows) on a lock file of that key.
* :class:`RedisTokenStore` / :class:`AsyncRedisTokenStore`: several hosts (the sync store is generated
  from the asyncio one by ``scripts/unasync.py``). The pair is one key
  (``<prefix><key>``); the lock is ``SET <prefix><key>:lock <random> NX PX <ttl>``, released by a Lua
  compare-and-delete so a holder whose lease ran out never frees another holder's lock.

The protocol (:class:`TokenStore`, or :class:`AsyncTokenStore` for asyncio backends) is small:
``load``/``save``/``delete`` of a :class:`~paysdk.StoredTokens` under a string key, and ``lock(key)``,
a context manager held across "re-read, decide, refresh, save". ``save`` and ``delete`` are called only
while holding ``lock(key)``. An :class:`~paysdk.AsyncClient` accepts a sync store too: its blocking
calls run in a worker thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from paysdk._errors import ValidationError
from paysdk._files import exclusive_lock, write_private_file
from paysdk._paths import user_path
from paysdk._redis_lock import RELEASE_SCRIPT
from paysdk._tokens import StoredTokens

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = [
    "DEFAULT_TOKEN_PREFIX",
    "AsyncRedisTokenStore",
    "AsyncStoreAdapter",
    "AsyncTokenStore",
    "FileTokenStore",
    "MemoryTokenStore",
    "RedisTokenStore",
    "StoreAdapter",
    "TokenStore",
]

#: Redis keys are ``<prefix><credential key>``.
DEFAULT_TOKEN_PREFIX = "paysdk:tokens:"
#: How long a Redis lock lives if its holder dies, and how long a caller waits for it (seconds).
DEFAULT_LOCK_TTL = 30.0
DEFAULT_LOCK_WAIT = 60.0

T = TypeVar("T")


@runtime_checkable
class TokenStore(Protocol):
    """Storage of token pairs by credential key, with a lock per key (see the module docstring).

    ``lock(key)`` must exclude every other holder of the same key that shares the storage (threads,
    processes, hosts, depending on the store) and is not reentrant. ``save``/``delete`` are called
    only while ``lock(key)`` is held, and ``save`` must be durable before it returns: the SDK uses a
    rotated pair only after it is saved.
    """

    def load(self, key: str) -> StoredTokens | None:
        """The stored pair, or ``None``."""
        ...

    def save(self, key: str, tokens: StoredTokens) -> None:
        """Store ``tokens`` under ``key`` (replacing what was there)."""
        ...

    def delete(self, key: str) -> None:
        """Forget ``key``."""
        ...

    def lock(self, key: str) -> contextlib.AbstractContextManager[None]:
        """A context manager holding the lock of ``key``."""
        ...


@runtime_checkable
class AsyncTokenStore(Protocol):
    """:class:`TokenStore` for asyncio backends: the same contract with awaitable methods."""

    async def load(self, key: str) -> StoredTokens | None:
        """The stored pair, or ``None``."""
        ...

    async def save(self, key: str, tokens: StoredTokens) -> None:
        """Store ``tokens`` under ``key``."""
        ...

    async def delete(self, key: str) -> None:
        """Forget ``key``."""
        ...

    def lock(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """An async context manager holding the lock of ``key``."""
        ...


def _check_key(key: object) -> str:
    if not isinstance(key, str) or not key:
        raise ValidationError("key", "must be a non-empty string")
    return key


# ------------------------------------------------------------------------------------------ memory


class MemoryTokenStore:
    """Token pairs in this process's memory (the default). Share one instance between clients of the
    same credential in one process; it does not survive a restart and other processes do not see it.
    """

    def __init__(self) -> None:
        self._data: dict[str, StoredTokens] = {}
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def __repr__(self) -> str:
        return f"MemoryTokenStore(keys={len(self._data)})"

    def load(self, key: str) -> StoredTokens | None:
        """See :meth:`TokenStore.load`."""
        with self._guard:
            return self._data.get(_check_key(key))

    def save(self, key: str, tokens: StoredTokens) -> None:
        """See :meth:`TokenStore.save`."""
        with self._guard:
            self._data[_check_key(key)] = tokens

    def delete(self, key: str) -> None:
        """See :meth:`TokenStore.delete`."""
        with self._guard:
            self._data.pop(_check_key(key), None)

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """See :meth:`TokenStore.lock` (threads of this process)."""
        with self._guard:
            lock = self._locks.setdefault(_check_key(key), threading.Lock())
        with lock:
            yield


# -------------------------------------------------------------------------------------------- file


class FileTokenStore:
    """Token pairs in a JSON file (mode 0600), shared by the processes of one host (the CLI's store).

    The file maps credential keys to pairs; every write replaces it atomically (temporary file,
    ``fsync``, ``os.replace``), so a reader never sees half a file. ``lock(key)`` takes an exclusive
    OS file lock (``fcntl.flock``; ``msvcrt.locking`` on Windows) on ``<path>.<hash of key>.lock``
    (one lock per key, so the holder of a user session's lock can still refresh the application pair
    it needs, in the same file); ``save`` and ``delete`` also take ``<path>.lock`` for their short
    read-modify-write of the file. Locks are released
    when the holder exits, even by a crash. The refresh tokens are in clear in the file: keep it in a
    private directory.

    ``path`` may start with ``~`` (your home directory, e.g. ``"~/.myapp/tokens.json"``); a relative
    path is taken against the working directory when the store is created and kept absolute
    (:attr:`path`). Missing parent directories are created (mode 0700) on the first write.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = user_path(path)
        self._lock_path = self._path.with_name(self._path.name + ".lock")

    def _key_lock_path(self, key: str) -> Path:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
        return self._path.with_name(f"{self._path.name}.{digest}.lock")

    @property
    def path(self) -> Path:
        """The JSON file."""
        return self._path

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self._path)!r})"

    def _read(self) -> dict[str, Any]:
        try:
            raw = self._path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(raw)
        except ValueError:
            return {}
        tokens = data.get("tokens") if isinstance(data, dict) else None
        return tokens if isinstance(tokens, dict) else {}

    def _write(self, tokens: dict[str, Any]) -> None:
        text = json.dumps({"version": 1, "tokens": tokens}, separators=(",", ":"))
        write_private_file(self._path, text.encode("utf-8"))

    def load(self, key: str) -> StoredTokens | None:
        """See :meth:`TokenStore.load`; an unreadable entry counts as absent."""
        entry = self._read().get(_check_key(key))
        if not isinstance(entry, dict):
            return None
        try:
            return StoredTokens.from_json(entry)
        except ValueError:
            return None

    def save(self, key: str, tokens: StoredTokens) -> None:
        """See :meth:`TokenStore.save` (call it holding :meth:`lock`)."""
        key = _check_key(key)
        with exclusive_lock(self._lock_path):  # the file's read-modify-write, whatever key is locked
            data = self._read()
            data[key] = tokens.to_json()
            self._write(data)

    def delete(self, key: str) -> None:
        """See :meth:`TokenStore.delete` (call it holding :meth:`lock`)."""
        key = _check_key(key)
        with exclusive_lock(self._lock_path):
            data = self._read()
            if data.pop(key, None) is not None:
                self._write(data)

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """See :meth:`TokenStore.lock`: every thread and process of this host using the same path."""
        with exclusive_lock(self._key_lock_path(_check_key(key))):
            yield


# ------------------------------------------------------------------------------------------- redis


class _RedisKeys:
    """Sans-I/O: the keys, values and options both Redis stores send."""

    def __init__(self, prefix: str, lock_ttl: float, lock_wait: float) -> None:
        if not isinstance(prefix, str):
            raise ValidationError("prefix", "must be a str")
        if not lock_ttl > 0 or not lock_wait > 0:
            raise ValidationError("lock_ttl", "lock_ttl and lock_wait must be > 0 seconds")
        self.prefix = prefix
        self.lock_ttl_ms = int(lock_ttl * 1000)
        self.lock_wait = lock_wait

    def key(self, key: str) -> str:
        return self.prefix + _check_key(key)

    def lock_key(self, key: str) -> str:
        return self.prefix + _check_key(key) + ":lock"

    @staticmethod
    def value(tokens: StoredTokens) -> tuple[str, int]:
        """The JSON value and its expiry in ms (the refresh token's remaining life, at least a minute)."""
        ttl_ms = int(max(tokens.refresh_expires_at - time.time(), 60.0) * 1000)
        return json.dumps(tokens.to_json(), separators=(",", ":")), ttl_ms

    @staticmethod
    def parse(raw: Any) -> StoredTokens | None:
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            return StoredTokens.from_json(data) if isinstance(data, dict) else None
        except ValueError:
            return None


def _lock_timeout(key: str, wait: float) -> TimeoutError:
    return TimeoutError(f"the token lock of {key!r} was not free within {wait:g} s")


# unasync: begin
class AsyncRedisTokenStore:
    """Token pairs in Redis (a ``redis.asyncio.Redis`` client, for :class:`~paysdk.AsyncClient`), shared
    by every instance of a service (``pip install 'paysdk-toolkit[redis]'``).

    ``lock_ttl``: seconds before a lock whose holder died frees itself (keep it above the client's
    timeout, so a slow refresh keeps its lock); ``lock_wait``: seconds a caller waits for the lock
    before :class:`TimeoutError`. Works with ``decode_responses`` on or off.
    """

    def __init__(
        self,
        client: redis.asyncio.Redis,
        prefix: str = DEFAULT_TOKEN_PREFIX,
        *,
        lock_ttl: float = DEFAULT_LOCK_TTL,
        lock_wait: float = DEFAULT_LOCK_WAIT,
    ) -> None:
        self._client = client
        self._keys = _RedisKeys(prefix, lock_ttl, lock_wait)

    @property
    def prefix(self) -> str:
        """The key prefix."""
        return self._keys.prefix

    def __repr__(self) -> str:
        return f"AsyncRedisTokenStore(prefix={self.prefix!r})"

    async def load(self, key: str) -> StoredTokens | None:
        """See :meth:`AsyncTokenStore.load`."""
        return self._keys.parse(await self._client.get(self._keys.key(key)))

    async def save(self, key: str, tokens: StoredTokens) -> None:
        """See :meth:`AsyncTokenStore.save`."""
        value, ttl_ms = self._keys.value(tokens)
        await self._client.set(self._keys.key(key), value, px=ttl_ms)

    async def delete(self, key: str) -> None:
        """See :meth:`AsyncTokenStore.delete`."""
        await self._client.delete(self._keys.key(key))

    @contextlib.asynccontextmanager
    async def lock(self, key: str) -> AsyncIterator[None]:
        """See :meth:`AsyncTokenStore.lock`: ``SET NX PX`` with a random value, Lua compare-and-delete."""
        name, token = self._keys.lock_key(key), secrets.token_hex(16)
        deadline = time.monotonic() + self._keys.lock_wait
        delay = 0.005
        while not await self._client.set(name, token, nx=True, px=self._keys.lock_ttl_ms):
            if time.monotonic() > deadline:
                raise _lock_timeout(key, self._keys.lock_wait)
            import asyncio  # by the first wait, not at import (D461)

            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            await self._client.eval(RELEASE_SCRIPT, 1, name, token)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class RedisTokenStore:
    """Token pairs in Redis (a ``redis.Redis`` client, for :class:`~paysdk.Client`), shared
    by every instance of a service (``pip install 'paysdk-toolkit[redis]'``).

    ``lock_ttl``: seconds before a lock whose holder died frees itself (keep it above the client's
    timeout, so a slow refresh keeps its lock); ``lock_wait``: seconds a caller waits for the lock
    before :class:`TimeoutError`. Works with ``decode_responses`` on or off.
    """

    def __init__(
        self,
        client: redis.Redis,
        prefix: str = DEFAULT_TOKEN_PREFIX,
        *,
        lock_ttl: float = DEFAULT_LOCK_TTL,
        lock_wait: float = DEFAULT_LOCK_WAIT,
    ) -> None:
        self._client = client
        self._keys = _RedisKeys(prefix, lock_ttl, lock_wait)

    @property
    def prefix(self) -> str:
        """The key prefix."""
        return self._keys.prefix

    def __repr__(self) -> str:
        return f"RedisTokenStore(prefix={self.prefix!r})"

    def load(self, key: str) -> StoredTokens | None:
        """See :meth:`TokenStore.load`."""
        return self._keys.parse(self._client.get(self._keys.key(key)))

    def save(self, key: str, tokens: StoredTokens) -> None:
        """See :meth:`TokenStore.save`."""
        value, ttl_ms = self._keys.value(tokens)
        self._client.set(self._keys.key(key), value, px=ttl_ms)

    def delete(self, key: str) -> None:
        """See :meth:`TokenStore.delete`."""
        self._client.delete(self._keys.key(key))

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """See :meth:`TokenStore.lock`: ``SET NX PX`` with a random value, Lua compare-and-delete."""
        name, token = self._keys.lock_key(key), secrets.token_hex(16)
        deadline = time.monotonic() + self._keys.lock_wait
        delay = 0.005
        while not self._client.set(name, token, nx=True, px=self._keys.lock_ttl_ms):
            if time.monotonic() > deadline:
                raise _lock_timeout(key, self._keys.lock_wait)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            self._client.eval(RELEASE_SCRIPT, 1, name, token)


# unasync: generated end


# ---------------------------------------------------------------------------------------- adapters


def _is_async_store(store: object) -> bool:
    return inspect.iscoroutinefunction(getattr(store, "load", None))


def _check_store(store: object) -> None:
    for name in ("load", "save", "delete", "lock"):
        if not callable(getattr(store, name, None)):
            raise ValidationError("token_store", "must be a paysdk.TokenStore (load, save, delete, lock)")


class StoreAdapter:
    """The store a sync :class:`~paysdk.Client` uses: a :class:`TokenStore` as is."""

    @staticmethod
    def of(store: object) -> TokenStore:
        """``store`` checked; an asyncio store is refused (it needs :class:`~paysdk.AsyncClient`)."""
        if store is None:
            return MemoryTokenStore()
        _check_store(store)
        if _is_async_store(store):
            raise ValidationError("token_store", "an asyncio store needs paysdk.AsyncClient")
        return store  # type: ignore[return-value]


async def _in_thread(function: Callable[..., T], *args: Any) -> T:
    """``asyncio.to_thread(function, *args)``; asyncio is imported by the first async call, not by
    ``from paysdk import Client``, whose sync users never need it (D461)."""
    import asyncio

    return await asyncio.to_thread(function, *args)


class _ThreadLock:
    """A sync lock context manager entered and left in worker threads (cancellation-safe)."""

    def __init__(self, manager: contextlib.AbstractContextManager[None]) -> None:
        self._manager = manager

    async def __aenter__(self) -> None:
        import asyncio  # by the first async call, not at import (D461)

        future = asyncio.ensure_future(asyncio.to_thread(self._manager.__enter__))
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            # The thread may still get the lock: give it back as soon as it does.
            def release(done: asyncio.Future[None]) -> None:
                if not done.cancelled() and done.exception() is None:
                    self._manager.__exit__(None, None, None)

            future.add_done_callback(release)
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        await _in_thread(self._manager.__exit__, None, None, None)


class AsyncStoreAdapter:
    """The store an :class:`~paysdk.AsyncClient` uses: an :class:`AsyncTokenStore` as is, or a sync
    :class:`TokenStore` whose blocking calls (file locks, file I/O) run in worker threads.
    """

    def __init__(self, store: TokenStore) -> None:
        self._store = store

    def __repr__(self) -> str:
        return f"AsyncStoreAdapter({self._store!r})"

    @staticmethod
    def of(store: object) -> AsyncTokenStore:
        """``store`` as an :class:`AsyncTokenStore` (``None``: a new :class:`MemoryTokenStore`)."""
        if store is None:
            return AsyncStoreAdapter(MemoryTokenStore())
        _check_store(store)
        if _is_async_store(store):
            return store  # type: ignore[return-value]
        return AsyncStoreAdapter(store)  # type: ignore[arg-type]

    async def load(self, key: str) -> StoredTokens | None:
        """See :meth:`AsyncTokenStore.load`."""
        return await _in_thread(self._store.load, key)

    async def save(self, key: str, tokens: StoredTokens) -> None:
        """See :meth:`AsyncTokenStore.save`."""
        await _in_thread(self._store.save, key, tokens)

    async def delete(self, key: str) -> None:
        """See :meth:`AsyncTokenStore.delete`."""
        await _in_thread(self._store.delete, key)

    def lock(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """See :meth:`AsyncTokenStore.lock`."""
        return _ThreadLock(self._store.lock(key))
