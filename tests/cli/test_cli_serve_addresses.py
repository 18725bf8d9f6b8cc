"""``paysdk serve --public-url --allowed-host`` (D90, D91): checked up front, honoured over a real socket."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from paysdk.testing._ready import free_port, wait_ready

from .conftest import run_cli, subprocess_env


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--public-url", "ftp://sandbox.test"], "ftp://sandbox.test"),
        (["--public-url", "http://sandbox.test/?x=1"], "no query"),
        (["--allowed-host", "http://shop.test"], "http://shop.test"),
        (["--allowed-host", "shop.test:8000"], "shop.test:8000"),
    ],
)
def test_malformed_addresses_are_usage_errors(config_dir: Path, args: list[str], named: str) -> None:
    result = run_cli("serve", *args)
    assert result.exit_code == 2
    output = result.stdout + result.stderr
    assert named in output
    assert "Traceback" not in output


def test_public_url_and_allowed_host_over_a_real_socket(config_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    public = "https://sandbox.test:8443"
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
            "--public-url",
            public,
            "--allowed-host",
            "shop.test",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(config_dir),
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            wait_ready(
                lambda: client.get("/_sandbox/health"), what="paysdk serve --allowed-host", process=proc
            )
            created = client.post(
                "/_sandbox/clients", content=b"{}", headers={"Content-Type": "application/json"}
            )
            merchant = created.json()
            link = client.post(
                "/transactions",
                json={"amount": 10, "userId": "+50255550123", "channel": "wa", "client": merchant["slug"]},
                headers={"Authorization": merchant["sandboxToken"], "Host": "shop.test"},
            )
            assert link.status_code == 200, link.text
            assert link.json()["URL"].startswith(f"{public}/checkout/?orderId=")
            assert client.get("/_sandbox/health", headers={"Host": "sandbox.test"}).status_code == 200
            refused = client.get(
                f"/_sandbox/clients/{merchant['slug']}", headers={"Host": "attacker.example"}
            )
            assert refused.status_code == 421
            assert merchant["sandboxToken"] not in refused.text
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=20)
