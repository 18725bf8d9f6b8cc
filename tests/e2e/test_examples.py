"""Every script under examples/, and every Python snippet of the README, runs against the reference server,
as CI runs them: under ``python -X dev -W error::ResourceWarning``, so a client or socket left open fails
(issue 7.14)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import paysdk
from paysdk.testing._ready import free_port, http_ok, wait_ready

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
#: Python in development mode, a ResourceWarning (an unclosed client, socket or file) an error.
PYTHON_DEV = [sys.executable, "-X", "dev", "-W", "error::ResourceWarning"]


def _python(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*PYTHON_DEV, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    # A ResourceWarning raised in a finalizer is printed ("Exception ignored in ..."), not propagated.
    assert "ResourceWarning" not in result.stderr, result.stderr
    return result


def _run(script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return _python([str(ROOT / "examples" / script), *args], env)


def _merchant_env(live_server: str, **fields: object) -> tuple[dict[str, str], paysdk.Client]:
    sandbox = paysdk.Client(environment=paysdk.Environment.local(live_server))
    merchant = sandbox.sandbox.create_client(**fields)  # type: ignore[arg-type]
    env = {
        "PAYSDK_BASE_URL": live_server,
        "PAYSDK_MERCHANT_TOKEN": merchant.sandbox_token,
        "PAYSDK_CLIENT": merchant.slug,
    }
    return env, sandbox


def test_quickstart(live_server: str) -> None:
    env, sandbox = _merchant_env(live_server)
    out = _run("quickstart.py", env).stdout
    uid = out.split("uid=")[1].split()[0]
    assert f"checkout={live_server}/checkout/?orderId={uid}" in out
    assert sandbox.sandbox.transaction(uid).amount == paysdk._json.loads(b"125.50")
    assert env["PAYSDK_MERCHANT_TOKEN"] not in out


def test_async_qr_payment(live_server: str, tmp_path: Path) -> None:
    env, _ = _merchant_env(live_server)
    target = tmp_path / "qr.png"
    out = _run("async_qr_payment.py", env, str(target)).stdout
    assert "akisiQR" in out
    assert target.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_sandbox_in_your_tests(live_server: str) -> None:
    out = _run("sandbox_in_your_tests.py", {"PAYSDK_BASE_URL": live_server}).stdout
    assert ": approved" in out


def test_fastapi_receiver_processes_each_event_once(live_server: str, tmp_path: Path) -> None:
    port = free_port()
    header_value = "receiver-secret-" + os.urandom(8).hex()
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = {
        key: value for key, value in os.environ.items() if key not in ("PAYSDK_CALLBACK_DB", "XDG_DATA_HOME")
    }
    # As its docstring says to run it: uvicorn --factory, from another working directory.
    receiver = subprocess.Popen(
        [
            *PYTHON_DEV,
            "-m",
            "uvicorn",
            "--factory",
            "examples.callback_receiver_fastapi:create_app",
            "--app-dir",
            str(ROOT),
            "--port",
            str(port),
        ],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**env, "PAYSDK_CALLBACK_HEADER_VALUE": header_value, "XDG_DATA_HOME": str(tmp_path / "data")},
    )
    try:
        wait_ready(
            http_ok(f"http://127.0.0.1:{port}/", any_status=True), what="the receiver", process=receiver
        )
        env, sandbox = _merchant_env(
            live_server,
            callback_url=f"http://127.0.0.1:{port}/callbacks/paysdk",
            callback_header_value=header_value,
        )
        sandbox.sandbox.add_fault("duplicate_callback", count=1)
        with paysdk.Client(env["PAYSDK_MERCHANT_TOKEN"], paysdk.Environment.local(live_server)) as client:
            link = client.payment_links.create(
                amount=10, user_id="+50255550123", channel="wa", client=env["PAYSDK_CLIENT"]
            )
        sandbox.sandbox.pay(link.uid, "4242424242424242")
        deadline = time.monotonic() + 15
        while len(attempts := sandbox.sandbox.callbacks(link.uid)) < 2:
            assert time.monotonic() < deadline, attempts
            time.sleep(0.1)
        assert {a.status_code for a in attempts} == {200}
        assert len({a.event_id for a in attempts}) == 1
    finally:
        receiver.terminate()
        output, _ = receiver.communicate(timeout=10)
    # Logged once (the duplicate was not processed), visible under uvicorn.
    assert output.count(f"callback_receiver: {link.reference} approved") == 1, output
    assert output.count(link.reference) == 1, output
    assert header_value not in output
    assert "ResourceWarning" not in output, output
    # The store is in the user data directory, nothing in the working directory.
    assert (tmp_path / "data" / "paysdk" / "callbacks.sqlite3").is_file()
    assert list(workdir.iterdir()) == []


def test_wallet_cards(live_server: str) -> None:
    sandbox = paysdk.Client(environment=paysdk.Environment.local(live_server))
    merchant = sandbox.sandbox.create_client()
    user = sandbox.sandbox.create_user(merchant.slug, "ana", "ana@example.com", "a-long-password")
    assert merchant.signing_private_key is not None
    env = {
        "PAYSDK_BASE_URL": live_server,
        "PAYSDK_WALLET_MERCHANT": merchant.slug,
        "PAYSDK_WALLET_PRIVATE_KEY": merchant.signing_private_key,
        "PAYSDK_WALLET_USER_ID": user.user_id,
    }
    out = _run("wallet_cards.py", env).stdout
    assert "balance 100.0001" in out
    assert "overdraw refused: HTTP 422 ownCode 7303" in out
    assert "main 60.0000, savings 40.0001" in out
    assert merchant.signing_private_key not in out


def test_terminal_payment(live_server: str) -> None:
    env, sandbox = _merchant_env(live_server)
    with sandbox:
        out = _run("terminal_payment.py", env).stdout
    assert "status=authorized" in out
    assert "status=captured captured=72.50" in out
    assert "refund refused before settlement" in out
    assert "status=paid_out" in out
    assert "status=paid_out refunded=12.50" in out


def test_reconciliation(live_server: str) -> None:
    env, sandbox = _merchant_env(live_server)
    with sandbox:
        out = _run("reconciliation.py", env).stdout
    assert out.count("notification applied=True status=settled") == 2
    assert "same notification again applied=False code=duplicate" in out
    assert "matched=1 mismatch=1 unknown=1" in out
    assert "expected 30.50, file says 30.00" in out


def test_readme_python_snippets(live_server: str, tmp_path: Path) -> None:
    """The README's snippets as a reader runs them: ``"..."`` is the merchant token, the local address is
    the live server's, and the names the README leaves to the reader are set first (:data:`given`)."""
    with paysdk.Client(environment=paysdk.Environment.local(live_server)) as sandbox:
        merchant = sandbox.sandbox.create_client(slug="my-store")
        assert merchant.signing_private_key is not None
        password = "a-long-password"
        user = sandbox.sandbox.create_user(merchant.slug, "ana", "ana@example.com", password)
    wallet = paysdk.WalletCredentials(merchant=merchant.slug, private_key=merchant.signing_private_key)
    with paysdk.Client(environment=paysdk.Environment.local(live_server), wallet=wallet) as issuer:
        other_card = issuer.wallet.cards.issue_virtual(user.user_id)
    given = {
        "signing_key": merchant.signing_private_key,
        "user_id": user.user_id,
        "password": password,
        "other_card_id": other_card.card_id,
    }
    readme = (ROOT / "README.md").read_text()
    snippets = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert len(snippets) >= 2
    prelude = "from decimal import Decimal\nimport paysdk\n" + "".join(
        f"{name} = {value!r}\n" for name, value in given.items()
    )
    outputs = []
    for snippet in snippets:
        code = snippet.replace('"..."', repr(merchant.sandbox_token)).replace(
            "http://127.0.0.1:8000", live_server
        )
        outputs.append(_python(["-c", prelude + code], {"PAYSDK_BASE_URL": live_server}, tmp_path).stdout)
    assert all(merchant.sandbox_token not in out for out in outputs)
    url, error = outputs[0].splitlines()
    assert url.startswith(f"{live_server}/checkout/?orderId=")
    assert error == "400 2003"  # as the README's comment says


def test_batch_charges(live_server: str) -> None:
    out = _run("batch_charges.py", {"PAYSDK_BASE_URL": live_server}).stdout
    assert "charged 3, declined 1, refused 0" in out
    assert "uploaded again: 3 charged rows answered with their earlier charge: True" in out
    assert out.count(": charged sch_") == 3
    assert "30.50" in out


def test_onboarding(live_server: str) -> None:
    env, sandbox = _merchant_env(live_server)
    out = _run("onboarding.py", env).stdout
    lead_id = out.split("lead=")[1].split()[0]
    assert out.count("document=") == 3
    slug = out.split("approved: client=")[1].split()[0]
    uid = out.split("first payment link: uid=")[1].split()[0]
    held = sandbox.sandbox.leads.get(lead_id)
    assert (held.status, held.client_slug, len(held.documents)) == ("approved", slug, 3)
    assert sandbox.sandbox.transaction(uid).amount == paysdk._json.loads(b"25.00")
    assert env["PAYSDK_MERCHANT_TOKEN"] not in out
    sandbox.close()
