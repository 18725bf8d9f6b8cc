"""``paysdk charges upload`` end to end against the reference server on a real socket (D155-D159).

A merchant onboarded with ``sandbox clients create --save-profile`` (its wallet signing key stored, D138),
a plan and subscriptions made on the control plane, CSV files written by the tests. What the server
charged is read from its database (``subscription_charges``): no row is ever charged twice, none skipped.
The kill tests run a real ``paysdk`` process and ``kill -9`` it while the server holds the part's answer.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import paysdk
from paysdk.contracts.spreadsheet import FORMULA_MESSAGE
from paysdk_cli._journal import journal_path

from .conftest import run_cli, subprocess_env

pytestmark = pytest.mark.usefixtures("cli_server")

#: The reliability tests also run the server on PostgreSQL (``db_url`` below; the CLI suite's is SQLite).
BOTH_DATABASES = pytest.mark.parametrize("db_url", ["sqlite", "postgresql"], indirect=True)

UPLOAD = "/v1/subscriptions/charges/upload-csv"
DECLINING_CARD = "4000000000000341"  # verifies, declines every off-session charge (D149)


@pytest.fixture
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """SQLite, or an emptied PostgreSQL database for a test parametrized with :data:`BOTH_DATABASES`."""
    if getattr(request, "param", "sqlite") == "sqlite":
        return f"sqlite:///{tmp_path / 'cli-server.db'}"
    import psycopg

    url: str = request.getfixturevalue("_postgres_database")
    with psycopg.connect(url, autocommit=True) as connection:
        tables = [
            row[0]
            for row in connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
        if tables:
            connection.execute(
                "TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " RESTART IDENTITY CASCADE"
            )
    return url


@dataclass
class Merchant:
    """A client with a saved CLI profile, a plan and subscriptions."""

    slug: str
    sdk: paysdk.Client
    subs: list[str]
    declining: str
    db_url: str

    def batch_charges(self) -> dict[str, int]:
        """reference -> how many batch charges the server holds for it."""
        from paysdk.server.db import normalize_database_url

        engine = sa.create_engine(normalize_database_url(self.db_url))
        try:
            with engine.connect() as connection:
                rows = connection.execute(
                    sa.text(
                        "SELECT reference, COUNT(*) FROM subscription_charges "
                        "WHERE source = 'batch' GROUP BY reference"
                    )
                ).all()
        finally:
            engine.dispose()
        return {str(reference): int(count) for reference, count in rows}


@pytest.fixture
def merchant(cli_server: str, db_url: str) -> Iterator[Merchant]:
    slug = f"csv-{uuid.uuid4().hex[:8]}"
    created = run_cli("-o", "json", "sandbox", "clients", "create", "--slug", slug, "--save-profile")
    assert created.exit_code == 0, created.stderr
    sdk = paysdk.Client(environment=paysdk.Environment.local(cli_server))
    plan = sdk.sandbox.plans.create(slug, amount="10.00")
    subs = sdk.sandbox.subscriptions.create(plan.plan_id, count=3).sub_uids
    declining = sdk.sandbox.subscriptions.create(plan.plan_id, card_number=DECLINING_CARD).sub_uids[0]
    try:
        yield Merchant(slug, sdk, list(subs), declining, db_url)
    finally:
        sdk.close()


def _write(path: Path, rows: list[str], *, header: str = "subscriptionId,amount,reference") -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def _json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _report(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _upload(*args: str, code: int, env: dict[str, str] | None = None) -> Any:
    result = run_cli("-o", "json", "charges", "upload", *args, env=env)
    assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result


# ----------------------------------------------------------------------------- outcomes and exit codes


def test_every_row_charged_exits_0_and_uploading_again_charges_nothing(
    merchant: Merchant, tmp_path: Path
) -> None:
    a, b, c = merchant.subs
    data = _write(tmp_path / "march.csv", [f"{a},10.00,m-1", f"{b},12.5,m-2", f"{c},0.01,m-3"])
    out = tmp_path / "report.csv"
    result = _upload(str(data), "--report", str(out), code=0)
    lines = _json_lines(result.stdout)
    assert [(line["row"], line["status"], line["reference"]) for line in lines] == [
        (2, "charged", "m-1"),
        (3, "charged", "m-2"),
        (4, "charged", "m-3"),
    ]
    assert all(line["chargeId"] and line["replayed"] is False for line in lines)
    assert [row["status"] for row in _report(out)] == ["charged"] * 3
    assert [row["charge_id"] for row in _report(out)] == [line["chargeId"] for line in lines]
    assert not journal_path(data).exists()  # a finished run leaves no journal (D180)
    assert "charged 3" in result.stderr
    assert "\x1b[" not in result.stderr  # stderr is not a terminal: no progress bar

    again = _upload(str(data), code=0)
    replayed = _json_lines(again.stdout)
    assert "rows 3, replayed 3" in again.stderr  # replays counted apart from new charges (D437)
    assert "charged" not in again.stderr.replace("replayed", "")
    table = run_cli("-o", "table", "charges", "upload", str(data))
    assert table.exit_code == 0, table.stderr
    summary = dict(line.split(None, 1) for line in table.stdout.splitlines()[2:] if line.strip())
    assert (summary["rows"], summary["replayed"], summary.get("charged")) == ("3", "3", None)
    assert [line["status"] for line in replayed] == ["charged"] * 3
    assert all(line["replayed"] for line in replayed)
    assert [line["chargeId"] for line in replayed] == [line["chargeId"] for line in lines]
    assert merchant.batch_charges() == {"m-1": 1, "m-2": 1, "m-3": 1}
    history = merchant.sdk.sandbox.subscriptions.get(b).charges
    assert [(c.source, c.reference, str(c.amount)) for c in history if c.source == "batch"] == [
        ("batch", "m-2", "12.50")
    ]


def test_refused_and_declined_rows_exit_5_with_the_report(merchant: Merchant, tmp_path: Path) -> None:
    a, b, _ = merchant.subs
    data = _write(
        tmp_path / "mixed.csv",
        [f"{a},10.00,x-1", f"{merchant.declining},10.00,x-2", "sub_000000000000000000000000,5.00,x-3"],
    )
    out = tmp_path / "out.csv"
    result = _upload(str(data), "--report", str(out), code=5)
    statuses = {line["reference"]: line["status"] for line in _json_lines(result.stdout)}
    assert statuses == {"x-1": "charged", "x-2": "declined", "x-3": "refused"}
    report = _report(out)
    assert [(r["row_number"], r["status"]) for r in report] == [
        ("2", "charged"),
        ("3", "declined"),
        ("4", "refused"),
    ]
    assert report[1]["charge_id"]  # a declined charge is in the payment history
    assert report[2]["error"]
    assert "subscriptionId" in report[2]["error"]
    assert not report[2]["charge_id"]
    assert merchant.batch_charges() == {"x-1": 1, "x-2": 1}

    # fixed and sent again: the charged rows answer their earlier result, the fixed row is charged
    _write(data, [f"{a},10.00,x-1", f"{merchant.declining},10.00,x-2", f"{b},5.00,x-3"])
    fixed = _json_lines(_upload(str(data), code=5).stdout)
    assert [(line["status"], line["replayed"]) for line in fixed] == [
        ("charged", True),
        ("declined", True),
        ("charged", False),
    ]
    assert merchant.batch_charges() == {"x-1": 1, "x-2": 1, "x-3": 1}


def test_invalid_rows_exit_2_and_nothing_is_sent(merchant: Merchant, tmp_path: Path) -> None:
    a, b, c = merchant.subs
    data = _write(
        tmp_path / "bad.csv",
        [
            f"{a},10.00,ok-1",
            f"{b},1.005,bad-amount",
            f"{c},-5,negative",
            f"{a},=1+2,formula",
            f"{b},3.00,ok-1",
            f"{c},4.00,=cmd|' /C calc'!A0",
        ],
    )
    out = tmp_path / "errors.csv"
    result = _upload(str(data), "--report", str(out), code=2)
    assert "row 3: amount: must be digits with at most 2 decimals" in result.stderr
    assert "row 6: reference: duplicate of row 2" in result.stderr
    assert "5 of 6 rows invalid: nothing sent" in result.stderr
    lines = _json_lines(result.stdout)
    assert [(line["row"], line["status"]) for line in lines] == [
        (2, "valid"),
        (3, "invalid"),
        (4, "invalid"),
        (5, "invalid"),
        (6, "invalid"),
        (7, "invalid"),
    ]
    assert merchant.batch_charges() == {}  # the server's charges table holds nothing
    assert not journal_path(data).exists()
    for row in _report(out):
        for cell in row.values():
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), row

    # --send-valid: the valid row is charged, the invalid ones are refused without being sent
    sent = _upload(str(data), "--send-valid", code=5)
    assert [(line["row"], line["status"]) for line in _json_lines(sent.stdout)] == [
        (2, "charged"),
        (3, "refused"),
        (4, "refused"),
        (5, "refused"),
        (6, "refused"),
        (7, "refused"),
    ]
    assert merchant.batch_charges() == {"ok-1": 1}


def test_parts_with_blank_lines_and_left_out_rows_keep_the_files_row_numbers(
    merchant: Merchant, tmp_path: Path
) -> None:
    a, b, c = merchant.subs
    data = _write(
        tmp_path / "gaps.csv",
        [f"{a},1.00,g-1", "", f"{b},x,g-2", f"{c},3.00,g-3", f"{a},4.00,g-4", "", f"{b},5.00,g-5"],
    )
    result = _upload(str(data), "--send-valid", "--part-rows", "2", code=5)
    lines = _json_lines(result.stdout)
    assert [(line["row"], line["status"], line["reference"]) for line in lines] == [
        (2, "charged", "g-1"),
        (4, "refused", "g-2"),  # as read, though its amount is not one (D492)
        (5, "charged", "g-3"),
        (6, "charged", "g-4"),
        (8, "charged", "g-5"),
    ]
    _wait_for(lambda: _upload_requests(merchant) == 2)  # parts of rows 2, 5 and 6, 8
    assert merchant.batch_charges() == {"g-1": 1, "g-3": 1, "g-4": 1, "g-5": 1}


def test_every_row_keeps_its_reference_and_subscription_id_as_read(
    merchant: Merchant, tmp_path: Path
) -> None:
    """In ``-o json`` and ``--report``, for rows charged, declined, replayed, refused locally or by the
    server, valid in ``--validate-only`` and unknown after a lost answer (D492); a row without as many
    cells as the header has none to give."""
    a, b, c = merchant.subs
    rows = [
        f"{a},10.00,n-1",
        f"{b},x,n-2",
        f"{c},1.00",
        f"{merchant.declining},10.00,n-4",
        "sub_nobody,1.00,n-5",
    ]
    data = _write(tmp_path / "named.csv", rows)
    read = [
        (2, "n-1", a),
        (3, "n-2", b),
        (4, None, None),
        (5, "n-4", merchant.declining),
        (6, "n-5", "sub_nobody"),
    ]

    def named(stdout: str) -> list[tuple[int, str | None, str | None]]:
        return [(line["row"], line["reference"], line["subscriptionId"]) for line in _json_lines(stdout)]

    checked = _upload(str(data), "--validate-only", code=2)
    assert named(checked.stdout) == read
    out = tmp_path / "out.csv"
    sent = _upload(str(data), "--send-valid", "--report", str(out), code=5)
    assert [line["status"] for line in _json_lines(sent.stdout)] == [
        "charged",
        "refused",
        "refused",
        "declined",
        "refused",
    ]
    assert named(sent.stdout) == read
    assert [
        (int(r["row_number"]), r["reference"] or None, r["subscription_id"] or None) for r in _report(out)
    ] == read
    replayed = _upload(str(data), "--send-valid", code=5)
    again = _json_lines(replayed.stdout)
    assert [(line["status"], line["replayed"]) for line in again if line["status"] != "refused"] == [
        ("charged", True),
        ("declined", True),
    ]
    assert named(replayed.stdout) == read

    merchant.sdk.sandbox.add_fault("drop", route=f"POST {UPLOAD}", count=1)
    fresh = _write(tmp_path / "lost.csv", [f"{a},2.00,l-1", f"{b},2.00,l-2"])
    lost = _upload(str(fresh), "--report", str(tmp_path / "lost-report.csv"), code=5)
    assert [
        (line["status"], line["reference"], line["subscriptionId"]) for line in _json_lines(lost.stdout)
    ] == [
        ("unknown", "l-1", a),
        ("unknown", "l-2", b),
    ]
    assert [
        (r["status"], r["reference"], r["subscription_id"]) for r in _report(tmp_path / "lost-report.csv")
    ] == [
        ("unknown", "l-1", a),
        ("unknown", "l-2", b),
    ]


def test_validate_only_sends_nothing(merchant: Merchant, tmp_path: Path) -> None:
    a, b, _ = merchant.subs
    data = _write(tmp_path / "v.csv", [f"{a},10.00,v-1", "", f"{b},2.00,v-2"])
    result = _upload(str(data), "--validate-only", code=0)
    assert [(line["row"], line["status"]) for line in _json_lines(result.stdout)] == [
        (2, "valid"),
        (4, "valid"),
    ]
    assert "all 2 rows valid: nothing sent" in result.stderr
    _write(data, [f"{a},10.00,v-1", f"{b},abc,v-2"])
    invalid = _upload(str(data), "--validate-only", code=2)
    assert "row 3: amount:" in invalid.stderr
    table = run_cli("-o", "table", "charges", "upload", str(data), "--validate-only")
    assert table.exit_code == 2
    assert "invalid" in table.stdout
    assert merchant.batch_charges() == {}
    assert not journal_path(data).exists()


def test_report_neutralises_formula_cells(merchant: Merchant, tmp_path: Path) -> None:
    a, _, _ = merchant.subs
    header = "subscriptionId,amount,reference,description"
    data = _write(
        tmp_path / "inj.csv",
        [
            f'{a},1.00,inj-1,"=HYPERLINK(""http://evil"")"',
            f"{a},+1,inj-2,x",
            f"{a},-1,inj-3,x",
            f"{a},@1,inj-4,x",
            "=cmd|' /C calc'!A0,1.00,inj-5,x",
            f"{a},2.00,inj-6,Box",
        ],
        header=header,
    )
    out = tmp_path / "r.csv"
    _upload(str(data), "--send-valid", "--report", str(out), code=5)
    text = out.read_text(encoding="utf-8")
    report = _report(out)
    assert [r["status"] for r in report] == ["refused", "refused", "refused", "refused", "refused", "charged"]
    # A description is free text: one a spreadsheet would run is refused (D384), as the server would.
    assert report[0]["error"] == "description: " + FORMULA_MESSAGE
    for row in report:
        for cell in row.values():
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), row
    assert "\n=" not in text
    assert ",=" not in text


@pytest.mark.parametrize("description", ["+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", " =1"])
def test_a_formula_description_is_refused_before_anything_is_sent(
    merchant: Merchant, tmp_path: Path, description: str
) -> None:
    """The CLI checks a charge file with the rule the server uses (D384): nothing is sent."""
    a, _, _ = merchant.subs
    data = _write(
        tmp_path / "desc.csv",
        [f'{a},1.00,d-1,"{description}"', f"{a},-2.00,d-2,Refund"],
        header="subscriptionId,amount,reference,description",
    )
    result = _upload(str(data), "--validate-only", code=2)
    assert f"row 2: description: {FORMULA_MESSAGE}" in result.stderr
    assert "row 3: amount: " in result.stderr  # a negative amount is an amount error, not a formula
    assert merchant.batch_charges() == {}


def test_bom_crlf_and_quoted_fields(merchant: Merchant, tmp_path: Path) -> None:
    a, b, _ = merchant.subs
    content = (
        "\ufeffreference,amount,subscriptionId,description,currency\r\n"
        f'q-1,10.00,{a},"Box, large ""deluxe""",\r\n'
        f'q-2,3.50,{b},"two\r\nlines",GTQ\r\n'
    )
    data = tmp_path / "excel.csv"
    data.write_bytes(content.encode("utf-8"))
    result = _upload(str(data), code=0)
    assert [(line["row"], line["reference"], line["status"]) for line in _json_lines(result.stdout)] == [
        (2, "q-1", "charged"),
        (3, "q-2", "charged"),
    ]
    assert merchant.batch_charges() == {"q-1": 1, "q-2": 1}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "subscriptionId,amount,reference,description\nsub_1,1.00,r-1,Caf\xe9\n".encode("latin-1"),
            "is not UTF-8",
        ),
        (
            b"subscriptionId,amount\nsub_1,1.00\n",
            "reference: is a required column missing from the header row",
        ),
        (b"subscriptionId,amount,reference,colour\nsub_1,1.00,r,red\n", "colour: is not a column"),
        (b"", "file: has no header row"),
    ],
    ids=["latin-1", "missing-column", "unknown-column", "empty"],
)
def test_a_file_error_is_one_line_and_exit_2(
    merchant: Merchant, tmp_path: Path, content: bytes, message: str
) -> None:
    data = tmp_path / "broken.csv"
    data.write_bytes(content)
    for extra in ((), ("--validate-only",)):
        result = _upload(str(data), *extra, code=2)
        assert result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"Error: {data}: ")
        assert message in result.stderr
        assert result.stdout == ""
    assert merchant.batch_charges() == {}


def test_a_quoted_cell_past_the_csv_field_limit_refuses_the_file_and_charges_nothing(
    merchant: Merchant, tmp_path: Path
) -> None:
    """Issue 20 (D320): a line hidden in a quoted cell past the csv module's field limit is never a row:
    ``--validate-only`` does not list it valid, ``--send-valid`` sends nothing, the row is named."""
    a, b, _ = merchant.subs
    content = (
        "subscriptionId,amount,reference,description\n"
        + f'{a},1.00,visible,"'
        + "x" * 140_000
        + f"\n{b},7.77,hidden,smuggled\n"
        + '"\n'
        + f"{a},2.00,after,\n"
    )
    data = tmp_path / "smuggled.csv"
    data.write_text(content, encoding="utf-8")
    for extra in ((), ("--validate-only",), ("--send-valid",)):
        result = _upload(str(data), *extra, code=2)
        assert result.stderr.startswith(f"Error: {data}: description: row 2: "), result.stderr
        assert "field limit" in result.stderr
        assert result.stdout == ""
    assert merchant.batch_charges() == {}


def test_a_header_name_with_control_characters_is_printed_escaped(merchant: Merchant, tmp_path: Path) -> None:
    """A column name that holds an escape sequence (window title, clear screen) and C1 controls is shown
    escaped (D393): nothing a terminal acts on reaches it, with -o json or a table."""
    data = tmp_path / "hostile.csv"
    data.write_bytes(
        "subscriptionId,amount,reference,x\x1b]0;owned\x07\x1b[2J\x9b2J\x7f\nsub_1,1.00,r\n".encode()
    )
    for output in ("json", "table"):
        result = run_cli("-o", output, "charges", "upload", str(data), "--validate-only")
        assert result.exit_code == 2, result.stderr
        assert "x\\x1b]0;owned\\x07\\x1b[2J\\x9b2J\\x7f: is not a column" in result.stderr
        text = result.stdout + result.stderr
        assert not [ch for ch in text if (ord(ch) < 0x20 and ch not in "\n\t") or 0x7F <= ord(ch) < 0xA0]
    assert merchant.batch_charges() == {}


def test_unreadable_file_and_option_misuse_are_usage_errors(merchant: Merchant, tmp_path: Path) -> None:
    missing = _upload(str(tmp_path / "nope.csv"), code=2)
    assert "nope.csv" in missing.stderr
    assert missing.stderr.count("\n") == 1
    directory = _upload(str(tmp_path), code=2)
    assert "is a directory" in directory.stderr
    data = _write(tmp_path / "c.csv", [f"{merchant.subs[0]},1.00,u-1"])
    assert "--resend-unknown goes with --resume" in _upload(str(data), "--resend-unknown", code=2).stderr
    assert "--validate-only sends nothing" in _upload(str(data), "--validate-only", "--resume", code=2).stderr
    nowhere = _upload(str(data), "--report", str(tmp_path / "no" / "r.csv"), code=2)
    assert f"no directory {tmp_path / 'no'}" in nowhere.stderr
    assert "must not be the CSV file" in _upload(str(data), "--report", str(data), code=2).stderr
    assert merchant.batch_charges() == {}


def test_without_wallet_credentials_nothing_is_sent_and_no_journal(
    merchant: Merchant, tmp_path: Path
) -> None:
    from paysdk_cli._secrets import WALLET_KEY, delete_secret

    data = _write(tmp_path / "c.csv", [f"{merchant.subs[0]},1.00,n-1"])
    delete_secret(WALLET_KEY, "default")
    no_key = _upload(str(data), code=4)
    assert no_key.stderr.startswith("Error: no wallet signing key for profile 'default'")
    assert not journal_path(data).exists()
    assert merchant.batch_charges() == {}
    other = run_cli("-o", "json", "--profile", "nobody", "charges", "upload", str(data))
    assert other.exit_code == 2
    assert "wallet login" in other.stderr


# ----------------------------------------------------------------------------- journal and resume


def test_an_existing_journal_needs_resume_and_a_changed_file_is_refused(
    merchant: Merchant, tmp_path: Path
) -> None:
    a, b, _ = merchant.subs
    data = _write(tmp_path / "j.csv", [f"{a},1.00,j-1", f"{b},2.00,j-2"])
    # an earlier run killed before its first part was sent
    from paysdk_cli._journal import Journal, file_sha256

    Journal.create(
        journal_path(data), {"file": "j.csv", "sha256": file_sha256(data), "rows": 2, "parts": 1}
    ).close()
    refused = _upload(str(data), code=2)
    assert "records an earlier run" in refused.stderr
    assert "--resume" in refused.stderr
    assert merchant.batch_charges() == {}

    _write(data, [f"{a},1.00,j-1", f"{b},2.50,j-2"])
    changed = _upload(str(data), "--resume", code=2)
    assert f"{data} changed since its journal" in changed.stderr
    assert merchant.batch_charges() == {}

    _write(data, [f"{a},1.00,j-1", f"{b},2.00,j-2"])  # restored: the part was never sent, so it is sent
    resumed = _upload(str(data), "--resume", code=0)
    assert [line["status"] for line in _json_lines(resumed.stdout)] == ["charged", "charged"]
    assert not journal_path(data).exists()
    assert merchant.batch_charges() == {"j-1": 1, "j-2": 1}


def test_resume_without_a_journal_starts_a_new_run(merchant: Merchant, tmp_path: Path) -> None:
    data = _write(tmp_path / "n.csv", [f"{merchant.subs[0]},1.00,n-1"])
    result = _upload(str(data), "--resume", code=0)
    assert "starting a new run" in result.stderr
    assert merchant.batch_charges() == {"n-1": 1}


@BOTH_DATABASES
def test_a_dropped_connection_is_unknown_and_resent_only_when_told(
    merchant: Merchant, tmp_path: Path
) -> None:
    a, b, c = merchant.subs
    data = _write(tmp_path / "drop.csv", [f"{a},1.00,d-1", f"{b},2.00,d-2", f"{c},3.00,d-3"])
    merchant.sdk.sandbox.add_fault("drop", route=f"POST {UPLOAD}", count=1)
    lost = _upload(str(data), "--report", str(tmp_path / "r.csv"), code=5)
    assert {line["status"] for line in _json_lines(lost.stdout)} == {"unknown"}
    assert "--resume --resend-unknown" in lost.stderr
    assert {r["status"] for r in _report(tmp_path / "r.csv")} == {"unknown"}
    assert journal_path(data).exists()

    # --resume alone does not resend a part without idempotency-key support: still unknown
    _wait_for(lambda: _upload_requests(merchant) == 1)  # the dropped request, logged by the server
    again = _upload(str(data), "--resume", code=5)
    assert {line["status"] for line in _json_lines(again.stdout)} == {"unknown"}
    assert _journal_states(data) == [(1, "sending"), (1, "unknown")]  # no new `sending`: nothing sent
    assert _upload_requests(merchant) == 1

    sent = _upload(str(data), "--resume", "--resend-unknown", code=0)
    assert [line["status"] for line in _json_lines(sent.stdout)] == ["charged"] * 3
    assert not journal_path(data).exists()
    assert merchant.batch_charges() == {"d-1": 1, "d-2": 1, "d-3": 1}


@pytest.mark.parametrize("declared", [False, True], ids=["undeclared", "declared"])
def test_the_resume_hint_says_what_the_target_declares(
    merchant: Merchant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declared: bool
) -> None:
    """Issue 20 (D322): "resending charges nothing twice" only where the environment declares
    idempotency-key support; elsewhere a warning, at the hint and again when --resend-unknown resends."""
    from paysdk_cli import _context

    monkeypatch.setitem(_context.CLIENT_OPTIONS, "max_retries", 0)  # a lost answer stays lost
    a, b, c = merchant.subs
    data = _write(tmp_path / "hint.csv", [f"{a},1.00,h-1", f"{b},2.00,h-2", f"{c},3.00,h-3"])
    env = {"PAYSDK_IDEMPOTENCY": "1" if declared else "0"}
    merchant.sdk.sandbox.add_fault("drop", route=f"POST {UPLOAD}", count=1)
    lost = _upload(str(data), code=5, env=env)
    assert {line["status"] for line in _json_lines(lost.stdout)} == {"unknown"}
    errors = {line["error"] for line in _json_lines(lost.stdout)}
    if declared:
        assert "the target declares idempotency-key support" in lost.stderr
        assert "charges nothing twice" in lost.stderr
        assert "WARNING" not in lost.stderr
        assert all("--resume sends it again with its key" in error for error in errors)
        resumed = _upload(str(data), "--resume", code=0, env=env)
        assert "WARNING" not in resumed.stderr
    else:
        assert "WARNING: the target does not declare idempotency-key support" in lost.stderr
        assert "--resume --resend-unknown" in lost.stderr
        assert "never charged twice" not in lost.stderr  # no claim of safety
        assert "charges nothing twice" not in lost.stderr
        assert all("may charge it twice" in error for error in errors)
        resumed = _upload(str(data), "--resume", "--resend-unknown", code=0, env=env)
        assert "WARNING: --resend-unknown sends 1 parts" in resumed.stderr
    assert [line["status"] for line in _json_lines(resumed.stdout)] == ["charged"] * 3
    assert merchant.batch_charges() == {"h-1": 1, "h-2": 1, "h-3": 1}


def _upload_requests(merchant: Merchant) -> int:
    return sum(1 for r in merchant.sdk.sandbox.requests() if r.path == UPLOAD)


# ----------------------------------------------------------------------------- kill -9 and --resume


@dataclass
class HeldAnswers:
    """The answers of the upload route, held after the server processed the part (charges committed)."""

    hold_from: int
    calls: int = 0
    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def hold_answer(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], HeldAnswers]:
    """``hold_answer(n)``: the n-th upload request (from 1) is processed, then its answer waits."""
    from paysdk.server.asgi.idempotency import Idempotency

    original = Idempotency.forward

    def hold(nth: int) -> HeldAnswers:
        held = HeldAnswers(nth)

        async def dispatch(self: Idempotency, scope: Any, receive: Any, send: Any) -> None:
            if scope.get("path") != UPLOAD:
                await original(self, scope, receive, send)
                return
            held.calls += 1
            number = held.calls

            async def held_send(message: Any) -> None:
                if number == held.hold_from and message["type"] == "http.response.start":
                    held.entered.set()
                    await asyncio.to_thread(held.release.wait, 30)
                await send(message)

            await original(self, scope, receive, held_send)

        monkeypatch.setattr(Idempotency, "forward", dispatch)
        return held

    return hold


def _spawn(config_dir: Path, base_url: str, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "paysdk_cli", "-o", "json", "charges", "upload", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(config_dir, PAYSDK_BASE_URL=base_url, **env),
    )


def _kill_when(proc: subprocess.Popen[str], event: threading.Event) -> None:
    try:
        assert event.wait(60), "the upload never reached the server"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _journal_states(data: Path) -> list[tuple[int, str]]:
    records = [json.loads(line) for line in journal_path(data).read_text(encoding="utf-8").splitlines()]
    return [(r["part"], r["state"]) for r in records if "part" in r]


@BOTH_DATABASES
def test_kill_9_while_a_part_is_answered_then_resume(
    merchant: Merchant,
    tmp_path: Path,
    config_dir: Path,
    cli_server: str,
    hold_answer: Callable[[int], HeldAnswers],
) -> None:
    a, b, c = merchant.subs
    data = _write(tmp_path / "k.csv", [f"{a},1.00,k-1", f"{b},2.00,k-2", f"{c},3.00,k-3"])
    held = hold_answer(1)
    proc = _spawn(config_dir, cli_server, str(data))
    _kill_when(proc, held.entered)
    held.release.set()
    # killed after the part's `sending` record: the server charged it, the client never saw the answer
    assert _journal_states(data) == [(1, "sending")]
    assert merchant.batch_charges() == {"k-1": 1, "k-2": 1, "k-3": 1}  # committed before the answer
    _wait_for(lambda: _upload_requests(merchant) == 1)

    # without idempotency-key support the part is unknown: reported, not resent
    assert _upload_requests(merchant) == 1
    unknown = _upload(str(data), "--resume", code=5)
    assert {line["status"] for line in _json_lines(unknown.stdout)} == {"unknown"}
    assert _journal_states(data) == [(1, "sending")]  # not sent again
    assert _upload_requests(merchant) == 1
    # resent when told: the server answers each row's earlier result; nothing is charged twice
    resent = _upload(str(data), "--resume", "--resend-unknown", code=0)
    lines = _json_lines(resent.stdout)
    assert [(line["status"], line["replayed"]) for line in lines] == [("charged", True)] * 3
    _wait_for(lambda: _upload_requests(merchant) == 2)
    assert merchant.batch_charges() == {"k-1": 1, "k-2": 1, "k-3": 1}
    assert not journal_path(data).exists()


@BOTH_DATABASES
def test_kill_9_after_a_parts_results_then_resume_sends_the_rest_once(
    merchant: Merchant,
    tmp_path: Path,
    config_dir: Path,
    cli_server: str,
    hold_answer: Callable[[int], HeldAnswers],
) -> None:
    subs = merchant.subs
    rows = [f"{subs[n % 3]},1.{n:02d},part-{n}" for n in range(8)]
    data = _write(tmp_path / "parts.csv", rows)  # --part-rows 3: parts of rows 2-4, 5-7, 8-9
    held = hold_answer(2)
    proc = _spawn(config_dir, cli_server, str(data), "--part-rows", "3")
    _kill_when(proc, held.entered)
    held.release.set()
    # killed after part 1's results were journaled, while part 2 was being answered
    assert _journal_states(data) == [(1, "sending"), (1, "done"), (2, "sending")]
    _wait_for(lambda: _upload_requests(merchant) == 2)  # the held answer is logged once it is written

    # the environment declares idempotency-key support: part 2 is resent with its own key at once
    # (answered by the server from its key), the rest sent in parts of the new size (D321: the parts the
    # journal recorded keep their rows and keys); part 1 is not sent again
    out = tmp_path / "r.csv"
    resumed = _upload(
        str(data),
        "--resume",
        "--part-rows",
        "1",
        "--report",
        str(out),
        code=0,
        env={"PAYSDK_IDEMPOTENCY": "1"},
    )
    lines = _json_lines(resumed.stdout)
    assert [line["row"] for line in lines] == list(range(2, 10))
    assert {line["status"] for line in lines} == {"charged"}
    assert [line["replayed"] for line in lines] == [False] * 3 + [True] * 3 + [False] * 2
    _wait_for(lambda: _upload_requests(merchant) == 5)  # parts 1, 2, 2 again, then rows 8 and 9
    assert [r["row_number"] for r in _report(out)] == [str(n) for n in range(2, 10)]
    assert merchant.batch_charges() == {f"part-{n}": 1 for n in range(8)}
    assert not journal_path(data).exists()


@BOTH_DATABASES
def test_a_rerun_with_another_part_size_charges_every_row_exactly_once(
    merchant: Merchant,
    tmp_path: Path,
    config_dir: Path,
    cli_server: str,
    hold_answer: Callable[[int], HeldAnswers],
) -> None:
    """Issue 20: a part's key names the rows it carries (D321), so running the same file again with
    another --part-rows (after a kill and the journal deleted, or after a complete run) sends other
    parts under other keys: the rows charged are answered with their earlier result (D157), the rest
    charged, none twice -- before, every part answered 422 (key reused with another body)."""
    subs = merchant.subs
    rows = [f"{subs[n % 3]},1.{n:02d},again-{n}" for n in range(8)]
    data = _write(tmp_path / "again.csv", rows)  # --part-rows 3: rows 2-4, 5-7, 8-9
    held = hold_answer(2)
    proc = _spawn(config_dir, cli_server, str(data), "--part-rows", "3")
    _kill_when(proc, held.entered)
    held.release.set()
    _wait_for(lambda: _upload_requests(merchant) == 2)
    assert merchant.batch_charges() == {f"again-{n}": 1 for n in range(6)}  # part 2 charged, unanswered
    journal_path(data).unlink()  # start over, with smaller parts

    rerun = _upload(str(data), "--part-rows", "2", code=0)
    lines = _json_lines(rerun.stdout)
    assert [(line["row"], line["status"]) for line in lines] == [(n, "charged") for n in range(2, 10)]
    assert [line["replayed"] for line in lines] == [True] * 6 + [False] * 2
    assert merchant.batch_charges() == {f"again-{n}": 1 for n in range(8)}

    for size in ("5", "3"):  # complete runs again, with any part size: every row replayed
        again = _upload(str(data), "--part-rows", size, code=0)
        assert [(line["status"], line["replayed"]) for line in _json_lines(again.stdout)] == [
            ("charged", True)
        ] * 8
    assert merchant.batch_charges() == {f"again-{n}": 1 for n in range(8)}
    assert not journal_path(data).exists()


def test_progress_bar_on_a_terminal(
    merchant: Merchant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paysdk_cli import _batch

    stream = _Terminal()
    monkeypatch.setattr(
        _batch, "progress_for", lambda stream_=None: _batch.RichProgress(stream, force_terminal=True)
    )
    a, b, _ = merchant.subs
    data = _write(tmp_path / "p.csv", [f"{a},1.00,p-1", f"{b},1.00,p-2"])
    _upload(str(data), code=0)
    shown = stream.getvalue()
    assert "rows" in shown
    assert "part" in shown


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_of_a_real_process_is_silent_without_a_terminal(
    merchant: Merchant, tmp_path: Path, config_dir: Path, cli_server: str
) -> None:
    data = _write(tmp_path / "s.csv", [f"{merchant.subs[0]},1.00,s-1"])
    proc = _spawn(config_dir, cli_server, str(data))
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert stderr.splitlines() == ["rows 1, charged 1"], stderr
    assert json.loads(stdout)["status"] == "charged"
