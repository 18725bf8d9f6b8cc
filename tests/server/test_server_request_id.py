"""``X-Request-Id`` (D65): on every answer (public, errors, 404s, injected faults, replays, the hook's
preflight, the control plane, checkout pages, the docs, an unhandled 500), minted by the server (a
client's own value is not echoed), and shown in ``/_sandbox/requests``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from server_helpers import JSON_TYPE, auth, body, dumps, link_body

from paysdk.contracts.sandbox import RequestLogEntry, SandboxClient

REQUEST_ID = re.compile(r"req_[0-9a-f]{32}")


def request_id(response: httpx.Response) -> str:
    values = response.headers.get_list("x-request-id")
    assert len(values) == 1, (response.request.url, values)
    assert REQUEST_ID.fullmatch(values[0]), values[0]
    return values[0]


async def log(client: httpx.AsyncClient) -> list[RequestLogEntry]:
    return [RequestLogEntry.model_validate(item) for item in body(await client.get("/_sandbox/requests"))]


async def test_public_answers_carry_an_id_that_the_log_shows(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    answers = [
        await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)),
        await asgi_client.post("/transactions", content=dumps(link_body(merchant))),  # 401
        await asgi_client.post(  # 409 / 5000
            "/transactions", content=dumps(link_body(merchant, userId="x")), headers=auth(merchant)
        ),
        await asgi_client.get("/no/such/path"),  # 404
        await asgi_client.delete("/transactions"),  # 405
        await asgi_client.options("/transactions-hook"),  # the hook's preflight (answered, not logged)
    ]
    assert [a.status_code for a in answers] == [200, 401, 409, 404, 405, 204]
    ids = [request_id(a) for a in answers]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)  # time-ordered
    entries = await log(asgi_client)
    assert [(e.status_code, e.request_id) for e in entries] == list(
        zip([200, 401, 409, 404, 405], ids[:5], strict=True)
    )


async def test_control_plane_pages_and_docs_carry_an_id(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    link = body(
        await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=auth(merchant))
    )
    answers = [
        await asgi_client.get("/_sandbox/health"),
        await asgi_client.get("/_sandbox/transactions/no-such-uid"),  # a control-plane 404
        await asgi_client.get(f"/checkout/?orderId={link['uid']}"),
        await asgi_client.get("/openapi.json"),
    ]
    assert [a.status_code for a in answers] == [200, 404, 200, 200]
    assert answers[2].headers["content-type"].startswith("text/html")
    assert len({request_id(a) for a in answers}) == 4


async def test_a_clients_own_id_is_not_echoed_but_logged_with_its_request(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    mine = "my-trace-0001"
    response = await asgi_client.post(
        "/transactions",
        content=dumps(link_body(merchant)),
        headers={**auth(merchant), "X-Request-Id": mine},
    )
    minted = request_id(response)
    assert minted != mine
    (entry,) = await log(asgi_client)
    assert entry.request_id == minted
    assert entry.headers["x-request-id"] == mine  # the request's own header, as sent


async def test_faults_and_replays_get_their_own_id(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    fault = {"kind": "error", "route": "POST /transactions", "count": 1, "status": 503}
    created = await asgi_client.post("/_sandbox/faults", content=dumps(fault), headers=JSON_TYPE)
    assert created.status_code == 201
    headers = {**auth(merchant), "Idempotency-Key": "k-1"}
    content = dumps(link_body(merchant))
    answers = [await asgi_client.post("/transactions", content=content, headers=headers) for _ in range(3)]
    assert [a.status_code for a in answers] == [503, 200, 200]
    assert answers[2].headers["idempotent-replayed"] == "true"
    ids = [request_id(a) for a in answers]
    assert len(set(ids)) == 3
    assert [e.request_id for e in await log(asgi_client)] == ids


@pytest.fixture
async def failing_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """``app`` with a public route that raises (added before the first request builds the stack)."""

    async def boom() -> None:
        raise RuntimeError("boom")

    app.add_api_route("/boom", boom, methods=["GET"])
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


async def test_an_unhandled_500_carries_the_id_of_its_log_entry(failing_client: httpx.AsyncClient) -> None:
    response = await failing_client.get("/boom")
    assert response.status_code == 500
    assert body(response) == {"ownCode": None, "message": "Internal server error.", "details": []}
    (entry,) = await log(failing_client)
    assert (entry.status_code, entry.request_id) == (500, request_id(response))
