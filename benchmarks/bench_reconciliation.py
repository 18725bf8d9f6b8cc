"""A reconciliation upload of 99,999 invalid rows (100,000 rows) against a real ``paysdk serve`` process
(issue 20 item 8, D331).

One ``paysdk serve`` on a fresh SQLite file. Through the SDK: a merchant (GTQ), a terminal payment
captured on a Monday at 10:00 of the virtual clock and settled by the daily job (the clock moved to
Tuesday 02:00), as in ``tests/e2e/test_reconciliation_sdk.py``. The file: the header, :data:`ROWS` rows
``x,!,-,1`` (8 bytes and 4 errors each), then a row matching the payment: 100,000 data rows (the most a
file may hold, ``MAX_ROWS``), about 800 KB.
A warm-up upload of a report of two pages comes first (the figures leave out the first requests'
imports). Figures:

* answer: the size of the upload's answer (``POST /reports/payfac/conciliation/upload/{affiliation}``,
  plain httpx). Goal < 1 MiB (it was 37.5 MB before D331: now the first page and the counts).
* server peak RSS growth over that upload (``VmHWM`` reset through ``/proc/<pid>/clear_refs`` before
  it, minus ``VmRSS`` then, with :mod:`benchmarks.bench_hostile`'s helpers). Goal < 100 MB.
* SDK: ``paysdk.Client(...).reconciliation.upload(...)`` with default settings, reading the whole
  report (the upload, then every other page): its wall time and the pages read; shown beside it, the
  server's peak RSS growth over that whole read. The report must be complete with every invalid entry,
  or the run fails.

``python -m benchmarks.bench_reconciliation`` runs it alone (``PAYSDK_BENCH_RECONCILIATION_ROWS`` for
another row count); ``make bench`` runs it with the others.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx

import paysdk
from benchmarks._servers import paysdk_serve
from benchmarks.bench_cardholders import _status_kb
from benchmarks.bench_hostile import _reset_peak
from paysdk.contracts.reconciliation import COLUMNS, MAX_ROWS

#: Invalid rows of the file: with the matching row, the most a file may hold (``MAX_ROWS``, 100,000).
ROWS = int(os.environ.get("PAYSDK_BENCH_RECONCILIATION_ROWS", str(MAX_ROWS - 1)))
HEADER = ",".join(COLUMNS)
UPLOAD = "/reports/payfac/conciliation/upload/{}"


@dataclass(frozen=True)
class Figures:
    """What the upload of ``rows`` invalid rows did."""

    rows: int
    file_bytes: int
    answer_bytes: int
    pages: int
    growth_mb: float
    sdk_growth_mb: float
    upload_seconds: float
    sdk_seconds: float
    sdk_pages: int
    invalid: int


@dataclass(frozen=True)
class Settled:
    """A merchant's token, the affiliation and the settlement day of its settled payment."""

    token: str
    affiliation: str
    day: str
    payment_id: str


def _settled(url: str) -> Settled:
    """A merchant with a payment captured on a Monday and settled (the clock moved to Tuesday 02:00)."""
    with paysdk.Client(environment=paysdk.Environment.local(url)) as sandbox:
        merchant = sandbox.sandbox.create_client(currencies=["GTQ", "USD"])
        now = sandbox.sandbox.clock().now.astimezone(UTC)
        day = now.date() + timedelta(weeks=1)
        day += timedelta(days=-day.weekday() % 7)
        monday = datetime.combine(day, datetime.min.time(), tzinfo=UTC).replace(hour=10)
        sandbox.sandbox.advance_clock(_seconds(monday - now))
        with paysdk.Client(merchant.sandbox_token, paysdk.Environment.local(url)) as client:
            paid = client.terminal.create(
                amount="10.00",
                currency="GTQ",
                terminal_id="POS-1",
                card_number="4242424242424242",  # settles T+1
                expiry_month=12,
                expiry_year=2030,
            )
        now = sandbox.sandbox.clock().now.astimezone(UTC)
        sandbox.sandbox.advance_clock(_seconds(monday + timedelta(hours=16) - now))
    return Settled(
        merchant.sandbox_token, str(paid.affiliation), (day + timedelta(days=1)).isoformat(), paid.id
    )


def _seconds(delta: timedelta) -> Decimal:
    return Decimal(delta // timedelta(microseconds=1)).scaleb(-6)


def invalid_rows(settled: Settled, count: int) -> bytes:
    """``count`` rows of 8 bytes with 4 errors each (rows 2 to ``count + 1``), then a row matching the
    settled payment (``count + 2``)."""
    tail = f"{settled.day},{settled.payment_id},10.00,GTQ\n"
    return (HEADER + "\n" + "x,!,-,1\n" * count + tail).encode()


def bench_reconciliation(rows: int = ROWS) -> Figures:
    """Run the uploads (module docstring); the figures."""
    folder = tempfile.mkdtemp(prefix="paysdk-bench-reconciliation-")
    with paysdk_serve(f"sqlite:///{folder}/bench.db") as served:
        server, url = served.process, served.url
        settled = _settled(url)
        content = invalid_rows(settled, rows)
        path = UPLOAD.format(settled.affiliation)
        with httpx.Client(base_url=url, timeout=120) as raw:
            headers = {"Authorization": settled.token}

            def upload(data: bytes) -> httpx.Response:
                answer = raw.post(
                    path, files={"file": ("settlements.csv", data, "text/csv")}, headers=headers
                )
                answer.raise_for_status()
                return answer

            upload(invalid_rows(settled, 2000))  # warm-up: two pages, the report stored
            _reset_peak(server.pid)
            before_kb = _status_kb(server.pid, "VmRSS")
            started = time.perf_counter()
            answer = upload(content)
            upload_seconds = time.perf_counter() - started
            growth = max(0, _status_kb(server.pid) - before_kb) / 1024
        first: dict[str, Any] = answer.json()
        with paysdk.Client(settled.token, paysdk.Environment.local(url)) as client:
            _reset_peak(server.pid)
            before_kb = _status_kb(server.pid, "VmRSS")
            started = time.perf_counter()
            report = client.reconciliation.upload(settled.affiliation, content)
            sdk_seconds = time.perf_counter() - started
            sdk_growth = max(0, _status_kb(server.pid) - before_kb) / 1024
        if not report.complete or len(report.invalid) != 4 * rows or len(report.matched) != 1:
            raise SystemExit(
                f"reconciliation benchmark: the SDK read {len(report.invalid)} of {4 * rows} invalid entries"
            )
    return Figures(
        rows=rows,
        file_bytes=len(content),
        answer_bytes=len(answer.content),
        pages=int(first["pages"]),
        growth_mb=growth,
        sdk_growth_mb=sdk_growth,
        upload_seconds=upload_seconds,
        sdk_seconds=sdk_seconds,
        sdk_pages=report.pages,
        invalid=len(report.invalid),
    )


def reconciliation_rows(rows: int = ROWS) -> list[tuple[str, str, str, str]]:
    """The figures as rows of ``benchmarks/run.py``'s table."""
    f = bench_reconciliation(rows)
    name = f"reconciliation {f.rows:,} invalid rows"
    return [
        (
            f"{name}: answer",
            f"{f.file_bytes / 1e3:.0f} KB file: {f.answer_bytes / 1e3:.0f} KB in {f.upload_seconds:.2f} s"
            f", page 1 of {f.pages}",
            f"{f.answer_bytes / (1 << 20):.3f} MiB",
            "< 1 MiB",
        ),
        (f"{name}: server peak RSS growth", "", f"{f.growth_mb:.1f} MB", "< 100 MB"),
        (
            f"{name}: SDK reads the whole report",
            f"{f.sdk_seconds:.2f} s, {f.sdk_pages} pages, {f.invalid:,} invalid entries",
            f"{f.sdk_growth_mb:.1f} MB",
            "(shown)",
        ),
    ]


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else ROWS
    started = time.perf_counter()
    figures = asdict(bench_reconciliation(rows))
    figures["bench_seconds"] = time.perf_counter() - started
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
