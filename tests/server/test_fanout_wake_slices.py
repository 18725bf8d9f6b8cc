"""A feed wakes its streams :data:`~paysdk.server.fanout.WAKE_SLICE` at a time, with the event loop's
other work between the slices (D632): 500 progress streams woken at once held every other request (a
health check) for the whole wake-up. Every stream still gets every item once, in order.

The feed's source is a function over a list (what :class:`~paysdk.server.fanout.FanOut` reads through its
context); the streams are the feed's own :meth:`~paysdk.server.fanout.FanOut.stream` generators."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

from paysdk.server import fanout
from paysdk.server.fanout import FanOut, FeedItem, Snapshot

STREAMS = 3 * fanout.WAKE_SLICE + 7
ITEMS = 3


class _Context:
    """What the hub needs of a server context: ``run`` the reader (here on the loop, no database)."""

    async def run(self, work: Callable[..., Any], *args: Any) -> Any:
        return work(None, *args)


async def test_a_wake_up_wakes_the_streams_a_slice_per_turn_of_the_loop() -> None:
    written: list[FeedItem] = []

    def read(_session: Any, _key: str, after: int, limit: int) -> Snapshot:
        items = [item for item in written if item.id > after][:limit]
        return Snapshot(items, finished=bool(written) and written[-1].final, last=None)

    hub = FanOut(_Context(), read)  # type: ignore[arg-type]
    turn = 0  # turns of the event loop, counted by a task that yields once per turn
    counting = True

    async def count_turns() -> None:
        nonlocal turn
        while counting:
            turn += 1
            await asyncio.sleep(0)

    received: list[list[tuple[int, bytes]]] = [[] for _ in range(STREAMS)]

    async def stream(index: int) -> None:
        async for chunk in hub.stream("batch", 0, heartbeat=None, interval=0.01, beat=b""):
            received[index].append((turn, chunk))

    counter = asyncio.ensure_future(count_turns())
    streams = [asyncio.ensure_future(stream(index)) for index in range(STREAMS)]
    feed = None
    while feed is None or len(feed._waiters) < STREAMS:  # every stream waits on the feed
        await asyncio.sleep(0)
        feed = hub.feed("batch")
    written.extend(FeedItem(i, b"id: %d\n\n" % i, final=i == ITEMS) for i in range(1, ITEMS + 1))
    hub.nudge("batch")
    await asyncio.wait_for(asyncio.gather(*streams), timeout=30)
    counting = False
    await counter

    everything = b"".join(b"id: %d\n\n" % i for i in range(1, ITEMS + 1))
    for chunks in received:
        assert b"".join(chunk for _, chunk in chunks) == everything
    # The first (only) wake-up: no turn of the loop woke more than a slice, and it took a turn per slice.
    turns: dict[int, int] = {}
    for chunks in received:
        turns[chunks[0][0]] = turns.get(chunks[0][0], 0) + 1
    assert max(turns.values()) <= fanout.WAKE_SLICE, turns
    assert len(turns) >= math.ceil(STREAMS / fanout.WAKE_SLICE), turns
