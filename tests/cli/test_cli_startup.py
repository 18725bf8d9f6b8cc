"""``paysdk --help`` stays cheap; every command documents itself; exit codes are in the epilog."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from paysdk_cli.main import FAMILIES, app, load_family

from .conftest import subprocess_env

HEAVY = ("httpx", "pydantic", "rich", "keyring", "platformdirs", "paysdk", "http.server", "uvicorn")


def _imported_modules(args: list[str], env: dict[str, str]) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "paysdk_cli", *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return {
        line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")
    }


def _heavy(modules: set[str], allowed: tuple[str, ...] = ()) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY and m.split(".")[0] not in allowed)


def test_root_help_imports_no_heavy_module(config_dir: Path) -> None:
    assert _heavy(_imported_modules(["--help"], subprocess_env(config_dir))) == []


@pytest.mark.parametrize("args", [["sandbox", "--help"], ["links", "create", "--help"], ["serve", "--help"]])
def test_subcommand_help_imports_only_what_typer_itself_needs(args: list[str], config_dir: Path) -> None:
    # typer 0.29 coerces option values with pydantic, so any invocation past the root imports it;
    # the CLI's own heavy imports (httpx, rich, keyring, platformdirs, paysdk, the server) stay lazy.
    assert _heavy(_imported_modules(args, subprocess_env(config_dir)), allowed=("pydantic",)) == []


def test_help_epilog_documents_exit_codes(config_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "paysdk_cli", "--help"],
        capture_output=True,
        text=True,
        env=subprocess_env(config_dir),
        check=True,
    )
    for line in (
        "0  success",
        "1  error",
        "2  usage",
        "4  authentication",
        "6  the API refused",
        "7  the API failed",
    ):
        assert line in proc.stdout
    for family in FAMILIES:
        assert family in proc.stdout


def test_exit_code_of_the_real_process_for_usage_and_auth(config_dir: Path) -> None:
    env = subprocess_env(config_dir)
    usage = subprocess.run(
        [sys.executable, "-m", "paysdk_cli", "links", "create"], capture_output=True, text=True, env=env
    )
    assert usage.returncode == 2
    auth = subprocess.run(
        [
            sys.executable,
            "-m",
            "paysdk_cli",
            "links",
            "create",
            "--amount",
            "1",
            "--user-id",
            "+50255555555",
            "--channel",
            "wa",
            "--client",
            "c",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert auth.returncode == 4
    assert auth.stdout == ""
    assert "Traceback" not in auth.stderr


def _walk(command: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found.extend(_walk(sub, (*path, name)))
    return found


def test_every_command_has_help_and_family_short_help_matches() -> None:
    for name, (_, _, short) in FAMILIES.items():
        family = load_family(name)
        assert family.help, name
        assert family.help.strip().splitlines()[0].startswith(short.rstrip(".")), (name, family.help)
        for path, command in _walk(family, (name,)):
            assert command.help, path
            assert command.help.strip(), path
            for param in command.params:
                if param.param_type_name == "option" and param.name not in ("help",):
                    assert getattr(param, "help", None), (path, param.name)


def test_command_tree() -> None:
    root = typer.main.get_command(app)
    assert root.list_commands(None) == list(FAMILIES)  # type: ignore[attr-defined]
    sandbox = load_family("sandbox")
    assert set(sandbox.commands) == {
        "health",
        "reset",
        "control-token",
        "clients",
        "clock",
        "pay",
        "simulate",
        "transactions",
        "callbacks",
        "resend-callback",
        "jobs",
        "requests",
        "tail",
        "faults",
        "test-cards",
        "outbox",
        "users",
        "cards",
        "linking-tokens",
        "charges",
        "plan",
        "subscriptions",
        "subscription",
        "terminal",
        "lead",
        "deprecations",
        "backoffice",
        "processor",
    }
    assert set(sandbox.commands["backoffice"].commands) == {"operator", "partner"}
    assert set(sandbox.commands["processor"].commands) == {"secret", "settle", "pay-out", "feed"}
    assert set(sandbox.commands["terminal"].commands) == {"affiliation", "show"}
    assert set(load_family("terminal").commands) == {"create", "capture", "void", "refund"}
    assert set(sandbox.commands["lead"].commands) == {"show", "approve", "reject"}
    assert set(sandbox.commands["deprecations"].commands) == {"set", "clear", "list"}
    assert set(load_family("leads").commands) == {"create", "upload"}
    assert set(sandbox.commands["plan"].commands) == {"create", "show"}
    assert set(sandbox.commands["subscriptions"].commands) == {"create"}
    assert set(load_family("subscriptions").commands) == {"verify-card", "cancel", "update-email", "history"}
    assert set(sandbox.commands["faults"].commands) == {"add", "list", "clear"}
    assert set(sandbox.commands["clients"].commands) == {"create", "show", "update", "rotate-keys"}
    assert set(sandbox.commands["linking-tokens"].commands) == {"create"}
    assert set(sandbox.commands["charges"].commands) == {"create", "capture", "refund", "clear-refund"}
    assert set(load_family("alt").commands) == {"create", "process", "intent", "dismiss"}
    assert set(load_family("wallet").commands) == {"login", "whoami", "logout", "jwks", "export-key"}
    assert set(load_family("users").commands) == {"login", "logout", "list", "otp", "reset-password"}
    assert set(load_family("cards").commands) >= {
        "list",
        "summary",
        "issue",
        "link",
        "link-external",
        "block",
        "unblock",
        "movements",
    }
    assert set(load_family("funds").commands) == {"add", "withdraw"}
    assert set(load_family("transfers").commands) == {"create"}
    assert set(load_family("permissions").commands) == {"grant", "update", "list"}
