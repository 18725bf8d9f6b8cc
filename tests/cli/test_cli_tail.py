"""``paysdk sandbox tail`` as a subprocess against a live reference server: one line per event (NDJSON
with ``-o json``), filters, a dropped connection survived with a note on stderr and nothing lost or
repeated, Ctrl-C exiting 0 quietly, and a server that is not there named by its address."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx
import pytest
from fastapi import FastAPI

from paysdk.server import create_app
from paysdk.server.events import EventFeed
from paysdk.testing._ready import READY_TIMEOUT, free_port, serve_in_thread, wait_ready

from .conftest import subprocess_env

sqlite_only = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


@dataclass
class Live:
    url: str
    app: FastAPI

    @property
    def feed(self) -> EventFeed:
        feed: EventFeed = self.app.state.paysdk.events
        return feed

    def wait_for_subscribers(self, tail: Tail, count: int = 1) -> None:
        wait_ready(
            lambda: self.feed.subscribers >= count,
            what="paysdk sandbox tail (connecting)",
            process=tail.process,
            output=tail.stderr_after_kill,
        )


@pytest.fixture
def live(db_url: str) -> Iterator[Live]:
    app = create_app(db_url, start_ticker=False)
    try:
        with serve_in_thread(app, log_level="critical", what="the live server") as served:
            yield Live(served.url, app)
    finally:
        app.state.paysdk.db.dispose()


class Tail:
    """A running ``paysdk sandbox tail``; ``line()`` waits for its next stdout line."""

    def __init__(self, config_dir: Path, base_url: str, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "paysdk_cli", "--base-url", base_url, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(config_dir),
        )
        self._lines: queue.Queue[str] = queue.Queue()
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for text in stream:
            self._lines.put(text.rstrip("\n"))

    def stderr_after_kill(self) -> str:
        """Stop the process and return its stderr (stdout is read by the reader thread)."""
        self.process.kill()
        self.process.wait()
        assert self.process.stderr is not None
        return "--- stderr ---\n" + self.process.stderr.read()

    def line(self, timeout: float = READY_TIMEOUT) -> str:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            err = self.stderr_after_kill()
            raise AssertionError(f"no line from tail in {timeout} s; {err}") from None

    def interrupt(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=READY_TIMEOUT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        assert self.process.stderr is not None
        return self.process.returncode, self.process.stderr.read()


@sqlite_only
def test_tail_prints_ndjson_survives_a_cut_and_stops_quietly_on_ctrl_c(config_dir: Path, live: Live) -> None:
    cut = {"kind": "stream_cut", "route": "/_sandbox/events", "afterEvents": 1}
    assert httpx.post(live.url + "/_sandbox/faults", json=cut, timeout=60).status_code == 201
    tail = Tail(config_dir, live.url, "-o", "json", "sandbox", "tail")
    live.wait_for_subscribers(tail)
    paths = [f"/transactions/tail-{index}" for index in range(3)]
    for path in paths:
        httpx.get(live.url + path, headers={"Authorization": "secret-value"}, timeout=60)
    events = [json.loads(tail.line()) for _ in paths]
    code, stderr = tail.interrupt()
    assert [event["data"]["path"] for event in events] == paths
    assert [event["event"] for event in events] == ["request"] * 3
    ids = [int(event["id"]) for event in events]
    assert ids == list(range(ids[0], ids[0] + 3))
    assert all(event["data"]["headers"]["authorization"] == "****" for event in events)
    assert code == 0
    assert "note:" in stderr
    assert "reconnecting" in stderr
    assert "Traceback" not in stderr
    assert "Aborted" not in stderr


@sqlite_only
def test_tail_lines_for_people_with_filters(config_dir: Path, live: Live) -> None:
    tail = Tail(config_dir, live.url, "-o", "table", "sandbox", "tail", "--status", "4xx", "--path", "/api/")
    live.wait_for_subscribers(tail)
    httpx.get(live.url + "/transactions/not-this-path", timeout=60)
    httpx.get(live.url + "/api/this-one", timeout=60)
    line = tail.line()
    code, _ = tail.interrupt()
    assert code == 0
    parts = line.split()
    assert parts[2:5] == ["GET", "/api/this-one", "404"]
    assert parts[5].endswith("ms")


def test_tail_names_the_address_it_cannot_reach(config_dir: Path) -> None:
    port = free_port()
    result = subprocess.run(
        [sys.executable, "-m", "paysdk_cli", "--base-url", f"http://127.0.0.1:{port}", "sandbox", "tail"],
        capture_output=True,
        text=True,
        env=subprocess_env(config_dir),
        timeout=60,
    )
    assert result.returncode == 7
    assert f"could not connect to http://127.0.0.1:{port}" in result.stderr
