"""Bulk cardholder upload (D186-D188): a 50,000-row xlsx uploaded to the reference server (its own
process, SQLite, uvicorn with its ticker) and its progress stream read to the end.

Figures:

* rows/s: data rows over the wall time from the upload's request to the ``done`` event's arrival
  (receiving, checking and storing the file included). Goal >= 5,000. Shown beside it: rows per second
  of the server process's CPU time (user + system) over the same span, which a busy machine moves less.
* the server process's peak RSS (``VmHWM`` of ``/proc/<pid>/status`` at the end, the whole process life
  included). Goal < 200 MB.
* p99 of the delay from a row being processed to its progress event reaching the client. A row is
  counted as processed no earlier than the previous chunk's event was written (its chunk began then),
  so each ``progress`` event's delay is its arrival minus the previous event's ``written_at`` (the
  events table, same wall clock): an upper bound for every row of the chunk. Goal < 1 s.

``python -m benchmarks.bench_cardholders [rows]`` runs it alone; ``make bench`` runs it with the others.
"""

from __future__ import annotations

import base64
import io
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from benchmarks._servers import SERVER_CPU, _pin
from paysdk.testing._ready import free_port, http_ok, wait_ready

ROWS = 50_000
JSON_TYPE = {"Content-Type": "application/json"}
CMS = "/cms/rest"
HEADER = ["externalId", "username", "email", "firstName", "lastName", "phone", "issueCard", "cardAlias"]


def make_xlsx(rows: int) -> bytes:
    """A workbook of ``rows`` cardholders (one in ten with a card, one in a hundred invalid)."""
    import xlsxwriter

    buffer = io.BytesIO()
    workbook = xlsxwriter.Workbook(buffer, {"in_memory": True, "constant_memory": True})
    sheet = workbook.add_worksheet("Cardholders")
    sheet.write_row(0, 0, HEADER)
    for index in range(1, rows + 1):
        email = f"holder{index}@example.com" if index % 100 else "not-an-email"
        card = index % 10 == 0
        sheet.write_row(
            index,
            0,
            [
                f"EMP-{index:07d}",
                f"holder{index}",
                email,
                "Ana",
                f"Lima {index}",
                f"+55119{index:08d}",
                "yes" if card else "no",
                f"Payroll {index}" if card else "",
            ],
        )
    workbook.close()
    return buffer.getvalue()


def _operator_token(client: httpx.Client) -> tuple[str, str]:
    """A merchant, an operator's user token and a partner: ``(token, partnerId)``."""
    import nacl.signing

    from paysdk._jwt import sign_merchant

    merchant = client.post("/_sandbox/clients", content=b"{}", headers=JSON_TYPE).json()
    slug = merchant["slug"]
    key = nacl.signing.SigningKey(base64.b64decode(merchant["signingPrivateKey"]))
    email, password = "bench-operator@example.com", "bench operator password"
    body = {"merchant": slug, "email": email, "password": password}
    client.post(
        "/_sandbox/backoffice/operators", content=json.dumps(body), headers=JSON_TYPE
    ).raise_for_status()
    body = {"merchant": slug, "name": "Bench payroll"}
    partner = client.post("/_sandbox/backoffice/partners", content=json.dumps(body), headers=JSON_TYPE)
    partner.raise_for_status()
    body = {"merchant": slug, "signature": sign_merchant(key, slug)}
    app = client.post(CMS + "/app/auth/login", content=json.dumps(body), headers=JSON_TYPE)
    app.raise_for_status()
    user = client.post(
        CMS + "/app/users/login",
        content=json.dumps({"email": email, "password": password}),
        headers={**JSON_TYPE, "Authorization": "Bearer " + app.json()["data"]["accessToken"]},
    )
    user.raise_for_status()
    return user.json()["data"]["accessToken"], partner.json()["partnerId"]


def _status_kb(pid: int, name: str = "VmHWM") -> int:
    """``VmHWM`` (peak) or ``VmRSS`` (now) of process ``pid`` in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _written(db_file: str, batch: str) -> dict[int, float]:
    with sqlite3.connect(db_file) as connection:
        rows = connection.execute(
            "SELECT seq, written_at FROM cardholder_events WHERE batch_id = ?", (batch,)
        ).fetchall()
    return {seq: datetime.fromisoformat(str(at)).timestamp() for seq, at in rows}


def _read_stream(client: httpx.Client, path: str, token: str) -> list[tuple[int, str, dict[str, Any], float]]:
    """``(id, event, data, arrival)`` of each event until the stream ends."""
    events: list[tuple[int, str, dict[str, Any], float]] = []
    buffer = ""
    with client.stream("GET", path, headers={"Authorization": f"Bearer {token}"}, timeout=600) as response:
        response.raise_for_status()
        for text in response.iter_text():
            buffer += text
            while "\n\n" in buffer:
                block, buffer = buffer.split("\n\n", 1)
                fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
                if "event" in fields:
                    events.append(
                        (int(fields["id"]), fields["event"], json.loads(fields["data"]), time.time())
                    )
    return events


def bench_cardholders(rows: int = ROWS) -> dict[str, float]:
    """Run the upload (module docstring); the figures."""
    content = make_xlsx(rows)
    folder = tempfile.mkdtemp(prefix="paysdk-bench-cardholders-")
    db_file = f"{folder}/bench.db"
    port = free_port()
    env = dict(os.environ, PAYSDK_BENCH_DB=f"sqlite:///{db_file}")
    command = [sys.executable, "-m", "uvicorn", "benchmarks._servers:reference_app", "--factory"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-access-log"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    server = subprocess.Popen(command, env=env, cwd=root, preexec_fn=_pin(SERVER_CPU))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(
            http_ok(url + "/_sandbox/health", any_status=True), what="the reference server", process=server
        )
        with httpx.Client(base_url=url, timeout=120) as client:
            token, partner = _operator_token(client)
            cpu_before = _cpu_seconds(server.pid)
            baseline_kb = _status_kb(server.pid, "VmRSS")
            started = time.time()
            answer = client.post(
                f"{CMS}/app/partners/{partner}/cardholders/upload",
                files={"file": ("cardholders.xlsx", content, "application/octet-stream")},
                headers={"Authorization": f"Bearer {token}"},
            )
            answer.raise_for_status()
            accepted = time.time()
            batch = answer.json()["data"]["batchId"]
            path = f"{CMS}/app/partners/{partner}/cardholders/batch/{batch}/progress"
            events = _read_stream(client, path, token)
        cpu = _cpu_seconds(server.pid) - cpu_before
        peak_kb = _status_kb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
    final = events[-1]
    if final[1] != "done" or final[2]["processed"] != rows:
        raise SystemExit(f"the cardholder batch did not finish: {final}")
    written = _written(db_file, batch)
    delays: list[float] = []
    previous_written: float | None = None
    for seq, name, _data, arrival in events:
        if name == "progress":
            start = previous_written if previous_written is not None else written[seq]
            delays.append(arrival - start)
        previous_written = written[seq]
    delays.sort()
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
    return {
        "rows": rows,
        "seconds": final[3] - started,
        "rate": rows / (final[3] - started),
        "upload_seconds": accepted - started,
        "server_cpu_seconds": cpu,
        "rate_per_cpu_second": rows / cpu,
        "load_average": os.getloadavg()[0],
        "peak_mb": peak_kb / 1024,
        "baseline_mb": baseline_kb / 1024,
        "p99_delay": p99,
        "median_delay": statistics.median(delays),
        "created": final[2]["created"],
        "failed": final[2]["failed"],
        "cards": final[2]["cardsIssued"],
        "size_mb": len(content) / 1e6,
    }


def cardholder_rows(rows: int = ROWS) -> list[tuple[str, str, str, str]]:
    """The figures as rows of ``benchmarks/run.py``'s table."""
    f = bench_cardholders(rows)
    return [
        (
            f"cardholder upload {rows:,}-row xlsx",
            f"{f['rate']:.0f} rows/s ({f['rate_per_cpu_second']:.0f}/CPU-s, load {f['load_average']:.1f})",
            f"{f['seconds']:.1f} s",
            ">= 5,000 rows/s",
        ),
        (
            "cardholder upload server peak RSS",
            f"baseline {f['baseline_mb']:.0f} MB",
            f"{f['peak_mb']:.0f} MB",
            "< 200 MB",
        ),
        (
            "cardholder row -> progress event p99",
            f"median {f['median_delay'] * 1000:.0f} ms",
            f"{f['p99_delay'] * 1000:.0f} ms",
            "< 1000 ms",
        ),
    ]


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else ROWS
    figures = bench_cardholders(rows)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
