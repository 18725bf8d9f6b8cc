"""Unit tests of the batch upload's journal, report writer, exit codes and progress display (D159)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import stat
from pathlib import Path

import pytest

from paysdk_cli._batch import (
    NullProgress,
    RichProgress,
    RowOutcome,
    counts,
    exit_code,
    neutralise,
    progress_for,
    write_report,
)
from paysdk_cli._journal import Journal, JournalError, PartAction, file_sha256, journal_path

HEADER = {
    "file": "charges.csv",
    "sha256": "ab" * 32,
    "rows": 7,
    "parts": 3,
    "partRows": 3,
    "sendValid": False,
}


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_journal_path_and_sha256(tmp_path: Path) -> None:
    data = tmp_path / "march charges.csv"
    data.write_bytes(b"subscriptionId,amount,reference\r\n")
    assert journal_path(data) == tmp_path / "march charges.csv.paysdk-journal"
    assert file_sha256(data, chunk=4) == hashlib.sha256(data.read_bytes()).hexdigest()


def test_records_are_durable_json_lines_and_replay(tmp_path: Path) -> None:
    path = tmp_path / "c.csv.paysdk-journal"
    with Journal.create(path, HEADER) as journal:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        journal.sending(1, "csv-ab-1", 2, 4, 3)
        journal.done(
            1, [{"row": 2, "status": "charged", "chargeId": "sch_1", "error": None, "replayed": False}]
        )
        journal.sending(2, "csv-ab-2", 5, 7, 3)
        journal.unknown(2, "connection reset")
        journal.sending(3, "csv-ab-3", 8, 9, 2)
        journal.failed(3, "HTTP 401")
    lines = _lines(path)
    assert lines[0]["journal"] == "paysdk-charges"
    assert lines[0]["sha256"] == "ab" * 32
    assert [(r.get("part"), r.get("state")) for r in lines[1:]] == [
        (1, "sending"),
        (1, "done"),
        (2, "sending"),
        (2, "unknown"),
        (3, "sending"),
        (3, "failed"),
    ]
    assert lines[2]["results"] == [{"row": 2, "status": "charged", "chargeId": "sch_1"}]  # nulls dropped

    with Journal.resume(path) as journal:
        assert journal.header["sha256"] == "ab" * 32
        first = journal.parts[1]
        assert (first.state, first.key, first.first_row, first.last_row) == ("done", "csv-ab-1", 2, 4)
        assert first.results == [{"row": 2, "status": "charged", "chargeId": "sch_1"}]
        assert journal.parts[2].state == "unknown"
        assert journal.parts[2].error == "connection reset"
        assert journal.parts[3].state == "failed"
        assert not journal.complete()


def test_a_layout_record_replays_the_new_part_size(tmp_path: Path) -> None:
    """D321: --resume with another --part-rows records where the new size starts and the part count."""
    path = tmp_path / "f.csv.paysdk-journal"
    with Journal.create(path, HEADER) as journal:
        journal.sending(1, "csv-ab-2-4", 2, 4, 3)
        journal.done(1, [{"row": 2, "status": "charged"}])
        assert journal.recorded_through() == 4
        assert journal.part_rows == HEADER["partRows"]
        journal.layout(4, 2, 5)
        assert (journal.part_rows, journal.header["parts"]) == (2, 5)
    with Journal.resume(path) as journal:
        assert journal.resplits == [(4, 2)]
        assert (journal.part_rows, journal.header["parts"]) == (2, 5)
        assert not journal.complete()
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"event": "layout", "afterRow": "x"}) + "\n")
    with pytest.raises(JournalError, match="layout"):
        Journal.resume(path)


@pytest.mark.parametrize(
    ("state", "honours", "resend", "action"),
    [
        (None, False, False, PartAction.SEND),
        ("failed", False, False, PartAction.SEND),
        ("done", True, True, PartAction.KEEP),
        ("sending", False, False, PartAction.UNKNOWN),
        ("unknown", False, False, PartAction.UNKNOWN),
        ("sending", True, False, PartAction.RESEND),
        ("unknown", False, True, PartAction.RESEND),
    ],
)
def test_resume_actions_follow_d159(
    tmp_path: Path, state: str | None, honours: bool, resend: bool, action: PartAction
) -> None:
    path = tmp_path / "j"
    with Journal.create(path, HEADER) as journal:
        if state is not None:
            journal.sending(1, "k", 2, 4, 3)
        if state == "done":
            journal.done(1, [])
        elif state == "unknown":
            journal.unknown(1, "lost")
        elif state == "failed":
            journal.failed(1, "HTTP 400")
    with Journal.resume(path) as journal:
        assert journal.action(1, honours_keys=honours, resend_unknown=resend) is action


def test_a_torn_last_line_is_ignored_and_cut_before_the_next_record(tmp_path: Path) -> None:
    path = tmp_path / "j"
    with Journal.create(path, HEADER) as journal:
        journal.sending(1, "k1", 2, 4, 3)
    with path.open("ab") as handle:
        handle.write(b'{"part":1,"state":"done","resu')  # a kill in the middle of a write
    with Journal.resume(path) as journal:
        assert journal.parts[1].state == "sending"
        journal.unknown(1, "lost")
    assert [r.get("state") for r in _lines(path)] == [None, "sending", "unknown"]


def test_a_damaged_or_foreign_journal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j"
    path.write_text('{"journal":"paysdk-charges","version":1}\nnot json\n{"part":1}\n', encoding="utf-8")
    with pytest.raises(JournalError, match="damaged at line 2"):
        Journal.resume(path)
    path.write_text('{"hello": 1}\n', encoding="utf-8")
    with pytest.raises(JournalError, match="not a paysdk charges journal"):
        Journal.resume(path)
    with pytest.raises(JournalError, match="no journal to resume"):
        Journal.resume(tmp_path / "absent")


def test_one_run_at_a_time_and_no_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "j"
    with Journal.create(path, HEADER), pytest.raises(JournalError, match="another paysdk charges upload"):
        Journal.resume(path)
    with pytest.raises(JournalError, match="earlier run exists"):
        Journal.create(path, HEADER)


def test_complete_and_remove(tmp_path: Path) -> None:
    path = tmp_path / "j"
    journal = Journal.create(path, {**HEADER, "parts": 2})
    journal.sending(1, "k1", 2, 4, 3)
    journal.done(1, [])
    assert not journal.complete()
    journal.sending(2, "k2", 5, 5, 1)
    journal.done(2, [])
    # parts count from 1 (the SDK's part index); a layout of 2 parts is 1 and 2
    assert journal.complete()
    journal.remove()
    assert not path.exists()
    journal.close()  # idempotent


# ----------------------------------------------------------------------------- report


@pytest.mark.parametrize("cell", ["=cmd|' /C calc'!A0", "+1+2", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_formula_cells_are_neutralised(cell: str) -> None:
    assert neutralise(cell) == "'" + cell
    assert neutralise("amount: must be 0") == "amount: must be 0"
    assert neutralise("") == ""


def test_report_columns_order_and_neutralising(tmp_path: Path) -> None:
    out = tmp_path / "report.csv"
    write_report(
        out,
        [
            RowOutcome(
                3, "refused", reference="=1+1", subscription_id="sub_1", error='=HYPERLINK("http://x")'
            ),
            RowOutcome(2, "charged", reference="r-2", subscription_id="sub_2", charge_id="sch_1"),
            RowOutcome(4, "declined", error='card declined, "insufficient"\nfunds', charge_id="-x"),
            RowOutcome(5, "refused", error="@me"),
            RowOutcome(6, "refused", error="+1"),
        ],
    )
    raw = out.read_bytes()
    assert raw.startswith(b"row_number,status,error,charge_id,reference,subscription_id\r\n")
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
    assert rows == [
        ["row_number", "status", "error", "charge_id", "reference", "subscription_id"],
        ["2", "charged", "", "sch_1", "r-2", "sub_2"],
        ["3", "refused", '\'=HYPERLINK("http://x")', "", "'=1+1", "sub_1"],
        ["4", "declined", 'card declined, "insufficient"\nfunds', "'-x", "", ""],
        ["5", "refused", "'@me", "", "", ""],
        ["6", "refused", "'+1", "", "", ""],
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left
    assert stat.S_IMODE(out.stat().st_mode) & 0o044  # readable like any file the user writes


def test_counts_and_exit_codes() -> None:
    charged = [RowOutcome(2, "charged"), RowOutcome(3, "charged")]
    assert exit_code(charged, sent=True) == 0
    assert exit_code([*charged, RowOutcome(4, "declined")], sent=True) == 5
    assert exit_code([*charged, RowOutcome(4, "unknown")], sent=True) == 5
    assert exit_code([RowOutcome(2, "invalid")], sent=False) == 2
    assert counts([*charged, RowOutcome(4, "refused")]) == {"rows": 3, "charged": 2, "refused": 1}


def test_row_outcome_round_trip() -> None:
    outcome = RowOutcome(7, "charged", "R-7", "sub_1", "sch_7", None, True)
    assert RowOutcome.from_json(outcome.to_json()) == outcome
    assert RowOutcome.from_json({"row": 2, "status": "refused"}) == RowOutcome(2, "refused")


# ----------------------------------------------------------------------------- progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_silent_when_stderr_is_not_a_terminal() -> None:
    stream = io.StringIO()
    progress = progress_for(stream)
    assert isinstance(progress, NullProgress)
    progress.start(10, 2)
    progress.sending(1)
    progress.advance(5)
    progress.close()
    assert stream.getvalue() == ""


def test_progress_on_a_terminal_shows_rows_parts_rate_and_eta() -> None:
    stream = _Terminal()
    progress = progress_for(stream)
    assert isinstance(progress, RichProgress)
    progress.start(12_000, 3, done_rows=0, done_parts=0)
    progress.sending(1)
    progress.advance(5_000)
    progress.sending(2)
    progress._bar.refresh()
    text = stream.getvalue()
    progress.close()
    assert "5,000/12,000 rows" in text
    assert "part 2/3" in text
    assert "rows/s" in text
    assert "Charging" in text


def test_the_report_writers_use_the_servers_rule() -> None:
    """One rule (D384): the CLI's reports neutralise with :mod:`paysdk.contracts.spreadsheet`, the module
    the server's checks use, leading blanks ignored as the server ignores them."""
    from paysdk.contracts import spreadsheet

    assert neutralise is spreadsheet.neutralise
    assert neutralise(" =1") == "' =1"
    assert neutralise("\n@SUM(1+1)") == "'\n@SUM(1+1)"
    assert neutralise("Box -2+3") == "Box -2+3"
    assert spreadsheet.FORMULA_PREFIXES == ("=", "+", "-", "@", "\t", "\r")
