"""One reader per batch per process (D370-D372): the progress streams of a batch share one poller of the
database (:mod:`paysdk.server.fanout`), on SQLite and PostgreSQL.

* 200 streams over a real socket on one running batch: every one gets every event once, in order, ending
  with ``done``, while the events table is read once per poll for all of them (it was read at least once
  per stream, then once per stream every 100 ms).
* The first stream starts the batch's reader, the last one to leave stops it.
* A stream behind the kept window (a slow consumer, or a resume from an early id) reads what it lacks
  from the database itself and loses nothing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy
from cardholder_kit import (
    JSON_TYPE,
    Backoffice,
    Event,
    check_complete,
    csv_file,
    parse_events,
    person,
    progress_path,
)
from fastapi import FastAPI

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import fanout
from paysdk.server.jobs import ClaimedJob
from paysdk.server.services import cardholders as service

STREAMS = 200


def _rows(count: int) -> list[list[object]]:
    # Every 50th row fails (no email), so row-failed events interleave with progress.
    return [
        person(i) if i % 50 else [f"E{i}", f"u{i}", "", "A", "B", "", "", ""] for i in range(1, count + 1)
    ]


@pytest.fixture
def event_reads() -> Iterator[list[str]]:
    """The statements that read the progress events table, in this process, while the test runs."""
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "FROM cardholder_events" in statement:
            seen.append(statement)

    sqlalchemy.event.listen(sqlalchemy.engine.Engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        sqlalchemy.event.remove(sqlalchemy.engine.Engine, "before_cursor_execute", count)


@pytest.fixture
def held_batches(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Batch jobs wait for this event before they run (the streams open on a queued batch first). It is
    set when the test ends, so a batch still held does not keep the live server from stopping."""
    gate = threading.Event()
    run_batch = service.run_batch

    async def held(context: Any, job: ClaimedJob, clock: Any) -> None:
        await asyncio.to_thread(gate.wait, 60)
        await run_batch(context, job, clock)

    monkeypatch.setattr(service, "run_batch", held)
    monkeypatch.setattr(service, "CHUNK_ROWS", 100)
    yield gate
    gate.set()


async def test_200_streams_over_a_socket_share_one_reader_and_all_get_done(
    live_server: str, held_batches: threading.Event, event_reads: list[str]
) -> None:
    rows = 2000
    limits = httpx.Limits(max_connections=STREAMS + 10, max_keepalive_connections=STREAMS + 10)
    async with httpx.AsyncClient(base_url=live_server, limits=limits, timeout=120) as client:
        made = await client.post("/_sandbox/clients", content=b"{}", headers=JSON_TYPE)
        bo = Backoffice(client, SandboxClient.model_validate(made.json()))
        partner = await bo.partner()
        token = await bo.token()
        answer = await bo.upload(partner, csv_file(_rows(rows)), "people.csv")
        assert answer.status_code == 202, answer.text
        path = progress_path(partner, answer.json()["data"]["batchId"])

        opened = 0
        all_open = asyncio.Event()

        async def read() -> list[Event]:
            nonlocal opened
            events: list[Event] = []
            buffer = ""
            async with client.stream("GET", path, headers={"Authorization": f"Bearer {token}"}) as response:
                assert response.status_code == 200
                async for text in response.aiter_text():
                    buffer += text
                    while "\n\n" in buffer:
                        block, buffer = buffer.split("\n\n", 1)
                        for event in parse_events(block + "\n\n"):
                            events.append(event)
                            if event.id == 1:  # the queued batch's first event: this stream is open
                                opened += 1
                                if opened == STREAMS:
                                    all_open.set()
            return events

        readers = [asyncio.ensure_future(read()) for _ in range(STREAMS)]
        try:
            await asyncio.wait_for(all_open.wait(), 120)
            before = len(event_reads)
            held_batches.set()
            results = await asyncio.wait_for(asyncio.gather(*readers), 180)
        finally:
            held_batches.set()
            for reader in readers:
                reader.cancel()
    for events in results:
        check_complete(events, rows)
    assert all(events == results[0] for events in results)
    # One reader: each read of the events table brought at least one new event (the batch row says when
    # there is one), so no more reads than events, whatever the number of streams. One reader per stream
    # would have made at least one read per stream.
    await _until(lambda: not _live_feeds(results[0][0].data["batchId"]))  # the last one stopped it
    assert before == 1  # 200 streams opened on the queued batch: its first event read once for all
    assert 0 < len(event_reads) - before <= len(results[0]), len(event_reads)


def _live_feeds(batch: str) -> list[fanout.Feed]:
    """The feeds of ``batch`` open in this process (the live server runs in a thread of it)."""
    return [feed for hub in list(service._FEEDS.values()) for feed in hub.feeds_of(batch)]


async def test_streams_that_disconnect_leave_the_reader_and_the_last_one_stops_it(
    live_server: str, held_batches: threading.Event
) -> None:
    """Disconnect handling (D370): clients that go away unsubscribe; when the last one is gone the
    batch's reader stops, while the batch is still queued."""
    streams = 20
    limits = httpx.Limits(max_connections=streams + 5)
    async with httpx.AsyncClient(base_url=live_server, limits=limits, timeout=60) as client:
        made = await client.post("/_sandbox/clients", content=b"{}", headers=JSON_TYPE)
        bo = Backoffice(client, SandboxClient.model_validate(made.json()))
        partner = await bo.partner()
        token = await bo.token()
        answer = await bo.upload(partner, csv_file(_rows(100)), "people.csv")
        batch = answer.json()["data"]["batchId"]
        first_event = [asyncio.Event() for _ in range(streams)]

        async def read(index: int) -> None:
            headers = {"Authorization": f"Bearer {token}"}
            async with client.stream("GET", progress_path(partner, batch), headers=headers) as response:
                async for text in response.aiter_text():
                    if "id: 1\n" in text:
                        first_event[index].set()

        readers = [asyncio.ensure_future(read(i)) for i in range(streams)]
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in first_event)), 60)
        [feed] = _live_feeds(batch)
        assert feed.subscribers == streams
        for reader in readers[:5]:
            reader.cancel()
        await _until(lambda: feed.subscribers == streams - 5)
        assert feed.running
        for reader in readers[5:]:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    await _until(lambda: not _live_feeds(batch) and not feed.running)
    assert feed.subscribers == 0


async def _until(condition: Any, seconds: float = 30) -> None:
    """Wait until ``condition()`` holds (checked every 20 ms), at most ``seconds``."""
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110 - the state of the server's thread: polled
            await asyncio.sleep(0.02)


@pytest.fixture
async def bo(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> Backoffice:
    return Backoffice(asgi_client, merchant)


async def _finished_batch(bo: Backoffice, rows: int) -> tuple[str, str]:
    partner = await bo.partner()
    answer = await bo.upload(partner, csv_file(_rows(rows)))
    assert answer.status_code == 202, answer.text
    batch: str = answer.json()["data"]["batchId"]
    await bo.progress(partner, batch)  # returns once the batch is done
    return partner, batch


async def _drain(stream: Any) -> list[bytes]:
    return [chunk async for chunk in stream]


def _events(chunks: list[bytes]) -> list[Event]:
    return parse_events(b"".join(chunks).decode())


async def test_the_first_stream_starts_the_reader_and_the_last_one_stops_it(
    bo: Backoffice, app: FastAPI, held_batches: threading.Event
) -> None:
    context = app.state.paysdk
    hub = service.feeds(context)
    partner = await bo.partner()
    answer = await bo.upload(partner, csv_file(_rows(150)))
    batch = answer.json()["data"]["batchId"]
    assert hub.feed(batch) is None
    streams = [service.event_stream(context, batch, 0, poll=0.05) for _ in range(3)]
    for stream in streams:
        assert await anext(stream) == b"retry: 1000\n\n"
        assert (await anext(stream)).startswith(b"id: 1\nevent: progress\n")
    feed = hub.feed(batch)
    assert feed is not None
    assert feed.running
    assert feed.subscribers == 3
    await streams[0].aclose()
    assert hub.feed(batch) is feed
    assert feed.running
    assert feed.subscribers == 2
    await streams[1].aclose()
    await streams[2].aclose()
    assert not feed.running
    assert hub.feed(batch) is None
    # A new stream starts a new reader; the batch runs and every stream of it ends with done.
    held_batches.set()
    again = [service.event_stream(context, batch, 0, poll=0.05) for _ in range(2)]
    results = await asyncio.wait_for(asyncio.gather(*(_drain(s) for s in again)), 60)
    for chunks in results:
        check_complete(_events(chunks), 150)
    assert hub.feed(batch) is None


async def test_a_stream_behind_the_window_reads_what_it_lacks_and_loses_nothing(
    bo: Backoffice, app: FastAPI, held_batches: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window of 3 events, pages of 2: the slow stream, left at event 1 while the fast one reads the
    whole batch, finds its next events dropped from the window and reads them itself."""
    held_batches.set()
    context = app.state.paysdk
    partner, batch = await _finished_batch(bo, 500)
    monkeypatch.setattr(fanout, "WINDOW", 3)
    monkeypatch.setattr(fanout, "PAGE", 2)
    slow, fast = service.event_stream(context, batch, 0), service.event_stream(context, batch, 0)
    first = [await anext(slow), await anext(slow)]
    everything = await asyncio.wait_for(_drain(fast), 60)
    feed = service.feeds(context).feed(batch)
    assert feed is not None
    assert feed.finished
    assert feed.base > 5
    # A resume from an early id, behind the window of the open feed: the events after it.
    resumed = await asyncio.wait_for(_drain(service.event_stream(context, batch, 5)), 60)
    assert _events(resumed) == _events(everything)[5:]
    rest = await asyncio.wait_for(_drain(slow), 60)
    assert b"".join(first + rest) == b"".join(everything)  # chunks join what is there at a wake-up
    check_complete(_events(everything), 500)
    assert _events(everything) == await bo.progress(partner, batch)
    assert service.feeds(context).feed(batch) is None
