"""Deprecation headers (:mod:`paysdk.server.asgi.deprecation`, D196, D392): in the real app, and the layer
alone over the app's database."""

from __future__ import annotations

import re

import httpx
from fastapi import FastAPI
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from paysdk.server import faults
from paysdk.server.asgi import control_forms
from paysdk.server.asgi.deprecation import Deprecation

_MARK = {
    "operation": "POST /transactions",
    "sunset": "2027-06-01T00:00:00+00:00",
    "link": "https://d.example/v",
}


async def test_a_marked_operation_is_marked_on_every_answer_the_control_plane_never(
    asgi_client: httpx.AsyncClient,
) -> None:
    assert (await asgi_client.put("/_sandbox/deprecations", json=_MARK)).status_code == 200
    try:
        refused = await asgi_client.post("/transactions", content=b"{}")  # 401: no token
        too_large = await asgi_client.post("/transactions", content=b"{" + b" " * (1 << 20) + b"}")
        other = await asgi_client.post("/api/v1/integrations/transactions", content=b"{}")
        control = await asgi_client.get("/_sandbox/deprecations")
    finally:
        await asgi_client.delete("/_sandbox/deprecations")
    for answer in (refused, too_large):
        assert re.fullmatch(r"@\d+", answer.headers.get("deprecation", "")), answer.status_code
        assert answer.headers["sunset"] == "Tue, 01 Jun 2027 00:00:00 GMT"
    assert too_large.status_code == 413  # a refusal of a layer inside this one is marked too
    assert "deprecation" not in other.headers
    assert "deprecation" not in control.headers


async def test_the_layer_reads_the_marks_of_its_database(
    app: FastAPI, asgi_client: httpx.AsyncClient
) -> None:
    context = app.state.paysdk

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        await PlainTextResponse("inner")(scope, receive, send)

    layer = Deprecation(
        inner, context, faults.database_key(context.db.engine.url), control_forms(["/_sandbox"])
    )
    assert (await asgi_client.put("/_sandbox/deprecations", json=_MARK)).status_code == 200
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=layer), base_url="http://t") as client:
            marked = await client.post("/transactions")
            plain = await client.get("/transactions")
            control = await client.post("/_sandbox/transactions")
    finally:
        await asgi_client.delete("/_sandbox/deprecations")
    assert marked.text == "inner"
    assert "deprecation" in marked.headers
    assert "deprecation" not in plain.headers
    assert "deprecation" not in control.headers
