"""Hostile xlsx cardholder files against a real ``paysdk serve`` process (issue 20, item 7; D330).

Each file of :mod:`benchmarks.hostile_files` is uploaded twice (the second time as a re-sent duplicate)
to a ``paysdk serve`` on a fresh SQLite file, after a warm-up upload of a valid workbook (so the figures
leave out the first request's imports). Per file: the answers' statuses, the server's peak RSS growth
over the two uploads (``VmHWM`` reset through ``/proc/<pid>/clear_refs`` before them, minus ``VmRSS``
then) and whether ``/_sandbox/health`` answers after them. Goal: 4xx, growth < 100 MB, the server alive.

``python -m benchmarks.bench_hostile`` runs it alone; ``make bench`` runs it with the others.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from benchmarks._servers import paysdk_serve
from benchmarks.bench_cardholders import CMS, _operator_token, _status_kb, make_xlsx
from benchmarks.hostile_files import far_cell_xlsx, whitespace_bomb_xlsx

#: ``(name, builder)`` of the files measured.
FILES: tuple[tuple[str, Callable[[], bytes]], ...] = (
    ("xlsx cell at XFD1048576 (declared)", lambda: far_cell_xlsx(declared=True)),
    ("xlsx cell at XFD1048576 (undeclared)", lambda: far_cell_xlsx(declared=False)),
    ("xlsx 1 MB zip of 1 GiB whitespace", lambda: whitespace_bomb_xlsx(1 << 30)),
    ("xlsx 4 MB zip of 4 GiB whitespace", lambda: whitespace_bomb_xlsx(4 << 30)),
    ("xlsx zip directory lying (64 MiB)", lambda: whitespace_bomb_xlsx(64 << 20, lie=True)),
)


@dataclass(frozen=True)
class Record:
    """What one file did to the server."""

    name: str
    size: int
    statuses: list[int]
    message: str
    seconds: float
    growth_mb: float
    alive: bool


def _reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def bench_hostile() -> list[Record]:
    """Run the uploads (module docstring); one record per file."""
    folder = tempfile.mkdtemp(prefix="paysdk-bench-hostile-")
    records: list[Record] = []
    with paysdk_serve(f"sqlite:///{folder}/bench.db") as served:
        server = served.process
        with httpx.Client(base_url=served.url, timeout=120) as client:
            token, partner = _operator_token(client)
            path = f"{CMS}/app/partners/{partner}/cardholders/upload"
            headers = {"Authorization": f"Bearer {token}"}
            warm = client.post(path, files={"file": ("warm.xlsx", make_xlsx(50))}, headers=headers)
            warm.raise_for_status()
            for name, build in FILES:
                content = build()
                _reset_peak(server.pid)
                before_kb = _status_kb(server.pid, "VmRSS")
                started = time.perf_counter()
                statuses: list[int] = []
                messages: list[str] = []
                for _ in range(2):
                    try:
                        answer = client.post(path, files={"file": ("holders.xlsx", content)}, headers=headers)
                    except httpx.TransportError as exc:
                        statuses.append(0)
                        messages.append(f"no answer ({exc})")
                        break
                    statuses.append(answer.status_code)
                    messages.append(answer.json().get("message", ""))
                seconds = (time.perf_counter() - started) / len(statuses)
                alive = server.poll() is None
                peak_kb = _status_kb(server.pid) if alive else 0
                try:
                    alive = alive and client.get("/_sandbox/health").status_code == 200
                except httpx.TransportError:
                    alive = False
                growth = max(0, peak_kb - before_kb) / 1024
                records.append(Record(name, len(content), statuses, messages[0], seconds, growth, alive))
                if not alive:
                    break
    return records


def hostile_rows() -> list[tuple[str, str, str, str]]:
    """The figures as rows of ``benchmarks/run.py``'s table."""
    rows: list[tuple[str, str, str, str]] = []
    for record in bench_hostile():
        statuses = "/".join(str(status) for status in record.statuses)
        rows.append(
            (
                f"{record.name} ({record.size / 1e6:.3f} MB)",
                f"{statuses} in {record.seconds * 1000:.0f} ms, {'alive' if record.alive else 'DOWN'}",
                f"{record.growth_mb:.1f} MB",
                "4xx, RSS growth < 100 MB, alive",
            )
        )
    return rows


def main() -> None:
    print(json.dumps([asdict(record) for record in bench_hostile()], indent=2))


if __name__ == "__main__":
    main()
