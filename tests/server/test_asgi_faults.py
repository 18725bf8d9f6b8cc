"""Fault injection (:mod:`paysdk.server.asgi.faults`): in the real app, and the layer alone over the app's
database."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from paysdk.server import faults
from paysdk.server.asgi import control_forms
from paysdk.server.asgi.faults import Faults
from paysdk.server.errors import ConnectionDropped


async def test_injected_errors_and_rate_limits_replace_public_answers_never_the_control_plane(
    asgi_client: httpx.AsyncClient,
) -> None:
    created = await asgi_client.post(
        "/_sandbox/faults", json={"kind": "error", "route": "*", "status": 503, "count": 2}
    )
    assert created.status_code == 201, created.text
    assert (await asgi_client.get("/_sandbox/health")).status_code == 200  # never faulted
    answer = await asgi_client.post("/transactions", content=b"{}")
    assert answer.status_code == 503
    assert answer.headers["x-request-id"].startswith("req_")
    await asgi_client.delete("/_sandbox/faults")
    await asgi_client.post("/_sandbox/faults", json={"kind": "rate_limit", "retryAfter": 7, "count": 1})
    limited = await asgi_client.post("/transactions", content=b"{}")
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "7")
    logged = [(e["path"], e["statusCode"]) for e in (await asgi_client.get("/_sandbox/requests")).json()]
    assert ("/transactions", 503) in logged
    assert ("/transactions", 429) in logged


async def test_a_drop_raises_in_process_and_the_upload_sink_takes_faults(
    app: FastAPI, asgi_client: httpx.AsyncClient
) -> None:
    calls: list[str] = []

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        calls.append(scope["path"])
        await PlainTextResponse("inner")(scope, receive, send)

    context = app.state.paysdk
    layer = Faults(inner, context, faults.database_key(context.db.engine.url), control_forms(["/_sandbox"]))
    for route in ("*", "POST /_sandbox/uploads"):  # the upload sink takes only a fault naming it
        created = await asgi_client.post(
            "/_sandbox/faults", json={"kind": "drop", "route": route, "count": 2}
        )
        assert created.status_code == 201, created.text
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=layer), base_url="http://t") as client:
        assert (await client.post("/_sandbox/clients")).text == "inner"  # the control plane: no fault
        with pytest.raises(ConnectionDropped):
            await client.post("/transactions")
        with pytest.raises(ConnectionDropped):
            await client.post("/_sandbox/uploads")  # the upload sink takes faults
    assert calls == ["/_sandbox/clients"]
