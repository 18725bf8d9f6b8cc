"""The CLI and the control token (D270-D276): ``paysdk sandbox control-token`` stores it in the profile
(keyring) without echoing it; the sandbox commands send it from the profile or ``PAYSDK_CONTROL_TOKEN``;
``callbacks listen --sandbox-client`` and ``clients show --show-secrets`` use the reveal call, so they get
the full values from a server bound to a non-loopback address (a real ``paysdk serve --host 0.0.0.0``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from paysdk.testing._ready import free_port, http_ok, wait_ready

from .conftest import MemoryKeyring, run_cli, subprocess_env
from .test_cli_listen import callback_body, start_listener

TOKEN = "cli-control-0b9e4d2c7a1f4e58"
SERVICE = "paysdk-control-token"


@pytest.fixture
def exposed(config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``paysdk serve --host 0.0.0.0`` with a control token, made the CLI's ``PAYSDK_BASE_URL``."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paysdk_cli",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--db",
            f"sqlite:///{tmp_path / 'cli.db'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(config_dir, PAYSDK_CONTROL_TOKEN=TOKEN),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(http_ok(url + "/_sandbox/health", any_status=True), what="paysdk serve", process=proc)
        monkeypatch.setenv("PAYSDK_BASE_URL", url)
        yield url
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=30)


def _json(*args: str, code: int = 0) -> Any:
    result = run_cli("-o", "json", *args)
    assert result.exit_code == code, result.stdout + result.stderr
    assert TOKEN not in result.stdout + result.stderr
    return json.loads(result.stdout) if code == 0 and result.stdout.strip() else result


def test_control_token_is_stored_from_a_hidden_prompt_or_stdin(
    memory_keyring: MemoryKeyring, terminal_stdin: None
) -> None:
    prompted = run_cli("sandbox", "control-token", input=TOKEN + "\n")
    assert prompted.exit_code == 0, prompted.stderr
    assert TOKEN not in prompted.stdout + prompted.stderr  # the prompt never echoes it
    assert memory_keyring.passwords[(SERVICE, "default")] == TOKEN

    piped = run_cli("--profile", "qa", "sandbox", "control-token", "--token-stdin", input="other-token\n")
    assert piped.exit_code == 0, piped.stderr
    assert "other-token" not in piped.stdout + piped.stderr
    assert memory_keyring.passwords[(SERVICE, "qa")] == "other-token"

    cleared = run_cli("--profile", "qa", "sandbox", "control-token", "--clear")
    assert cleared.exit_code == 0
    assert (SERVICE, "qa") not in memory_keyring.passwords

    assert run_cli("sandbox", "control-token", "--token-stdin", input="with space\n").exit_code == 2
    assert run_cli("sandbox", "control-token", "--token-stdin", input="\n").exit_code == 2


def test_control_token_without_a_terminal_names_the_other_ways(memory_keyring: MemoryKeyring) -> None:
    result = run_cli("sandbox", "control-token")
    assert result.exit_code == 2
    assert "--token-stdin" in result.stderr
    assert "PAYSDK_CONTROL_TOKEN" in result.stderr


def test_sandbox_commands_send_the_profile_token(exposed: str, memory_keyring: MemoryKeyring) -> None:
    refused = _json("sandbox", "clients", "create", "--slug", "acme", code=4)
    assert "Paysdk-Control-Token" in refused.stderr
    stored = run_cli("sandbox", "control-token", "--token-stdin", input=TOKEN + "\n")
    assert stored.exit_code == 0

    created = _json("sandbox", "clients", "create", "--slug", "acme", "--show-secrets")
    assert len(created["sandboxToken"]) == 64
    shown = _json("sandbox", "clients", "show", "acme", "--show-secrets")  # the reveal call
    for field in ("sandboxToken", "productionToken", "callbackHeaderValue"):
        assert shown[field] == created[field]
    # A plain read is masked by the server itself (the exposed bind): ask it directly.
    reread = httpx.get(
        f"{exposed}/_sandbox/clients/acme", headers={"Paysdk-Control-Token": TOKEN}, timeout=60
    ).json()
    assert reread["sandboxToken"] == "****"

    assert _json("sandbox", "processor", "secret", "--show-secrets")["secret"].startswith("psec_")
    assert _json("sandbox", "processor", "secret")["secret"] == "****"
    assert run_cli("sandbox", "reset", "--yes").exit_code == 0
    assert _json("sandbox", "clients", "show", "acme", code=6).exit_code == 6


def test_environment_variable_wins_and_a_wrong_token_is_refused(
    exposed: str, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_keyring.passwords[(SERVICE, "default")] = "stale-token"
    wrong = _json("sandbox", "clients", "create", "--slug", "acme", code=4)
    assert "Paysdk-Control-Token" in wrong.stderr
    assert "stale-token" not in wrong.stdout + wrong.stderr
    monkeypatch.setenv("PAYSDK_CONTROL_TOKEN", TOKEN)
    assert _json("sandbox", "clients", "create", "--slug", "acme")["slug"] == "acme"
    assert httpx.get(f"{exposed}/_sandbox/clients/acme", timeout=60).status_code == 401


def test_listen_sandbox_client_gets_the_full_header_value_through_reveal(
    exposed: str, config_dir: Path
) -> None:
    created = httpx.post(
        f"{exposed}/_sandbox/clients",
        json={"slug": "acme", "callbackHeaderValue": "cb-shared-sandbox-value"},
        headers={"Paysdk-Control-Token": TOKEN},
        timeout=60,  # the server's first real answer, on a loaded machine too
    )
    assert created.status_code == 201
    with start_listener(
        config_dir,
        "--sandbox-client",
        "acme",
        env={"PAYSDK_CONTROL_TOKEN": TOKEN},
        base_url=exposed,
        global_args=("-o", "json"),
    ) as listener:
        accepted = listener.post(callback_body(), value="cb-shared-sandbox-value")
        refused = listener.post(callback_body(), value="****")  # what a masked read would have given
        _code, out, err = listener.stop()
    assert accepted.status_code == 200, accepted.text
    assert refused.status_code == 401
    assert TOKEN not in out + err
    assert "cb-shared-sandbox-value" not in err
