"""Dedup stores on one host: MemoryDedupStore and SQLiteDedupStore (clock injected, no sleeping)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from paysdk.callbacks import (
    DEFAULT_LEASE,
    DEFAULT_RETENTION,
    DedupStore,
    EventState,
    MemoryDedupStore,
    SQLiteDedupStore,
)

from ._support import FakeClock

StoreFactory = Callable[..., MemoryDedupStore | SQLiteDedupStore]


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    created: list[SQLiteDedupStore] = []

    def factory(**kwargs: object) -> MemoryDedupStore | SQLiteDedupStore:
        if request.param == "memory":
            return MemoryDedupStore(**kwargs)  # type: ignore[arg-type]
        store = SQLiteDedupStore(tmp_path / "events.sqlite3", **kwargs)  # type: ignore[arg-type]
        created.append(store)
        return store

    yield factory
    for store in created:
        store.close()


def test_stores_satisfy_the_protocol(make_store: StoreFactory) -> None:
    assert isinstance(make_store(), DedupStore)


def test_first_claim_wins(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(clock=clock)
    assert store.state("evt_1") is EventState.ABSENT
    assert store.claim("evt_1") is True
    assert store.claim("evt_1") is False
    assert store.state("evt_1") is EventState.PROCESSING
    assert store.claim("evt_2") is True


def test_completed_event_is_a_duplicate_for_the_whole_retention(
    make_store: StoreFactory, clock: FakeClock
) -> None:
    store = make_store(clock=clock)
    assert store.claim("evt_1")
    store.complete("evt_1")
    assert store.state("evt_1") is EventState.DONE
    clock.advance(timedelta(days=7, hours=23).total_seconds())  # the whole retry window and more
    assert store.claim("evt_1") is False
    assert store.state("evt_1") is EventState.DONE
    clock.advance(timedelta(days=2, hours=1).total_seconds())  # past the 10 days
    assert store.state("evt_1") is EventState.ABSENT
    assert store.claim("evt_1") is True


def test_release_lets_the_redelivery_claim(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(clock=clock)
    assert store.claim("evt_1")
    store.release("evt_1")
    assert store.state("evt_1") is EventState.ABSENT
    assert store.claim("evt_1") is True


def test_release_after_complete_keeps_the_done_mark(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(clock=clock)
    assert store.claim("evt_1")
    store.complete("evt_1")
    store.release("evt_1")
    assert store.state("evt_1") is EventState.DONE


def test_lease_expiry_lets_a_redelivery_take_over(make_store: StoreFactory, clock: FakeClock) -> None:
    # The process holding the claim died mid-handler: the event must not be lost.
    crashed = make_store(clock=clock)
    assert crashed.claim("evt_1")
    clock.advance(DEFAULT_LEASE.total_seconds() - 1)
    assert crashed.claim("evt_1") is False
    clock.advance(2)
    assert crashed.state("evt_1") is EventState.ABSENT
    assert crashed.claim("evt_1") is True


def test_late_release_does_not_drop_another_claim(tmp_path: Path, clock: FakeClock) -> None:
    slow = SQLiteDedupStore(tmp_path / "e.sqlite3", clock=clock)
    other = SQLiteDedupStore(tmp_path / "e.sqlite3", clock=clock)
    assert slow.claim("evt_1")
    clock.advance(DEFAULT_LEASE.total_seconds() + 1)
    assert other.claim("evt_1")  # lease ran out; another worker took over
    slow.release("evt_1")  # the slow handler failed afterwards
    assert other.state("evt_1") is EventState.PROCESSING
    slow.close()
    other.close()


def test_retention_shorter_than_the_retry_window_is_refused(make_store: StoreFactory) -> None:
    assert timedelta(days=10) == DEFAULT_RETENTION
    with pytest.raises(ValueError, match="retention"):
        make_store(retention=timedelta(days=6, hours=23))
    with pytest.raises(ValueError, match="lease"):
        make_store(lease=timedelta(0))
    make_store(retention=timedelta(days=7))
    make_store(retention=timedelta(days=30))


def test_custom_retention_is_honoured(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(retention=timedelta(days=8), clock=clock)
    assert store.claim("evt_1")
    store.complete("evt_1")
    clock.advance(timedelta(days=8).total_seconds() - 1)
    assert store.state("evt_1") is EventState.DONE
    clock.advance(2)
    assert store.claim("evt_1")


@pytest.mark.parametrize("event_id", ["", "x" * 201])
def test_unusable_event_ids_are_refused(make_store: StoreFactory, event_id: str) -> None:
    with pytest.raises(ValueError, match="event_id"):
        make_store().claim(event_id)


def test_expired_records_are_purged(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(clock=clock)
    for index in range(5):
        assert store.claim(f"evt_{index}")
        store.complete(f"evt_{index}")
    clock.advance(DEFAULT_RETENTION.total_seconds() + 1)
    assert store.purge_expired() == 5


def test_sqlite_purges_on_open(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "e.sqlite3"
    with SQLiteDedupStore(path, clock=clock) as store:
        assert store.claim("evt_old")
        store.complete("evt_old")
    clock.advance(DEFAULT_RETENTION.total_seconds() + 1)
    with SQLiteDedupStore(path, clock=clock) as store:
        store.state("evt_new")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM paysdk_callback_events").fetchone() == (0,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_sqlite_refuses_an_unsafe_table_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="table"):
        SQLiteDedupStore(tmp_path / "e.sqlite3", table="events; DROP TABLE x")


def _race(store: DedupStore, event_id: str, threads: int = 20) -> list[bool]:
    barrier = threading.Barrier(threads)

    def attempt() -> bool:
        barrier.wait()
        return store.claim(event_id)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(lambda _: attempt(), range(threads)))


def test_twenty_threads_one_winner(make_store: StoreFactory) -> None:
    store = make_store()
    for round_ in range(5):
        results = _race(store, f"evt_race_{round_}")
        assert results.count(True) == 1


def test_twenty_threads_with_separate_sqlite_stores_one_winner(tmp_path: Path) -> None:
    stores = [SQLiteDedupStore(tmp_path / "shared.sqlite3") for _ in range(20)]
    barrier = threading.Barrier(len(stores))

    def attempt(store: SQLiteDedupStore) -> bool:
        barrier.wait()
        return store.claim("evt_shared")

    with ThreadPoolExecutor(max_workers=len(stores)) as pool:
        results = list(pool.map(attempt, stores))
    assert results.count(True) == 1
    for store in stores:
        store.close()


def _process_worker(
    path: str,
    event_ids: list[str],
    barrier: threading.Barrier,
    results: multiprocessing.Queue[tuple[str, bool]],
    store: SQLiteDedupStore | None,
) -> None:
    # ``store`` is inherited through fork when given: it must open its own connection in the child.
    store = store or SQLiteDedupStore(path)
    barrier.wait(timeout=30)
    with ThreadPoolExecutor(max_workers=10) as pool:
        for event_id in event_ids:
            claims = list(pool.map(store.claim, [event_id] * 10))
            for won in claims:
                results.put((event_id, won))


@pytest.mark.parametrize("inherit", [False, True], ids=["fresh", "inherited-through-fork"])
def test_two_processes_one_winner_per_event(tmp_path: Path, inherit: bool) -> None:
    context = multiprocessing.get_context("fork")
    path = str(tmp_path / "shared.sqlite3")
    parent_store = SQLiteDedupStore(path)
    parent_store.state("warm-up")  # the parent has an open connection before forking
    event_ids = [f"evt_{index}" for index in range(20)]
    barrier = context.Barrier(2)
    results: multiprocessing.Queue[tuple[str, bool]] = context.Queue()
    processes = [
        context.Process(
            target=_process_worker,
            args=(path, event_ids, barrier, results, parent_store if inherit else None),
        )
        for _ in range(2)
    ]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=60) for _ in range(2 * 10 * len(event_ids))]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    for event_id in event_ids:
        assert [won for eid, won in outcomes if eid == event_id].count(True) == 1
        assert parent_store.state(event_id) is EventState.PROCESSING
    parent_store.close()
