"""``make bench``: the performance targets of the project, measured, with the goal beside each figure.

1. SDK overhead vs raw httpx against a stub server: sequential (sync) and 100 concurrent (async).
   Both sides send the same body and parse the answer; the SDK also validates its arguments, builds the
   request through the pipeline, parses money exactly and returns a typed model. Goal <= 1.10x.
2. Reference server ``POST /transactions`` throughput vs a bare Starlette endpoint, same uvicorn
   settings, same load generator. Goal >= 0.5x.
3. ``paysdk --help`` wall time vs ``python -c "import typer"``. Goal <= 1.3x.
   ``python -c "import paysdk"`` vs ``python -c "import httpx, pydantic"``. Goal <= 1.3x. And
   ``from paysdk import Client`` (what a program that makes calls pays) vs the same: goal <= 1.3x; the
   families' modules load on first use (D460-D462). Both on compiled modules, as pip installs them.
4. Wallet ledger (``benchmarks/bench_ledger.py``): 1,000 concurrent fund operations (adds and withdrawals)
   on one hot card, on SQLite (goal >= 1,000 ops/s) and PostgreSQL (goal >= 500 ops/s), 0 lost updates
   (expected minus final balance) and one movement per operation summing to the balance; and the same
   1,000 spread over 100 cards (rate shown, 0 lost).
5. A 200 MB generated file uploaded with the SDK to the reference server's upload sink, in a child
   process: its peak RSS during the upload (``VmHWM``, reset before it; ``ru_maxrss`` where /proc has
   none) minus its RSS before. Goal < 50 MB (files stream, never read whole).
6. The scheduled charge process: N subscriptions (N = 10,000 and 100,000) made due at once, then ONE
   ``POST /_sandbox/clock/advance`` of 12 hours against the reference server (SQLite) charges all of
   them: charges per second, and the 100k/10k time ratio. Goal <= 11x (time grows linearly).
7. A 50,000-row xlsx cardholder upload (``benchmarks/bench_cardholders.py``): rows/s (goal >= 5,000),
   server peak RSS (goal < 200 MB), p99 delay from a row processed to its progress event at the client
   (goal < 1 s).
8. ``paysdk serve`` from launch to a healthy ``/_sandbox/health`` and to its first real answer
   (``POST /_sandbox/clients``) vs a bare FastAPI + SQLAlchemy app (``benchmarks/_bare_app.py``, its own
   pydantic insert) under the same uvicorn on the same kind of database, existing and new, interleaved
   rounds, ratio of the medians (goal <= 1.2x, D612); ``POST /_sandbox/reset`` after filling every table
   (1,000 transactions, 100 callbacks, 50 cards with movements): median (goal < 5 ms) and p95
   (``benchmarks/bench_start.py``).
9. Hostile xlsx cardholder files against ``paysdk serve`` (``benchmarks/bench_hostile.py``): a cell at
   ``XFD1048576``, 1 MB and 4 MB zips of 1 and 4 GiB of whitespace, a zip directory that lies, each sent
   twice: the answers (goal 4xx), the server's peak RSS growth (goal < 100 MB) and its health after.
10. The pytest plugin (``benchmarks/bench_plugin.py``): ``examples/merchant_suite`` with the server on a
    socket vs in process, the tests' own time (goal <= 1.5x), and the fixtures' cost per test that does
    nothing (reset, inbox, merchant, client; goal < 10 ms).
11. 500 progress streams open on a running 50,000-row cardholder batch against a ``paysdk serve`` process
    (``benchmarks/bench_streams.py``): health p99 with them vs without (goal <= 2x), and the batch's
    duration with them vs without (goal <= 1.5x).
12. A reconciliation upload of 100,000 rows, 99,999 of them invalid (about 800 KB), against a
    ``paysdk serve`` process (``benchmarks/bench_reconciliation.py``): the answer's size (goal < 1 MiB),
    the server's peak RSS growth over the upload (goal < 100 MB), and the time for the SDK's
    ``reconciliation.upload`` (default settings) to read the whole report, every page (shown).
13. The bare SDK's installed size (``benchmarks/bench_footprint.py``): the built wheel with no extras in
    a fresh venv, its ``site-packages`` summed, beside ``stripe`` and ``openai`` installed the same way in
    the same run (goal: at most stripe's); and in those venvs, the import cost of
    ``from paysdk import Client``, ``import stripe``, ``import openai`` and ``import httpx, pydantic``
    (medians, shown).
14. A 5,000-row batch CSV charge file against the reference server on SQLite
    (``benchmarks/bench_batch_charges.py``): the median of 5 uploads of a new file through the SDK, from
    the call to the report with every row charged (goal < 1 s; the rows are charged in bulk, D515-D517).

Rounds are interleaved (raw, sdk, raw, sdk, ...) and the median per-round time is compared, so drift of
a shared machine hits both sides alike. Servers run on CPU 0 and the throughput load generator on CPU 1
(when the machine has two), so a server never shares its core with the load it is measured under.
"""

from __future__ import annotations

import asyncio
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import paysdk
from benchmarks._servers import pin_load, serve

TOKEN = "a" * 64
BODY = {"amount": 10.5, "userId": "+50255555555", "channel": "wa", "client": "bench-store", "ads": []}
ROUNDS = int(os.environ.get("PAYSDK_BENCH_ROUNDS", "7"))
PER_ROUND = int(os.environ.get("PAYSDK_BENCH_REQUESTS", "400"))


def median_ratio(raw: Callable[[], float], sdk: Callable[[], float]) -> tuple[float, float, float]:
    """Run interleaved rounds; return (median raw seconds, median sdk seconds, ratio)."""
    raw(), sdk()  # warm-up: connections, imports, caches
    raw_times: list[float] = []
    sdk_times: list[float] = []
    for _ in range(ROUNDS):
        raw_times.append(raw())
        sdk_times.append(sdk())
    r, s = statistics.median(raw_times), statistics.median(sdk_times)
    return r, s, s / r


def bench_sync(url: str) -> tuple[float, float, float]:
    raw_client = httpx.Client(base_url=url, timeout=30)
    sdk_client = paysdk.Client(TOKEN, paysdk.Environment.local(url), max_retries=0)

    def raw() -> float:
        start = time.perf_counter()
        for _ in range(PER_ROUND):
            response = raw_client.post(
                "/transactions",
                content=json.dumps(BODY),
                headers={"Authorization": TOKEN, "Content-Type": "application/json"},
            )
            response.raise_for_status()
            response.json()
        return time.perf_counter() - start

    def sdk() -> float:
        start = time.perf_counter()
        for _ in range(PER_ROUND):
            sdk_client.payment_links.create(
                amount=Decimal("10.50"), user_id="+50255555555", channel="wa", client="bench-store"
            )
        return time.perf_counter() - start

    try:
        return median_ratio(raw, sdk)
    finally:
        raw_client.close()
        sdk_client.close()


def bench_async(url: str, concurrency: int = 100) -> tuple[float, float, float]:
    async def main() -> tuple[float, float, float]:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        raw_client = httpx.AsyncClient(base_url=url, timeout=30, limits=limits)
        sdk_client = paysdk.AsyncClient(
            TOKEN,
            paysdk.Environment.local(url),
            max_retries=0,
            http_client=httpx.AsyncClient(timeout=30, limits=limits),
        )

        async def raw_one() -> None:
            response = await raw_client.post(
                "/transactions",
                content=json.dumps(BODY),
                headers={"Authorization": TOKEN, "Content-Type": "application/json"},
            )
            response.raise_for_status()
            response.json()

        async def sdk_one() -> None:
            await sdk_client.payment_links.create(
                amount=Decimal("10.50"), user_id="+50255555555", channel="wa", client="bench-store"
            )

        async def timed(one: Callable[[], Coroutine[Any, Any, None]]) -> float:
            start = time.perf_counter()
            for _ in range(PER_ROUND // concurrency or 1):
                await asyncio.gather(*(one() for _ in range(concurrency)))
            return time.perf_counter() - start

        await timed(raw_one)
        await timed(sdk_one)
        raw_times, sdk_times = [], []
        for _ in range(ROUNDS):
            raw_times.append(await timed(raw_one))
            sdk_times.append(await timed(sdk_one))
        await raw_client.aclose()
        await sdk_client.aclose()
        r, s = statistics.median(raw_times), statistics.median(sdk_times)
        return r, s, s / r

    return asyncio.run(main())


def throughput(url: str, token: str, client_slug: str, total: int = 3000, concurrency: int = 16) -> float:
    """Requests per second of ``POST /transactions`` under ``concurrency`` keep-alive connections.

    The load generator writes prebuilt HTTP/1.1 requests on raw asyncio streams and reads answers by
    ``Content-Length``: cheap enough that the server, not the generator, is what is measured. Every
    answer must be a 2xx, or the run fails.
    """
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({**BODY, "client": client_slug}).encode()
    request = (
        f"POST /transactions HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body

    async def connection(count: int) -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for _ in range(count):
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head[9:12])
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                payload = await reader.readexactly(length)
                if not 200 <= status < 300:
                    raise RuntimeError(f"unexpected {status}: {payload[:200]!r}")
        finally:
            writer.close()

    async def main() -> float:
        await asyncio.gather(*(connection(20) for _ in range(concurrency)))  # warm-up
        start = time.perf_counter()
        await asyncio.gather(*(connection(total // concurrency) for _ in range(concurrency)))
        return (total // concurrency) * concurrency / (time.perf_counter() - start)

    with pin_load():
        return asyncio.run(main())


def bench_server(rounds: int = 7) -> tuple[float, float, float]:
    """Median req/s of the bare Starlette endpoint and of the reference server, measured in alternating
    rounds (both servers stay up), and the ratio of the medians. One sample of either swings by tens
    of percent on a shared 2-core machine; alternating rounds expose both to the same drift, and seven
    of them keep one slow round from moving the median."""
    with serve("starlette") as bare_url, serve("reference") as ref_url:
        merchant = httpx.post(ref_url + "/_sandbox/clients", json={"slug": "bench-store"}, timeout=30).json()
        bare_runs, ours_runs = [], []
        for _ in range(rounds):
            bare_runs.append(throughput(bare_url, TOKEN, "bench-store"))
            ours_runs.append(throughput(ref_url, merchant["sandboxToken"], "bench-store"))
    bare, ours = statistics.median(bare_runs), statistics.median(ours_runs)
    return bare, ours, ours / bare


def bench_renewals(count: int) -> tuple[float, int]:
    """``count`` daily subscriptions due at the next run of the charge process, written to a fresh SQLite
    database before the reference server starts on it; then one clock advance of 12 hours, timed.
    Returns (seconds of the advance, approved charges it made)."""
    import tempfile

    import sqlalchemy

    from paysdk.contracts.sandbox import SandboxClientCreate
    from paysdk.contracts.subscriptions import PlanCreate, SandboxSubscriptionsCreate
    from paysdk.server.clock import Clock
    from paysdk.server.db import Database
    from paysdk.server.services import sandbox
    from paysdk.server.services.subscriptions import create_plan, create_subscriptions
    from paysdk.server.subscription_tables import SubscriptionChargeRow

    with tempfile.TemporaryDirectory(prefix="paysdk-bench-renewals-") as tmp:
        url = f"sqlite:///{tmp}/renewals.db"
        db = Database(url)
        db.create_schema()
        with db.session() as session:
            now = Clock().now(session)
            client = sandbox.create_client(session, SandboxClientCreate(slug="bench-renewals"), now)
            spec = PlanCreate(client=client.slug, amount=Decimal("4.99"), interval="day")
            plan = create_plan(session, spec, now)
        with db.session() as session:
            create_subscriptions(
                session, Clock(), SandboxSubscriptionsCreate(plan_id=plan.plan_id, count=count)
            )
        with serve("reference", db_url=url) as ref_url:
            started = time.perf_counter()
            response = httpx.post(
                ref_url + "/_sandbox/clock/advance", json={"seconds": 12 * 3600}, timeout=3600
            )
            elapsed = time.perf_counter() - started
            response.raise_for_status()
        with db.session() as session:
            approved = session.scalar(
                sqlalchemy.select(sqlalchemy.func.count()).where(SubscriptionChargeRow.status == "approved")
            )
        db.dispose()
    return elapsed, int(approved or 0)


def bench_startup(ours_cmd: list[str], base_cmd: list[str], runs: int = 15) -> tuple[float, float, float]:
    """Median wall time of fresh interpreters running each command, alternating, after one warm-up each."""

    def timed(cmd: list[str]) -> float:
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - start

    timed(ours_cmd), timed(base_cmd)
    ours, base = [], []
    for _ in range(runs):
        base.append(timed(base_cmd))
        ours.append(timed(ours_cmd))
    b, o = statistics.median(base), statistics.median(ours)
    return b, o, o / b


#: The child process of :func:`bench_upload`: peak RSS before and after one upload, and its SHA-256.
_UPLOAD_CHILD = """
import json, resource, sys, time
import paysdk


def status_kb(name):  # VmRSS (now) or VmHWM (peak) from /proc, in KiB; None off Linux
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None


url, path = sys.argv[1], sys.argv[2]
with paysdk.Client(environment=paysdk.Environment.local(url)) as client:
    client.sandbox.uploads.create(content=b"warm-up")  # imports and the connection, before measuring
    try:  # reset the peak to the current RSS, so an import-time peak cannot hide the upload's
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        before = status_kb("VmRSS")
    except OSError:
        before = None
    if before is None:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    receipt = client.sandbox.uploads.create(path, timeout=600)
    seconds = time.perf_counter() - started
    after = status_kb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_kb": before, "after_kb": after, "seconds": seconds, "sha256": receipt.sha256}))
"""


def bench_upload(megabytes: int = 200) -> tuple[float, float]:
    """Peak RSS growth (MB) of a child process uploading a ``megabytes`` MiB file, and its MB/s."""
    import hashlib
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "upload.bin"
        digest = hashlib.sha256()
        block = os.urandom(1 << 20)
        with path.open("wb") as out:
            for index in range(megabytes):
                chunk = block[index:] + block[:index]
                out.write(chunk)
                digest.update(chunk)
        with serve("reference") as url:
            done = subprocess.run(
                [sys.executable, "-c", _UPLOAD_CHILD, url, str(path)],
                check=True,
                capture_output=True,
                text=True,
                timeout=900,
            )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["sha256"] != digest.hexdigest():
        raise SystemExit("upload benchmark: the server received other bytes than the file's")
    growth = (result["after_kb"] - result["before_kb"]) / 1024  # peak during the upload minus RSS before
    return growth, megabytes / result["seconds"]


#: The child process of :func:`bench_csv`: the ``csv`` module alone, then the SDK's local validation and
#: split (D158), on one file; peak RSS growth over ``import paysdk`` (VmHWM reset before the SDK's pass).
_CSV_CHILD = """
import csv, json, resource, statistics, sys, time
import paysdk


def status_kb(name):
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None


big, small = sys.argv[1], sys.argv[2]
paysdk.read_charges_csv(small)  # imports, before measuring
small_times = []
for _ in range(15):
    started = time.perf_counter()
    paysdk.read_charges_csv(small)
    small_times.append(time.perf_counter() - started)
plain_times, ours_times = [], []
for round_ in range(3):
    started = time.perf_counter()
    with open(big, newline="", encoding="utf-8") as handle:
        for _row in csv.reader(handle):
            pass
    plain_times.append(time.perf_counter() - started)
    if round_ == 0:
        try:
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")
            before = status_kb("VmRSS")
        except OSError:
            before = None
        if before is None:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    parsed = paysdk.read_charges_csv(big)
    ours_times.append(time.perf_counter() - started)
    if round_ == 0:
        after = status_kb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert parsed.rows == 1_000_000 and len(parsed.parts) == 200 and not parsed.errors
    del parsed
print(json.dumps({
    "small": statistics.median(small_times),
    "plain": statistics.median(plain_times),
    "ours": statistics.median(ours_times),
    "growth_kb": after - before,
}))
"""


def bench_csv(rows: int = 1_000_000) -> dict[str, float]:
    """The SDK's local validation of a batch charge file (D158): a 5,000-row file's time, and a
    ``rows``-row file validated and split (duplicate check included) against reading it with ``csv``
    alone, with the peak RSS growth over ``import paysdk`` (in a child process)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        big, small = Path(folder) / "big.csv", Path(folder) / "small.csv"
        for path, count in ((big, rows), (small, 5000)):
            with path.open("w", encoding="utf-8", newline="") as out:
                out.write("subscriptionId,amount,reference,description\r\n")
                for index in range(count):
                    amount = f"{index % 500 + 1}.{index % 100:02d}"
                    out.write(f"sub_{index % 997:024x},{amount},ref-{index:08d},row {index}\r\n")
        done = subprocess.run(
            [sys.executable, "-c", _CSV_CHILD, str(big), str(small)],
            check=True,
            capture_output=True,
            text=True,
            timeout=900,
        )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def bench_cli(runs: int = 9) -> tuple[float, float, float]:
    venv_bin = Path(sys.executable).parent
    return bench_startup([str(venv_bin / "paysdk"), "--help"], [sys.executable, "-c", "import typer"], runs)


def bench_import(statement: str = "import paysdk", runs: int = 15) -> tuple[float, float, float]:
    """``statement`` vs ``import httpx, pydantic`` in fresh interpreters (:func:`bench_startup`).

    Both sides import compiled modules, as an installed package does (pip compiles at install): in a
    checkout run with PYTHONDONTWRITEBYTECODE the SDK's own modules would otherwise be compiled again by
    every interpreter, a cost httpx and pydantic (compiled by pip) never pay (D462)."""
    compileall.compile_dir(paysdk.__path__[0], quiet=1)
    base_cmd = [sys.executable, "-c", "import httpx, pydantic"]
    return bench_startup([sys.executable, "-c", statement], base_cmd, runs)


def main() -> None:
    rows: list[tuple[str, str, str, str]] = []
    with serve("stub") as url:
        raw, sdk, ratio = bench_sync(url)
        rows.append(
            (
                "SDK sync overhead vs raw httpx",
                f"sdk {sdk * 1e6 / PER_ROUND:.0f} vs raw {raw * 1e6 / PER_ROUND:.0f} us/req",
                f"{ratio:.3f}x",
                "<= 1.10x",
            )
        )
        raw, sdk, ratio = bench_async(url)
        rows.append(
            (
                "SDK async (100 concurrent) vs raw httpx",
                f"sdk {sdk * 1e6 / PER_ROUND:.0f} vs raw {raw * 1e6 / PER_ROUND:.0f} us/req",
                f"{ratio:.3f}x",
                "<= 1.10x",
            )
        )
    bare, ours, ratio = bench_server()
    rows.append(
        (
            "Server POST /transactions vs bare Starlette",
            f"ours {ours:.0f} vs bare {bare:.0f} req/s",
            f"{ratio:.3f}x",
            ">= 0.5x",
        )
    )
    from benchmarks.bench_ledger import ledger_rows  # the wallet ledger (issue 12, D256-D260)

    rows.extend(ledger_rows())
    base, ours_cli, ratio = bench_cli()
    rows.append(
        (
            "paysdk --help vs import typer",
            f"paysdk {ours_cli * 1000:.0f} vs typer {base * 1000:.0f} ms",
            f"{ratio:.3f}x",
            "<= 1.3x",
        )
    )
    base, ours_import, ratio = bench_import()
    rows.append(
        (
            "import paysdk vs import httpx, pydantic",
            f"paysdk {ours_import * 1000:.0f} vs {base * 1000:.0f} ms",
            f"{ratio:.3f}x",
            "<= 1.3x",
        )
    )
    base, ours_import, ratio = bench_import("from paysdk import Client")
    rows.append(
        (
            "from paysdk import Client vs import httpx, pydantic",
            f"paysdk {ours_import * 1000:.0f} vs {base * 1000:.0f} ms",
            f"{ratio:.3f}x",
            "<= 1.3x",
        )
    )

    csv_figures = bench_csv()
    rows.append(("validate a 5,000-row CSV", f"{csv_figures['small'] * 1000:.1f} ms", "", "< 50 ms"))
    rows.append(
        (
            "validate+split 1,000,000-row CSV vs csv",
            f"ours {csv_figures['ours']:.2f} vs csv {csv_figures['plain']:.2f} s",
            f"{csv_figures['ours'] / csv_figures['plain']:.2f}x",
            "<= 3x",
        )
    )
    rows.append(
        ("1,000,000-row CSV peak RSS growth", "", f"{csv_figures['growth_kb'] / 1024:.1f} MB", "< 100 MB")
    )
    small, small_charged = bench_renewals(10_000)
    large, large_charged = bench_renewals(100_000)
    rows.append(
        (
            "renewals: one advance charges 10k / 100k due",
            f"{small_charged / small:.0f} / {large_charged / large:.0f} charges/s",
            f"{large / small:.2f}x",
            "<= 11x",
        )
    )
    if (small_charged, large_charged) != (10_000, 100_000):
        raise SystemExit(f"renewals charged {small_charged} and {large_charged}, not every due subscription")

    from benchmarks.bench_batch_charges import batch_charge_rows  # batch CSV charges in bulk (D515-D517)

    rows.extend(batch_charge_rows())

    growth, speed = bench_upload()
    rows.append(("upload 200 MB peak RSS growth", f"{speed:.0f} MB/s", f"{growth:.1f} MB", "< 50 MB"))

    from benchmarks.bench_cardholders import cardholder_rows  # bulk cardholder upload (issue 11, D186-D188)

    rows.extend(cardholder_rows())

    from benchmarks.bench_start import start_rows  # start and reset of the server (issue 12, D300-D305)

    rows.extend(start_rows())

    from benchmarks.bench_hostile import hostile_rows  # hostile xlsx files (issue 20, D330)

    rows.extend(hostile_rows())

    from benchmarks.bench_plugin import plugin_rows  # the pytest plugin's cost (issue 21 item 7, D401-D402)

    rows.extend(plugin_rows())

    from benchmarks.bench_streams import stream_rows  # progress streams of one batch (issue 20, D370-D373)

    rows.extend(stream_rows())

    from benchmarks.bench_reconciliation import reconciliation_rows  # long reports (issue 20, D331)

    rows.extend(reconciliation_rows())

    from benchmarks.bench_footprint import footprint_rows  # installed size, import cost (D423-D424, D462)

    rows.extend(footprint_rows())
    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  {'figures':<30}  {'ratio':>8}  goal")
    for name, figures, ratio_text, goal in rows:
        print(f"{name:<{width}}  {figures:<30}  {ratio_text:>8}  {goal}")


if __name__ == "__main__":
    main()
