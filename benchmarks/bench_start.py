"""Start and reset of the reference server (issue 12, D300-D305).

Figures:

* start: wall time from launching ``paysdk serve --port P --db URL`` to the first ``200`` from
  ``GET /_sandbox/health`` and to its first real answer (the ``201`` of ``POST /_sandbox/clients``, sent
  right after the healthy answer), against the same for a bare FastAPI + SQLAlchemy app
  (``benchmarks/_bare_app.py``: an engine, its tables created at start, a health route that reads one,
  and ``POST /_sandbox/clients`` validating a pydantic body, inserting one row and answering a pydantic
  model) run by the same uvicorn (``python -m uvicorn ... --factory``) on the same kind of database in
  the same directory. On the existing database of each side (made by a warm-up start first) and on a new
  one each start (a new SQLite file, or a new PostgreSQL database). Rounds are interleaved (bare,
  paysdk, bare, ...); the ratio of the medians is compared. Goal <= 1.2x for all four (D612). Shown
  beside each, with no goal: the same ratio of the CPU time (user + system) the server process used by
  then, which the load of a shared machine moves far less than the wall time.
* reset: ``POST /_sandbox/reset`` over HTTP (the client's view: request, the reset's transaction,
  answer) against a running ``paysdk serve`` whose database was filled before each reset with 1,000
  transactions, 100 callback events and 100 attempts, 50 wallet cards with 500 movements and 5 rows in
  every other table (``tests/server/table_filler.py``: rows of every table of the metadata, written
  straight into the database). Median and p95 over the rounds. Goal < 5 ms (SQLite).

``python -m benchmarks.bench_start [start|reset]`` runs it alone
(``PAYSDK_BENCH_START_DB=postgresql://...`` for PostgreSQL); ``make bench`` runs it with the others.
Servers run on CPU 0 (:mod:`benchmarks._servers`).
"""

from __future__ import annotations

import compileall
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks._servers import SERVER_CPU, _pin
from paysdk.testing._ready import free_port

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("PAYSDK_BENCH_ROUNDS", "7"))
RESETS = int(os.environ.get("PAYSDK_BENCH_RESETS", "30"))
#: Rows of the reset figure's fill (others: :data:`OTHER_ROWS` per table).
FILL = {
    "transactions": 1000,
    "callback_events": 100,
    "callback_attempts": 100,
    "wallet_cards": 50,
    "wallet_movements": 500,
}
OTHER_ROWS = 5


def _paysdk() -> str:
    return str(Path(sys.executable).with_name("paysdk"))


def _launch(kind: str, db_url: str, port: int, *, pin: bool = True) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    if kind == "bare":
        env["PAYSDK_BENCH_DB"] = db_url
        cmd = [sys.executable, "-m", "uvicorn", "benchmarks._bare_app:create_app", "--factory"]
        cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    else:
        cmd = [_paysdk(), "serve", "--host", "127.0.0.1", "--port", str(port), "--db", db_url]
    return subprocess.Popen(
        cmd,
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_pin(SERVER_CPU) if pin else None,
    )


def _wait_healthy(proc: subprocess.Popen[bytes], port: int, timeout: float = 60) -> None:
    url = f"http://127.0.0.1:{port}/_sandbox/health"
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2) as client:
        while True:
            try:
                if client.get(url).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server on port {port} did not become healthy")
            time.sleep(0.002)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc``; 0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_seconds(kind: str, db_url: str) -> dict[str, float]:
    """One start of the ``kind`` server (``bare`` or ``paysdk``) on ``db_url``: wall seconds from the launch
    to a healthy answer and to the first real answer (``POST /_sandbox/clients``, sent right after the
    healthy one, as a test suite or a script does), and the CPU seconds the server process had used by
    each (less moved by other work on a shared machine)."""
    port = free_port()
    started = time.perf_counter()
    proc = _launch(kind, db_url, port)
    try:
        _wait_healthy(proc, port)
        healthy, healthy_cpu = time.perf_counter() - started, _cpu_seconds(proc.pid)
        with httpx.Client(timeout=60) as client:
            answer = client.post(f"http://127.0.0.1:{port}/_sandbox/clients", json={"displayName": "Bench"})
        first, first_cpu = time.perf_counter() - started, _cpu_seconds(proc.pid)
        if answer.status_code != 201:
            raise RuntimeError(f"{kind}: POST /_sandbox/clients answered {answer.status_code}: {answer.text}")
        return {"healthy": healthy, "healthy_cpu": healthy_cpu, "first": first, "first_cpu": first_cpu}
    finally:
        _stop(proc)


def _db_urls(directory: str) -> tuple[str, str]:
    base = os.environ.get("PAYSDK_BENCH_START_DB")
    if base:
        return base, base
    return f"sqlite:///{directory}/bare.db", f"sqlite:///{directory}/paysdk.db"


def _new_db_url(directory: str, name: str) -> str:
    """A database that does not exist yet: a new SQLite file, or a new PostgreSQL database made on the
    server of ``PAYSDK_BENCH_START_DB`` (empty, so the server creates every table)."""
    base = os.environ.get("PAYSDK_BENCH_START_DB")
    if not base:
        return f"sqlite:///{directory}/{name}.db"
    import psycopg

    with psycopg.connect(base, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    return base.rsplit("/", 1)[0] + "/" + name


def _drop_new_databases(rounds: int) -> None:
    """Drop the PostgreSQL databases :func:`_new_db_url` made (SQLite's files go with the directory)."""
    base = os.environ.get("PAYSDK_BENCH_START_DB")
    if not base:
        return
    import psycopg

    with psycopg.connect(base, autocommit=True) as connection:
        for index in range(rounds):
            for kind in ("bare", "paysdk"):
                connection.execute(f'DROP DATABASE IF EXISTS "bench_{kind}_{index}"')


_FIGURES = ("healthy", "healthy_cpu", "first", "first_cpu")


def _medians(samples: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(s[key] for s in samples) for key in _FIGURES}


def bench_start_ratio(rounds: int = ROUNDS) -> dict[str, Any]:
    """Interleaved start rounds (bare, paysdk, bare, ...) on an existing database and on a new one;
    the medians of each figure and the ratios of the medians."""
    directory = tempfile.mkdtemp(prefix="paysdk-bench-start-")
    bare_url, paysdk_url = _db_urls(directory)
    # Both sides start from compiled modules, as an installed package does (pip compiles at install): in a
    # checkout run with PYTHONDONTWRITEBYTECODE the project's own modules would otherwise be compiled
    # again on every start, a cost the bare app (whose libraries pip compiled) never pays.
    compileall.compile_dir(str(ROOT / "src"), quiet=1)
    compileall.compile_file(str(ROOT / "benchmarks" / "_bare_app.py"), quiet=1)
    start_seconds("bare", bare_url), start_seconds("paysdk", paysdk_url)  # warm-up: databases, page cache
    samples: dict[tuple[str, str], list[dict[str, float]]] = {
        (kind, db): [] for kind in ("bare", "paysdk") for db in ("existing", "new")
    }
    for index in range(rounds):
        for kind, url in (("bare", bare_url), ("paysdk", paysdk_url)):
            samples[(kind, "existing")].append(start_seconds(kind, url))
        for kind in ("bare", "paysdk"):
            new_url = _new_db_url(directory, f"bench_{kind}_{index}")
            samples[(kind, "new")].append(start_seconds(kind, new_url))
    _drop_new_databases(rounds)
    result: dict[str, Any] = {}
    for db in ("existing", "new"):
        bare, paysdk = _medians(samples[("bare", db)]), _medians(samples[("paysdk", db)])
        result[db] = {
            "bare": bare,
            "paysdk": paysdk,
            "ratio": {key: paysdk[key] / bare[key] if bare[key] else float("nan") for key in _FIGURES},
            "bare_all": [s["first"] for s in samples[("bare", db)]],
            "paysdk_all": [s["first"] for s in samples[("paysdk", db)]],
        }
    return result


def _fill(db_url: str, offset: int) -> int:
    sys.path.insert(0, str(ROOT / "tests" / "server"))
    from sqlalchemy import create_engine
    from table_filler import fill_every_table

    from paysdk.server.db import normalize_database_url

    engine = create_engine(normalize_database_url(db_url))
    try:
        with engine.begin() as connection:
            made = fill_every_table(connection, FILL, OTHER_ROWS, offset=offset)
    finally:
        engine.dispose()
    return sum(made.values())


def bench_reset(resets: int = RESETS) -> dict[str, Any]:
    """Milliseconds of ``POST /_sandbox/reset`` after each fill; median and p95."""
    directory = tempfile.mkdtemp(prefix="paysdk-bench-reset-")
    db_url = os.environ.get("PAYSDK_BENCH_START_DB") or f"sqlite:///{directory}/reset.db"
    port = free_port()
    # Not pinned to one CPU: no load generator runs beside it, and on a shared machine a pinned server
    # waits for that one CPU while the other is free.
    proc = _launch("paysdk", db_url, port, pin=False)
    times: list[float] = []
    rows = 0
    try:
        _wait_healthy(proc, port)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            client.post("/_sandbox/reset").raise_for_status()  # warm-up: the reset connection, statements
            for index in range(resets):
                rows = _fill(db_url, offset=(index + 1) * 100_000)
                started = time.perf_counter()
                client.post("/_sandbox/reset").raise_for_status()
                times.append((time.perf_counter() - started) * 1000)
    finally:
        _stop(proc)
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": statistics.median(times), "p95_ms": p95, "rows": rows, "resets": len(times)}


def start_rows() -> list[tuple[str, str, str, str]]:
    """The figures as rows of ``benchmarks/run.py``'s table."""
    start = bench_start_ratio()
    reset = bench_reset()
    rows: list[tuple[str, str, str, str]] = []
    for db, label in (("existing", "existing database"), ("new", "new database")):
        figures = start[db]
        for key, what in (("healthy", "healthy"), ("first", "first POST /_sandbox/clients")):
            bare, paysdk, ratio = figures["bare"], figures["paysdk"], figures["ratio"]
            rows.append(
                (
                    f"paysdk serve start -> {what} ({label})",
                    f"bare {bare[key]:.2f} s, paysdk {paysdk[key]:.2f} s",
                    f"{ratio[key]:.2f}x",
                    "<= 1.2x",
                )
            )
            rows.append(
                (
                    "  same, server CPU time (no goal)",
                    f"bare {bare[key + '_cpu']:.2f} s, paysdk {paysdk[key + '_cpu']:.2f} s",
                    f"{ratio[key + '_cpu']:.2f}x",
                    "",
                )
            )
    rows.append(
        (
            f"POST /_sandbox/reset ({reset['rows']:,} rows)",
            f"median {reset['median_ms']:.1f} ms",
            f"p95 {reset['p95_ms']:.1f}",
            "< 5 ms",
        )
    )
    return rows


def main() -> None:
    """``python -m benchmarks.bench_start [start|reset]``: the figures as JSON (both by default)."""
    which = sys.argv[1:] or ["start", "reset"]
    out: dict[str, Any] = {}
    if "start" in which:
        out["start"] = bench_start_ratio()
    if "reset" in which:
        out["reset"] = bench_reset()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
