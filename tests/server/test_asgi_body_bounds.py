"""The body-bounds layer (:mod:`paysdk.server.asgi.body_bounds`, D85, D390): alone, and in the real app."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from paysdk.server.asgi.body_bounds import BodyBoundsLayer
from paysdk.server.bodies import BodyBounds, BodyRefused


def _layer(calls: list[int], limit: int = 10) -> BodyBoundsLayer:
    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        calls.append(1)
        try:
            body = await Request(scope, receive).body()
        except BodyRefused as refused:  # in the app, its exception handler answers it
            await refused.response()(scope, receive, send)
            return
        await PlainTextResponse(str(len(body)))(scope, receive, send)

    return BodyBoundsLayer(inner, BodyBounds(limit, 5.0))


async def test_a_body_framed_two_ways_is_400_and_closes_before_anything_runs() -> None:
    calls: list[int] = []
    transport = httpx.ASGITransport(app=_layer(calls))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        answer = await client.post(
            "/x", content=b"abc", headers={"Content-Length": "3", "Transfer-Encoding": "chunked"}
        )
    assert answer.status_code == 400
    assert answer.headers["connection"] == "close"
    assert answer.json()["details"][0]["field"] == "Transfer-Encoding"
    assert calls == []


async def test_a_declared_size_over_the_limit_is_413_before_a_byte_is_read() -> None:
    calls: list[int] = []
    transport = httpx.ASGITransport(app=_layer(calls))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        small = await client.post("/x", content=b"0123456789")
        large = await client.post("/x", content=b"0123456789a")
    assert (small.status_code, small.text) == (200, "10")
    assert large.status_code == 413
    assert large.json()["details"] == [{"field": "body", "message": "exceeds 10 bytes"}]
    assert calls == [1]


async def test_a_streamed_body_over_the_limit_is_413_while_it_streams() -> None:
    calls: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(5):
            yield b"abcd"

    transport = httpx.ASGITransport(app=_layer(calls))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        answer = await client.post("/x", content=chunks())
    assert answer.status_code == 413
    assert calls == [1]


async def test_a_client_gone_mid_body_ends_the_request_quietly() -> None:
    sent: list[dict[str, object]] = []
    messages: list[dict[str, object]] = [
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, object]:
        return messages.pop(0)

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/x", "headers": [], "query_string": b""}
    await _layer([])(scope, receive, send)  # type: ignore[arg-type]  # no exception escapes
    assert sent == []


async def test_the_real_app_bounds_every_route(asgi_client: httpx.AsyncClient) -> None:
    big = b"{" + b" " * (1 << 20) + b"}"
    for path in ("/transactions", "/_sandbox/clients"):
        answer = await asgi_client.post(path, content=big, headers={"Content-Type": "application/json"})
        assert answer.status_code == 413, path
        assert answer.headers["x-request-id"].startswith("req_")
