"""``paysdk cardholders`` end to end against the reference server on a real socket (D186-D189, D221-D223).

A merchant, an operator and a partner come from the control plane; the profile holds the backoffice
merchant and operator (as ``paysdk backoffice login`` stores them), the signing key and the operator's
password come from the environment. Output: plain lines on stderr (CliRunner's stderr is no terminal),
the rich bar when forced, a table or NDJSON events on stdout; ``--report`` holds the failed rows with
formula cells neutralised; a cut stream is resumed and warned about; ``progress`` reattaches.
"""

from __future__ import annotations

import csv
import json
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest

import paysdk
from paysdk.resources.cardholders import AFFINITY_WARNING
from paysdk_cli._config import update_profile
from paysdk_cli.commands import cardholders as cardholders_command

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")

HEADER = "externalId,username,email,firstName,lastName,issueCard"


class Backoffice:
    def __init__(self, url: str, slug: str, email: str, password: str, key: str, partner_id: str) -> None:
        self.url, self.slug, self.email, self.password, self.key = url, slug, email, password, key
        self.partner_id = partner_id

    @property
    def env(self) -> dict[str, str]:
        return {"PAYSDK_WALLET_PRIVATE_KEY": self.key, "PAYSDK_BACKOFFICE_PASSWORD": self.password}

    def sdk(self) -> paysdk.Client:
        credentials = paysdk.BackofficeCredentials(
            self.slug, self.key, user=paysdk.BackofficeUser(self.email, self.password)
        )
        return paysdk.Client(environment=paysdk.Environment.local(self.url), backoffice=credentials)


def _control(url: str, path: str, body: dict[str, Any]) -> Any:
    answer = httpx.post(url + path, json=body, timeout=30)
    assert answer.status_code == 201, answer.text
    return answer.json()


@pytest.fixture
def backoffice(cli_server: str) -> Backoffice:
    with paysdk.Client(environment=paysdk.Environment.local(cli_server)) as sandbox:
        merchant = sandbox.sandbox.create_client()
    password = "operator-" + secrets.token_hex(8)
    email = f"op-{secrets.token_hex(4)}@example.com"
    _control(
        cli_server,
        "/_sandbox/backoffice/operators",
        {"merchant": merchant.slug, "email": email, "password": password},
    )
    partner = _control(
        cli_server, "/_sandbox/backoffice/partners", {"merchant": merchant.slug, "name": "Acme"}
    )
    update_profile("default", backoffice_merchant=merchant.slug, backoffice_operator=email)
    assert merchant.signing_private_key is not None
    return Backoffice(
        cli_server, merchant.slug, email, password, merchant.signing_private_key, partner["partnerId"]
    )


def _file(tmp_path: Path, rows: int, *, bad: dict[int, str] | None = None, name: str = "holders.csv") -> Path:
    """``rows`` data rows; ``bad`` maps a data row (from 1) to the email it gets instead of a valid one."""
    tag = secrets.token_hex(3)
    lines = [HEADER]
    for number in range(1, rows + 1):
        email = (bad or {}).get(number, f"h{number}-{tag}@example.com")
        lines.append(
            f"x-{tag}-{number},holder{number}{tag},{email},Ana,Holder,{'yes' if number == 1 else ''}"
        )
    path = tmp_path / name
    path.write_text("\r\n".join(lines) + "\r\n")
    return path


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_upload_all_created_exits_0_with_a_table_and_plain_progress_lines(
    backoffice: Backoffice, tmp_path: Path
) -> None:
    path = _file(tmp_path, 4)
    result = run_cli(
        "-o",
        "table",
        "cardholders",
        "upload",
        str(path),
        "--partner",
        backoffice.partner_id,
        env=backoffice.env,
    )
    assert result.exit_code == 0, result.stderr
    assert "Cardholder batch" in result.stdout
    assert "created" in result.stdout
    assert "Failed rows" not in result.stdout
    assert "progress: " in result.stderr  # plain lines: stderr is not a terminal
    assert "done: completed, 4/4 processed, 4 created, 0 failed, 1 cards issued" in result.stderr
    assert backoffice.password not in result.stdout + result.stderr
    assert backoffice.key not in result.stdout + result.stderr


def test_some_rows_failed_exits_5_and_the_report_neutralises_formula_cells(
    backoffice: Backoffice, tmp_path: Path
) -> None:
    path = _file(tmp_path, 5, bad={2: "not-an-email", 4: "@HYPERLINK(1)"})
    report = tmp_path / "failed.csv"
    result = run_cli(
        "-o",
        "table",
        "cardholders",
        "upload",
        str(path),
        "--partner",
        backoffice.partner_id,
        "--report",
        str(report),
        env=backoffice.env,
    )
    assert result.exit_code == 5, result.stderr
    assert "Failed rows" in result.stdout
    assert "row 3 failed: email:" in result.stderr
    with report.open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["row_number", "status", "error", "external_id", "cardholder_id", "card_id"]
    assert [row[:2] for row in rows[1:]] == [
        ["2", "created"],
        ["3", "failed"],
        ["4", "created"],
        ["5", "failed"],
        ["6", "created"],
    ]
    assert rows[2][2].startswith("email: ")
    assert report.read_bytes().count(b"\r\n") == 6
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell


def test_json_output_is_one_event_per_line_and_progress_reattaches(
    backoffice: Backoffice, tmp_path: Path
) -> None:
    path = _file(tmp_path, 3, bad={1: "bad"})
    queued = run_cli(
        "-o",
        "json",
        "cardholders",
        "upload",
        str(path),
        "--partner",
        backoffice.partner_id,
        "--no-wait",
        env=backoffice.env,
    )
    assert queued.exit_code == 0, queued.stderr
    batch_id = json.loads(queued.stdout)["batchId"]

    report = tmp_path / "r.csv"
    result = run_cli(
        "-o",
        "json",
        "cardholders",
        "progress",
        batch_id,
        "--partner",
        backoffice.partner_id,
        "--report",
        str(report),
        env=backoffice.env,
    )
    assert result.exit_code == 5, result.stderr
    lines = _json_lines(result.stdout)
    events = [line for line in lines if line["event"] != "created"]
    assert [line["event"] for line in lines[len(events) :]] == ["created", "created"]  # after done (D453)
    assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["event"] == "done"
    assert events[-1]["data"]["batchId"] == batch_id
    assert (events[-1]["data"]["created"], events[-1]["data"]["failed"]) == (2, 1)
    assert [e["data"]["row"] for e in events if e["event"] == "row-failed"] == [2]
    assert report.read_text().splitlines()[1].startswith("2,failed,email: ")

    again = run_cli(
        "-o",
        "json",
        "cardholders",
        "upload",
        str(path),
        "--partner",
        backoffice.partner_id,
        env=backoffice.env,
    )
    assert again.exit_code == 5
    lines = _json_lines(again.stdout)
    assert lines[0]["event"] == "upload"
    assert (lines[0]["data"]["batchId"], lines[0]["data"]["duplicate"]) == (batch_id, True)
    assert "uploaded before" in again.stderr


def test_a_dropped_stream_is_resumed_with_a_warning_and_no_event_lost_or_repeated(
    backoffice: Backoffice, tmp_path: Path
) -> None:
    path = _file(tmp_path, 6, bad={3: "x"})
    with backoffice.sdk() as sdk:
        answer = sdk.backoffice.cardholders.upload(backoffice.partner_id, path)
        sdk.backoffice.cardholders.wait(backoffice.partner_id, answer.batch_id)
        sdk.sandbox.add_fault("stream_cut", route="/cms/rest/app/partners/*", after_events=2)
    result = run_cli(
        "-o",
        "json",
        "cardholders",
        "progress",
        answer.batch_id,
        "--partner",
        backoffice.partner_id,
        env=backoffice.env,
    )
    assert result.exit_code == 5, result.stderr
    lines = _json_lines(result.stdout)
    events = [line for line in lines if line["event"] != "created"]
    assert [line["event"] for line in lines[len(events) :]] == ["created"] * 5  # after done (D453)
    assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["event"] == "done"
    assert result.stderr.count("Warning: " + AFFINITY_WARNING) == 1
    assert "reconnecting" in result.stderr


def test_the_rich_bar_is_drawn_on_a_terminal(
    backoffice: Backoffice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        cardholders_command, "_display_for", lambda st: cardholders_command._RichDisplay(force_terminal=True)
    )
    result = run_cli(
        "-o",
        "json",
        "cardholders",
        "upload",
        str(_file(tmp_path, 2)),
        "--partner",
        backoffice.partner_id,
        env=backoffice.env,
    )
    assert result.exit_code == 0, result.stderr
    assert "Cardholders" in result.stderr
    assert "\x1b[" in result.stderr  # drawn with terminal control sequences
    assert "progress: " not in result.stderr
    assert [line["event"] for line in _json_lines(result.stdout)][-3:] == ["done", "created", "created"]


def test_usage_auth_and_api_errors_have_their_exit_codes(backoffice: Backoffice, tmp_path: Path) -> None:
    wrong_kind = tmp_path / "holders.txt"
    wrong_kind.write_text(HEADER + "\r\n")
    result = run_cli(
        "cardholders", "upload", str(wrong_kind), "--partner", backoffice.partner_id, env=backoffice.env
    )
    assert result.exit_code == 2, result.stderr
    assert "filename" in result.stderr

    result = run_cli(
        "cardholders", "upload", str(_file(tmp_path, 1)), "--partner", "ptn_nobody", env=backoffice.env
    )
    assert result.exit_code == 6, result.stderr

    result = run_cli(
        "cardholders", "progress", "bat_missing", "--partner", backoffice.partner_id, env=backoffice.env
    )
    assert result.exit_code == 6, result.stderr

    result = run_cli(
        "cardholders",
        "upload",
        str(_file(tmp_path, 1)),
        "--partner",
        backoffice.partner_id,
        "--report",
        str(tmp_path / "no" / "r.csv"),
        env=backoffice.env,
    )
    assert result.exit_code == 2
    assert "no directory" in result.stderr

    result = run_cli("cardholders", "progress", "bat_x", "--partner", backoffice.partner_id)  # no password
    assert result.exit_code == 4, result.stderr


def test_associate_card_links_an_unassigned_card(backoffice: Backoffice) -> None:
    with paysdk.Client(environment=paysdk.Environment.local(backoffice.url)) as sandbox:
        user = sandbox.sandbox.create_user(
            backoffice.slug, "ana" + secrets.token_hex(3), "ana@example.com", "a-long-password"
        )
        card = sandbox.sandbox.create_stock_card(backoffice.slug)
    _control(
        backoffice.url,
        f"/_sandbox/backoffice/partners/{backoffice.partner_id}/cardholders",
        {"merchant": backoffice.slug, "userId": user.user_id},
    )
    result = run_cli(
        "-o",
        "json",
        "cardholders",
        "associate-card",
        user.user_id,
        card.card_id,
        "--partner",
        backoffice.partner_id,
        env=backoffice.env,
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["cardId"] == card.card_id

    # A cardholder enrolled by hand is found by email too, with no upload fields (D451).
    found = run_cli(
        "-o",
        "json",
        "cardholders",
        "lookup",
        "--partner",
        backoffice.partner_id,
        "--email",
        "ana@example.com",
        env=backoffice.env,
    )
    assert found.exit_code == 0, found.stderr
    match = json.loads(found.stdout)
    assert (match["cardholderId"], match["externalId"], match["batchId"]) == (user.user_id, None, None)


def test_ctrl_c_stops_following_with_130_and_says_how_to_reattach(
    backoffice: Backoffice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: Any, data: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cardholders_command._Display, "progress", interrupted)
    result = run_cli(
        "-o",
        "json",
        "cardholders",
        "upload",
        str(_file(tmp_path, 2)),
        "--partner",
        backoffice.partner_id,
        env=backoffice.env,
    )
    assert result.exit_code == 130, result.stderr
    batch_id = _json_lines(result.stdout)[0]["data"]["batchId"]
    assert f"paysdk cardholders progress {batch_id} --partner {backoffice.partner_id}" in result.stderr


#: An escape sequence that retitles the window and clears the screen, and C1 controls (CSI, OSC).
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b2J\x9d0;x\x9c"


def _no_controls(text: str) -> None:
    """No C0 control but newline and tab, no DEL, no C1 control reached the output."""
    bad = [ch for ch in text if (ord(ch) < 0x20 and ch not in "\n\t") or 0x7F <= ord(ch) < 0xA0]
    assert not bad, repr(text)


def test_a_hostile_header_name_in_the_servers_answer_is_printed_escaped(
    backoffice: Backoffice, tmp_path: Path
) -> None:
    """The server refuses the file naming the unknown column as it was sent; the CLI shows the name with
    its control characters escaped (D393), in the error lines and in -o json's exact JSON."""
    hostile = tmp_path / "holders.csv"
    hostile.write_text(
        HEADER.replace("username", "user" + HOSTILE) + "\r\nE1,u1,u1@example.com,Ana,Lima,\r\n"
    )
    result = run_cli(
        "cardholders", "upload", str(hostile), "--partner", backoffice.partner_id, env=backoffice.env
    )
    assert result.exit_code == 6, result.stderr
    _no_controls(result.stdout + result.stderr)
    assert "user\\x1b]0;owned\\x07\\x1b[2J\\x9b2J\\x9d0;x\\x9c" in result.stderr


def test_the_documented_flow_upload_read_the_created_ids_then_associate_a_card_with_the_cli(
    backoffice: Backoffice, tmp_path: Path
) -> None:
    """D450-D453: the ids of the rows a batch created are in ``-o json`` and ``--report``; ``lookup``
    finds an uploaded cardholder by externalId or email; ``associate-card`` takes the id found."""
    path = _file(tmp_path, 3, bad={2: "not-an-email"})
    tag = path.read_text().splitlines()[1].split(",")[0].split("-")[1]
    report = tmp_path / "rows.csv"
    result = run_cli(
        "-o",
        "json",
        "cardholders",
        "upload",
        str(path),
        "--partner",
        backoffice.partner_id,
        "--report",
        str(report),
        env=backoffice.env,
    )
    assert result.exit_code == 5, result.stderr
    lines = _json_lines(result.stdout)
    done = next(index for index, line in enumerate(lines) if line["event"] == "done")
    created = [line["data"] for line in lines if line["event"] == "created"]
    assert all(line["event"] == "created" for line in lines[done + 1 :])  # after `done`, in row order
    assert [(entry["row"], entry["externalId"]) for entry in created] == [
        (2, f"x-{tag}-1"),
        (4, f"x-{tag}-3"),
    ]
    assert created[0]["cardId"] is not None  # row 2 asked for a card
    assert created[1]["cardId"] is None
    assert f"2 created and 1 failed rows written to {report}" in result.stderr

    with report.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["row_number"], row["status"], row["external_id"]) for row in rows] == [
        ("2", "created", f"x-{tag}-1"),
        ("3", "failed", f"x-{tag}-2"),
        ("4", "created", f"x-{tag}-3"),
    ]
    assert rows[0]["cardholder_id"] == created[0]["cardholderId"]
    assert rows[0]["card_id"] == created[0]["cardId"]
    assert (rows[1]["cardholder_id"], rows[1]["card_id"]) == ("", "")
    assert rows[1]["error"].startswith("email: ")

    # A table: the created rows with their ids (reattaching replays the batch).
    batch_id = lines[0]["data"]["batchId"]
    table = run_cli(
        "-o",
        "table",
        "cardholders",
        "progress",
        batch_id,
        "--partner",
        backoffice.partner_id,
        env=backoffice.env,
    )
    assert table.exit_code == 5, table.stderr
    assert "Created cardholders" in table.stdout
    assert created[1]["cardholderId"] in table.stdout

    found = run_cli(
        "-o",
        "json",
        "cardholders",
        "lookup",
        "--partner",
        backoffice.partner_id,
        "--external-id",
        f"x-{tag}-3",
        env=backoffice.env,
    )
    assert found.exit_code == 0, found.stderr
    cardholder = json.loads(found.stdout)
    assert cardholder["cardholderId"] == created[1]["cardholderId"]
    assert (cardholder["batchId"], cardholder["row"]) == (batch_id, 4)
    by_email = run_cli(
        "-o",
        "json",
        "cardholders",
        "lookup",
        "--partner",
        backoffice.partner_id,
        "--email",
        f"h1-{tag}@example.com",
        env=backoffice.env,
    )
    assert by_email.exit_code == 0, by_email.stderr
    assert json.loads(by_email.stdout)["cardholderId"] == created[0]["cardholderId"]

    with paysdk.Client(environment=paysdk.Environment.local(backoffice.url)) as sandbox:
        card = sandbox.sandbox.create_stock_card(backoffice.slug)
    linked = run_cli(
        "-o",
        "json",
        "cardholders",
        "associate-card",
        cardholder["cardholderId"],
        card.card_id,
        "--partner",
        backoffice.partner_id,
        env=backoffice.env,
    )
    assert linked.exit_code == 0, linked.stderr
    assert json.loads(linked.stdout)["cardId"] == card.card_id

    missing = run_cli(
        "cardholders",
        "lookup",
        "--partner",
        backoffice.partner_id,
        "--external-id",
        f"x-{tag}-2",
        env=backoffice.env,
    )
    assert missing.exit_code == 6, missing.stderr  # row 3 failed: no such cardholder
    assert "externalId" in missing.stderr
    both = run_cli(
        "cardholders", "lookup", "--partner", backoffice.partner_id, "--email", "a@b.c", "--external-id", "x"
    )
    assert both.exit_code == 2, both.stderr
