"""The request-id layer (:mod:`paysdk.server.asgi.request_id`, D65): alone, and in the real app."""

from __future__ import annotations

import re

import httpx
from fastapi import FastAPI
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from paysdk.server.asgi.request_id import RequestId
from paysdk.server.errors import REQUEST_ID_SCOPE_KEY

_ID = re.compile(r"req_[0-9a-f]{32}")


async def test_every_answer_gets_a_fresh_id_kept_in_the_scope() -> None:
    seen: list[str] = []

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope[REQUEST_ID_SCOPE_KEY])
        await PlainTextResponse("ok", headers={"X-Other": "1"})(scope, receive, send)

    transport = httpx.ASGITransport(app=RequestId(inner))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        first = await client.get("/", headers={"X-Request-Id": "req_" + "0" * 32})
        second = await client.get("/")
    ids = [first.headers["x-request-id"], second.headers["x-request-id"]]
    assert ids == seen  # the scope's id is the answer's
    assert all(_ID.fullmatch(value) for value in ids)
    assert ids[0] != "req_" + "0" * 32
    assert ids[0] != ids[1]
    assert list(first.headers)[-1] == "x-request-id"  # added last, after the inner layers' headers


async def test_refusals_control_plane_and_preflights_carry_an_id(asgi_client: httpx.AsyncClient) -> None:
    answers = [
        await asgi_client.get("/_sandbox/health"),
        await asgi_client.get("/no/such/route"),
        await asgi_client.get("/_sandbox/health", headers={"Host": "evil.example"}),  # 421
        await asgi_client.options("/transactions-hook"),  # the hook's preflight
        await asgi_client.post("/transactions", content=b"x", headers={"Transfer-Encoding": "chunked"}),
    ]
    assert [a.status_code for a in answers] == [200, 404, 421, 204, 400]
    ids = [a.headers.get("x-request-id", "") for a in answers]
    assert all(_ID.fullmatch(value) for value in ids), ids
    assert len(set(ids)) == len(ids)


async def test_the_request_log_keeps_the_answer_s_id(app: FastAPI, asgi_client: httpx.AsyncClient) -> None:
    answer = await asgi_client.post("/transactions", content=b"{}")
    logged = (await asgi_client.get("/_sandbox/requests")).json()
    assert [e["requestId"] for e in logged if e["path"] == "/transactions"] == [
        answer.headers["x-request-id"]
    ]
