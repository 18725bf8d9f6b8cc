"""One database reader per stream key per process, fanned out to every stream open on it (D370-D372).

A progress stream of a batch used to poll the database every 100 ms on its own: 500 streams open on one
running batch made 5,000 queries a second, which held every other request (health checks took 0.9 s) and
the batch itself (27 s became 100 s). :class:`FanOut` keeps one :class:`Feed` per key (a batch) and
event loop instead:

* the first subscriber starts the feed's poller task, the last one to leave cancels it;
* the poller reads what is new (a page at a time, :data:`PAGE` items) once per interval, or at once when
  :meth:`FanOut.nudge` says the key changed in this process, into a bounded window of the latest items
  (:data:`WINDOW`), and wakes the streams; with many streams the wake-ups are spaced
  (:data:`WAKE_COST` per stream), so that writing to all of them stays a bounded share of the loop, and
  each wake-up wakes :data:`WAKE_SLICE` streams per turn of the event loop, so that the other requests'
  work runs between their writes instead of after all of them;
* a stream takes the items after its own last id from the window, without a query of its own. A stream
  that starts behind the window (a resume from an early id) or falls behind it (a consumer slower than
  :data:`WINDOW` items) reads what it lacks from the database itself, a page at a time, then joins the
  window again: nothing is lost or repeated, and only such a stream pays a query, once per page, never
  once per interval. Memory is the window per key, whatever the number of streams.

What is read comes from the ``read`` function the hub is built with (``read(session, key, after, limit)``
in one transaction through :meth:`~paysdk.server.context.ServerContext.run`): the items after ``after``
and whether the source is finished. A stream ends after a ``final`` item, or once the source is finished
and the stream has everything up to its last id.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paysdk.server.context import ServerContext

__all__ = [
    "MAX_SPACING",
    "PAGE",
    "WAKE_COST",
    "WAKE_SLICE",
    "WINDOW",
    "FanOut",
    "Feed",
    "FeedItem",
    "Snapshot",
]

#: Items read per query (a poll, or a catch-up of a stream behind the window).
PAGE = 1000
#: Seconds between two wake-ups of a feed's streams per stream woken, when that is more than the
#: interval: writing to a stream costs ~50-100 us of the event loop, so the writes of a wake-up take at
#: most ~5% of the loop; 500 streams are woken at most every second, up to 50 every 100 ms.
WAKE_COST = 0.002
#: Streams woken per turn of the event loop: their writes (~50-100 us each) are then ~2.5-5 ms of the
#: loop at a time, with other requests' work between, where 500 streams woken at once held every other
#: request for the whole wake-up (D632).
WAKE_SLICE = 50
#: The longest spacing of two wake-ups (a stream is never more than this behind a poll).
MAX_SPACING = 1.0
#: Items kept in memory per key: at least two pages, so a stream that keeps up with the polls never
#: falls behind the window.
WINDOW = 2 * PAGE


@dataclass(frozen=True, slots=True)
class FeedItem:
    """One item of a feed: its ``id`` (growing), its wire form, and whether it ends every stream."""

    id: int
    chunk: bytes
    final: bool = False


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one read found: the ``items`` after the id asked for (oldest first, at most the limit),
    whether the source is ``finished`` (no item will be added) and its ``last`` id (``None``: unknown)."""

    items: Sequence[FeedItem]
    finished: bool
    last: int | None


#: ``read(session, key, after, limit)``: the items of ``key`` after id ``after`` (one transaction).
Reader = Callable[[Any, str, int, int], Snapshot]


class Feed:
    """The shared reader of one key on one event loop (module docstring)."""

    def __init__(self, hub: FanOut, key: str, start: int, interval: float) -> None:
        self.hub = hub
        self.key = key
        #: Items kept, ids above :attr:`base` up to :attr:`cursor`, oldest first.
        self._items: list[FeedItem] = []
        self._ids: list[int] = []
        self.base = start
        self.cursor = start
        self.interval = interval
        #: Set once the source is finished and every item of it was read.
        self.finished = False
        self.last: int | None = None
        self.error: BaseException | None = None
        #: How many streams read this feed.
        self.subscribers = 0
        #: The streams waiting for a change (:meth:`changed`), woken by :meth:`_wake_streams`.
        self._waiters: list[asyncio.Future[None]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # ---------------------------------------------------------------------------------- the poller

    def _start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._poll(), name=f"paysdk-feed-{self.key}")

    def _stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None

    @property
    def running(self) -> bool:
        """Whether the poller task runs."""
        return self._task is not None and not self._task.done()

    def _notify(self) -> None:
        """Wake every waiting stream at once (the feed failed: they all end)."""
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _wake_streams(self) -> None:
        """Wake the waiting streams, :data:`WAKE_SLICE` per turn of the event loop."""
        waiters, self._waiters = self._waiters, []
        for start in range(0, len(waiters), WAKE_SLICE):
            if start:
                await asyncio.sleep(0)  # the streams woken so far write; other work runs
            for waiter in waiters[start : start + WAKE_SLICE]:
                if not waiter.done():
                    waiter.set_result(None)

    def _add(self, snapshot: Snapshot) -> bool:
        """Keep what ``snapshot`` brings; whether anything changed."""
        before = (self.cursor, self.finished)
        for item in snapshot.items:
            if item.id > self.cursor:
                self._items.append(item)
                self._ids.append(item.id)
                self.cursor = item.id
        excess = len(self._items) - WINDOW
        if excess > 0:
            self.base = self._ids[excess - 1]
            del self._items[:excess], self._ids[:excess]
        if snapshot.finished and (snapshot.last is None or self.cursor >= snapshot.last):
            self.finished = True
            self.last = self.cursor if snapshot.last is None else snapshot.last
        return (self.cursor, self.finished) != before

    async def _poll(self) -> None:
        try:
            while not self.finished:
                self._wake.clear()
                snapshot = await self.hub.context.run(self.hub.read, self.key, self.cursor, PAGE)
                changed = self._add(snapshot)
                if changed:
                    await self._wake_streams()
                if self.finished or len(snapshot.items) >= PAGE:
                    continue
                spacing = min(self.subscribers * WAKE_COST, MAX_SPACING)
                if changed and spacing > self.interval:
                    # Many streams: each wake-up writes to every one of them; space the wake-ups so
                    # that writing takes a bounded share of the event loop (a nudge does not cut it).
                    await asyncio.sleep(spacing - self.interval)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.interval):
                        await self._wake.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a database error: every stream of the feed ends with it
            self.error = exc
            self.hub._forget(self)
            self._notify()

    # --------------------------------------------------------------------------------- the streams

    def after(self, last: int) -> list[FeedItem] | None:
        """The kept items after id ``last``; ``None`` when items after it are no longer (or not yet) kept."""
        if last < self.base:
            return None
        return self._items[bisect.bisect_right(self._ids, last) :]

    async def changed(self, seconds: float | None) -> bool:
        """Wait until the feed changes, at most ``seconds`` (``None``: no limit); whether it changed."""
        waiter = asyncio.get_running_loop().create_future()
        if len(self._waiters) > 2 * self.subscribers:  # streams that stopped waiting (a timeout)
            self._waiters = [waiting for waiting in self._waiters if not waiting.done()]
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(None if seconds is None else max(seconds, 0.0)):
                await waiter
        except TimeoutError:
            return False
        return True


class FanOut:
    """The feeds of one server instance (module docstring): ``read`` is the source, ``context`` runs it."""

    def __init__(self, context: ServerContext, read: Reader) -> None:
        self.context = context
        self.read = read
        self._feeds: dict[tuple[asyncio.AbstractEventLoop, str], Feed] = {}

    def feed(self, key: str) -> Feed | None:
        """The open feed of ``key`` on the running loop, if any."""
        return self._feeds.get((asyncio.get_running_loop(), key))

    def feeds_of(self, key: str) -> list[Feed]:
        """The open feeds of ``key`` on every event loop (diagnostics and tests, from any thread)."""
        return [feed for (_, name), feed in list(self._feeds.items()) if name == key]

    def nudge(self, key: str) -> None:
        """``key`` changed (this process wrote it): its feed on the running loop, if open, reads now."""
        feed = self.feed(key)
        if feed is not None:
            feed._wake.set()

    def _forget(self, feed: Feed) -> None:
        slot = (asyncio.get_running_loop(), feed.key)
        if self._feeds.get(slot) is feed:
            del self._feeds[slot]

    @contextlib.contextmanager
    def subscription(self, key: str, after: int, interval: float) -> Any:
        """The feed of ``key`` while the block runs (started at id ``after`` when it is the first)."""
        slot = (asyncio.get_running_loop(), key)
        feed = self._feeds.get(slot)
        if feed is None:
            feed = self._feeds[slot] = Feed(self, key, after, interval)
        feed.interval = min(feed.interval, interval)
        feed.subscribers += 1
        if feed._task is None and not feed.finished and feed.error is None:
            feed._start()
        try:
            yield feed
        finally:
            feed.subscribers -= 1
            if feed.subscribers == 0:
                feed._stop()
                self._forget(feed)

    async def stream(
        self, key: str, after: int, *, heartbeat: float | None, interval: float, beat: bytes
    ) -> AsyncGenerator[bytes, None]:
        """The wire chunks of ``key`` after id ``after``: each item once, in order (the items available
        at a wake-up joined in one chunk), ``beat`` after ``heartbeat`` seconds without one (``None``:
        never); ends after a
        final item, or when the source is finished and everything up to ``after`` was sent."""
        with self.subscription(key, after, interval) as feed:
            last_sent = time.monotonic()
            while True:
                if feed.error is not None:
                    raise feed.error
                items = feed.after(after)
                if items is None:  # behind the window: this stream reads what it lacks itself
                    snapshot = await self.context.run(self.read, key, after, PAGE)
                    items = list(snapshot.items)
                    if not items and snapshot.finished:
                        return
                if items:  # everything there is, in one chunk (one write for the stream)
                    end = next((i for i, item in enumerate(items) if item.final), None)
                    if end is not None:
                        items = items[: end + 1]
                    after = items[-1].id
                    yield b"".join(item.chunk for item in items)
                    last_sent = time.monotonic()
                    if end is not None:
                        return
                if items and feed.after(after) != []:
                    continue  # more is kept (or this stream is still behind): no wait
                if feed.finished and feed.last is not None and after >= feed.last:
                    return
                if heartbeat is None:
                    await feed.changed(None)
                    continue
                changed = await feed.changed(heartbeat - (time.monotonic() - last_sent))
                if not changed and time.monotonic() - last_sent >= heartbeat:
                    yield beat
                    last_sent = time.monotonic()
