"""Idempotency keys (:mod:`paysdk.server.asgi.idempotency`, D17): in the real app, and the layer alone over
the app's database."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from server_helpers import auth, dumps, link_body
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server.asgi.idempotency import Idempotency, honours_idempotency_key, idempotent_paths


def test_only_posts_under_the_given_prefixes_honour_the_key() -> None:
    paths = idempotent_paths(["/transactions", "/rest"])
    assert honours_idempotency_key("POST", "/transactions", paths)
    assert honours_idempotency_key("POST", "/rest/cards/x/funds", paths)
    assert not honours_idempotency_key("GET", "/transactions", paths)
    assert not honours_idempotency_key("POST", "/transactions-hook", paths)
    assert not honours_idempotency_key("POST", "/restaurant", paths)


async def test_replay_mismatch_and_invalid_key_in_the_real_app(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    content = dumps(link_body(merchant))
    headers = {**auth(merchant), "Idempotency-Key": "k-1"}
    first = await asgi_client.post("/transactions", content=content, headers=headers)
    replay = await asgi_client.post("/transactions", content=content, headers=headers)
    other = await asgi_client.post("/transactions", content=content + b" ", headers=headers)
    invalid = await asgi_client.post(
        "/transactions", content=content, headers={**auth(merchant), "Idempotency-Key": " "}
    )
    assert first.status_code == 200
    assert "idempotent-replayed" not in first.headers
    assert (replay.status_code, replay.content, replay.headers["idempotent-replayed"]) == (
        200,
        first.content,
        "true",
    )
    assert replay.headers["x-request-id"] != first.headers["x-request-id"]
    assert (other.status_code, other.json()["details"][0]["field"]) == (422, "Idempotency-Key")
    assert invalid.status_code == 400


async def test_the_layer_runs_a_key_s_request_once_and_forgets_5xx(app: FastAPI) -> None:
    calls: list[bytes] = []

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        body = await Request(scope, receive).body()
        calls.append(body)
        status = 500 if body == b"fail" else 201
        await PlainTextResponse(f"run {len(calls)}", status_code=status)(scope, receive, send)

    layer = Idempotency(inner, app.state.paysdk, idempotent_paths(["/things"]))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=layer), base_url="http://t") as client:
        one = await client.post("/things", content=b"a", headers={"Idempotency-Key": "x"})
        two = await client.post("/things", content=b"a", headers={"Idempotency-Key": "x"})
        failed = await client.post("/things", content=b"fail", headers={"Idempotency-Key": "y"})
        again = await client.post("/things", content=b"fail", headers={"Idempotency-Key": "y"})
        elsewhere = await client.post("/other", content=b"a", headers={"Idempotency-Key": "x"})
    assert (one.text, two.text) == ("run 1", "run 1")
    assert (failed.status_code, again.text) == (500, "run 3")  # a 5xx is not stored: run again
    assert elsewhere.text == "run 4"
    assert calls == [b"a", b"fail", b"fail", b"a"]
