"""Help texts are for users: no decision ids (``D185``) and no reST markup in any ``--help`` (issue 21).

Decision ids stay in comments and after the ``\\f`` of a command's docstring, which click cuts off.
"""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.testing import CliRunner

from paysdk_cli.main import FAMILIES, app, load_family

DECISION_ID = re.compile(r"\bD\d{2,4}\b")
REST = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|mod|exc|obj|const):|``")


def _paths(command: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():
        found.extend(_paths(sub, (*path, name)))
    return found


def _every_command() -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = [()]
    for name in FAMILIES:
        paths.extend(_paths(load_family(name), (name,)))
    return paths


def test_no_help_text_shows_a_decision_id_or_rest_markup() -> None:
    paths = _every_command()
    assert ("serve",) in paths
    assert ("sandbox", "backoffice", "partner", "enroll") in paths
    assert len(paths) > 100
    runner = CliRunner()
    shown = []
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
        assert result.exit_code == 0, (path, result.output)
        assert "Usage: paysdk" in result.output, path
        for line in result.output.splitlines():
            if DECISION_ID.search(line) or REST.search(line):
                shown.append(f"paysdk {' '.join(path)} --help: {line.strip()}")
    assert shown == []


def test_a_docstring_tail_after_the_form_feed_is_not_help() -> None:
    """``cardholders lookup``'s docstring names its decision after ``\\f``; the help stops before it."""
    lookup = typer.main.get_command(app).get_command(None, "cardholders").commands["lookup"]  # type: ignore[attr-defined]
    assert "\f" in lookup.help
    assert "D451" in lookup.help.partition("\f")[2]
    result = CliRunner().invoke(app, ["cardholders", "lookup", "--help"])
    assert "Exit 6 when there is none." in result.output
    assert "Decision" not in result.output
