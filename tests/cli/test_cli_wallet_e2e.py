"""End to end: the wallet commands against the reference server on a real socket (``live_server``).

One merchant onboarded with ``sandbox clients create --save-profile`` (its generated signing key goes
to the profile's secret store), then wallet login, users, cards, funds, transfers, permissions, OTP and
password reset, and two processes refreshing at the same moment. No secret may appear in any output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import paysdk
from paysdk_cli._secrets import WALLET_KEY, load_secret, user_sessions_path, wallet_token_path

from .conftest import run_cli, subprocess_env

pytestmark = pytest.mark.usefixtures("cli_server")

PASSWORD = "correct-horse-9"
NEW_PASSWORD = "battery-staple-7"


class Outputs:
    """Every stdout and stderr the test saw, to check that no secret was printed."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def run(self, *args: str, input: str | None = None, code: int = 0) -> Any:
        result = run_cli("-o", "json", *args, input=input)
        self.texts += [result.stdout, result.stderr]
        assert result.exit_code == code, (args, result.exit_code, result.stderr)
        return json.loads(result.stdout) if code == 0 and result.stdout.strip() else result

    def assert_secret_free(self, *secrets: str) -> None:
        for text in self.texts:
            assert "eyJ" not in text, text  # no JWT (base64url of '{"')
            for secret in secrets:
                assert secret not in text, text


def _sdk(base_url: str) -> paysdk.Client:
    return paysdk.Client(environment=paysdk.Environment.local(base_url))


def _spawn(config_dir: Path, base_url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "paysdk_cli", "-o", "json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(config_dir, PAYSDK_BASE_URL=base_url),
    )


def _count(requests: list[dict[str, Any]], method: str, path: str) -> int:
    return sum(1 for r in requests if r["method"] == method and r["path"] == path)


def test_wallet_end_to_end(cli_server: str, config_dir: Path) -> None:
    out = Outputs()
    slug = f"cli-w-{uuid.uuid4().hex[:8]}"
    client = out.run("sandbox", "clients", "create", "--slug", slug, "--save-profile")
    assert client["signingPrivateKey"] == "****"
    assert client["signingPublicKey"]
    stored_key = load_secret(WALLET_KEY, "default")
    assert stored_key is not None

    # wallet login with the key saved by --save-profile; whoami never shows a token
    login = out.run("wallet", "login")
    assert login["merchant"] == slug
    assert login["expiresIn"] == 1800
    whoami = out.run("wallet", "whoami")
    assert (whoami["merchant"], whoami["accessTokenExpired"]) == (slug, False)
    assert whoami["tokenIssuer"].startswith("paysdk-wallet:")

    with _sdk(cli_server) as sdk:
        ana = sdk.sandbox.create_user(slug, "ana", "ana@example.com", PASSWORD).user_id
        linking_token = sdk.sandbox.create_linking_token("4111111111111111", "12/30").token
    ben = out.run(
        "sandbox",
        "users",
        "create",
        "--username",
        "ben",
        "--email",
        "ben@example.com",
        "--password-stdin",
        input=PASSWORD + "\n",
    )["userId"]

    session = out.run("users", "login", "--username", "ana", "--password-stdin", input=PASSWORD + "\n")
    assert session["userId"] == ana

    card_a = out.run("cards", "issue", "--user-id", ana, "--alias", "main")["cardId"]
    card_b = out.run("cards", "issue", "--user-id", ben)["cardId"]

    added = run_cli("-o", "json", "funds", "add", card_a, "--amount", "100.0001")
    out.texts += [added.stdout, added.stderr]
    assert added.exit_code == 0, added.stderr
    assert '"balance":100.0001' in added.stdout  # exact digits, a JSON number
    refused = out.run("funds", "withdraw", card_a, "--amount", "200", code=6)
    assert refused.stderr.startswith("Error: HTTP 422 ownCode 7303:")
    assert refused.stdout == ""
    assert out.run("funds", "add", card_a, "--amount", "1.00001", code=2).stderr.count("--amount")

    # the owner transfers as herself (--as-user); the balance stays exact
    transfer = out.run(
        "transfers", "create", "--from", card_a, "--to", card_b, "--amount", "25.5", "--as-user", "ana"
    )
    assert transfer["debit"]["balanceAfter"] == pytest.approx(74.5001)
    cards = run_cli("-o", "json", "cards", "list", "--as-user", "ana")
    out.texts += [cards.stdout, cards.stderr]
    assert '"balance":74.5001' in cards.stdout

    grant = out.run("permissions", "grant", card_a, "--user-id", ben, "-p", "checkCard", "-p", "getCards")
    assert grant["permissions"] == ["checkCard", "getCards"]
    updated = out.run("permissions", "update", grant["id"], "-p", "checkCard")
    assert updated["permissions"] == ["checkCard"]
    listed = out.run("permissions", "list", "--card-id", card_a)
    assert [p["id"] for p in listed] == [grant["id"]]
    assert [p["id"] for p in out.run("permissions", "list", "--user-id", ben)] == [grant["id"]]

    movements = out.run("cards", "movements", card_a, "--as-user", "ana")
    assert [m["type"] for m in movements] == ["fund", "transfer_out"]
    out.run("cards", "block", card_a)
    blocked = out.run("transfers", "create", "--from", card_a, "--to", card_b, "--amount", "1", code=6)
    assert "ownCode 7302" in blocked.stderr
    assert out.run("cards", "unblock", card_a)["status"] == "active"
    table = run_cli("-o", "table", "cards", "list", "--user-id", ana)
    out.texts += [table.stdout, table.stderr]
    assert "74.5001" in table.stdout

    # a stock card linked and activated, an external card linked with a token read from stdin
    stock = out.run("sandbox", "cards", "create", "--balance", "5.25")["cardId"]
    assert out.run("cards", "link", stock, "--user-id", ben)["status"] == "inactive"
    assert out.run("cards", "activate", stock)["status"] == "active"
    external = out.run(
        "cards", "link-external", "--user-id", ana, "--token-stdin", input=linking_token + "\n"
    )
    assert external["type"] == "linked"
    summary = out.run(
        "cards", "summary", "--as-user", "ana", "--start-date", "2000-01-01", "--end-date", "2099-12-31"
    )
    figures = {c["cardId"]: c for c in summary["cards"]}
    assert figures[card_a]["closingBalance"] == pytest.approx(74.5001)
    assert out.run("cards", "summary", "--start-date", "01/02/2026", "--end-date", "x", code=2)

    # OTP and password reset: the code comes from the sandbox outbox; the reset token is never printed
    out.run("users", "otp", "--email", "ana@example.com")
    mails = out.run("sandbox", "outbox", "--to", "ana@example.com")
    code = mails[-1]["data"]["otp"]
    assert code in mails[-1]["body"]
    out.run(
        "users",
        "reset-password",
        "--email",
        "ana@example.com",
        "--code",
        code,
        "--password-stdin",
        input=NEW_PASSWORD + "\n",
    )
    dead = out.run("cards", "list", "--as-user", "ana", code=4)
    assert "ownCode 7104" in dead.stderr
    out.run("users", "logout", "--username", "ana")
    assert out.run("users", "list") == []
    out.run("users", "login", "--username", "ana", "--password-stdin", input=NEW_PASSWORD + "\n")

    key = stored_key.value
    out.assert_secret_free(key, PASSWORD, NEW_PASSWORD, linking_token)


def test_two_processes_after_expiry_refresh_once(cli_server: str, config_dir: Path) -> None:
    out = Outputs()
    slug = f"cli-r-{uuid.uuid4().hex[:8]}"
    out.run("sandbox", "clients", "create", "--slug", slug, "--save-profile")
    out.run("wallet", "login")
    with _sdk(cli_server) as sdk:
        ana = sdk.sandbox.create_user(slug, "ana", "ana@example.com", PASSWORD).user_id
    out.run("users", "login", "--username", "ana", "--password-stdin", input=PASSWORD + "\n")
    out.run("cards", "issue", "--user-id", ana)

    # both the application token (30 min) and the user token (15 min) expire on the virtual clock
    out.run("sandbox", "clock", "advance", "1860")
    procs = [_spawn(config_dir, cli_server, "cards", "list", "--user-id", ana) for _ in range(2)]
    results = [p.communicate(timeout=60) for p in procs]
    for proc, (stdout, stderr) in zip(procs, results, strict=True):
        out.texts += [stdout, stderr]
        assert proc.returncode == 0, stderr
        assert len(json.loads(stdout)) == 1

    # the user's pair lives in the profile's token store (the SDK's FileTokenStore), not in the index
    store = paysdk.FileTokenStore(wallet_token_path("default"))
    index = user_sessions_path("default").read_text()
    assert "eyJ" not in index
    key = json.loads(index)["sessions"]["ana"]["key"]
    assert key.endswith(f"|app|{slug}|user|username:ana")
    first = store.load(key)
    assert first is not None

    def two_as_ana() -> None:
        procs = [_spawn(config_dir, cli_server, "cards", "list", "--as-user", "ana") for _ in range(2)]
        results = [p.communicate(timeout=60) for p in procs]
        for proc, (stdout, stderr) in zip(procs, results, strict=True):
            out.texts += [stdout, stderr]
            assert proc.returncode == 0, stderr
            assert len(json.loads(stdout)) == 1

    two_as_ana()
    requests = out.run("sandbox", "requests")
    assert _count(requests, "POST", "/rest/auth/refresh") == 1
    assert _count(requests, "POST", "/rest/auth/login") == 1
    assert _count(requests, "POST", "/rest/users/refresh") == 1
    assert all(r["statusCode"] != 401 or r["path"] != "/rest/auth/refresh" for r in requests)
    rotated = store.load(key)
    assert rotated is not None
    assert rotated.refresh_token != first.refresh_token  # saved by the SDK before it was used

    # only the user's token expires now (15 min; the application's refreshed one lasts 30 min): two
    # processes acting as ana refresh it once, with no refused refresh, and the store has the new pair
    out.run("sandbox", "clock", "advance", "960")
    two_as_ana()
    requests = out.run("sandbox", "requests")
    assert _count(requests, "POST", "/rest/users/refresh") == 2
    assert _count(requests, "POST", "/rest/auth/refresh") == 1
    assert all(r["statusCode"] == 200 for r in requests if r["path"] == "/rest/users/refresh")
    latest = store.load(key)
    assert latest is not None
    assert latest.refresh_token not in (first.refresh_token, rotated.refresh_token)
    assert out.run("users", "list")[0]["username"] == "ana"

    stored_key = load_secret(WALLET_KEY, "default")
    assert stored_key is not None
    out.assert_secret_free(stored_key.value, PASSWORD)
