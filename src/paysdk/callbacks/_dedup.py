"""Deduplication of callback deliveries on ``eventId`` (spec 6.4; decisions D5, D16).

Every store keeps one record per event id, in one of three states:

``PROCESSING``  claimed by a delivery whose handler is running; held for a *lease* (default 5 min).
                If the process dies mid-handler, the lease runs out and a redelivery may claim again,
                so a crash never loses the event (at-least-once).
``DONE``        the handler succeeded; kept for the *retention* (default 10 days: the 7-day retry window
                of D16 plus margin), so every later redelivery is acknowledged without running again.
(absent)        never seen, released after a handler failure, or expired.

The key, value and TTL rules live in :class:`DedupTiming` and the helpers below; the stores only carry
them out against their backend.
"""

from __future__ import annotations

import enum
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol, runtime_checkable

from paysdk._paths import user_path

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_RETENTION",
    "MIN_RETENTION",
    "AsyncDedupStore",
    "DedupStore",
    "DedupTiming",
    "EventState",
    "MemoryDedupStore",
    "SQLiteDedupStore",
]

#: How long a processed event id is remembered: the 7-day retry window (D16) plus three days' margin.
DEFAULT_RETENTION = timedelta(days=10)
#: The shortest retention a store accepts: anything shorter could let a retry be processed twice.
MIN_RETENTION = timedelta(days=7)
#: How long a claim is held while the handler runs. Make it longer than your slowest handler.
DEFAULT_LEASE = timedelta(minutes=5)

#: Wire encoding of the two states in key/value backends (Redis).
PROCESSING_PREFIX = "p:"
DONE_VALUE = "d"
#: Event ids are bounded like ``CallbackPayload.event_id``.
MAX_EVENT_ID_LENGTH = 200

Clock = Callable[[], float]


class EventState(enum.Enum):
    """Where an event id stands in a dedup store."""

    ABSENT = "absent"
    """Never seen, released after a failure, or expired: the next delivery may claim it."""
    PROCESSING = "processing"
    """Claimed; a handler is (or was, until the lease ends) processing it."""
    DONE = "done"
    """Processed successfully; redeliveries are acknowledged without running the handler."""


@runtime_checkable
class DedupStore(Protocol):
    """The small protocol :class:`~paysdk.callbacks.CallbackReceiver` needs from a store.

    ``claim`` is atomic: of any number of concurrent callers (threads, processes or hosts sharing the
    backend) exactly one gets ``True``. ``complete`` and ``release`` act on a claim this store object
    holds; ``release`` after ``complete`` does nothing.
    """

    def claim(self, event_id: str) -> bool:
        """Mark ``event_id`` as processing. ``True`` only for the first claimer (while the claim lives)."""
        ...

    def complete(self, event_id: str) -> None:
        """Mark ``event_id`` as processed; it is remembered for the retention period."""
        ...

    def release(self, event_id: str) -> None:
        """Drop this object's claim after a failed handler, so a redelivery is processed."""
        ...

    def state(self, event_id: str) -> EventState:
        """The current state of ``event_id`` (expired records read as ``ABSENT``)."""
        ...


@runtime_checkable
class AsyncDedupStore(Protocol):
    """:class:`DedupStore` for asyncio backends; the same contract with awaitable methods."""

    async def claim(self, event_id: str) -> bool:
        """See :meth:`DedupStore.claim`."""
        ...

    async def complete(self, event_id: str) -> None:
        """See :meth:`DedupStore.complete`."""
        ...

    async def release(self, event_id: str) -> None:
        """See :meth:`DedupStore.release`."""
        ...

    async def state(self, event_id: str) -> EventState:
        """See :meth:`DedupStore.state`."""
        ...


@dataclass(frozen=True)
class DedupTiming:
    """The retention and lease of a store; refuses a retention shorter than :data:`MIN_RETENTION`."""

    retention: timedelta = DEFAULT_RETENTION
    lease: timedelta = DEFAULT_LEASE

    def __post_init__(self) -> None:
        if self.retention < MIN_RETENTION:
            raise ValueError(
                f"retention: must be at least {MIN_RETENTION.days} days (callbacks are retried for 7 days)"
            )
        if self.lease <= timedelta(0):
            raise ValueError("lease: must be positive")
        if self.lease > self.retention:
            raise ValueError("lease: must not exceed the retention")

    @property
    def retention_ms(self) -> int:
        """Retention in whole milliseconds (for ``PX``)."""
        return int(self.retention / timedelta(milliseconds=1))

    @property
    def lease_ms(self) -> int:
        """Lease in whole milliseconds (for ``PX``)."""
        return max(int(self.lease / timedelta(milliseconds=1)), 1)


def check_event_id(event_id: str) -> str:
    """Return ``event_id`` if it is a usable key (non-empty str, at most 200 characters)."""
    if not isinstance(event_id, str) or not event_id:
        raise ValueError("event_id: must be a non-empty string")
    if len(event_id) > MAX_EVENT_ID_LENGTH:
        raise ValueError(f"event_id: longer than {MAX_EVENT_ID_LENGTH} characters")
    return event_id


def new_token() -> str:
    """A random owner token, so a claim is only released by the delivery that made it."""
    return secrets.token_hex(16)


def processing_value(token: str) -> str:
    """The stored value of a ``PROCESSING`` record owned by ``token``."""
    return PROCESSING_PREFIX + token


def decode_state(value: str | bytes | None) -> EventState:
    """Read a stored value back (``None``: absent)."""
    if value is None:
        return EventState.ABSENT
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if text == DONE_VALUE:
        return EventState.DONE
    if text.startswith(PROCESSING_PREFIX):
        return EventState.PROCESSING
    return EventState.ABSENT


class ClaimTokens:
    """The owner tokens of the claims one store object holds (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, str] = {}

    def keep(self, event_id: str, token: str) -> None:
        """Remember ``token`` as this object's claim on ``event_id``."""
        with self._lock:
            self._tokens[event_id] = token

    def pop(self, event_id: str) -> str | None:
        """Forget and return this object's token for ``event_id`` (``None`` if it holds no claim)."""
        with self._lock:
            return self._tokens.pop(event_id, None)


class MemoryDedupStore:
    """In-process store: thread-safe, with expiry. For tests and single-process receivers only.

    Every worker process has its own memory, so with several workers (gunicorn, uvicorn ``--workers``)
    use :class:`SQLiteDedupStore` or :class:`~paysdk.callbacks.RedisDedupStore`. ``clock`` returns
    epoch seconds (inject one in tests instead of sleeping).
    """

    _SWEEP_EVERY = 1024

    def __init__(
        self,
        *,
        retention: timedelta = DEFAULT_RETENTION,
        lease: timedelta = DEFAULT_LEASE,
        clock: Clock = time.time,
    ) -> None:
        self.timing = DedupTiming(retention, lease)
        self._clock = clock
        self._lock = threading.Lock()
        # event id -> (state, owner token or None, expires at in clock seconds)
        self._records: dict[str, tuple[EventState, str | None, float]] = {}
        self._tokens = ClaimTokens()
        self._operations = 0

    def __repr__(self) -> str:
        return f"MemoryDedupStore(retention={self.timing.retention}, lease={self.timing.lease})"

    def __len__(self) -> int:
        """Number of live (unexpired) records."""
        now = self._clock()
        with self._lock:
            return sum(1 for _, _, expires in self._records.values() if expires > now)

    def _live(self, event_id: str, now: float) -> tuple[EventState, str | None, float] | None:
        record = self._records.get(event_id)
        if record is not None and record[2] <= now:
            del self._records[event_id]
            return None
        return record

    def _maybe_sweep(self, now: float) -> None:
        self._operations += 1
        if self._operations % self._SWEEP_EVERY == 0:
            self._purge_locked(now)

    def _purge_locked(self, now: float) -> int:
        expired = [key for key, (_, _, expires) in self._records.items() if expires <= now]
        for key in expired:
            del self._records[key]
        return len(expired)

    def purge_expired(self) -> int:
        """Drop expired records now; returns how many were dropped (also done every 1024 claims)."""
        with self._lock:
            return self._purge_locked(self._clock())

    def claim(self, event_id: str) -> bool:
        """See :meth:`DedupStore.claim`."""
        check_event_id(event_id)
        token = new_token()
        with self._lock:
            now = self._clock()
            self._maybe_sweep(now)
            if self._live(event_id, now) is not None:
                return False
            self._records[event_id] = (
                EventState.PROCESSING,
                token,
                now + self.timing.lease.total_seconds(),
            )
        self._tokens.keep(event_id, token)
        return True

    def complete(self, event_id: str) -> None:
        """See :meth:`DedupStore.complete`."""
        check_event_id(event_id)
        self._tokens.pop(event_id)
        with self._lock:
            now = self._clock()
            self._records[event_id] = (EventState.DONE, None, now + self.timing.retention.total_seconds())

    def release(self, event_id: str) -> None:
        """See :meth:`DedupStore.release`."""
        check_event_id(event_id)
        token = self._tokens.pop(event_id)
        if token is None:
            return
        with self._lock:
            record = self._records.get(event_id)
            if record is not None and record[0] is EventState.PROCESSING and record[1] == token:
                del self._records[event_id]

    def state(self, event_id: str) -> EventState:
        """See :meth:`DedupStore.state`."""
        check_event_id(event_id)
        with self._lock:
            record = self._live(event_id, self._clock())
        return EventState.ABSENT if record is None else record[0]


_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

# {table} is a checked identifier (_TABLE_NAME); every value is a bound parameter.
_SQL_TEMPLATES = {
    "create": "CREATE TABLE IF NOT EXISTS {table} (event_id TEXT PRIMARY KEY, state TEXT NOT NULL,"
    " token TEXT, expires_at REAL NOT NULL)",
    "index": "CREATE INDEX IF NOT EXISTS {table}_expires ON {table}(expires_at)",
    "purge": "DELETE FROM {table} WHERE expires_at <= ?",
    # Insert, or take over a row whose claim or retention has expired; rowcount 1 means "won".
    "claim": "INSERT INTO {table} (event_id, state, token, expires_at) VALUES (?, 'processing', ?, ?)"
    " ON CONFLICT(event_id) DO UPDATE SET state = 'processing', token = excluded.token,"
    " expires_at = excluded.expires_at WHERE {table}.expires_at <= ?",
    "complete": "INSERT INTO {table} (event_id, state, token, expires_at) VALUES (?, 'done', NULL, ?)"
    " ON CONFLICT(event_id) DO UPDATE SET state = 'done', token = NULL, expires_at = excluded.expires_at",
    "release": "DELETE FROM {table} WHERE event_id = ? AND state = 'processing' AND token = ?",
    "state": "SELECT state FROM {table} WHERE event_id = ? AND expires_at > ?",
}


class SQLiteDedupStore:
    """A store in an SQLite file: safe across threads and processes on one host.

    ``claim`` is a single ``INSERT ... ON CONFLICT`` (unique event id), so exactly one of any number of
    concurrent claimers wins. The database runs in WAL mode; each thread (and each process, also after
    ``fork``) opens its own connection. Expired rows are purged on open and then hourly. Do not put the
    file on a network filesystem (SQLite locking is unreliable there); for several hosts use
    :class:`~paysdk.callbacks.RedisDedupStore`.

    ``path`` may start with ``~`` (your home directory); a relative path is taken against the working
    directory when the store is created and kept absolute (:attr:`path`). Its directory must exist.
    """

    _PURGE_INTERVAL_SECONDS = 3600.0

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retention: timedelta = DEFAULT_RETENTION,
        lease: timedelta = DEFAULT_LEASE,
        clock: Clock = time.time,
        table: str = "paysdk_callback_events",
        timeout: float = 30.0,
    ) -> None:
        if not _TABLE_NAME.fullmatch(table):
            raise ValueError("table: must be a plain SQL identifier")
        self.timing = DedupTiming(retention, lease)
        self.path = user_path(path)
        self.table = table
        self._sql = {name: template.format(table=table) for name, template in _SQL_TEMPLATES.items()}
        self._clock = clock
        self._timeout = timeout
        self._local = threading.local()
        self._all_lock = threading.Lock()
        self._all: list[sqlite3.Connection] = []
        self._tokens = ClaimTokens()
        self._pid = os.getpid()
        self._next_purge = 0.0
        self._connection()  # create the schema (and fail early on a bad path)

    def __repr__(self) -> str:
        return (
            f"SQLiteDedupStore({str(self.path)!r}, table={self.table!r}, retention={self.timing.retention})"
        )

    def _connection(self) -> sqlite3.Connection:
        pid = os.getpid()
        if pid != self._pid:
            # After fork: inherited connections and claims belong to the parent; start fresh.
            self._pid = pid
            self._local = threading.local()
            self._all_lock = threading.Lock()
            self._all = []
            self._tokens = ClaimTokens()
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        conn = sqlite3.connect(
            self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(self._sql["create"])
        conn.execute(self._sql["index"])
        self._local.conn = conn
        with self._all_lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def _cursor(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        now = self._clock()
        if now >= self._next_purge:
            self._next_purge = now + self._PURGE_INTERVAL_SECONDS
            conn.execute(self._sql["purge"], (now,))
        yield conn

    def purge_expired(self) -> int:
        """Delete expired rows now; returns how many were deleted."""
        now = self._clock()
        self._next_purge = now + self._PURGE_INTERVAL_SECONDS
        return self._connection().execute(self._sql["purge"], (now,)).rowcount

    def claim(self, event_id: str) -> bool:
        """See :meth:`DedupStore.claim`."""
        check_event_id(event_id)
        token = new_token()
        with self._cursor() as conn:
            now = self._clock()
            cur = conn.execute(
                self._sql["claim"],
                (event_id, token, now + self.timing.lease.total_seconds(), now),
            )
            won = cur.rowcount == 1
        if won:
            self._tokens.keep(event_id, token)
        return won

    def complete(self, event_id: str) -> None:
        """See :meth:`DedupStore.complete`."""
        check_event_id(event_id)
        self._tokens.pop(event_id)
        with self._cursor() as conn:
            conn.execute(
                self._sql["complete"],
                (event_id, self._clock() + self.timing.retention.total_seconds()),
            )

    def release(self, event_id: str) -> None:
        """See :meth:`DedupStore.release`."""
        check_event_id(event_id)
        token = self._tokens.pop(event_id)
        if token is None:
            return
        with self._cursor() as conn:
            conn.execute(
                self._sql["release"],
                (event_id, token),
            )

    def state(self, event_id: str) -> EventState:
        """See :meth:`DedupStore.state`."""
        check_event_id(event_id)
        with self._cursor() as conn:
            row = conn.execute(
                self._sql["state"],
                (event_id, self._clock()),
            ).fetchone()
        return EventState.ABSENT if row is None else EventState(row[0])

    def close(self) -> None:
        """Close every connection this process opened (other threads' included)."""
        with self._all_lock:
            mine, self._all = self._all, []
        if self._pid != os.getpid():
            return
        for conn in mine:
            conn.close()
        self._local = threading.local()

    def __enter__(self) -> SQLiteDedupStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
