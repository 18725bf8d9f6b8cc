"""The control token (D270-D276): ``paysdk serve`` on a non-loopback address guards ``/_sandbox``.

Every server here is a real ``paysdk serve`` subprocess on a free port, bound as the test says and reached
through 127.0.0.1: the rule follows the address the server binds, not the caller's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from paysdk.server.control_token import (
    ControlPlaneAccess,
    ControlTokenRefused,
    control_token_digest,
    is_loopback_host,
    startup_control_token,
)
from paysdk.testing._ready import free_port, http_ok, wait_ready

HEADER = "Paysdk-Control-Token"
TOKEN = "team-sandbox-7f3c9a1e5b2d4c86"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYSDK_")}
    env["PAYSDK_CONFIG_DIR"] = str(tmp_path / "config")
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    env.update(extra)
    return env


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str
    stderr_lines: list[str]

    def stop(self) -> str:
        """Stop the server (SIGINT) and return everything it wrote to stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(2)
        _, rest = self.proc.communicate(timeout=30)
        return "".join(self.stderr_lines) + rest


def _start(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Served:
    """``paysdk serve ARGS --port P --db ...``, waited on until ``/_sandbox/health`` answers."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paysdk_cli",
            "serve",
            *args,
            "--port",
            str(port),
            "--db",
            f"sqlite:///{tmp_path / f'ctl-{port}.db'}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else _env(tmp_path),
    )
    served = Served(proc, f"http://127.0.0.1:{port}", [])
    wait_ready(http_ok(served.url + "/_sandbox/health"), what="paysdk serve", process=proc)
    return served


@pytest.fixture
def exposed(tmp_path: Path) -> Iterator[Served]:
    """A server bound to 0.0.0.0 with the control token from ``PAYSDK_CONTROL_TOKEN``."""
    served = _start(tmp_path, "--host", "0.0.0.0", env=_env(tmp_path, PAYSDK_CONTROL_TOKEN=TOKEN))
    try:
        yield served
    finally:
        served.stop()


def _refusal(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"ownCode", "message", "details"}
    assert HEADER in body["message"]
    assert [d["field"] for d in body["details"]] == [HEADER]
    assert TOKEN not in response.text


def test_exposed_server_refuses_control_calls_without_the_right_token(exposed: Served) -> None:
    good = {HEADER: TOKEN}
    with httpx.Client(base_url=exposed.url, timeout=10) as http:
        assert http.get("/_sandbox/health").status_code == 200  # the readiness probe stays open (D274)
        created = http.post("/_sandbox/clients", json={"slug": "acme"}, headers=good)
        assert created.status_code == 201, created.text
        before = http.post("/_sandbox/clients/acme/reveal", headers=good).json()

        wrong_ways: list[tuple[dict[str, str], int]] = [
            ({}, 401),
            ({HEADER: "not-the-token"}, 403),
            ({HEADER: TOKEN[:-1]}, 403),
            ({HEADER: ""}, 401),
            ({"Authorization": f"Bearer {TOKEN}"}, 401),
            ({"Authorization": TOKEN}, 401),
            ({"X-Control-Token": TOKEN}, 401),
        ]
        for headers, status in wrong_ways:
            _refusal(http.post("/_sandbox/reset", headers=headers), status)
            _refusal(http.post("/_sandbox/clients", json={"slug": "intruder"}, headers=headers), status)
            _refusal(http.get("/_sandbox/clients/acme", headers=headers), status)
            _refusal(http.post("/_sandbox/clients/acme/reveal", headers=headers), status)
            _refusal(http.get("/_sandbox/processor", headers=headers), status)
            _refusal(http.post("/_sandbox/clock/advance", json={"seconds": 3600}, headers=headers), status)
            _refusal(
                http.post("/_sandbox/faults", json={"kind": "error", "route": "*"}, headers=headers), status
            )
            _refusal(http.get("/_sandbox/requests", headers=headers), status)

        # Nothing changed: no reset, no intruder, the clock where it was, no fault.
        assert http.post("/_sandbox/clients/acme/reveal", headers=good).json() == before
        assert http.get("/_sandbox/clients/intruder", headers=good).status_code == 404
        assert http.get("/_sandbox/clock", headers=good).json()["offsetSeconds"] == 0
        assert http.get("/_sandbox/faults", headers=good).json() == []

        # The right token works, reset included.
        assert http.post("/_sandbox/reset", headers=good).json() == {"status": "reset"}
        assert http.get("/_sandbox/clients/acme", headers=good).status_code == 404
    log = exposed.stop()
    assert TOKEN not in log


def test_exposed_server_masks_rereads_and_reveals_with_the_token(exposed: Served) -> None:
    good = {HEADER: TOKEN}
    with httpx.Client(base_url=exposed.url, timeout=10) as http:
        created = http.post(
            "/_sandbox/clients", json={"slug": "acme", "callbackHeaderValue": "cb-secret-1234"}, headers=good
        ).json()
        assert len(created["sandboxToken"]) == 64  # the create answers them in full, once
        assert created["callbackHeaderValue"] == "cb-secret-1234"

        reread = http.get("/_sandbox/clients/acme", headers=good).json()
        for field in ("sandboxToken", "productionToken", "callbackHeaderValue", "hookPrivateKey"):
            assert reread[field] == "****", field
        assert created["sandboxToken"] not in http.get("/_sandbox/clients/acme", headers=good).text
        assert reread["slug"] == "acme"
        assert reread["hookPublicKey"] == created["hookPublicKey"]

        revealed = http.post("/_sandbox/clients/acme/reveal", headers=good).json()
        for field in ("sandboxToken", "productionToken", "callbackHeaderValue"):
            assert revealed[field] == created[field], field
        assert revealed["hookPrivateKey"] == "****"  # only its hash is kept
        assert http.post("/_sandbox/clients/nope/reveal", headers=good).status_code == 404

        # The revealed token works on the public API.
        link = http.post(
            "/transactions",
            json={"amount": 10, "userId": "+50255550123", "channel": "wa", "client": "acme"},
            headers={"Authorization": revealed["sandboxToken"]},
        )
        assert link.status_code == 200, link.text

        processor = http.get("/_sandbox/processor", headers=good).json()
        assert processor["secret"] == "****"
        secret = http.post("/_sandbox/processor/reveal", headers=good).json()["secret"]
        assert secret.startswith("psec_")
        assert len(secret) == 69
        assert http.get("/_sandbox/processor", headers=good).json()["secret"] == "****"


def test_non_loopback_start_without_a_token_is_refused(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "::"):
        done = subprocess.run(
            [sys.executable, "-m", "paysdk_cli", "serve", "--host", host, "--port", str(free_port())],
            capture_output=True,
            text=True,
            env=_env(tmp_path),
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        for way in (
            "--control-token",
            "PAYSDK_CONTROL_TOKEN",
            "--generate-control-token",
            "--insecure-control-plane",
        ):
            assert way in lines[0]
        assert host in lines[0]
        assert "Traceback" not in done.stderr


def test_insecure_control_plane_starts_with_a_warning(tmp_path: Path) -> None:
    served = _start(tmp_path, "--host", "0.0.0.0", "--insecure-control-plane")
    try:
        with httpx.Client(base_url=served.url, timeout=10) as http:
            created = http.post("/_sandbox/clients", json={"slug": "acme"})
            assert created.status_code == 201  # open: no token was given
            assert http.get("/_sandbox/clients/acme").json()["sandboxToken"] == "****"  # still masked
            revealed = http.post("/_sandbox/clients/acme/reveal").json()
            assert revealed["sandboxToken"] == created.json()["sandboxToken"]
    finally:
        log = served.stop()
    warnings = [line for line in log.splitlines() if line.startswith("WARNING:")]
    assert len(warnings) == 1
    assert "--insecure-control-plane" in warnings[0]
    assert "0.0.0.0" in warnings[0]


def test_generated_control_token_is_printed_once_and_works(tmp_path: Path) -> None:
    served = _start(tmp_path, "--host", "0.0.0.0", "--generate-control-token")
    try:
        assert served.proc.stderr is not None
        line = served.proc.stderr.readline()  # printed before the server starts
        served.stderr_lines.append(line)
        assert line.startswith("Control token (shown once;"), line
        token = line.rsplit(": ", 1)[1].strip()
        assert len(token) >= 40
        with httpx.Client(base_url=served.url, timeout=10) as http:
            assert http.post("/_sandbox/reset").status_code == 401
            assert http.post("/_sandbox/reset", headers={HEADER: token}).status_code == 200
    finally:
        log = served.stop()
    assert log.count(token) == 1
    out = served.proc.stdout.read() if served.proc.stdout and not served.proc.stdout.closed else ""
    assert token not in (out or "")


def test_generate_and_a_given_token_together_are_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "paysdk_cli",
            "serve",
            "--generate-control-token",
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path, PAYSDK_CONTROL_TOKEN=TOKEN),
        timeout=60,
    )
    assert done.returncode == 2
    assert "--generate-control-token" in done.stderr
    assert TOKEN not in done.stderr


def test_loopback_is_unchanged(tmp_path: Path) -> None:
    served = _start(tmp_path)  # the default --host 127.0.0.1, no token anywhere
    try:
        with httpx.Client(base_url=served.url, timeout=10) as http:
            created = http.post("/_sandbox/clients", json={"slug": "acme"}).json()
            again = http.get("/_sandbox/clients/acme").json()
            assert again["sandboxToken"] == created["sandboxToken"]
            assert again["callbackHeaderValue"] == created["callbackHeaderValue"]
            assert http.get("/_sandbox/processor").json()["secret"].startswith("psec_")
            assert http.post("/_sandbox/reset").status_code == 200
    finally:
        log = served.stop()
    assert "WARNING" not in log
    assert "Control token" not in log


async def test_loopback_with_a_token_requires_it_everywhere(tmp_path: Path) -> None:
    from paysdk.server import create_app

    app = create_app(
        f"sqlite:///{tmp_path / 'loop.db'}",
        start_ticker=False,
        control_token_digest=control_token_digest(TOKEN),
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        assert (await http.post("/_sandbox/clients", json={})).status_code == 401
        created = await http.post("/_sandbox/clients", json={"slug": "acme"}, headers={HEADER: TOKEN})
        reread: dict[str, Any] = (await http.get("/_sandbox/clients/acme", headers={HEADER: TOKEN})).json()
        assert reread["sandboxToken"] == created.json()["sandboxToken"]  # loopback: not masked
        assert (await http.get("/_sandbox/health")).status_code == 200
        # The scenarios' built-in receiver takes the server's own callbacks, which carry no token (D707);
        # running a scenario needs it.
        assert (await http.post("/_sandbox/scenarios/sink", json={"status": "approved"})).status_code == 200
        assert (await http.post("/_sandbox/scenarios/payment-approved/run", json={})).status_code == 401
        # The public API never needs it.
        link = await http.post(
            "/transactions",
            json={"amount": 10, "userId": "+50255550123", "channel": "wa", "client": "acme"},
            headers={"Authorization": reread["sandboxToken"]},
        )
        assert link.status_code == 200, link.text


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("10.0.0.5", False),
        ("sandbox.example", False),
    ],
)
def test_which_binds_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_access_checks_the_digest_shape() -> None:
    with pytest.raises(ValueError, match="SHA-256"):
        ControlPlaneAccess(b"short")
    with pytest.raises(ValueError, match="empty"):
        control_token_digest("  ")


def test_python_m_paysdk_server_applies_the_same_rule(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "paysdk.server", "--host", "0.0.0.0", "--port", str(free_port())],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 2
    assert "--insecure-control-plane" in done.stderr
    assert "--generate-control-token" in done.stderr


def test_startup_rule_in_process() -> None:
    assert startup_control_token("127.0.0.1", None, environ={}) == (None, [])
    assert startup_control_token("0.0.0.0", " given ", environ={}) == ("given", [])
    assert startup_control_token("0.0.0.0", None, environ={"PAYSDK_CONTROL_TOKEN": TOKEN}) == (TOKEN, [])
    token, lines = startup_control_token("localhost", None, generate=True, environ={})
    assert token is not None
    assert lines == [line for line in lines if token in line]
    assert len(lines) == 1
    with pytest.raises(ControlTokenRefused, match="not both"):
        startup_control_token("0.0.0.0", "x", generate=True, environ={})
    with pytest.raises(ControlTokenRefused, match="empty"):
        startup_control_token("0.0.0.0", "  ", environ={})
    insecure_token, warned = startup_control_token("192.168.1.20", None, insecure=True, environ={})
    assert insecure_token is None
    assert warned[0].startswith("WARNING:")
