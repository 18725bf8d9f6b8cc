"""500 progress streams open on a running cardholder batch (issue 20 item 9, D370-D373).

One ``paysdk serve`` process (SQLite file), two runs of the same batch (a ``ROWS``-row xlsx, each run for
a new merchant so that both create every row), interleaved: without streams (one observer stream reads
it, as a client would), then with :data:`STREAMS` more streams opened on the batch as soon as it is
accepted. During each run ``GET /_sandbox/health`` is sent over and over on one keep-alive connection.

Figures:

* health p99: the 99th percentile of the health checks' latency during the batch once every stream is
  open, with the streams against without. Goal <= 2x. Shown beside it: the slowest health check while
  the streams connect (each connection's token and batch are one database transaction).
* batch: the batch's own duration, from its first event (written when the upload is accepted) to its
  ``done`` event (``written_at`` of both, the server's wall clock), with the streams against without.
  Goal <= 1.5x. Shown beside it: the server process's CPU time (user + system) over each run, which
  the load of a shared machine moves less than the wall time.
* every stream must read the whole batch (its ``done`` event), or the run fails.

The client (raw asyncio sockets: an HTTP/1.1 request, then bytes read until ``event: done``) runs on
CPU 1 and the server on CPU 0 (:mod:`benchmarks._servers`). ``python -m benchmarks.bench_streams`` runs
it alone; ``make bench`` runs it with the others.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime
from typing import Any

import httpx

from benchmarks._servers import paysdk_serve, pin_load
from benchmarks.bench_cardholders import CMS, _operator_token, make_xlsx
from benchmarks.bench_start import _cpu_seconds

STREAMS = int(os.environ.get("PAYSDK_BENCH_STREAMS", "500"))
ROWS = int(os.environ.get("PAYSDK_BENCH_STREAM_ROWS", "50000"))
ROUNDS = int(os.environ.get("PAYSDK_BENCH_STREAM_ROUNDS", "2"))


async def _stream(port: int, path: str, token: str, opened: list[float]) -> bool:
    """Read the stream at ``path`` until its ``done`` event (``True``) or its end without one."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"stream answered {head[:60]!r}")
        opened.append(time.perf_counter())
        tail = b""
        while chunk := await reader.read(65536):
            if b"event: done" in tail[-16:] + chunk:
                return True
            tail = chunk
        return False
    finally:
        writer.close()


async def _health(port: int, stop: asyncio.Event) -> list[tuple[float, float]]:
    """``(sent at, latency)`` of ``GET /_sandbox/health`` sent one after another until ``stop``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = f"GET /_sandbox/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    latencies: list[tuple[float, float]] = []
    try:
        while not stop.is_set():
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            latencies.append((started, time.perf_counter() - started))
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"health answered {head[:60]!r}")
            await asyncio.sleep(0.01)
    finally:
        writer.close()
    return latencies


def _batch_seconds(db_file: str, batch: str) -> float:
    """From the batch's first event to its ``done`` event, by the server's ``written_at``."""
    with sqlite3.connect(db_file) as connection:
        first, last = connection.execute(
            "SELECT MIN(written_at), MAX(written_at) FROM cardholder_events WHERE batch_id = ?", (batch,)
        ).fetchone()
    return datetime.fromisoformat(str(last)).timestamp() - datetime.fromisoformat(str(first)).timestamp()


def _run(port: int, content: bytes, streams: int) -> tuple[str, list[float], list[float], int]:
    """One batch with ``streams`` extra streams: ``(batch id, health latencies while they are all open,
    health latencies while they connect, streams that saw done)``. Without streams, every latency is
    of the first kind."""
    url = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=url, timeout=120) as client:
        token, partner = _operator_token(client)
        answer = client.post(
            f"{CMS}/app/partners/{partner}/cardholders/upload",
            files={"file": ("cardholders.xlsx", content, "application/octet-stream")},
            headers={"Authorization": f"Bearer {token}"},
        )
        answer.raise_for_status()
    batch = answer.json()["data"]["batchId"]
    path = f"{CMS}/app/partners/{partner}/cardholders/batch/{batch}/progress"

    async def main() -> tuple[list[float], list[float], int]:
        stop = asyncio.Event()
        opened: list[float] = []
        health = asyncio.ensure_future(_health(port, stop))
        readers = [asyncio.ensure_future(_stream(port, path, token, opened)) for _ in range(streams)]
        observer = await _stream(port, path, token, [])  # the batch is done
        done = sum(await asyncio.gather(*readers))
        stop.set()
        if not observer:
            raise RuntimeError("the observer stream ended without done")
        all_open = max(opened, default=0.0)
        samples = await health
        open_phase = [latency for sent, latency in samples if sent >= all_open]
        connecting = [latency for sent, latency in samples if sent < all_open]
        return open_phase, connecting, done

    with pin_load():
        latencies, connecting, done = asyncio.run(main())
    return batch, latencies, connecting, done


def bench_streams(rows: int = ROWS, streams: int = STREAMS) -> dict[str, Any]:
    """Run the rounds (module docstring); the figures."""
    content = make_xlsx(rows)
    folder = tempfile.mkdtemp(prefix="paysdk-bench-streams-")
    db_file = f"{folder}/bench.db"
    plain: list[tuple[str, list[float]]] = []
    loaded: list[tuple[str, list[float]]] = []
    connecting: list[float] = []
    cpu: dict[int, list[float]] = {0: [], streams: []}
    with paysdk_serve(f"sqlite:///{db_file}") as served:
        server, port = served.process, int(served.url.rpartition(":")[2])
        _run(port, make_xlsx(500), 10)  # warm-up: the routers' first imports, the connections
        for _ in range(ROUNDS):
            before = _cpu_seconds(server.pid)
            batch, latencies, _, _ = _run(port, content, 0)
            plain.append((batch, latencies))
            cpu[0].append(_cpu_seconds(server.pid) - before)
            before = _cpu_seconds(server.pid)
            batch, latencies, storm, done = _run(port, content, streams)
            cpu[streams].append(_cpu_seconds(server.pid) - before)
            connecting.extend(storm)
            if done != streams:
                raise SystemExit(f"streams benchmark: {streams - done} of {streams} streams missed done")
            loaded.append((batch, latencies))

    def p99(runs: list[tuple[str, list[float]]]) -> float:
        samples = sorted(latency for _, latencies in runs for latency in latencies)
        return samples[min(len(samples) - 1, int(len(samples) * 0.99))]

    plain_batch = statistics.median(_batch_seconds(db_file, batch) for batch, _ in plain)
    loaded_batch = statistics.median(_batch_seconds(db_file, batch) for batch, _ in loaded)
    return {
        "rows": rows,
        "streams": streams,
        "health_p99_plain": p99(plain),
        "health_p99_streams": p99(loaded),
        "health_median_plain": statistics.median(x for _, xs in plain for x in xs),
        "health_median_streams": statistics.median(x for _, xs in loaded for x in xs),
        "health_max_connecting": max(connecting, default=0.0),
        "health_samples": [sum(len(xs) for _, xs in runs) for runs in (plain, loaded)],
        "batch_plain": plain_batch,
        "cpu_plain": statistics.median(cpu[0]),
        "cpu_streams": statistics.median(cpu[streams]),
        "batch_streams": loaded_batch,
    }


def stream_rows(rows: int = ROWS, streams: int = STREAMS) -> list[tuple[str, str, str, str]]:
    """The figures as rows of ``benchmarks/run.py``'s table."""
    f = bench_streams(rows, streams)
    return [
        (
            f"health p99, {streams} progress streams vs none",
            f"{f['health_p99_streams'] * 1000:.0f} vs {f['health_p99_plain'] * 1000:.0f} ms"
            f" (max {f['health_max_connecting'] * 1000:.0f} ms as they connect)",
            f"{f['health_p99_streams'] / f['health_p99_plain']:.2f}x",
            "<= 2x",
        ),
        (
            f"{rows:,}-row batch, {streams} streams vs none",
            f"{f['batch_streams']:.2f} vs {f['batch_plain']:.2f} s"
            f" (server CPU {f['cpu_streams']:.1f} vs {f['cpu_plain']:.1f} s)",
            f"{f['batch_streams'] / f['batch_plain']:.2f}x",
            "<= 1.5x",
        ),
    ]


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else ROWS
    started = time.perf_counter()
    figures = bench_streams(rows)
    figures["bench_seconds"] = time.perf_counter() - started
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
