"""``paysdk trigger`` against the reference server on a real socket (both databases): the list, a
built-in's run (its callbacks delivered to the server's built-in receiver, or to ours), a user's file
in JSON and YAML, a failing expectation (exit 1 naming the step) and bad files (exit 2, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scenario_examples import card_flow

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")


def _json_ok(*args: str) -> Any:
    result = run_cli("-o", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_list_names_the_built_ins() -> None:
    listed = _json_ok("trigger", "--list")
    assert [item["name"] for item in listed][:3] == [
        "payment-approved",
        "payment-declined",
        "three-ds-challenge",
    ]
    assert len(listed) == 9
    table = run_cli("trigger", "--list", env={"COLUMNS": "80"})
    assert table.exit_code == 0
    assert "callback-receiver-down" in table.stdout


def test_a_run_prints_each_step_its_callback_and_the_ids(callback_sink: Any) -> None:
    result = run_cli(
        "-o",
        "table",
        "trigger",
        "payment-approved",
        "--callback-url",
        callback_sink.url,
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "callback approved attempt 1: 200, delivered" in result.stdout
    assert "paid with the card ending 4242: approved" in result.stdout
    assert "every step passed" in result.stderr
    [received] = callback_sink.received
    [id_line] = [line for line in lines if line.startswith("id ") and " uid " in line]
    assert id_line.split()[-1] == received.json()["uid"]
    report = _json_ok("trigger", "payment-declined", "--callback-url", callback_sink.url)
    assert report["ok"] is True
    assert report["ids"]["uid"] == callback_sink.received[-1].json()["uid"]
    assert callback_sink.received[-1].json()["status"] == "declined"


def test_without_a_callback_url_the_built_in_receiver_answers_over_the_socket() -> None:
    report = _json_ok("trigger", "payment-approved")
    [callback] = [e["data"] for e in report["events"] if e["kind"] == "callback"]
    assert callback["statusCode"] == 200
    assert callback["payload"]["status"] == "approved"


SCENARIO = card_flow("cli-flow")


def test_a_user_file_runs_the_same_way_in_json_and_yaml(tmp_path: Path, callback_sink: Any) -> None:
    import yaml

    as_json = tmp_path / "flow.json"
    as_json.write_text(json.dumps(SCENARIO))
    report = _json_ok("trigger", "--file", str(as_json), "--callback-url", callback_sink.url)
    assert report["scenario"] == "cli-flow"
    assert report["ok"] is True
    as_yaml = tmp_path / "flow.yaml"
    as_yaml.write_text(yaml.safe_dump(SCENARIO))
    again = _json_ok("trigger", "--file", str(as_yaml), "--callback-url", callback_sink.url)
    assert again["ok"] is True
    assert [item.json()["uid"] for item in callback_sink.received] == [
        report["ids"]["uid"],
        again["ids"]["uid"],
    ]


def test_an_expectation_that_fails_exits_1_naming_the_step(tmp_path: Path, callback_sink: Any) -> None:
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(SCENARIO))
    result = run_cli(
        "trigger",
        "--file",
        str(path),
        "--callback-url",
        callback_sink.url,
        "--param",
        "card=4000000000000002",
    )
    assert result.exit_code == 1, result.output
    assert "step 4 'approved' failed: expected at least 1 callback" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{oops", "not valid JSON"),
        ("[1, 2]", "a scenario is an object"),
        ('{"name": "x", "title": "X", "steps": [{"kind": "teleport"}]}', "steps"),
        ('{"name": "x", "title": "X", "steps": [{"kind": "advance", "dayz": 1}]}', "dayz"),
    ],
)
def test_a_bad_file_exits_2_with_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = run_cli("trigger", "--file", str(path))
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_usage_errors() -> None:
    assert run_cli("trigger").exit_code == 2
    assert run_cli("trigger", "payment-approved", "--list").exit_code == 2
    assert run_cli("trigger", "payment-approved", "--param", "oops").exit_code == 2
    missing = run_cli("trigger", "--file", "/nonexistent/flow.json")
    assert missing.exit_code == 2
    assert "cannot be read" in missing.stderr
    unknown = run_cli("trigger", "nope")
    assert unknown.exit_code == 6
    assert "Traceback" not in unknown.output
