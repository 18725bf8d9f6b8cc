"""Every public method of every SDK resource, sync and async, is exercised against the real reference
server by some test (the ``covers`` marker and its checks: ``tests/sdk_coverage.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

import paysdk
from paysdk.resources.sandbox import AsyncSandbox
from sdk_coverage import KINDS, REPORT_ENV, _recording, public_methods

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def _covered(report: Path) -> dict[str, set[str]]:
    """kind -> names, from a ``--collect-only`` run over the test files that use the marker."""
    files = [
        str(path.relative_to(ROOT))
        for path in sorted(TESTS.rglob("test_*.py"))
        if "pytest.mark.covers" in path.read_text(encoding="utf-8")
    ]
    assert files, "no test uses the covers marker"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        env={**os.environ, REPORT_ENV: str(report)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(report.read_text(encoding="utf-8"))
    covered: dict[str, set[str]] = defaultdict(set)
    for name, kind in rows:
        covered[kind].add(name)
    return covered


def test_every_public_method_has_a_real_server_test_for_both_clients(tmp_path: Path) -> None:
    methods = {kind: set(public_methods(kind).values()) for kind in KINDS}
    assert methods["sync"] == methods["async"]  # the sync client is generated from the async one
    assert len(methods["async"]) > 60
    covered = _covered(tmp_path / "covered.json")
    assert "none" not in covered, f"covers tests without a sync/async kind: {sorted(covered['none'])}"
    for kind in KINDS:
        missing = sorted(methods[kind] - covered[kind])
        assert not missing, f"{kind} client methods with no real-server test: {missing}"
        unknown = sorted(covered[kind] - methods[kind])
        assert not unknown, f"covers names that are no public method: {unknown}"


def test_names_are_attribute_paths_from_the_client() -> None:
    names = set(public_methods("async").values())
    assert {
        "payment_links.create",
        "alternative_payments.dismiss",
        "sandbox.simulate",
        "wallet.users.login",
        "wallet.cards.cvv",
        "wallet.as_user",
        "wallet.as_user.stored_session",
    } <= names
    assert not any(part.startswith("_") for name in names for part in name.split("."))


async def test_only_calls_answered_by_the_real_server_count(app: FastAPI) -> None:
    """The honesty of the marker's runtime check: a mocked answer and a refused argument do not count."""
    called: set[str] = set()
    health = _recording(AsyncSandbox.health, "sandbox.health", called)
    transaction = _recording(AsyncSandbox.transaction, "sandbox.transaction", called)
    env = paysdk.Environment.local("http://testserver")

    def fake(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"status": "ok", "environment": "sandbox", "database": "x", "now": 0})

    async with paysdk.AsyncClient(environment=env, transport=httpx.MockTransport(fake)) as mocked:
        await health(mocked.sandbox)
        with pytest.raises(paysdk.ValidationError):
            await transaction(mocked.sandbox, "")
    assert called == set()
    async with paysdk.AsyncClient(environment=env, transport=httpx.ASGITransport(app=app)) as real:
        await health(real.sandbox)
        with pytest.raises(paysdk.NotFoundError):  # an API error: the server answered
            await transaction(real.sandbox, "no-such-uid")
    assert called == {"sandbox.health", "sandbox.transaction"}


async def test_calls_through_with_raw_response_count(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    """``client.with_raw_response.<resource>.<method>`` runs the same (wrapped) class attribute, so the
    ``covers`` check counts it like a plain call."""
    called: set[str] = set()
    monkeypatch.setattr(AsyncSandbox, "health", _recording(AsyncSandbox.health, "sandbox.health", called))
    env = paysdk.Environment.local("http://testserver")
    async with paysdk.AsyncClient(environment=env, transport=httpx.ASGITransport(app=app)) as real:
        answer = await real.with_raw_response.sandbox.health()
    assert answer.parse().status == "ok"
    assert answer.status_code == 200
    assert called == {"sandbox.health"}
