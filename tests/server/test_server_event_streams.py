"""The server's event streams on sse-starlette (:mod:`paysdk.server.sse`, D600-D602), over real sockets:
a heartbeat comment on an idle stream, a client that goes frees its stream on the server, a server that
stops (in a thread, and ``paysdk serve`` on SIGTERM and SIGINT) drops its open streams instead of
waiting for them. Deadlines are generous: nothing here measures time (benchmarks/bench_streams.py does).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn
from cardholder_kit import JSON_TYPE, Backoffice, csv_file, person, progress_path
from fastapi import FastAPI

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app
from paysdk.server.events import EventFeed
from paysdk.server.sse import StreamRegistry
from paysdk.testing._ready import free_port, http_ok, serve_in_thread, wait_ready

sqlite_only = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

PAYSDK = str(Path(sys.executable).with_name("paysdk"))
#: What uvicorn logs when open answers outlast its graceful shutdown (streams that did not stop).
FORCED = "timeout graceful shutdown exceeded"
#: Seconds a :class:`RawStream` read may take in all (generous: nothing here measures time).
READ_DEADLINE = 60.0


def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait for ``condition`` with the suite's one readiness helper (a generous deadline, D541)."""
    wait_ready(condition, what=what, interval=0.02)


@dataclass
class Served:
    """The reference server in a thread over a socket, with its app at hand (no ticker: a batch stays
    queued, so its stream is idle)."""

    url: str
    app: FastAPI
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def feed(self) -> EventFeed:
        feed: EventFeed = self.app.state.paysdk.events
        return feed

    @property
    def streams(self) -> StreamRegistry:
        return StreamRegistry.of(self.app)


@pytest.fixture
def served(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    from paysdk.server.services import cardholders

    monkeypatch.setattr(cardholders, "kick", lambda context: None)  # an uploaded batch stays queued
    app = create_app(db_url, start_ticker=False)
    try:
        with serve_in_thread(app, log_level="critical") as running:
            yield Served(running.url, app, running.server, running.thread)
    finally:
        app.state.paysdk.db.dispose()


def _queued_batch(url: str) -> tuple[str, str]:
    """A cardholder batch nobody runs (no ticker, no kick): its progress path and an operator's token."""
    import asyncio

    async def make() -> tuple[str, str]:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            made = await client.post("/_sandbox/clients", content=b"{}", headers=JSON_TYPE)
            assert made.status_code == 201, made.text
            bo = Backoffice(client, SandboxClient.model_validate(made.json()))
            partner = await bo.partner()
            answer = await bo.upload(partner, csv_file([person(1), person(2)]))
            assert answer.status_code == 202, answer.text
            return progress_path(partner, answer.json()["data"]["batchId"]), await bo.token()

    return asyncio.run(make())


class RawStream:
    """One event stream read over a plain socket (HTTP/1.1, chunked): what a client receives, bytes
    as sent, and whether the server ended the answer (the last chunk) or dropped the connection."""

    def __init__(self, url: str, path: str, headers: dict[str, str] | None = None) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Accept: text/event-stream"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.received = b""
        self.closed = False

    def read_until(self, marker: bytes) -> bytes:
        """Read until ``marker`` was received, as sent (chunk framing included); a closed connection or
        :data:`READ_DEADLINE` passing fails."""
        self._read(lambda: marker in self.received, repr(marker))
        return self.received

    def read_body_until(self, marker: bytes, *, count: int = 1) -> bytes:
        """Read until the answer's body (chunk framing removed: each write of the server is a chunk of
        its own) holds ``marker`` ``count`` times; a closed connection or :data:`READ_DEADLINE` passing
        fails. The body."""
        self._read(lambda: self.body.count(marker) >= count, f"{count} x {marker!r}")
        return self.body

    def _read(self, enough: Callable[[], bool], what: str) -> None:
        # One deadline for the whole read: the socket's own timeout is per recv, which every heartbeat
        # restarts, so a read for what never comes would last forever on a live stream.
        deadline = time.monotonic() + READ_DEADLINE
        while not enough():
            left = deadline - time.monotonic()
            assert left > 0, f"no {what} within {READ_DEADLINE} s: {self.received!r}"
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            assert chunk, f"closed before {what}: {self.received!r}"
            self.received += chunk

    @property
    def body(self) -> bytes:
        """The body's complete chunks received so far, joined (chunked transfer encoding decoded)."""
        rest = self.received.partition(b"\r\n\r\n")[2]
        body = b""
        while b"\r\n" in rest:
            size, _, after = rest.partition(b"\r\n")
            length = int(size.split(b";")[0], 16)
            if length == 0 or len(after) < length + 2:
                break
            body += after[:length]
            rest = after[length + 2 :]
        return body

    def read_to_end(self) -> bytes:
        """Read until the server closes the connection."""
        while chunk := self.sock.recv(65536):
            self.received += chunk
        self.closed = True
        return self.received

    @property
    def head(self) -> str:
        return self.received.partition(b"\r\n\r\n")[0].decode().lower()

    @property
    def ended_cleanly(self) -> bool:
        """Whether the answer ended with chunked encoding's last chunk (not a dropped connection)."""
        return self.received.endswith(b"\r\n0\r\n\r\n")

    def close(self) -> None:
        self.sock.close()


@sqlite_only
def test_an_idle_progress_stream_gets_heartbeats_and_keeps_its_wire_form(served: Served) -> None:
    served.feed.heartbeat = 0.1  # the server's ping setting, for every stream it opens from now on
    path, token = _queued_batch(served.url)
    stream = RawStream(served.url, path, {"Authorization": f"Bearer {token}"})
    try:
        stream.read_until(b"retry: 1000\n\n")
        assert stream.head.startswith("http/1.1 200")
        assert "content-type: text/event-stream; charset=utf-8" in stream.head
        assert "cache-control: no-store" in stream.head
        assert "x-accel-buffering: no" in stream.head
        # The batch's first event (written when it was accepted; the batch's reader may bring it after
        # a heartbeat on a busy machine) and heartbeats: nothing else.
        stream.read_body_until(b"id: 1\nevent: progress\ndata: {")
        body = stream.read_body_until(b": heartbeat\n\n")
        assert body.startswith(b"retry: 1000\n\n")
        events = [block for block in body.split(b"\n\n")[1:-1] if block != b": heartbeat"]
        assert len(events) == 1, body
        assert events[0].startswith(b"id: 1\nevent: progress\ndata: {"), body
    finally:
        stream.close()


@sqlite_only
def test_an_idle_feed_stream_gets_heartbeats(served: Served) -> None:
    served.feed.heartbeat = 0.1
    stream = RawStream(served.url, "/_sandbox/events")
    try:
        received = stream.read_until(b": heartbeat\n\n")
        assert b"retry: 1000\n\n" in received
        assert "content-type: text/event-stream; charset=utf-8" in stream.head
    finally:
        stream.close()


@sqlite_only
def test_a_client_that_goes_frees_its_stream(served: Served) -> None:
    served.feed.heartbeat = 60.0  # nothing written while idle: only the disconnect can end them
    path, token = _queued_batch(served.url)
    feed = RawStream(served.url, "/_sandbox/events")
    progress = RawStream(served.url, path, {"Authorization": f"Bearer {token}"})
    feed.read_until(b"retry: 1000\n\n")
    progress.read_until(b"event: progress")
    _until(lambda: served.streams.open == 2, "both streams registered")
    assert served.feed.subscribers == 1
    feed.close()
    _until(lambda: served.streams.open == 1, "the feed stream freed")
    _until(lambda: served.feed.subscribers == 0, "the feed subscription ended")
    progress.close()
    _until(lambda: served.streams.open == 0, "the progress stream freed")


@sqlite_only
def test_a_server_stopping_in_a_thread_drops_its_open_streams(served: Served) -> None:
    served.feed.heartbeat = 60.0
    path, token = _queued_batch(served.url)
    streams = [
        RawStream(served.url, "/_sandbox/events"),
        RawStream(served.url, path, {"Authorization": f"Bearer {token}"}),
    ]
    for stream in streams:
        stream.read_until(b"retry: 1000\n\n")
    _until(lambda: served.streams.open == 2, "both streams registered")
    served.server.should_exit = True  # uvicorn has no graceful timeout here: open streams would hold it
    served.thread.join(timeout=30)
    assert not served.thread.is_alive(), "the server waited for its open streams"
    for stream in streams:
        stream.read_to_end()
        assert not stream.ended_cleanly, "a stopping server drops a stream: clients resume elsewhere"
        stream.close()
    assert served.streams.open == 0


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_paysdk_serve_with_open_streams_stops_on_a_signal(tmp_path: Path, stop: signal.Signals) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [PAYSDK, "serve", "--port", str(port), "--db", f"sqlite:///{tmp_path}/streams.db"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    streams: list[RawStream] = []
    try:
        wait_ready(http_ok(url + "/_sandbox/health"), what="paysdk serve", process=proc)
        streams = [RawStream(url, "/_sandbox/events") for _ in range(3)]
        for stream in streams:
            stream.read_until(b"retry: 1000\n\n")
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    # The streams stopped when asked (sse-starlette's shutdown), not when uvicorn gave up on them.
    assert FORCED not in err, err
    assert "returned without completing response" not in err, err
    for stream in streams:
        stream.read_to_end()
        assert not stream.ended_cleanly
        stream.close()


@sqlite_only
def test_a_stream_ignores_sse_starlettes_process_wide_exit_flag(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once any uvicorn server of the process handled an exit, sse-starlette's ``AppStatus.should_exit``
    stays set; a stream of another server still delivers its events and heartbeats (D604, D630)."""
    from sse_starlette.sse import AppStatus

    monkeypatch.setattr(AppStatus, "should_exit", True)
    served.feed.heartbeat = 0.1
    stream = RawStream(served.url, "/_sandbox/events")
    try:
        # A second heartbeat: the ping task runs on (sse-starlette's own exit listener would have
        # ended the answer at once, before the first).
        body = stream.read_body_until(b": heartbeat\n\n", count=2)
        assert body.startswith(b"retry: 1000\n\n")
        assert body.endswith(b": heartbeat\n\n")
        assert stream.head.startswith("http/1.1 200")
        assert not stream.ended_cleanly
        assert served.streams.open == 1
        # An event after the heartbeats: the feed's stream delivers too.
        served.feed.publish("jobs.ran", {"job": "example"})
        assert b"event: jobs.ran" in stream.read_body_until(b"event: jobs.ran")
    finally:
        stream.close()
