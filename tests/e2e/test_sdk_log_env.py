"""``PAYSDK_LOG`` turns on the SDK's log for any program using it (a subprocess against the real server),
and the lines never carry a body or a secret: merchant token, keys, application and user JWTs."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

import paysdk
from paysdk import _logging

SQLITE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

PROGRAM = textwrap.dedent(
    """
    import os, secrets
    from decimal import Decimal
    import paysdk

    env = paysdk.Environment.local(os.environ["SERVER"])
    with paysdk.Client(environment=env) as sandbox:
        shop = sandbox.sandbox.create_client()
        tag = secrets.token_hex(3)
        user = sandbox.sandbox.create_user(shop.slug, "ana", f"ana-{tag}@x.io", "password-1")
        sandbox.sandbox.add_fault("error", route="POST /transactions", count=1, status=503)
        with paysdk.Client(shop.sandbox_token, env) as client:
            link = client.payment_links.create(
                amount=Decimal("10.25"), user_id="+50255550123", channel="wa", client=shop.slug
            )
        credentials = paysdk.WalletCredentials(shop.slug, shop.signing_private_key)
        with paysdk.Client(environment=env, wallet=credentials) as wallet:
            wallet.wallet.cards.issue_virtual(user.user_id, alias="secret-alias")
            session = wallet.wallet.users.login("ana", "password-1")
            wallet.wallet.as_user(session).cards.list(user.user_id)
            stored = wallet.wallet.stored_tokens()
        for secret in (
            shop.sandbox_token, shop.production_token, shop.hook_private_key, shop.signing_private_key,
            stored.access_token.reveal(), stored.refresh_token.reveal(),
            session.access_token.reveal(), session.refresh_token.reveal(),
            "password-1", "10.25", "secret-alias", link.uid,
        ):
            print("SECRET", secret)
    """
)


def _run(live_server: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PAYSDK_")}
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        env={**base, "SERVER": live_server, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result


def _secrets(stdout: str) -> list[str]:
    found = [line.split(" ", 1)[1] for line in stdout.splitlines() if line.startswith("SECRET ")]
    assert len(found) == 12
    assert all(found)
    return found


@SQLITE
def test_debug_logs_every_attempt_and_no_secret(live_server: str) -> None:
    result = _run(live_server, PAYSDK_LOG="debug")
    lines = result.stderr.splitlines()
    assert any(" debug paysdk: POST /transactions attempt=1 status=503" in line for line in lines), lines
    assert any(" info paysdk: retrying POST /transactions after attempt 1" in line for line in lines)
    assert any(" debug paysdk: POST /auth/login attempt=1 status=200" in line for line in lines)
    assert any(" debug paysdk: POST /users/login attempt=1 status=200" in line for line in lines)
    assert all(line.startswith("20") and "Z " in line for line in lines), lines  # UTC timestamp first
    for secret in _secrets(result.stdout):
        assert secret not in result.stderr
    assert "eyJ" not in result.stderr  # no JWT at all, whichever


@SQLITE
def test_info_logs_retries_only(live_server: str) -> None:
    result = _run(live_server, PAYSDK_LOG="INFO")
    assert "info paysdk: retrying POST /transactions" in result.stderr
    assert " debug " not in result.stderr


@SQLITE
def test_unset_or_off_logs_nothing(live_server: str) -> None:
    assert _run(live_server).stderr == ""
    assert _run(live_server, PAYSDK_LOG="off").stderr == ""


@pytest.fixture
def fresh_log_setup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``PAYSDK_LOG`` not read yet in this process; the handler removed afterwards."""
    monkeypatch.setattr(_logging, "_env_read", False)
    yield
    _logging.disable_stderr_log()


def test_read_once_at_the_first_client(
    fresh_log_setup: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = paysdk.Environment.local("http://127.0.0.1:9")
    logger = logging.getLogger("paysdk")
    monkeypatch.setenv("PAYSDK_LOG", "debug")
    paysdk.Client(environment=env).close()
    assert logger.level == logging.DEBUG
    handlers = [h for h in logger.handlers if isinstance(h, _logging.StderrHandler)]
    assert len(handlers) == 1
    monkeypatch.setenv("PAYSDK_LOG", "off")
    paysdk.Client(environment=env).close()  # not read again: still on, still one handler
    assert [h for h in logger.handlers if isinstance(h, _logging.StderrHandler)] == handlers
    logger.debug("GET /x attempt=1")
    assert "debug paysdk: GET /x attempt=1" in capsys.readouterr().err


def test_unknown_value_warns_and_logs_nothing(fresh_log_setup: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYSDK_LOG", "verbose")
    with pytest.warns(RuntimeWarning, match="PAYSDK_LOG='verbose' is ignored: use debug, info or off"):
        paysdk.Client(environment=paysdk.Environment.local("http://127.0.0.1:9")).close()
    assert not any(isinstance(h, _logging.StderrHandler) for h in logging.getLogger("paysdk").handlers)
