"""The built-in scenarios (``POST /_sandbox/scenarios/{name}/run``, D700-D706), each on SQLite and
PostgreSQL through the app in process, with a real callback receiver: the events each promises."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from paysdk import _json
from tests.conftest import CallbackSink

JSON_TYPE = {"Content-Type": "application/json"}


async def run(client: httpx.AsyncClient, name: str, **parameters: str) -> dict[str, Any]:
    """Run a built-in; its report (the run must answer 200)."""
    response = await client.post(
        f"/_sandbox/scenarios/{name}/run", content=_json.dumps({"parameters": parameters}), headers=JSON_TYPE
    )
    assert response.status_code == 200, response.text
    report: dict[str, Any] = _json.loads(response.content)
    return report


def passed(report: dict[str, Any]) -> dict[str, Any]:
    assert report["ok"], report["error"]
    assert report["failedStep"] is None
    assert all(step["ok"] for step in report["steps"])
    return report


def callbacks(report: dict[str, Any], uid: str) -> list[dict[str, Any]]:
    return [e["data"] for e in report["events"] if e["kind"] == "callback" and e["data"]["uid"] == uid]


async def test_payment_approved(asgi_client: httpx.AsyncClient, callback_sink: CallbackSink) -> None:
    report = passed(await run(asgi_client, "payment-approved", callbackUrl=callback_sink.url))
    uid = report["ids"]["uid"]
    assert set(report["ids"]) == {"merchant", "uid"}
    [attempt] = callbacks(report, uid)
    assert attempt["statusCode"] == 200 and attempt["attempt"] == 1 and attempt["final"]
    assert attempt["payload"]["status"] == "approved"
    [received] = callback_sink.received
    assert received.json()["uid"] == uid and received.json()["status"] == "approved"
    assert received.headers["X-Event-Id"] == attempt["eventId"]
