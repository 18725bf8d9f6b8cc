"""``PAYSDK_LOG`` works for the CLI as for any SDK program (the one mechanism of ``paysdk._logging``)."""

from __future__ import annotations

import pytest

from .conftest import TOKEN, MockAPI, run_cli

LINK = [
    *("links", "create", "--amount", "10.50", "--user-id", "+50255555555"),
    *("--channel", "wa", "--client", "acme"),
]


@pytest.fixture(autouse=True)
def _answer(mock_api: MockAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", TOKEN)
    mock_api.body = {"uid": "u-1", "reference": "PL-ABCDEFGHJK", "URL": "http://x/checkout/?orderId=u-1"}


def test_paysdk_log_debug_without_v(mock_api: MockAPI) -> None:
    result = run_cli("-o", "json", *LINK, env={"PAYSDK_LOG": "debug"})
    assert result.exit_code == 0, result.stderr
    assert "debug paysdk_cli: profile=default" in result.stderr
    assert "debug paysdk: POST /transactions attempt=1 status=200" in result.stderr
    assert TOKEN not in result.stderr + result.stdout
    assert "10.50" not in result.stderr  # no body
    assert "Traceback" not in result.stderr  # -v alone adds tracebacks

    quiet = run_cli("-o", "json", *LINK)  # the same process, variable gone: the handler is removed
    assert quiet.exit_code == 0, quiet.stderr
    assert quiet.stderr == ""


def test_paysdk_log_info_has_no_debug_lines(mock_api: MockAPI) -> None:
    result = run_cli("-o", "json", *LINK, env={"PAYSDK_LOG": "info"})
    assert result.exit_code == 0, result.stderr
    assert " debug " not in result.stderr


def test_v_and_paysdk_log_share_one_handler(mock_api: MockAPI) -> None:
    result = run_cli("-v", "-o", "json", *LINK, env={"PAYSDK_LOG": "debug"})
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("debug paysdk: POST /transactions attempt=1") == 1
    assert run_cli("-o", "json", *LINK).stderr == ""
