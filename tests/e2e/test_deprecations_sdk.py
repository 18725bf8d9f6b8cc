"""Deprecation signals through the SDK against the REAL reference server (D196, D253-D255): the control
plane's marks, the ``Deprecation``/``Sunset``/``Link`` headers, and one ``PaysdkDeprecationWarning`` per
operation per client pointing at the caller; async in process and over a socket, sync over a socket, on
SQLite and PostgreSQL; and two server processes over one database.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import paysdk
from paysdk.contracts.deprecations import Deprecation
from paysdk.server.deprecations import REFRESH_SECONDS
from paysdk.testing._ready import free_port, http_ok, wait_ready

from . import test_onboarding_sdk as onboarding
from .test_onboarding_sdk import BUSINESS, CONTACT, PDF, Maker, call

#: The clients of the onboarding tests: async in process and over a socket, sync over a socket.
kind = onboarding.kind
make = onboarding.make

SUNSET = datetime(2027, 6, 1, tzinfo=UTC)
LINK = "https://docs.example.com/versioning#leads"


async def _lead(client: Any) -> Any:
    return await call(
        client.onboarding.create_lead(
            business=BUSINESS, contact=CONTACT, country="GT", channels=["wa"], currencies=["GTQ"]
        )
    )


def _ours(caught: list[warnings.WarningMessage]) -> list[paysdk.PaysdkDeprecationWarning]:
    """The SDK's warnings among ``caught``; each points outside the SDK (here, or the ``covers`` check's
    wrapper of the method: the first frame that is not paysdk's)."""
    found = [w.message for w in caught if isinstance(w.message, paysdk.PaysdkDeprecationWarning)]
    for item in caught:
        if isinstance(item.message, paysdk.PaysdkDeprecationWarning):
            assert "/src/paysdk/" not in item.filename, item.filename
    return found


@pytest.mark.covers(
    "sandbox.deprecations.set",
    "sandbox.deprecations.list",
    "sandbox.deprecations.clear",
    "onboarding.create_lead",
    "onboarding.upload_document",
)
async def test_one_warning_per_operation_per_client_until_cleared(make: Maker) -> None:
    sandbox = make()
    await call(sandbox.sandbox.deprecations.clear())
    mark = await call(sandbox.sandbox.deprecations.set("post /leads", sunset=SUNSET, link=LINK))
    assert isinstance(mark, Deprecation)
    assert (mark.operation, mark.sunset, mark.link) == ("POST /leads", SUNSET, LINK)
    upload = await call(sandbox.sandbox.deprecations.set("POST /leads/files/upload/{fileName}"))
    assert upload.sunset is None
    assert [m.operation for m in await call(sandbox.sandbox.deprecations.list())] == [
        "POST /leads",
        "POST /leads/files/upload/{fileName}",
    ]
    partner = make((await call(sandbox.sandbox.create_client())).sandbox_token)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lead = await _lead(partner)
        await _lead(partner)
        await call(partner.onboarding.upload_document(lead.lead_id, PDF, file_name="a.pdf"))
        await call(partner.onboarding.upload_document(lead.lead_id, PDF, file_name="b.pdf"))
        with pytest.raises(paysdk.NotFoundError):  # an error answer of the operation: already warned
            await call(partner.onboarding.upload_document("lead_000000000000000000000000", PDF))
    first, second = _ours(caught)
    assert isinstance(first, DeprecationWarning)
    assert (first.operation, first.sunset, first.link) == ("POST /leads", SUNSET, LINK)
    assert first.deprecated_at is not None
    assert abs(first.deprecated_at - mark.deprecated_at) < timedelta(seconds=1)
    assert "POST /leads is deprecated since" in str(first)
    assert "2027-06-01" in str(first)
    assert (second.operation, second.sunset, second.link) == (
        "POST /leads/files/upload/{fileName}",
        None,
        None,
    )
    headers = partner.last_response.headers
    assert headers["deprecation"].startswith("@")
    assert headers["paysdk-deprecated-operation"] == "POST /leads/files/upload/{fileName}"

    # Another client warns again, once.
    again = make(partner._config.merchant_token.reveal())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await _lead(again)
        await _lead(again)
    assert [w.operation for w in _ours(caught)] == ["POST /leads"]
    answer = again.last_response
    assert answer.headers["sunset"] == "Tue, 01 Jun 2027 00:00:00 GMT"
    assert answer.headers["link"] == f'<{LINK}>; rel="deprecation"'

    # Cleared: no header, no warning.
    assert await call(sandbox.sandbox.deprecations.clear("POST /leads")) == 1
    assert await call(sandbox.sandbox.deprecations.clear("POST /leads")) == 0
    fresh = make(partner._config.merchant_token.reveal())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await _lead(fresh)
    assert _ours(caught) == []
    assert "deprecation" not in fresh.last_response.headers
    assert await call(sandbox.sandbox.deprecations.clear()) == 1
    assert await call(sandbox.sandbox.deprecations.list()) == []


@pytest.mark.covers("sandbox.deprecations.set", "sandbox.reset", "sandbox.deprecations.list")
async def test_marks_are_checked_and_emptied_by_reset(make: Maker) -> None:
    sandbox = make()
    with pytest.raises(paysdk.InvalidFieldError) as unknown:
        await call(sandbox.sandbox.deprecations.set("POST /no-such-route"))
    assert unknown.value.body["details"][0]["field"] == "operation"
    with pytest.raises(paysdk.InvalidFieldError):  # the control plane is not a public operation
        await call(sandbox.sandbox.deprecations.set("POST /_sandbox/reset"))
    with pytest.raises(paysdk.InvalidFieldError) as early:
        await call(
            sandbox.sandbox.deprecations.set(
                "POST /leads", deprecated_at=SUNSET, sunset=SUNSET - timedelta(days=1)
            )
        )
    assert early.value.body["details"][0]["field"] == "sunset"
    with pytest.raises(paysdk.ValidationError) as link:
        await call(sandbox.sandbox.deprecations.set("POST /leads", link="javascript:alert(1)"))
    assert link.value.field == "link"
    at = datetime(2026, 1, 1, tzinfo=UTC)
    mark = await call(sandbox.sandbox.deprecations.set("POST /transactions", deprecated_at=at))
    assert mark.deprecated_at == at
    await call(sandbox.sandbox.reset())
    assert await call(sandbox.sandbox.deprecations.list()) == []


@pytest.mark.covers("payment_links.create", "sandbox.deprecations.set")
async def test_the_fast_lane_and_path_parameter_routes_are_marked(make: Maker) -> None:
    """``POST /transactions`` is answered by the middleware's fast lane (no FastAPI route in the scope);
    ``GET /rest/...`` style routes by a template with parameters: both are found by their /openapi.json
    name."""
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client())
    await call(sandbox.sandbox.deprecations.set("POST /transactions", sunset=SUNSET))
    client = make(merchant.sandbox_token)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await call(
            client.payment_links.create(
                amount="5.00", user_id="+50255555555", channel="wa", client=merchant.slug
            )
        )
        with pytest.raises(paysdk.UnknownClientError):  # an error answer carries the headers too
            await call(
                client.payment_links.create(amount="5.00", user_id="+50255555555", channel="wa", client="x")
            )
    (warning,) = _ours(caught)
    assert (warning.operation, warning.sunset) == ("POST /transactions", SUNSET)
    await call(sandbox.sandbox.deprecations.clear())


async def test_the_warning_points_at_the_calling_line(app: FastAPI) -> None:
    environment = paysdk.Environment.local("http://testserver")
    transport = httpx.ASGITransport(app=app)
    async with paysdk.AsyncClient(environment=environment, transport=transport) as sandbox:
        partner = await sandbox.sandbox.create_client()
        await sandbox.sandbox.deprecations.set("POST /leads")
    async with paysdk.AsyncClient(
        partner.sandbox_token, environment=environment, transport=transport
    ) as client:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = sys._getframe().f_lineno + 1
            await client.onboarding.create_lead(
                business=BUSINESS, contact=CONTACT, country="GT", channels=["wa"], currencies=["GTQ"]
            )
    (item,) = [w for w in caught if w.category is paysdk.PaysdkDeprecationWarning]
    assert (item.filename, item.lineno) == (__file__, line)


def test_the_sync_warning_points_at_the_calling_line(live_server: str) -> None:
    environment = paysdk.Environment.local(live_server)
    with paysdk.Client(environment=environment) as sandbox:
        partner = sandbox.sandbox.create_client()
        sandbox.sandbox.deprecations.set("POST /leads")
    fields: dict[str, Any] = {"country": "GT", "channels": ["wa"], "currencies": ["GTQ"]}
    try:
        with (
            paysdk.Client(partner.sandbox_token, environment=environment) as client,
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("default")  # the default action: once per location
            for _ in range(3):
                line = sys._getframe().f_lineno + 1
                client.onboarding.create_lead(business=BUSINESS, contact=CONTACT, **fields)
        (item,) = [w for w in caught if w.category is paysdk.PaysdkDeprecationWarning]
        assert (item.filename, item.lineno) == (__file__, line)
    finally:
        with paysdk.Client(environment=environment) as sandbox:
            sandbox.sandbox.deprecations.clear()


# ------------------------------------------------------------------------------- two server processes


@contextlib.contextmanager
def _second_server(db_url: str) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "paysdk.server", "--port", str(port), "--db", db_url]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(http_ok(url + "/_sandbox/health"), what="the second server", process=process)
        # Over a database that has its tables, the probe is answered before the full server is loaded
        # (D310): wait for that too, so the test's own requests are not the ones that pay for it.
        wait_ready(http_ok(url + "/_sandbox/clock"), what="the second server (full)", process=process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_a_mark_set_through_one_process_is_honoured_by_another(live_server: str, db_url: str) -> None:
    """The marks are in the database: a second server process over it adds the headers within 1 s of the
    mark (D255), and stops within 1 s of the clear. Shown as the rule says it, whatever the machine's load:
    a request sent :data:`REFRESH_SECONDS` after the change was answered carries it (each process looks
    again at the table when its last look is that old)."""
    with (
        _second_server(db_url) as other,
        paysdk.Client(environment=paysdk.Environment.local(live_server)) as one,
    ):
        merchant = one.sandbox.create_client()
        token = {"Authorization": merchant.sandbox_token}
        body = {
            "business": {"legalName": "Sol", "taxId": "1"},
            "contact": {"name": "Ana", "email": "ana@sol.gt"},
            "country": "GT",
            "channels": ["wa"],
            "currencies": ["GTQ"],
        }

        def marked() -> bool:
            answer = httpx.post(other + "/leads", json=body, headers=token, timeout=60)
            assert answer.status_code == 201
            return "deprecation" in answer.headers

        assert not marked()
        one.sandbox.deprecations.set("POST /leads", sunset=SUNSET)
        time.sleep(REFRESH_SECONDS)
        assert marked()
        one.sandbox.deprecations.clear()
        time.sleep(REFRESH_SECONDS)
        assert not marked()
        one.sandbox.deprecations.set("POST /leads")
        time.sleep(REFRESH_SECONDS)
        assert marked()
        # Reset through the first empties them for both.
        httpx.post(live_server + "/_sandbox/reset", timeout=60)
        time.sleep(REFRESH_SECONDS)
        assert _unmarked(other)


def _unmarked(url: str) -> bool:
    marks: list[Any] = httpx.get(url + "/_sandbox/deprecations", timeout=60).json()
    return marks == []
