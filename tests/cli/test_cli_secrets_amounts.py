"""Issue 21, item 12, against the reference server on a real socket: secrets never in a table, one way
to write an amount (options as CSV cells), voided payments without settlement dates, batch summaries that
count replays apart, one line per callback delivery at 80 columns, and no empty error message."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")

TERMINAL = ("--currency", "GTQ", "--terminal-id", "POS-7", "--card", "4242424242424242")
LINK = ("links", "create", "--user-id", "+50255555555", "--channel", "wa")


def _json(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Any:
    result = run_cli("-o", "json", *args, input=input, env=env)
    assert result.exit_code == 0, (args, result.stderr)
    return json.loads(result.stdout) if result.stdout.strip() else None


def _client() -> str:
    slug = f"cli-s-{uuid.uuid4().hex[:8]}"
    _json("sandbox", "clients", "create", "--slug", slug, "--save-profile")
    return slug


@pytest.mark.parametrize("amount", ["1e3", "1_000", "+5", "1.5E2", "١٠"])
def test_an_amount_option_is_written_as_a_csv_cell(amount: str, tmp_path: Path) -> None:
    """``Decimal()`` takes all of these; the CSV refuses them, and so does every amount option (D431)."""
    _client()
    for args in ([*LINK, "--amount", amount], ["terminal", "create", "--amount", amount, *TERMINAL]):
        result = run_cli(*args)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        assert "--amount" in result.stderr
        assert "must be digits with decimals (no sign, spaces or exponent)" in result.stderr, result.stderr
    data = tmp_path / "charges.csv"
    data.write_text(f"subscriptionId,amount,reference\nsub_1,{amount},r-1\n", encoding="utf-8")
    csv_result = run_cli("charges", "upload", str(data), "--validate-only")
    assert csv_result.exit_code == 2, csv_result.stderr
    assert "row 2: amount: must be digits with at most 2 decimals (no sign, spaces or exponent)" in (
        csv_result.stderr
    )
    assert _json("terminal", "create", "--amount", "1000", *TERMINAL)["amount"] == 1000  # the plain form


# ------------------------------------------------------------------------------------------ secrets


def test_a_generated_operator_password_is_never_in_a_table(config_dir: Path) -> None:
    """D432: the table has no password column; --show-secrets prints it once on a labelled line after
    the table; with neither --show-secrets nor --save-profile nothing is created (it would be lost)."""
    _client()
    base = ("sandbox", "backoffice", "operator", "create")
    refused = run_cli(*base, "--email", "lost@acme.example")
    assert refused.exit_code == 2
    assert "--show-secrets" in refused.stderr
    assert _json("sandbox", "backoffice", "operator", "list") == []  # nothing was created

    table = run_cli("-o", "table", *base, "--email", "ops@acme.example", "--show-secrets")
    assert table.exit_code == 0, table.stderr
    lines = table.stdout.splitlines()
    label = "Generated password of ops@acme.example (shown once): "
    shown = [line for line in lines if line.startswith(label)]
    assert len(shown) == 1, table.stdout
    password = shown[0][len(label) :]
    assert len(password) >= 12
    assert table.stdout.count(password) == 1  # once: not in the table above it
    assert not any(line.startswith("password") for line in lines)

    saved = run_cli("-o", "table", *base, "--email", "kept@acme.example", "--save-profile")
    assert saved.exit_code == 0, saved.stderr
    assert "password" not in saved.stdout.lower()
    assert _json(*base, "--email", "json@acme.example", "--save-profile")["password"] == "****"
    assert len(_json(*base, "--email", "json2@acme.example", "--show-secrets")["password"]) >= 12


def test_the_saved_signing_key_is_exported_only_on_request() -> None:
    """D433: `wallet export-key --show-secrets` prints the key `--save-profile` stored (and nothing else
    on stdout); without --show-secrets it prints nothing; the exported key logs in."""
    slug = f"cli-s-{uuid.uuid4().hex[:8]}"
    created = _json("sandbox", "clients", "create", "--slug", slug, "--save-profile", "--show-secrets")
    key = created["signingPrivateKey"]
    assert key not in {None, "****"}

    asked = run_cli("wallet", "export-key")
    assert asked.exit_code == 2
    assert asked.stdout == ""
    assert "--show-secrets" in asked.stderr
    exported = run_cli("wallet", "export-key", "--show-secrets")
    assert exported.exit_code == 0, exported.stderr
    assert exported.stdout == key.strip() + "\n"
    assert key not in exported.stderr
    as_json = run_cli("-o", "json", "wallet", "export-key", "--show-secrets")
    assert as_json.stdout == exported.stdout  # a key file, not a JSON document
    assert run_cli("wallet", "login", "--key-stdin", input=exported.stdout).exit_code == 0
    assert run_cli("--profile", "other", "wallet", "export-key", "--show-secrets").exit_code == 4


def test_show_secrets_shows_what_its_help_promises() -> None:
    """Every command with --show-secrets, with -o json: each secret its help names is there in clear."""
    from paysdk_cli.commands.sandbox.clients import CLIENT_SECRETS

    slug = f"cli-s-{uuid.uuid4().hex[:8]}"
    created = _json("sandbox", "clients", "create", "--slug", slug, "--save-profile", "--show-secrets")
    for name in CLIENT_SECRETS:  # tokens, hook private key, callback header value, signing key
        assert created.get(name) not in {None, "****"}, (name, created)
    masked = _json("sandbox", "clients", "create", "--slug", f"{slug}-m")
    assert all(masked.get(name) in {None, "****"} for name in CLIENT_SECRETS)
    shown = _json("sandbox", "clients", "show", slug, "--show-secrets")
    for name in ("sandboxToken", "productionToken", "callbackHeaderValue"):
        assert shown.get(name) == created[name], (name, shown)
    # the server keeps no hook private key nor signing key: `show`'s help does not promise them
    help_text = " ".join(run_cli("sandbox", "clients", "show", "--help").stdout.split())
    assert "tokens and the callback header value" in help_text, help_text
    assert "answered only by `clients create`" in help_text, help_text
    keys = _json("sandbox", "clients", "rotate-keys", slug, "--show-secrets")
    assert keys["privateKey"] not in {None, "****"}
    token = _json(
        "sandbox",
        "linking-tokens",
        "create",
        "--pan",
        "4111111111111111",
        "--expiry",
        "12/30",
        "--show-secrets",
    )
    assert token["token"] not in {None, "****"}
    secret = _json("sandbox", "processor", "secret", "--show-secrets")
    assert secret["secret"] not in {None, "****"}


# ------------------------------------------------------------------------------------------ callbacks


@pytest.fixture
def resetting_sink() -> Any:
    """A callback URL whose server reads the request and resets the connection: the delivering client
    gets ``httpx.ReadError`` with an empty message."""
    import socket
    import struct
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/callbacks"
    stop.set()
    listener.close()
    thread.join(timeout=5)


def test_28_deliveries_fit_a_screen_at_80_columns_and_no_error_is_empty(resetting_sink: str) -> None:
    """D434, D435: one line per delivery at 80 columns; a ReadError without text says what happened."""
    import time

    slug = f"cli-s-{uuid.uuid4().hex[:8]}"
    _json("sandbox", "clients", "create", "--slug", slug, "--callback-url", resetting_sink, "--save-profile")
    uids = []
    for _ in range(28):
        link = _json(*LINK, "--amount", "10.50")
        _json("sandbox", "pay", link["uid"], "--card", "4242424242424242")
        uids.append(link["uid"])
    deadline = time.monotonic() + 60
    while len(attempts := _json("sandbox", "callbacks")) < 28:
        assert time.monotonic() < deadline, attempts
        time.sleep(0.1)
    errors = {a["error"] for a in attempts}
    assert errors == {"ReadError: the connection failed or was closed while the answer was being read"}

    result = run_cli("-o", "table", "sandbox", "callbacks", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    rule = next(n for n, line in enumerate(lines) if line.strip() and set(line.strip()) == {"─"})
    assert lines[rule - 1].split()[:3] == ["uid", "try", "result"]
    body = [line for line in lines[rule + 1 :] if line.strip()]
    assert len(body) == len(attempts) >= 28  # one line per delivery
    assert all(len(line) <= 80 for line in lines[rule - 1 :])
    assert {line.split()[0] for line in body} == set(uids)
    assert all(line.split()[2] == "ReadError" for line in body)
    assert rule + 1 + len(body) <= 2 + 28 + 4  # title, blank, header, rule: 28 deliveries in a screen


def test_an_exception_without_text_prints_its_class_and_a_sentence() -> None:
    import httpx

    from paysdk._describe import exception_text

    assert exception_text(httpx.ReadError("")) == (
        "ReadError: the connection failed or was closed while the answer was being read"
    )
    assert exception_text(KeyError()) == "KeyError: it carried no message"
    assert exception_text(ValueError("bad")) == "ValueError: bad"
