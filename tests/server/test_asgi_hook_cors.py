"""Hook CORS (:mod:`paysdk.server.asgi.hook_cors`, D14): alone, and in the real app."""

from __future__ import annotations

import httpx
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from paysdk.server.asgi.hook_cors import HookCors


async def _inner(scope: Scope, receive: Receive, send: Send) -> None:
    headers = {"Access-Control-Allow-Origin": "https://one.example"}
    await PlainTextResponse("inner", status_code=409, headers=headers)(scope, receive, send)


async def test_preflight_is_answered_and_every_hook_answer_allows_any_origin() -> None:
    transport = httpx.ASGITransport(app=HookCors(_inner, ["/hook"]))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        preflight = await client.options("/hook/")
        answer = await client.post("/hook")
        other = await client.post("/elsewhere")
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-methods"] == "POST, OPTIONS"
    assert preflight.headers["access-control-allow-headers"] == "Content-Type, Idempotency-Key"
    assert (answer.status_code, answer.text) == (409, "inner")
    assert answer.headers.get_list("access-control-allow-origin") == ["*"]  # the inner one replaced
    assert other.headers.get_list("access-control-allow-origin") == ["https://one.example"]


async def test_the_real_hook_allows_any_origin_on_errors_and_preflights(
    asgi_client: httpx.AsyncClient,
) -> None:
    preflight = await asgi_client.options("/transactions-hook", headers={"Origin": "https://shop.example"})
    refused = await asgi_client.post(
        "/transactions-hook", content=b"{}", headers={"Origin": "https://shop.example"}
    )
    plain = await asgi_client.post("/transactions", content=b"{}")
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert refused.status_code >= 400
    assert refused.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-origin" not in plain.headers
    logged = [(e["method"], e["path"]) for e in (await asgi_client.get("/_sandbox/requests")).json()]
    assert ("OPTIONS", "/transactions-hook") not in logged  # a preflight is never logged
    assert ("POST", "/transactions-hook") in logged
