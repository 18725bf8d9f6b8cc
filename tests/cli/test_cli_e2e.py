"""End to end: the ``paysdk`` command against the reference server on a real socket (``live_server``)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from paysdk.testing._ready import READY_TIMEOUT, free_port

from .conftest import TOKEN, run_cli, subprocess_env
from .test_cli_listen import start_listener

pytestmark = pytest.mark.usefixtures("cli_server")


def _json_ok(*args: str) -> Any:
    result = run_cli("-o", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _new_client(*extra: str) -> dict[str, Any]:
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    client: dict[str, Any] = _json_ok(
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
        *extra,
    )
    return client


def test_health_test_cards_clock_and_reset() -> None:
    assert _json_ok("sandbox", "health")["status"] == "ok"
    numbers = [card["number"] for card in _json_ok("sandbox", "test-cards")]
    assert "4242424242424242" in numbers
    assert float(_json_ok("sandbox", "clock", "advance", "3600")["offsetSeconds"]) >= 3600
    assert float(_json_ok("sandbox", "clock", "show")["offsetSeconds"]) >= 3600
    reset = run_cli("sandbox", "reset", "--yes")
    assert reset.exit_code == 0
    assert reset.stdout == ""
    assert float(_json_ok("sandbox", "clock", "show")["offsetSeconds"]) < 60
    assert run_cli("sandbox", "clock", "advance", "soon").exit_code == 2


def test_save_profile_then_links_create_prints_url_then_pay_and_inspect(config_dir: Path) -> None:
    created = run_cli(
        "-o",
        "json",
        "sandbox",
        "clients",
        "create",
        "--slug",
        f"cli-{uuid.uuid4().hex[:8]}",
        "--save-profile",
    )
    assert created.exit_code == 0, created.stderr
    client = json.loads(created.stdout)
    assert client["sandboxToken"] == "****"  # masked, yet stored for the profile
    profiles = json.loads((config_dir / "profiles.json").read_text())["profiles"]
    assert profiles["default"]["client"] == client["slug"]

    table = run_cli(
        "-o", "table", "links", "create", "--amount", "10.50", "--user-id", "+50255555555", "--channel", "wa"
    )
    assert table.exit_code == 0, table.stderr
    assert "/checkout/?orderId=" in table.stdout

    link = _json_ok(
        "links",
        "create",
        "--amount",
        "10.50",
        "--user-id",
        "+50255555555",
        "--channel",
        "wa",
        "--external-id",
        "order-7",
    )
    assert link["URL"].endswith(f"/checkout/?orderId={link['uid']}")
    paid = _json_ok("sandbox", "pay", link["uid"], "--card", "4242 4242 4242 4242")
    assert paid["status"] == "approved"
    transaction = _json_ok("sandbox", "transactions", "show", link["uid"])
    assert transaction["status"] == "approved"
    assert transaction["amount"] == 10.5


def test_alt_process_writes_a_valid_png(tmp_path: Path) -> None:
    _new_client()
    payment = _json_ok("alt", "create", "--amount", "25.00", "--user-id", "+50255555555", "--channel", "web")
    assert set(payment["paymentMethods"]) == {"akisiQR", "pronet"}
    out = tmp_path / "qr.png"
    result = _json_ok("alt", "process", payment["uid"], "--processor", "akisiQR", "--qr-out", str(out))
    assert result["type"] == "base64"
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")

    reference = _json_ok("alt", "process", payment["uid"], "--processor", "pronet")
    assert reference["type"] == "reference"
    assert _json_ok("alt", "intent", payment["uid"], "--processor", "pronet")["status"] == "requires_action"
    assert _json_ok("alt", "dismiss", payment["uid"])["status"] == "dismissed"
    again = run_cli("alt", "dismiss", payment["uid"])
    assert again.exit_code == 6
    assert again.stderr.startswith("Error: HTTP 409")
    simulated = run_cli("sandbox", "simulate", payment["uid"], "--outcome", "paid")
    assert simulated.exit_code == 6  # dismissed: terminal
    assert simulated.stderr.startswith("Error: HTTP 409")


def test_simulate_a_rail_payment_after_alt_intent() -> None:
    _new_client()
    payment = _json_ok("alt", "create", "--amount", "25.00", "--user-id", "+50255555555", "--channel", "web")
    assert _json_ok("alt", "intent", payment["uid"], "--processor", "pronet")["status"] == "requires_action"
    simulated = _json_ok("sandbox", "simulate", payment["uid"], "--outcome", "paid")
    assert simulated == {
        "uid": payment["uid"],
        "status": "approved",
        "outcome": "rail_paid",
        "message": "Paid on pronet.",
    }
    assert _json_ok("sandbox", "transactions", "show", payment["uid"])["status"] == "approved"
    table = run_cli("-o", "table", "sandbox", "simulate", payment["uid"], "--outcome", "expired")
    assert table.exit_code == 6  # approved is terminal

    expiring = _json_ok("alt", "create", "--amount", "5.00", "--user-id", "+50255555555", "--channel", "web")
    table = run_cli("-o", "table", "sandbox", "simulate", expiring["uid"], "--outcome", "expired")
    assert table.exit_code == 0, table.stderr
    assert "expired" in table.stdout


def test_exit_codes_against_the_real_server(monkeypatch: pytest.MonkeyPatch) -> None:
    client = _new_client()
    base = ["links", "create", "--user-id", "+50255555555", "--channel", "wa"]

    unknown = run_cli(*base, "--amount", "5", "--client", "no-such-client")
    assert unknown.exit_code == 6
    assert unknown.stderr.startswith("Error: HTTP 409 ownCode 5004:")
    assert "client:" in unknown.stderr

    out_of_range = run_cli(*base, "--amount", "1000000")
    assert out_of_range.exit_code == 6
    assert "HTTP 400 ownCode 2003" in out_of_range.stderr

    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", TOKEN)  # not this server's token
    unauthorized = run_cli(*base, "--amount", "5")
    assert unauthorized.exit_code == 4
    assert "HTTP 401" in unauthorized.stderr
    monkeypatch.delenv("PAYSDK_MERCHANT_TOKEN")

    fault = _json_ok(
        "sandbox",
        "faults",
        "add",
        "--kind",
        "error",
        "--route",
        "POST /transactions",
        "--count",
        "5",
        "--status",
        "503",
    )
    assert fault["remaining"] == 5
    assert [f["id"] for f in _json_ok("sandbox", "faults", "list")] == [fault["id"]]
    failing = run_cli(*base, "--amount", "5")
    assert failing.exit_code == 7
    assert "HTTP 503" in failing.stderr
    assert run_cli("sandbox", "faults", "clear").exit_code == 0
    assert _json_ok("sandbox", "faults", "list") == []
    assert run_cli(*base, "--amount", "5").exit_code == 0
    assert client["slug"]


def test_unreachable_server_exits_7(monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    result = run_cli("--base-url", f"http://127.0.0.1:{port}", "sandbox", "health")
    assert result.exit_code == 7
    assert result.stderr.startswith(f"Error: could not connect to http://127.0.0.1:{port}: ")


def _wait_for_attempts(uid: str, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        attempts: list[dict[str, Any]] = _json_ok("sandbox", "callbacks", "--uid", uid)
        if len([a for a in attempts if a["statusCode"] == 200]) >= count:
            return attempts
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {count} delivered attempts, got {attempts}")
        time.sleep(0.1)


def test_listen_receives_a_real_callback_and_prints_a_duplicate_once(
    cli_server: str, config_dir: Path
) -> None:
    port = free_port()
    client = _new_client("--callback-url", f"http://127.0.0.1:{port}/callbacks")
    assert (
        _json_ok("sandbox", "faults", "add", "--kind", "duplicate_callback")["kind"] == "duplicate_callback"
    )

    with start_listener(
        config_dir,
        "--sandbox-client",
        client["slug"],
        port=port,
        env={},
        base_url=cli_server,
        global_args=("-o", "json"),
    ) as listener:
        link = _json_ok(
            "links",
            "create",
            "--amount",
            "12.34",
            "--user-id",
            "+50255555555",
            "--channel",
            "wa",
            "--external-id",
            "order-9",
        )
        assert _json_ok("sandbox", "pay", link["uid"], "--card", "4242424242424242")["status"] == "approved"
        attempts = _wait_for_attempts(link["uid"], 2)
        code, out, err = listener.stop()

    assert code == 0, err
    assert len({a["eventId"] for a in attempts}) == 1  # one event, delivered twice
    lines = out.splitlines()
    assert len(lines) == 1, out
    event = json.loads(lines[0])
    assert (event["uid"], event["status"], event["externalId"]) == (link["uid"], "approved", "order-9")
    assert '"amount":12.34' in lines[0]
    assert "duplicate delivery" in err

    table = run_cli("-o", "table", "sandbox", "callbacks", "--uid", link["uid"])
    assert table.exit_code == 0
    assert "200" in table.stdout


@pytest.mark.parametrize("option", ["--body-timeout", "--keep-alive-timeout"])
def test_serve_timeouts_must_be_positive(option: str) -> None:
    result = run_cli("serve", option, "0")
    assert result.exit_code == 2
    assert option in result.output


def test_serve_starts_the_reference_server(config_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    env = subprocess_env(config_dir)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paysdk_cli",
            "serve",
            "--port",
            str(port),
            "--db",
            f"sqlite:///{tmp_path / 's.db'}",
            "--keep-alive-timeout",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + READY_TIMEOUT  # the server's start-up, on a loaded machine too
        while True:
            health = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "paysdk_cli",
                    "--base-url",
                    f"http://127.0.0.1:{port}",
                    "sandbox",
                    "health",
                ],
                capture_output=True,
                text=True,
                env=env,
            )
            if health.returncode == 0 or time.monotonic() > deadline or proc.poll() is not None:
                break
            time.sleep(0.2)
        assert health.returncode == 0, (health.stderr, proc.poll())
        assert json.loads(health.stdout)["environment"] == "sandbox"
        # --keep-alive-timeout reached the server: an idle connection is closed after about 1 s.
        with socket.create_connection(("127.0.0.1", port), timeout=30) as idle:
            started = time.monotonic()
            assert idle.recv(10) == b""
            assert 0.5 < time.monotonic() - started < 20
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=20)
    assert proc.returncode == 0
