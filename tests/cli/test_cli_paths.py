"""Paths the CLI accepts: ``~`` expands everywhere (HOME is a temporary directory here), and
``alt process --qr-out`` is checked before the payment is processed, against the reference server."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

import paysdk
from paysdk.server.db import Database, normalize_database_url

from .conftest import run_cli


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME is an empty temporary directory, and the working directory another one (to see a stray
    literal ``~`` directory)."""
    directory = tmp_path / "home"
    directory.mkdir()
    monkeypatch.setenv("HOME", str(directory))
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    return directory


def _json_ok(*args: str, input: str | None = None) -> Any:
    result = run_cli("-o", "json", *args, input=input)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


def _alt_payment() -> str:
    slug = f"cli-p-{uuid.uuid4().hex[:8]}"
    _json_ok(
        "sandbox",
        "clients",
        "create",
        "--slug",
        slug,
        "--payment-method",
        "akisiQR",
        "--payment-method",
        "pronet",
        "--save-profile",
    )
    created = _json_ok("alt", "create", "--amount", "25.00", "--user-id", "+50255555555", "--channel", "web")
    uid: str = created["uid"]
    return uid


def _processed(base_url: str, uid: str) -> tuple[str | None, int]:
    """The transaction's recorded rail and how many process calls the server received for it."""
    with paysdk.Client(environment=paysdk.Environment.local(base_url)) as sdk:
        processor = sdk.sandbox.transaction(uid).processor
        calls = sum(
            1 for r in sdk.sandbox.requests() if r.method == "POST" and r.path.endswith(f"/{uid}/payments")
        )
    return processor, calls


@pytest.mark.usefixtures("home")
def test_bad_qr_out_is_refused_before_the_payment_is_processed(cli_server: str, tmp_path: Path) -> None:
    uid = _alt_payment()
    cases = {
        "missing directory": ["--processor", "akisiQR", "--qr-out", str(tmp_path / "no-such-dir" / "qr.png")],
        "a directory": ["--processor", "akisiQR", "--qr-out", "~"],
        "a rail without an image": ["--processor", "pronet", "--qr-out", "qr.png"],
    }
    for name, args in cases.items():
        result = run_cli("alt", "process", uid, *args)
        assert result.exit_code == 2, (name, result.stderr)
        assert "--qr-out" in result.stderr, (name, result.stderr)
        assert "Traceback" not in result.stderr
        assert result.stdout == ""
    assert "does not exist" in run_cli("alt", "process", uid, *cases["missing directory"]).stderr
    assert "is a directory" in run_cli("alt", "process", uid, *cases["a directory"]).stderr
    assert "'pronet'" in run_cli("alt", "process", uid, *cases["a rail without an image"]).stderr
    # nothing reached the server: the transaction is still unprocessed, and no file was left behind
    assert _processed(cli_server, uid) == (None, 0)
    assert not Path("qr.png").exists()

    # a good path (with ~) then processes it once and leaves only the PNG in the directory
    result = _json_ok("alt", "process", uid, "--processor", "akisiQR", "--qr-out", "~/qr.png")
    png = Path.home() / "qr.png"
    assert result["file"] == str(png)
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert sorted(p.name for p in Path.home().iterdir()) == ["qr.png"]
    assert _processed(cli_server, uid) == ("akisiQR", 1)


def test_tilde_expands_in_key_file_dedup_db_header_file_and_config_dir(
    cli_server: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYSDK_CONFIG_DIR", "~/paysdk-config")
    slug = f"cli-t-{uuid.uuid4().hex[:8]}"
    client = _json_ok("sandbox", "clients", "create", "--slug", slug, "--show-secrets")
    (home / "wallet.key").write_text(client["signingPrivateKey"] + "\n")
    (home / "wallet.key").chmod(0o600)
    login = _json_ok("wallet", "login", "--merchant", slug, "--key-file", "~/wallet.key")
    assert login["merchant"] == slug
    assert (home / "paysdk-config" / "profiles.json").is_file()  # the config dir from the env var
    assert json.loads((home / "paysdk-config" / "profiles.json").read_text())["profiles"]["default"] == {
        "merchant": slug
    }

    (home / "values.txt").write_text("cb-value-1\n")
    listened = run_cli(
        "callbacks",
        "listen",
        "--port",
        "0",
        "--header-value-file",
        "~/values.txt",
        "--dedup-db",
        "~/events.sqlite",
        "--timeout",
        "0.2",
    )
    assert listened.exit_code == 0, listened.stderr
    assert f"file {home / 'events.sqlite'}" in listened.stderr
    assert (home / "events.sqlite").is_file()
    assert not Path("~").exists()  # no directory literally named ~ in the working directory


def test_serve_db_url_expands_tilde(home: Path) -> None:
    assert normalize_database_url("sqlite:///~/data/sandbox.db") == f"sqlite:///{home}/data/sandbox.db"
    assert normalize_database_url("sqlite:///~/x.db?timeout=5") == f"sqlite:///{home}/x.db?timeout=5"
    assert normalize_database_url("sqlite:///relative.db") == "sqlite:///relative.db"
    database = Database("sqlite:///~/data/sandbox.db")
    try:
        database.create_schema()
    finally:
        database.engine.dispose()
    assert (home / "data" / "sandbox.db").is_file()
    assert not Path("~").exists()
