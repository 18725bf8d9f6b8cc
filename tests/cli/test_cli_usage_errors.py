"""Error wording in one style, connection errors, no prompt without a terminal, corrupt config files.

Usage errors: click's usage lines, then one ``Error:`` line naming the option (its long name) or the
argument (``CARD_ID``) and the value typed, in the CLI's words (no pydantic ``Value error, ...``);
exit 2. Input the SDK refuses has the same shape as input the CLI refuses itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paysdk.testing._ready import free_port
from paysdk_cli._context import CLIENT_OPTIONS
from paysdk_cli.main import FAMILIES, load_family

from .conftest import TOKEN, MockAPI, run_cli, subprocess_env

LINK = ["links", "create", "--user-id", "+50255555555", "--channel", "wa", "--client", "acme"]
PERMISSIONS = ", ".join(
    [
        "checkCard",
        "checkCvv",
        "updateAlias",
        "updateStatus",
        "assignPIN",
        "getCards",
        "getAllTransfersByDate",
        "transferBetweenCards",
        "activation",
    ]
)

USAGE_ERRORS = [
    (
        ["-o", "yaml", "sandbox", "health"],
        "paysdk [OPTIONS] COMMAND [ARGS]...",
        "paysdk",
        "invalid value for --output: 'yaml' is not one of table, json",
    ),
    (
        ["permissions", "grant", "crd_1", "--user-id", "usr_1", "-p", "fly"],
        "paysdk permissions grant [OPTIONS] CARD_ID",
        "paysdk permissions grant",
        f"invalid value for --permission: 'fly' is not one of {PERMISSIONS}",
    ),
    (
        ["serve", "--environment", "staging"],
        "paysdk serve [OPTIONS]",
        "paysdk serve",
        "invalid value for --environment: 'staging' is not one of sandbox, production",
    ),
    (
        [*LINK, "--amount", "abc"],
        "paysdk links create [OPTIONS]",
        "paysdk links create",
        "invalid value for --amount: 'abc' is not a decimal number",
    ),
    (
        [*LINK, "--amount", "10.123"],  # refused by the SDK, not by the CLI: the same shape
        "paysdk links create [OPTIONS]",
        "paysdk links create",
        "invalid value for --amount: '10.123' has more than 2 decimal places",
    ),
    (
        ["cards", "show"],
        "paysdk cards show [OPTIONS] CARD_ID",
        "paysdk cards show",
        "missing argument CARD_ID",
    ),
    (
        ["funds", "add", "crd_1", "--amount", "1.00001"],
        "paysdk funds add [OPTIONS] CARD_ID",
        "paysdk funds add",
        "invalid value for --amount: '1.00001' has more than 4 decimal places",
    ),
    (
        ["serve", "--port", "abc"],
        "paysdk serve [OPTIONS]",
        "paysdk serve",
        "invalid value for --port: 'abc' is not a whole number",
    ),
    (
        ["serve", "--port", "70000"],
        "paysdk serve [OPTIONS]",
        "paysdk serve",
        "invalid value for --port: '70000' is more than 65535",
    ),
    (
        ["sandbox", "faults", "add"],
        "paysdk sandbox faults add [OPTIONS]",
        "paysdk sandbox faults add",
        "missing option --kind (one of: latency, error, rate_limit, drop, duplicate_callback, stream_cut, "
        "callback_down)",
    ),
    (
        ["serve", "--db", "mysql://root:hunter2@db/shop"],
        "paysdk serve [OPTIONS]",
        "paysdk serve",
        "invalid value for --db: 'mysql://...' is not a database the server supports: "
        "use sqlite:///FILE or postgresql://USER@HOST/DB",
    ),
]


@pytest.mark.parametrize(("args", "usage", "command", "error"), USAGE_ERRORS, ids=lambda v: str(v)[:40])
def test_usage_errors_name_the_option_and_the_value_in_one_style(
    args: list[str], usage: str, command: str, error: str, mock_api: MockAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", TOKEN)
    result = run_cli(*args)

    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"Usage: {usage}",
        f"Try '{command} -h' for help.",
        "",
        f"Error: {error}",
    ]
    assert mock_api.requests == []  # nothing was sent
    assert "hunter2" not in result.stderr


def _leaf_commands() -> list[tuple[list[str], Any]]:
    leaves: list[tuple[list[str], Any]] = []

    def walk(path: list[str], command: Any) -> None:
        children = getattr(command, "commands", None)
        if children:
            for name, child in children.items():
                walk([*path, name], child)
        else:
            leaves.append((path, command))

    for family in FAMILIES:
        walk([family], load_family(family))
    return leaves


def test_no_usage_line_has_a_placeholder_and_arguments_are_in_capitals() -> None:
    leaves = _leaf_commands()
    assert len(leaves) > 30
    for path, command in leaves:
        result = run_cli(*path, "-h")
        assert result.exit_code == 0, (path, result.stderr)
        usage = result.stdout.splitlines()[0]
        assert usage.startswith(f"Usage: paysdk {' '.join(path)} "), usage
        assert "{" not in usage, usage
        for param in command.params:
            if param.param_type_name == "argument":
                assert param.metavar == param.name.upper(), (path, param.name)
                assert param.metavar in usage, usage


def test_the_sdks_refusal_and_the_clis_have_the_same_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", TOKEN)
    CLIENT_OPTIONS["max_retries"] = 0
    sdk = run_cli(*LINK, "--amount", "10.123").stderr.splitlines()
    cli = run_cli(*LINK, "--amount", "abc").stderr.splitlines()
    assert sdk[:-1] == cli[:-1]
    prefix = "Error: invalid value for --amount: "
    assert sdk[-1].startswith(prefix + "'10.123' ")
    assert cli[-1].startswith(prefix + "'abc' ")


@pytest.mark.parametrize("command", [["sandbox", "health"], [*LINK, "--amount", "10.50"]])
def test_connection_error_names_the_address_and_what_to_do(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", TOKEN)
    CLIENT_OPTIONS["max_retries"] = 0
    address = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    result = run_cli("--base-url", address, *command)

    assert result.exit_code == 7
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"Error: could not connect to {address}: connection error on ")
    assert "paysdk serve" in lines[1]
    assert "--base-url" in lines[1]
    assert "Traceback" not in result.stderr
    assert len(lines) == 2


def _paysdk(config_dir: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``paysdk ARGS`` in a subprocess whose stdin is not a terminal (``/dev/null``, or a pipe)."""
    return subprocess.run(
        [sys.executable, "-m", "paysdk_cli", *args],
        stdin=subprocess.DEVNULL if input is None else None,
        input=input,
        capture_output=True,
        text=True,
        env=subprocess_env(config_dir),
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["login"],
            "Error: no terminal to prompt for the merchant token: use --token-stdin "
            "(paysdk login --token-stdin < token.txt), or set PAYSDK_MERCHANT_TOKEN",
        ),
        (
            [
                "sandbox",
                "users",
                "create",
                "--username",
                "ana",
                "--email",
                "a@example.com",
                "--merchant",
                "x",
            ],
            "Error: no terminal to prompt for the password: use --password-stdin",
        ),
    ],
)
def test_no_prompt_without_a_terminal(args: list[str], error: str, config_dir: Path) -> None:
    proc = _paysdk(config_dir, *args)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [error]  # no getpass warning, no "Aborted!"
    assert proc.stdout == ""
    assert not (config_dir / "credentials.json").exists()


@pytest.mark.parametrize("name", ["profiles.json", "credentials.json"])
@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_a_corrupt_config_file_is_named_in_a_warning(name: str, content: str, config_dir: Path) -> None:
    config_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = config_dir / name
    path.write_text(content, encoding="utf-8")
    path.chmod(0o600)

    proc = _paysdk(
        config_dir, "login", "--no-verify", "--token-stdin", "--client", "acme", input=TOKEN + "\n"
    )
    assert proc.returncode == 0, proc.stderr
    problem = "is not valid JSON" if content.startswith("{") else "does not hold a JSON object"
    warning = f"Warning: {path} {problem}; ignoring it"
    assert warning in proc.stderr.splitlines(), proc.stderr
    assert "Traceback" not in proc.stderr
    profiles = json.loads((config_dir / "profiles.json").read_text())["profiles"]
    assert profiles["default"]["client"] == "acme"
