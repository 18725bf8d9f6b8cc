"""``paysdk reconciliation upload`` with the file of issue 20 (item 8; D331) against the reference server
on a real socket: 99,999 rows with 4 errors each and a matched row, about 800 KB. The server answered
37.5 MB, past the SDK's 16 MiB answer cap, and the command exited 7. Now it exits 5 (documented: some
row did not match), prints the counts and the first rows, and ``--report`` holds every row, in order,
written as the report's pages are read.

The exchanges of this module are not checked against ``/openapi.json`` (400,000 entries take the
checker minutes); ``tests/e2e/test_reconciliation_sdk.py`` checks the same operations on a short report.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from paysdk_cli.commands.reconciliation import SHOWN_ROWS

from .conftest import run_cli
from .test_cli_reconciliation import HEADER, _settled_payments

pytestmark = [pytest.mark.usefixtures("cli_server"), pytest.mark.heavy]

LONG_ROWS = 99_999


@pytest.fixture
def server_recorder() -> None:
    """No conformance recording here (module docstring)."""
    return None


def test_the_100k_row_upload_exits_5_and_reports_every_row(tmp_path: Path) -> None:
    affiliation, (first, second) = _settled_payments()
    day = first["settlementDate"]
    path = tmp_path / "day.csv"
    path.write_bytes((HEADER + "\n" + "x,!,-,1\n" * LONG_ROWS + f"{day},{first['id']},10.00,GTQ\n").encode())
    assert 790_000 < path.stat().st_size < 810_000
    out = tmp_path / "report.csv"
    args = ("reconciliation", "upload", str(path), "--affiliation", affiliation, "--report", str(out))
    result = run_cli("-o", "table", *args)
    assert result.exit_code == 5, (result.exit_code, result.stderr[-2000:])
    assert f"{LONG_ROWS + 1} row(s), 1 matched" in result.stdout
    assert f"{LONG_ROWS} invalid, 1 missing" in result.stdout
    assert f"the first {SHOWN_ROWS} rows shown; every row is in {out}" in result.stderr
    with out.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:2] == ["row_number", "status"]
    body = rows[1:]
    assert len(body) == 4 * LONG_ROWS + 1 + 1
    assert [int(row[0]) for row in body[: 4 * LONG_ROWS : 4]] == list(range(2, LONG_ROWS + 2))
    assert {row[1] for row in body[: 4 * LONG_ROWS]} == {"invalid"}
    assert {row[6].split(":")[0] for row in body[:4]} == {"settlementDate", "paymentId", "amount", "currency"}
    assert body[-2][:3] == [str(LONG_ROWS + 2), "matched", first["id"]]
    assert body[-1][1:3] == ["missing", second["id"]]
