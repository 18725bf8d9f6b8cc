"""Every ``paysdk`` command answers ``--help`` and makes one real call to the reference server.

The commands are found by walking the click tree of :mod:`paysdk_cli.main` (every family group loaded);
how to call each is the table :data:`cli_invocations.INVOCATIONS`, which must name every command and
nothing else. One server (uvicorn on a real socket, SQLite) serves the whole module and is reset
before each call; the call must reach it (the server counts the requests it answered) and exit as the
table says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from paysdk.server import create_app
from paysdk.testing._ready import serve_in_thread
from paysdk_cli.main import FAMILIES, load_family

from .cli_invocations import INVOCATIONS, SLUG
from .conftest import run_cli


def _walk(command: Any, path: tuple[str, ...]) -> Iterator[str]:
    subs = getattr(command, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from _walk(sub, (*path, name))
    else:
        yield " ".join(path)


def every_command() -> list[str]:
    """``"sandbox clock advance"``... every leaf command of ``paysdk``, in the tree's order."""
    return [path for name in FAMILIES for path in _walk(load_family(name), (name,))]


COMMANDS = every_command()


class _Counter:
    """The server app behind a wrapper that records the path of every HTTP request it answers."""

    def __init__(self, application: Any) -> None:
        self.app = application
        self.paths: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["path"])
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def counted_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, _Counter]]:
    """The reference server for the whole module, over a real socket."""
    database = tmp_path_factory.mktemp("every-command") / "server.db"
    counter = _Counter(create_app(f"sqlite:///{database}", start_ticker=False))
    with serve_in_thread(counter, lifespan="on") as served:
        yield served.url, counter


def test_every_command_has_an_invocation() -> None:
    assert len(COMMANDS) > 100
    assert "sandbox backoffice partner enroll" in COMMANDS
    assert sorted(set(COMMANDS) - set(INVOCATIONS)) == [], "add an entry to tests/cli/cli_invocations.py"
    assert sorted(set(INVOCATIONS) - set(COMMANDS)) == [], "no such command"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = run_cli(*command.split(), "--help", env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert f"Usage: paysdk {command}" in result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_makes_a_real_call(
    command: str,
    counted_server: tuple[str, _Counter],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    call = INVOCATIONS.get(command)
    assert call is not None, f"{command}: no entry in tests/cli/cli_invocations.py"
    if call.endless:
        assert call.local, f"{command}: say which test runs it"
        return
    base_url, counter = counted_server
    monkeypatch.setenv("PAYSDK_BASE_URL", base_url)
    httpx.post(f"{base_url}/_sandbox/reset", timeout=60).raise_for_status()
    made = run_cli("sandbox", "clients", "create", "--slug", SLUG, "--save-profile")
    assert made.exit_code == 0, made.stderr
    for name, text in call.files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in call.args]
    for before, stdin in call.before:
        done = run_cli(*before, input=stdin)
        assert done.exit_code == 0, (before, done.stderr)
    counter.paths.clear()
    result = run_cli("-o", "json", *command.split(), *args, input=call.input)
    assert result.exit_code == call.exit, (result.exit_code, result.stdout, result.stderr)
    if call.local is None:
        assert counter.paths, f"paysdk {command} sent nothing to the server"
    else:
        assert not counter.paths, f"paysdk {command} is marked local but called {counter.paths}"
