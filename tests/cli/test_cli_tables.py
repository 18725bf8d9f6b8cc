"""Tables at 60, 80, 120 and 200 columns, with real IDs from the reference server (``live_server``).

An operator must be able to copy any ID, reference, amount or timestamp a table shows: none is ever
wrapped or cut, and a header never breaks. When the terminal is too narrow the least useful columns
are hidden (said once on stderr), or each record gets its own block.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest
from rich.cells import cell_len

from paysdk_cli._output import OutputFormat, emit
from paysdk_cli.commands.cards import CARD_LIST_COLUMNS, MOVEMENT_COLUMNS
from paysdk_cli.commands.permissions import _COLUMNS as PERMISSION_COLUMNS
from paysdk_cli.commands.sandbox.activity import CALLBACK_COLUMNS, REQUEST_COLUMNS

from .conftest import run_cli

WIDTHS = (60, 80, 120, 200)
PASSWORD = "table-pass-9"
HIDDEN = "Hidden to fit "


def _json(*args: str, input: str | None = None) -> Any:
    result = run_cli("-o", "json", *args, input=input)
    assert result.exit_code == 0, (args, result.stderr)
    return json.loads(result.stdout) if result.stdout.strip() else None


def _hidden(stderr: str, width: int) -> list[str]:
    lines = [line for line in stderr.splitlines() if line.startswith(HIDDEN)]
    assert len(lines) <= 1, stderr  # said once
    if not lines:
        return []
    prefix = f"{HIDDEN}{width} columns: "
    suffix = " (-o json shows every field)."
    assert lines[0].startswith(prefix), lines[0]
    assert lines[0].endswith(suffix), lines[0]
    return lines[0][len(prefix) : -len(suffix)].split(", ")


def check_output(
    stdout: str, stderr: str, *, width: int, columns: Sequence[str], ids: set[str], shown_ids: set[str]
) -> str:
    """Every ID whole on one line, headers whole, nothing wider than the terminal but a whole value.

    Returns ``"table"`` or ``"blocks"``.
    """
    assert ids, "the test needs IDs to look for"
    for wanted in shown_ids:
        assert any(wanted in line for line in stdout.splitlines()), (wanted, stdout)
    rest = stdout
    for whole in sorted(ids, key=len, reverse=True):
        rest = rest.replace(whole, "")
    for whole in ids:  # no piece of an ID is left once the whole ones are gone: none was split or cut
        for start in range(len(whole) - 7):
            assert whole[start : start + 8] not in rest, (whole, stdout)
    assert "…" not in stdout
    lines = stdout.splitlines()
    rules = [n for n, line in enumerate(lines) if line.strip() and set(line.strip()) == {"─"}]
    if rules:
        assert len(rules) == 1, stdout
        hidden = _hidden(stderr, width)
        assert lines[rules[0] - 1].split() == [c for c in columns if c not in hidden], stdout
        assert 2 * (len(columns) - len(hidden)) >= len(columns)
        assert all(cell_len(line) <= width for line in lines), stdout
        return "table"
    assert HIDDEN not in stderr
    assert lines[1] == "", stdout  # a title, then the records
    names = [line.split()[0] for line in lines[2:] if line and not line.startswith(" ")]
    assert names, stdout
    assert names == list(columns) * (len(names) // len(columns)), stdout
    for line in lines:  # a line runs past the width only when it holds one whole value
        if cell_len(line) > width:
            assert len(line.split()) == 2, line
    return "blocks"


@pytest.mark.usefixtures("cli_server")
def test_tables_never_split_an_id_or_a_header(callback_sink: Any) -> None:
    slug = f"cli-tab-{uuid.uuid4().hex[:8]}"
    _json(
        "sandbox", "clients", "create", "--slug", slug, "--callback-url", callback_sink.url, "--save-profile"
    )
    _json("wallet", "login")
    users = {
        name: _json(
            "sandbox",
            "users",
            "create",
            "--username",
            name,
            "--email",
            f"{name}@example.com",
            "--password-stdin",
            input=PASSWORD + "\n",
        )
        for name in ("ana", "ben")
    }
    user_ids = {name: next(v for k, v in user.items() if k.endswith("serId")) for name, user in users.items()}
    card_a = _json("cards", "issue", "--user-id", user_ids["ana"], "--alias", "main")["cardId"]
    card_b = _json("cards", "issue", "--user-id", user_ids["ana"])["cardId"]
    _json("funds", "add", card_a, "--amount", "100.0001")
    permission = _json(
        "permissions", "grant", card_a, "--user-id", user_ids["ben"], "-p", "checkCard", "-p", "getCards"
    )

    # callbacks: one answered 503 then 200 on its retry, one that meets a closed port
    callback_sink.respond_with([503])
    link = _json("links", "create", "--amount", "10.50", "--user-id", "+50255555555", "--channel", "wa")
    _json("sandbox", "pay", link["uid"], "--card", "4242424242424242")
    callback_sink.wait_for(1, timeout=30)
    _json("sandbox", "clock", "advance", "120")
    callback_sink.wait_for(2, timeout=30)
    callback_sink.down()
    refused = _json("links", "create", "--amount", "7.25", "--user-id", "+50255555555", "--channel", "wa")
    _json("sandbox", "pay", refused["uid"], "--card", "4242424242424242")
    deadline = time.monotonic() + 30
    while not _json("sandbox", "callbacks", "--uid", refused["uid"]):
        assert time.monotonic() < deadline, "the refused callback was never attempted"
        time.sleep(0.1)
    attempts = _json("sandbox", "callbacks")
    assert {a.get("statusCode") for a in attempts} >= {503, 200, None}
    assert any(" " in (a.get("error") or "") for a in attempts)  # prose that may wrap at spaces

    ids = {card_a, card_b, permission["id"], *user_ids.values(), link["uid"], refused["uid"]}
    ids |= {a["eventId"] for a in attempts}
    assert len(max(ids, key=len)) == 36  # uuid-length uids among them

    transfer = ["transfers", "create", "--from", card_a, "--to", card_b, "--amount", "1.5"]
    commands: list[tuple[list[str], Sequence[str], set[str]]] = [
        (["sandbox", "callbacks"], CALLBACK_COLUMNS, {link["uid"]}),  # eventIds: -o json (D435)
        (["cards", "list", "--user-id", user_ids["ana"]], CARD_LIST_COLUMNS, {card_a, card_b}),
        (["permissions", "list", "--card-id", card_a], PERMISSION_COLUMNS, {permission["id"], card_a}),
        (transfer, MOVEMENT_COLUMNS, {card_a}),
        (["sandbox", "requests"], REQUEST_COLUMNS, {card_a, user_ids["ana"]}),
    ]
    modes: dict[tuple[str, int], str] = {}
    for args, columns, shown_ids in commands:
        for width in WIDTHS:
            result = run_cli("-o", "table", *args, env={"COLUMNS": str(width)})
            assert result.exit_code == 0, (args, width, result.stderr)
            mode = check_output(
                result.stdout, result.stderr, width=width, columns=columns, ids=ids, shown_ids=shown_ids
            )
            modes[(" ".join(args[:2]), width)] = mode
            if width == 200:
                assert mode == "table", (args, result.stdout)
                if args[1] != "callbacks":  # (whose error texts come from the OS)
                    assert HIDDEN not in result.stderr, (args, result.stdout)
    # the three layouts all occur: the whole table, a table without its least useful columns, blocks
    assert modes[("sandbox callbacks", 60)] == "table"  # one line per delivery (D435)
    assert "blocks" in {mode for (_, width), mode in modes.items() if width == 60}, modes
    assert modes[("cards list", 80)] == "table"
    assert modes[("sandbox callbacks", 120)] == "table"


def _emit_table(
    data: Any, width: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, **kw: Any
) -> tuple[str, str]:
    monkeypatch.setenv("COLUMNS", str(width))
    emit(OutputFormat.table, data, **kw)
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_prose_wraps_at_spaces_and_amounts_stay_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {"id": "a" * 30, "amount": Decimal("1234567.0001"), "note": "word " * 12, "flag": True},
        {"id": "b" * 30, "amount": Decimal("5"), "note": "short", "flag": False},
    ]
    out, err = _emit_table(rows, 80, capsys, monkeypatch, title="Rows")
    lines = out.splitlines()
    assert lines[0] == "Rows"
    assert lines[2].split() == ["id", "amount", "note", "flag"]
    assert "1234567.0001" in out  # exact digits, whole
    assert all(word == "word" for line in lines[4:] for word in line.split() if word.startswith("w"))
    assert sum("word" in line for line in lines) > 1  # the note wrapped, at spaces
    assert err == ""
    assert all(cell_len(line) <= 80 for line in lines)


def test_one_record_is_name_value_lines_and_a_long_value_stays_on_its_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "http://127.0.0.1:8000/checkout/?orderId=01a20627-572f-7a2d-b532-1c3b8b783112"
    out, _ = _emit_table(
        {"uid": "01a20627-572f-7a2d-b532-1c3b8b783112", "URL": url, "at": "2026-01-02T03:04:05.123456+00:00"},
        60,
        capsys,
        monkeypatch,
        title="Payment link",
    )
    assert out.splitlines() == [
        "Payment link",
        "",
        "uid  01a20627-572f-7a2d-b532-1c3b8b783112",
        f"URL  {url}",
        "at   2026-01-02T03:04:05Z",
    ]


# ------------------------------------------------------------------------------ control characters

#: What a server message or a file may hold: an escape sequence that retitles the window and clears the
#: screen, a bell, a carriage return, DEL and C1 controls (CSI, OSC, ST).
HOSTILE = "a\x1b]0;owned\x07\x1b[2J\rb\x7f\x9b2J\x9d0;x\x9c"
HOSTILE_SHOWN = "a\\x1b]0;owned\\x07\\x1b[2J\\x0db\\x7f\\x9b2J\\x9d0;x\\x9c"


def _controls(text: str) -> list[str]:
    return [ch for ch in text if (ord(ch) < 0x20 and ch not in "\n\t") or 0x7F <= ord(ch) < 0xA0]


@pytest.mark.parametrize("width", [40, 200])  # blocks, and a table
def test_human_output_escapes_control_characters(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    """Every human output of the one output layer (D393): cells, column names, titles, event lines,
    information, warnings and errors; newline and tab are kept."""
    from paysdk_cli._output import emit_event, error, info, warn

    monkeypatch.setenv("COLUMNS", str(width))
    rows = [{"id": "crd_1", HOSTILE: HOSTILE, "note": "line one\nline\ttwo"}, {"id": "crd_2", HOSTILE: "-"}]
    emit(OutputFormat.table, rows, title=HOSTILE)
    emit(OutputFormat.table, rows[0], title="One")
    emit_event(OutputFormat.table, {"message": HOSTILE}, f"event {HOSTILE}")
    info(HOSTILE)
    warn(HOSTILE)
    error(HOSTILE)
    out, err = capsys.readouterr()
    assert _controls(out + err) == []
    assert out.count(HOSTILE_SHOWN) >= 5, out  # the title, the column name, its cells, the event
    assert err.count(HOSTILE_SHOWN) == 3, err
    assert "line one\n" in out  # a newline stays a newline
    assert "\t" in out


def test_json_output_stays_the_same_json_without_controls(capsys: pytest.CaptureFixture[str]) -> None:
    from paysdk_cli._output import emit_event

    data = {HOSTILE: HOSTILE, "amount": Decimal("10.50")}
    emit(OutputFormat.json, data)
    emit_event(OutputFormat.json, data, "unused")
    out, _ = capsys.readouterr()
    assert _controls(out) == []
    assert "\\u009b" in out
    assert "\\u001b" in out
    document, event = out.splitlines()
    assert json.loads(document, parse_float=Decimal) == data == json.loads(event, parse_float=Decimal)
    assert '"amount":10.50' in document
