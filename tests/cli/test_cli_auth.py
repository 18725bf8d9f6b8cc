"""``paysdk login``/``logout``: keyring, the 0600 fallback file, env override, profiles; secrets unprinted."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from paysdk_cli._secrets import KEYRING_SERVICE, load_token

from .conftest import TOKEN, MemoryKeyring, MockAPI, run_cli

OTHER = "0" * 64


def _assert_secret_free(*texts: str) -> None:
    for text in texts:
        assert TOKEN not in text
        assert OTHER not in text


@pytest.mark.usefixtures("terminal_stdin")
def test_login_without_keyring_falls_back_to_0600_file_with_warning(config_dir: Path) -> None:
    result = run_cli("login", "--no-verify", input=TOKEN + "\n")

    assert result.exit_code == 0, result.stderr
    path = config_dir / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["tokens"] == {"default": TOKEN}
    assert "Warning: no usable OS keyring" in result.stderr
    assert str(path) in result.stderr
    assert result.stdout.strip() == ""  # (CliRunner echoes a newline for hidden input)
    _assert_secret_free(result.stdout, result.stderr)
    # the profiles file holds no token
    assert TOKEN not in (config_dir / "profiles.json").read_text()


def test_login_with_keyring_stores_there_and_not_on_disk(
    config_dir: Path, memory_keyring: MemoryKeyring
) -> None:
    result = run_cli("--profile", "shop", "login", "--no-verify", "--token-stdin", input=TOKEN + "\n")

    assert result.exit_code == 0, result.stderr
    assert memory_keyring.passwords == {(KEYRING_SERVICE, "shop"): TOKEN}
    assert not (config_dir / "credentials.json").exists()
    assert "Warning" not in result.stderr
    assert "keyring" in result.stderr
    _assert_secret_free(result.stdout, result.stderr)


def test_login_profile_option_and_settings_are_saved(config_dir: Path) -> None:
    result = run_cli(
        "login",
        "--no-verify",
        "--profile",
        "ci",
        "--token-stdin",
        "--base-url",
        "http://127.0.0.1:9999",
        "--client",
        "acme",
        input=TOKEN,
    )

    assert result.exit_code == 0, result.stderr
    profiles = json.loads((config_dir / "profiles.json").read_text())["profiles"]
    assert profiles == {"ci": {"base_url": "http://127.0.0.1:9999", "client": "acme"}}
    assert stat.S_IMODE((config_dir / "profiles.json").stat().st_mode) == 0o600
    stored = load_token("ci")
    assert stored is not None
    assert stored.value == TOKEN
    assert stored.source == "file"
    assert load_token("default") is None


def test_login_refuses_empty_token_as_usage_error() -> None:
    result = run_cli("login", "--no-verify", "--token-stdin", input="\n")
    assert result.exit_code == 2
    assert "Error: no merchant token given" in result.stderr


def test_login_token_is_not_an_argument() -> None:
    result = run_cli("login", TOKEN)
    assert result.exit_code == 2
    _assert_secret_free(result.stdout)


def test_login_warns_on_unusual_token_shape() -> None:
    result = run_cli("login", "--no-verify", "--token-stdin", input="short-token\n")
    assert result.exit_code == 0
    assert "not 64 hexadecimal characters" in result.stderr


def test_env_token_overrides_stored_token(
    monkeypatch: pytest.MonkeyPatch, memory_keyring: MemoryKeyring
) -> None:
    assert run_cli("login", "--no-verify", "--token-stdin", input=OTHER).exit_code == 0
    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", TOKEN)

    stored = load_token("default")
    assert stored is not None
    assert (stored.value, stored.source) == (TOKEN, "env")
    assert TOKEN not in repr(stored)


def test_env_token_is_the_one_sent(monkeypatch: pytest.MonkeyPatch, mock_api: MockAPI) -> None:
    assert run_cli("login", "--no-verify", "--token-stdin", input=OTHER).exit_code == 0
    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", TOKEN)
    mock_api.body = {"uid": "u1", "reference": "PL-ABCDEFGHJK", "URL": "http://x/checkout/?orderId=u1"}

    result = run_cli(
        "-v",
        "links",
        "create",
        "--amount",
        "10.50",
        "--user-id",
        "+50255555555",
        "--channel",
        "wa",
        "--client",
        "acme",
    )

    assert result.exit_code == 0, result.stderr
    assert mock_api.requests[0].headers["Authorization"] == TOKEN
    _assert_secret_free(result.stdout, result.stderr)


def test_logout_removes_keyring_and_file(config_dir: Path, memory_keyring: MemoryKeyring) -> None:
    assert run_cli("login", "--no-verify", "--token-stdin", input=TOKEN).exit_code == 0
    result = run_cli("logout")
    assert result.exit_code == 0
    assert memory_keyring.passwords == {}
    assert "keyring" in result.stderr

    again = run_cli("logout")
    assert again.exit_code == 0
    assert "had no stored token" in again.stderr


def test_logout_removes_fallback_file_entry(config_dir: Path) -> None:
    assert run_cli("--profile", "a", "login", "--no-verify", "--token-stdin", input=TOKEN).exit_code == 0
    assert run_cli("--profile", "b", "login", "--no-verify", "--token-stdin", input=OTHER).exit_code == 0
    assert run_cli("--profile", "a", "logout").exit_code == 0

    assert json.loads((config_dir / "credentials.json").read_text())["tokens"] == {"b": OTHER}


def test_group_readable_fallback_file_is_warned_about(config_dir: Path) -> None:
    assert run_cli("login", "--no-verify", "--token-stdin", input=TOKEN).exit_code == 0
    path = config_dir / "credentials.json"
    path.chmod(0o644)

    result = run_cli("logout")
    assert "can be read by other users" in result.stderr


def test_missing_token_exits_4() -> None:
    result = run_cli(
        "links", "create", "--amount", "1", "--user-id", "+50255555555", "--channel", "wa", "--client", "acme"
    )
    assert result.exit_code == 4
    assert "no merchant token for profile 'default'" in result.stderr
    assert "paysdk --profile default login" in result.stderr


def test_profile_default_client_is_used(mock_api: MockAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", TOKEN)
    assert run_cli("login", "--no-verify", "--token-stdin", "--client", "acme", input=TOKEN).exit_code == 0
    mock_api.body = {"uid": "u1", "reference": "PL-ABCDEFGHJK", "URL": "http://x/?orderId=u1"}

    result = run_cli("links", "create", "--amount", "5", "--user-id", "+50255555555", "--channel", "wa")

    assert result.exit_code == 0, result.stderr
    assert mock_api.json_body()["client"] == "acme"


def test_missing_client_slug_is_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", TOKEN)
    result = run_cli("links", "create", "--amount", "5", "--user-id", "+50255555555", "--channel", "wa")
    assert result.exit_code == 2
    assert "no client slug" in result.stderr
