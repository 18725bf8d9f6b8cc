"""End to end: ``paysdk reconciliation upload`` and ``paysdk sandbox processor`` against the reference
server on a real socket, with the profile's stored merchant token (D193, D194, D240, D241): the table,
``-o json``, ``--report`` with formula cells neutralised, and the exit codes (0 all matched, 5 anything
not matched, 2 a file error, 6 the API refused)."""

from __future__ import annotations

import csv
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")

CARD = ("--currency", "GTQ", "--terminal-id", "POS-7", "--card", "4242424242424242")
HEADER = "settlementDate,paymentId,amount,currency"


def _json(*args: str, code: int = 0) -> Any:
    result = run_cli("-o", "json", *args)
    assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
    return json.loads(result.stdout) if code == 0 and result.stdout.strip() else result


def _settled_payments() -> tuple[str, list[dict[str, Any]]]:
    _json("sandbox", "clients", "create", "--slug", f"cli-r-{uuid.uuid4().hex[:8]}", "--save-profile")
    created = [_json("terminal", "create", "--amount", amount, *CARD) for amount in ("10.00", "20.00")]
    _json("sandbox", "clock", "advance", "345600")  # 4 days: settled (and paid out) by the daily job
    shown = [_json("sandbox", "terminal", "show", payment["id"]) for payment in created]
    assert all(payment["settledAt"] for payment in shown)
    return created[0]["affiliation"], shown


def test_upload_table_json_report_and_exit_codes(tmp_path: Path) -> None:
    affiliation, (first, second) = _settled_payments()
    day = first["settlementDate"]
    path = tmp_path / "day.csv"
    path.write_text(
        f"{HEADER}\n{day},{first['id']},10.00,GTQ\n{day},{second['id']},19.99,GTQ\n"
        f"{day},-x1,1.00,GTQ\nnot-a-date,{first['id']},1.00,GTQ\n",
        encoding="utf-8",
    )
    out = tmp_path / "report.csv"
    result = run_cli(
        "-o",
        "json",
        "reconciliation",
        "upload",
        str(path),
        "--affiliation",
        affiliation,
        "--report",
        str(out),
    )
    assert result.exit_code == 5, result.stderr
    report = json.loads(result.stdout)
    assert [m["row"] for m in report["matched"]] == [2]
    assert report["amountMismatch"] == [
        {"row": 3, "paymentId": second["id"], "expected": 20, "actual": 19.99}
    ]
    assert [(u["row"], u["paymentId"]) for u in report["unknown"]] == [(4, "-x1")]
    assert [(i["row"], i["field"]) for i in report["invalid"]] == [(5, "settlementDate")]
    with out.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == [
        "row_number",
        "status",
        "payment_id",
        "settlement_date",
        "expected",
        "actual",
        "message",
    ]
    assert [row[:3] for row in rows[1:]] == [
        ["2", "matched", first["id"]],
        ["3", "amount_mismatch", second["id"]],
        ["4", "unknown", "'-x1"],  # neutralised: a spreadsheet would read -x1 as a formula
        ["5", "invalid", ""],
    ]

    again = run_cli("-o", "json", "reconciliation", "upload", str(path), "--affiliation", affiliation)
    assert (again.exit_code, json.loads(again.stdout)) == (5, report)  # the same file, the same report

    clean = tmp_path / "clean.csv"
    clean.write_text(
        f"{HEADER}\n{day},{first['id']},10.00,GTQ\n{day},{second['id']},20.00,GTQ\n", encoding="utf-8"
    )
    table = run_cli("-o", "table", "reconciliation", "upload", str(clean), "--affiliation", affiliation)
    assert table.exit_code == 0, table.stderr
    assert "matched" in table.stdout
    assert "2 matched" in table.stdout

    bad = tmp_path / "bad.csv"
    bad.write_text("settlementDate,paymentId,amount,memo\n", encoding="utf-8")
    refused = run_cli("reconciliation", "upload", str(bad), "--affiliation", affiliation)
    assert refused.exit_code == 2
    assert "memo: is not a column" in refused.stderr
    assert (
        run_cli(
            "reconciliation", "upload", str(tmp_path / "none.csv"), "--affiliation", affiliation
        ).exit_code
        == 2
    )
    other = run_cli("reconciliation", "upload", str(clean), "--affiliation", "1234567890")
    assert other.exit_code == 6
    assert "affiliation" in other.stderr


def test_sandbox_processor_commands() -> None:
    _json("sandbox", "clients", "create", "--slug", f"cli-p-{uuid.uuid4().hex[:8]}", "--save-profile")
    payment = _json("terminal", "create", "--amount", "10.00", *CARD)
    secret = _json("sandbox", "processor", "secret")
    assert secret["secret"] == "****"
    assert secret["header"] == "X-Processor-Signature"
    shown = _json("sandbox", "processor", "secret", "--show-secrets")
    assert shown["secret"].startswith("psec_")

    delivered = _json("sandbox", "processor", "settle", payment["id"], "--notification-id", "n-1")
    assert delivered["notification"]["notificationId"] == "n-1"
    repeat = _json("sandbox", "processor", "settle", payment["id"], "--notification-id", "n-1")
    assert repeat["result"]["applied"] is False
    assert repeat["result"]["ignored"][0]["code"] == "duplicate"

    feed = _json(
        "sandbox",
        "processor",
        "feed",
        "--payment-id",
        payment["id"],
        "--event",
        "voided:e-1",
        "--event",
        "voided:e-1",
    )
    assert feed["result"]["ignored"][-1]["code"] == "duplicate"
    unknown = _json("sandbox", "processor", "feed", "--event", "settled:tpm_nope:e-2")
    assert unknown["result"]["ignored"][0]["code"] == "unknown_payment"
    assert _json("sandbox", "processor", "settle", "tpm_nope", code=6).exit_code == 6
    assert _json("sandbox", "processor", "feed", code=2).exit_code == 2
    bad = _json("sandbox", "processor", "feed", "--event", "settled", code=2)
    assert "TYPE:PAYMENT_ID" in bad.stderr
    table = run_cli("-o", "table", "sandbox", "processor", "pay-out", payment["id"])
    assert table.exit_code == 0, table.stderr
    assert "applied" in table.stdout
