"""The request log (:mod:`paysdk.server.asgi.request_log`, D95): in the real app, and the layer alone over
the app's database."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from starlette.requests import ClientDisconnect
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from paysdk.server.asgi import control_forms
from paysdk.server.asgi.request_log import RequestLog


async def _entries(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    answer = await client.get("/_sandbox/requests")
    assert answer.status_code == 200
    entries: list[dict[str, Any]] = answer.json()
    return entries


async def test_public_requests_are_logged_masked_and_the_control_plane_never(
    asgi_client: httpx.AsyncClient,
) -> None:
    answer = await asgi_client.post(
        "/transactions?token=abc&page=2", content=b"{}", headers={"X-Secret": "s", "User-Agent": "ua/1"}
    )
    await asgi_client.get("/_sandbox/health")
    (entry,) = await _entries(asgi_client)
    assert (entry["method"], entry["path"], entry["statusCode"]) == (
        "POST",
        "/transactions?token=****&page=2",
        401,
    )
    assert entry["headers"]["x-secret"] == "****"
    assert entry["headers"]["user-agent"] == "ua/1"
    assert entry["requestId"] == answer.headers["x-request-id"]
    assert isinstance(entry["durationMs"], int)


async def test_an_answer_is_logged_before_its_last_byte_and_a_lost_client_as_0(
    app: FastAPI, asgi_client: httpx.AsyncClient
) -> None:
    seen: list[list[Any]] = []

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == "/gone":
            raise ClientDisconnect()
        await PlainTextResponse("fine", status_code=202)(scope, receive, send)

    layer = RequestLog(inner, app.state.paysdk, control_forms(["/_sandbox"]))

    async def watched(scope: Scope, receive: Receive, send: Send) -> None:
        async def watching(message: Any) -> None:
            if message["type"] == "http.response.body":  # what the log holds as the answer leaves
                seen.append([(e["path"], e["statusCode"]) for e in await _entries(asgi_client)])
            await send(message)

        await layer(scope, receive, watching)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=watched), base_url="http://t") as client:
        assert (await client.get("/fine")).status_code == 202
        try:
            await client.get("/gone")
        except ClientDisconnect:
            pass
        else:  # pragma: no cover - the layer passes the disconnect on (the body-bounds layer ends it)
            raise AssertionError("ClientDisconnect was swallowed")
    assert seen == [[("/fine", 202)]]  # stored when the last body message went out
    assert [(e["path"], e["statusCode"]) for e in await _entries(asgi_client)] == [
        ("/fine", 202),
        ("/gone", 0),
    ]
