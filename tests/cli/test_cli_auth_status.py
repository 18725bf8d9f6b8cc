"""``login`` checks the token against the API, ``auth status``, ``profiles list``, ``-o`` after the command,
``sandbox reset``'s confirmation and completion of enumerated options: against the reference server."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from paysdk.contracts.alternative_payments import RAILS
from paysdk.contracts.common import Channel, Currency
from paysdk.testing._ready import free_port
from paysdk_cli._secrets import load_token

from .conftest import TOKEN, run_cli, subprocess_env

pytestmark = pytest.mark.usefixtures("cli_server")


def _json(*args: str, code: int = 0, input: str | None = None) -> Any:
    result = run_cli("-o", "json", *args, input=input)
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


def _client_token() -> tuple[str, str]:
    """A new client's slug and its real sandbox token (shown once with --show-secrets)."""
    slug = f"auth-{uuid.uuid4().hex[:8]}"
    created = _json("sandbox", "clients", "create", "--slug", slug, "--show-secrets")
    return slug, str(created["sandboxToken"])


def _secret_free(token: str, *texts: str) -> None:
    for text in texts:
        assert token not in text


def test_login_stores_a_token_the_api_accepts() -> None:
    _, token = _client_token()
    result = run_cli("--profile", "shop", "login", "--token-stdin", input=token + "\n")

    assert result.exit_code == 0, result.stderr
    assert "Logged in: profile 'shop'" in result.stderr
    stored = load_token("shop")
    assert stored is not None
    assert stored.value == token
    _secret_free(token, result.stdout, result.stderr)


def test_login_refuses_and_does_not_store_a_token_the_api_refuses() -> None:
    result = run_cli("login", "--token-stdin", input=TOKEN + "\n")

    assert result.exit_code == 4, result.stderr
    assert "not logged in: the token was not stored, the API refused it (HTTP 401)" in result.stderr
    assert "Logged in" not in result.stderr
    assert load_token("default") is None
    _secret_free(TOKEN, result.stdout, result.stderr)


def test_login_without_an_answer_stores_nothing_unless_no_verify() -> None:
    down = f"http://127.0.0.1:{free_port()}"
    result = run_cli("login", "--token-stdin", "--base-url", down, input=TOKEN + "\n")

    assert result.exit_code == 7, result.stderr
    assert "could not be reached" in result.stderr
    assert "--no-verify" in result.stderr
    assert load_token("default") is None

    unchecked = run_cli("login", "--no-verify", "--token-stdin", "--base-url", down, input=TOKEN + "\n")
    assert unchecked.exit_code == 0, unchecked.stderr
    assert load_token("default") is not None


def test_auth_status_says_which_profile_and_whether_the_token_works(cli_server: str) -> None:
    slug, token = _client_token()
    assert run_cli("login", "--token-stdin", "--client", slug, input=token).exit_code == 0

    result = run_cli("auth", "status", "-o", "json")
    assert result.exit_code == 0, result.stderr
    status = json.loads(result.stdout)
    assert status == {
        "profile": "default",
        "baseUrl": cli_server.rstrip("/"),
        "environment": "custom",
        "client": slug,
        "tokenSource": "file",
        "token": "****" + token[-4:],
        "tokenStatus": "valid",
        "detail": "accepted by the API",
    }
    table = run_cli("-o", "table", "auth", "status")
    assert table.exit_code == 0
    assert "valid" in table.stdout
    _secret_free(token, result.stdout, result.stderr, table.stdout, table.stderr)


def test_auth_status_exits_4_for_a_refused_or_missing_token() -> None:
    missing = _json("auth", "status", code=4)
    assert (missing["tokenStatus"], missing["token"]) == ("missing", None)

    assert run_cli("login", "--no-verify", "--token-stdin", input=TOKEN).exit_code == 0
    refused = run_cli("-o", "json", "auth", "status")
    assert refused.exit_code == 4
    assert json.loads(refused.stdout)["tokenStatus"] == "refused"
    _secret_free(TOKEN, refused.stdout, refused.stderr)


def test_profiles_list_shows_every_profile_masked_and_checks_on_request() -> None:
    slug, token = _client_token()
    assert (
        run_cli("--profile", "shop", "login", "--token-stdin", "--client", slug, input=token).exit_code == 0
    )
    assert run_cli("--profile", "old", "login", "--no-verify", "--token-stdin", input=TOKEN).exit_code == 0

    rows = {row["profile"]: row for row in _json("--profile", "shop", "profiles", "list", "--check")}
    assert set(rows) == {"shop", "old"}
    assert rows["shop"]["active"] == "*"
    assert rows["old"]["active"] == ""
    assert (rows["shop"]["client"], rows["shop"]["tokenStatus"]) == (slug, "valid")
    assert rows["old"]["tokenStatus"] == "refused"
    assert rows["shop"]["token"] == "****" + token[-4:]

    table = run_cli("--profile", "shop", "-o", "table", "profiles", "list", "--check", env={"COLUMNS": "80"})
    assert table.exit_code == 0, table.stderr
    header = table.stdout.splitlines()[2].split()
    assert header[:3] == ["active", "profile", "tokenStatus"] or header[:4] == [  # kept at 80 columns
        "active",
        "profile",
        "baseUrl",
        "tokenStatus",
    ]
    assert "tokenStatus" not in run_cli("-o", "table", "profiles", "list", env={"COLUMNS": "80"}).stderr

    plain = run_cli("profiles", "list", "-o", "json")
    assert plain.exit_code == 0
    assert {row["profile"] for row in json.loads(plain.stdout)} == {"default", "shop", "old"}
    assert "tokenStatus" not in plain.stdout  # no call without --check
    _secret_free(token, plain.stdout)
    _secret_free(TOKEN, plain.stdout)


def test_output_option_is_accepted_after_the_command() -> None:
    slug = f"out-{uuid.uuid4().hex[:8]}"
    created = run_cli("sandbox", "clients", "create", "--slug", slug, "-o", "json")
    assert created.exit_code == 0, created.stderr
    assert json.loads(created.stdout)["slug"] == slug

    # the last one given wins: after the command over the global one
    shown = run_cli("-o", "json", "sandbox", "clients", "show", slug, "--output", "table")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.lstrip().startswith("Client")
    bad = run_cli("sandbox", "clients", "show", slug, "-o", "yaml")
    assert bad.exit_code == 2
    assert "yaml" in bad.stderr


def test_sandbox_reset_without_a_terminal_needs_yes() -> None:
    slug = f"keep-{uuid.uuid4().hex[:8]}"
    _json("sandbox", "clients", "create", "--slug", slug)

    refused = run_cli("sandbox", "reset")
    assert refused.exit_code == 2
    assert "pass --yes to confirm without a terminal" in refused.stderr
    assert _json("sandbox", "clients", "show", slug)["slug"] == slug  # nothing erased

    assert run_cli("sandbox", "reset", "--yes").exit_code == 0
    assert run_cli("sandbox", "clients", "show", slug).exit_code == 6


@pytest.mark.usefixtures("terminal_stdin")
def test_sandbox_reset_asks_on_a_terminal() -> None:
    slug = f"keep-{uuid.uuid4().hex[:8]}"
    _json("sandbox", "clients", "create", "--slug", slug)

    declined = run_cli("sandbox", "reset", input="n\n")
    assert declined.exit_code == 1
    assert "Erase every client, transaction and callback" in declined.stderr
    assert "reset cancelled: nothing was erased" in declined.stderr
    assert _json("sandbox", "clients", "show", slug)["slug"] == slug

    confirmed = run_cli("sandbox", "reset", input="y\n")
    assert confirmed.exit_code == 0, confirmed.stderr
    assert run_cli("sandbox", "clients", "show", slug).exit_code == 6


def _complete(config_dir: Path, line: str) -> list[str]:
    """What bash completion offers for the last word of ``line`` (typer's completion protocol)."""
    words = line.split(" ")
    env = subprocess_env(
        config_dir, COMP_WORDS=line, COMP_CWORD=str(len(words) - 1), _PAYSDK_COMPLETE="complete_bash"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "paysdk_cli"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("paysdk links create --channel ", [c.value for c in Channel]),
        ("paysdk links create --currency g", ["GTQ"]),
        ("paysdk sandbox clients create --currency ", [c.value for c in Currency]),
        ("paysdk alt process UID --processor ", list(RAILS)),
        ("paysdk alt process UID --processor a", ["akisiQR"]),
        ("paysdk sandbox clients create --payment-method ", list(RAILS)),
        ("paysdk leads create --channel w", ["wa", "web"]),
        ("paysdk links create -o ", ["table", "json"]),
    ],
)
def test_completion_offers_the_contracts_values(config_dir: Path, line: str, expected: list[str]) -> None:
    assert _complete(config_dir, line) == expected
