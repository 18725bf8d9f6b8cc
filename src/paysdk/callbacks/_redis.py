"""Redis dedup stores: one keyspace shared by every receiver instance (needs ``paysdk-toolkit[redis]``).

``claim`` is ``SET <prefix><eventId> p:<token> NX PX <lease>``; ``complete`` overwrites the key with
``d`` and the retention as TTL; ``release`` deletes the key only while it still holds this claim's
token (a small Lua script), so a late failure never drops another delivery's claim or a done mark.
Expiry is Redis's own, on the server clock. The key/value/TTL rules are in :class:`_RedisCommands`,
shared by the sync and asyncio stores. :class:`AsyncRedisDedupStore` is hand-written;
:class:`RedisDedupStore` is generated from it by ``scripts/unasync.py``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from paysdk._redis_lock import RELEASE_SCRIPT
from paysdk.callbacks._dedup import (
    DEFAULT_LEASE,
    DEFAULT_RETENTION,
    DONE_VALUE,
    ClaimTokens,
    DedupTiming,
    EventState,
    check_event_id,
    decode_state,
    new_token,
    processing_value,
)

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["DEFAULT_REDIS_PREFIX", "AsyncRedisDedupStore", "RedisDedupStore"]

#: Keys are ``<prefix><eventId>``. Give each receiver (merchant account) its own prefix.
DEFAULT_REDIS_PREFIX = "paysdk:callback-event:"


class _RedisCommands:
    """Sans-I/O: the keys, values and arguments both Redis stores send."""

    def __init__(self, prefix: str, timing: DedupTiming) -> None:
        if not isinstance(prefix, str):
            raise TypeError("prefix: must be a str")
        self.prefix = prefix
        self.timing = timing
        self.tokens = ClaimTokens()

    def key(self, event_id: str) -> str:
        return self.prefix + check_event_id(event_id)

    def claim_args(self, event_id: str) -> tuple[str, str, dict[str, Any]]:
        """``(key, value, set-kwargs)`` of the claiming ``SET``; the value embeds a fresh token."""
        return self.key(event_id), processing_value(new_token()), {"nx": True, "px": self.timing.lease_ms}

    def claimed(self, event_id: str, value: str, reply: Any) -> bool:
        won = bool(reply)
        if won:
            self.tokens.keep(event_id, value)
        return won

    def complete_args(self, event_id: str) -> tuple[str, str, dict[str, Any]]:
        key = self.key(event_id)
        self.tokens.pop(event_id)
        return key, DONE_VALUE, {"px": self.timing.retention_ms}

    def release_args(self, event_id: str) -> tuple[str, str] | None:
        """``(key, held value)`` to compare-and-delete, or ``None`` if this object holds no claim."""
        key = self.key(event_id)
        held = self.tokens.pop(event_id)
        return None if held is None else (key, held)


# unasync: begin
class AsyncRedisDedupStore:
    """:class:`~paysdk.callbacks.AsyncDedupStore` on a ``redis.asyncio.Redis`` client; shared by several
    instances.

    Works with ``decode_responses`` on or off. ``retention`` (at least 7 days) and ``lease`` as in
    :class:`~paysdk.callbacks.MemoryDedupStore`. Use :meth:`from_url` to build the client here. The sync
    and asyncio stores use the same keys and semantics, so both kinds may share one keyspace.
    """

    def __init__(
        self,
        client: redis.asyncio.Redis,
        *,
        prefix: str = DEFAULT_REDIS_PREFIX,
        retention: timedelta = DEFAULT_RETENTION,
        lease: timedelta = DEFAULT_LEASE,
    ) -> None:
        self._client = client
        self._commands = _RedisCommands(prefix, DedupTiming(retention, lease))

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> AsyncRedisDedupStore:
        """Connect with ``redis.asyncio.Redis.from_url(url)``; ``kwargs`` go to the store."""
        import redis.asyncio  # optional extra: paysdk-toolkit[redis]

        return cls(redis.asyncio.Redis.from_url(url), **kwargs)

    @property
    def prefix(self) -> str:
        """The key prefix."""
        return self._commands.prefix

    @property
    def timing(self) -> DedupTiming:
        """Retention and lease."""
        return self._commands.timing

    def __repr__(self) -> str:
        return f"AsyncRedisDedupStore(prefix={self.prefix!r}, retention={self.timing.retention})"

    async def claim(self, event_id: str) -> bool:
        """See :meth:`~paysdk.callbacks.DedupStore.claim`."""
        key, value, options = self._commands.claim_args(event_id)
        return self._commands.claimed(event_id, value, await self._client.set(key, value, **options))

    async def complete(self, event_id: str) -> None:
        """See :meth:`~paysdk.callbacks.DedupStore.complete`."""
        key, value, options = self._commands.complete_args(event_id)
        await self._client.set(key, value, **options)

    async def release(self, event_id: str) -> None:
        """See :meth:`~paysdk.callbacks.DedupStore.release`."""
        args = self._commands.release_args(event_id)
        if args is not None:
            await self._client.eval(RELEASE_SCRIPT, 1, *args)

    async def state(self, event_id: str) -> EventState:
        """See :meth:`~paysdk.callbacks.DedupStore.state`."""
        return decode_state(await self._client.get(self._commands.key(event_id)))


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class RedisDedupStore:
    """:class:`~paysdk.callbacks.DedupStore` on a ``redis.Redis`` client; shared by several
    instances.

    Works with ``decode_responses`` on or off. ``retention`` (at least 7 days) and ``lease`` as in
    :class:`~paysdk.callbacks.MemoryDedupStore`. Use :meth:`from_url` to build the client here. The sync
    and asyncio stores use the same keys and semantics, so both kinds may share one keyspace.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = DEFAULT_REDIS_PREFIX,
        retention: timedelta = DEFAULT_RETENTION,
        lease: timedelta = DEFAULT_LEASE,
    ) -> None:
        self._client = client
        self._commands = _RedisCommands(prefix, DedupTiming(retention, lease))

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> RedisDedupStore:
        """Connect with ``redis.Redis.from_url(url)``; ``kwargs`` go to the store."""
        import redis  # optional extra: paysdk-toolkit[redis]

        return cls(redis.Redis.from_url(url), **kwargs)

    @property
    def prefix(self) -> str:
        """The key prefix."""
        return self._commands.prefix

    @property
    def timing(self) -> DedupTiming:
        """Retention and lease."""
        return self._commands.timing

    def __repr__(self) -> str:
        return f"RedisDedupStore(prefix={self.prefix!r}, retention={self.timing.retention})"

    def claim(self, event_id: str) -> bool:
        """See :meth:`~paysdk.callbacks.DedupStore.claim`."""
        key, value, options = self._commands.claim_args(event_id)
        return self._commands.claimed(event_id, value, self._client.set(key, value, **options))

    def complete(self, event_id: str) -> None:
        """See :meth:`~paysdk.callbacks.DedupStore.complete`."""
        key, value, options = self._commands.complete_args(event_id)
        self._client.set(key, value, **options)

    def release(self, event_id: str) -> None:
        """See :meth:`~paysdk.callbacks.DedupStore.release`."""
        args = self._commands.release_args(event_id)
        if args is not None:
            self._client.eval(RELEASE_SCRIPT, 1, *args)

    def state(self, event_id: str) -> EventState:
        """See :meth:`~paysdk.callbacks.DedupStore.state`."""
        return decode_state(self._client.get(self._commands.key(event_id)))


# unasync: generated end
