"""The fast lanes (:mod:`paysdk.server.hotpath.lanes`): the hot public creates served by their route
handlers as plain Starlette routes ahead of FastAPI's must answer exactly as through FastAPI's routes
(status, headers, body) in every case, and leave the OpenAPI document unchanged."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from server_helpers import auth, dumps, link_body
from starlette.types import Receive, Scope, Send

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app
from paysdk.server.hotpath.lanes import LANE_NAME
from paysdk.server.routers import alternative_payments, payment_links, sandbox_first

LINKS = "/transactions"
ALTERNATIVES = "/api/v1/integrations/transactions"
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_REFERENCE = re.compile(rb"(PL|AP)-[A-Z2-7]{16}")
_EXPIRE_AT = re.compile(rb'"expireAt":\s*\d+')
_REQUEST_ID = re.compile(r"req_[0-9a-f]{32}")


def _without_fast_lane(app: FastAPI) -> FastAPI:
    """``app`` with the fast lanes off: every request goes to FastAPI's own routes."""
    routes = app.router.routes
    lanes = [route for route in routes if getattr(route, "name", None) == LANE_NAME]
    assert lanes
    routes[:] = [route for route in routes if route not in lanes]
    return app


@pytest.fixture
def routed_app(db_url: str) -> Iterator[FastAPI]:
    """Another app over the same database as ``app``, without the fast lane."""
    application = _without_fast_lane(create_app(db_url, start_ticker=False))
    try:
        yield application
    finally:
        application.state.paysdk.db.dispose()


@pytest.fixture
async def routed_client(routed_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=routed_app), base_url="http://testserver"
    ) as client:
        yield client


def _answer(response: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, every header in order, and the body with the random parts (uid, reference, the
    clock-dependent ``expireAt``) masked."""
    content = _UUID.sub(b"<uid>", response.content)
    content = _REFERENCE.sub(b"<reference>", content)
    content = _EXPIRE_AT.sub(b'"expireAt": <ms>', content)
    headers = list(response.headers.multi_items())
    assert [_REQUEST_ID.fullmatch(v) is not None for k, v in headers if k == "x-request-id"] == [True]
    headers = [(k, "<request-id>" if k == "x-request-id" else v) for k, v in headers]
    return response.status_code, headers, content


def _cases(merchant: SandboxClient) -> list[tuple[str, str, dict[str, Any], bytes]]:
    """(name, path, headers, body) of every answer the two creates can give."""
    token = auth(merchant)
    bearer = auth(merchant, bearer=True)
    json_headers = {"Content-Type": "application/json"}
    alternative: dict[str, Any] = {
        "amount": Decimal("25.00"),
        "userId": "+50255555555",
        "channel": "web",
        "client": merchant.slug,
    }
    cases: list[tuple[str, str, dict[str, Any], bytes]] = []
    for path, valid, headers in (
        (LINKS, link_body(merchant), token),
        (ALTERNATIVES, alternative, bearer),
    ):
        good = dumps(valid)
        cases += [
            ("created", path, {**headers, **json_headers}, good),
            ("created, bearer token", path, bearer, good),
            ("no token", path, {}, good),
            ("unknown token", path, {"Authorization": "f" * 64}, good),
            ("token of the other environment", path, auth(merchant, production=True), good),
            ("non-ASCII token", path, {"Authorization": "tökén".encode("latin-1")}, good),
            ("empty body", path, headers, b""),
            ("malformed JSON", path, headers, b'{"amount": '),
            ("NaN", path, headers, b'{"amount": NaN}'),
            ("not an object", path, headers, b"[1, 2]"),
            ("missing fields", path, headers, b"{}"),
            ("NUL in a string", path, headers, dumps({**valid, "userId": "+502\x0055555555"})),
            (
                "nested too deeply",
                path,
                headers,
                dumps({**valid, "x": [[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]}),
            ),
            ("bad phone", path, headers, dumps({**valid, "userId": "12"})),
            ("wrong client slug", path, headers, dumps({**valid, "client": merchant.slug.upper()})),
            ("amount out of range", path, headers, dumps({**valid, "amount": Decimal("100000000")})),
            ("amount zero", path, headers, dumps({**valid, "amount": 0})),
            ("unknown channel", path, headers, dumps({**valid, "channel": "fax"})),
            ("unknown currency", path, headers, dumps({**valid, "currency": "XYZ"})),
            ("body too large", path, headers, b'{"x": "' + b"a" * (1 << 20) + b'"}'),
            ("invalid idempotency key", path, {**headers, "Idempotency-Key": ""}, good),
        ]
    return cases


async def test_fast_lane_answers_exactly_as_fastapi_routing(
    asgi_client: httpx.AsyncClient, routed_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    for name, path, headers, content in _cases(merchant):
        fast = await asgi_client.post(path, content=content, headers=headers)
        routed = await routed_client.post(path, content=content, headers=headers)
        assert _answer(fast) == _answer(routed), (name, path)
        assert fast.status_code != 500, (name, path, fast.text)


async def test_fast_lane_covers_success_and_every_error_status(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    statuses = {
        (path, (await asgi_client.post(path, content=content, headers=headers)).status_code)
        for _, path, headers, content in _cases(merchant)
    }
    for path, created in ((LINKS, 200), (ALTERNATIVES, 201)):
        assert {status for where, status in statuses if where == path} == {created, 400, 401, 409, 413}


async def test_idempotent_replays_answer_alike(
    asgi_client: httpx.AsyncClient, routed_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    for path in (LINKS, ALTERNATIVES):
        content = dumps(link_body(merchant, channel="web"))
        answers = []
        for client, key in ((asgi_client, "fast-key"), (routed_client, "routed-key")):
            headers = {**auth(merchant), "Idempotency-Key": key + path}
            first = await client.post(path, content=content, headers=headers)
            replay = await client.post(path, content=content, headers=headers)
            other = await client.post(path, content=content + b" ", headers=headers)
            assert replay.content == first.content
            answers.append([_answer(first), _answer(replay), _answer(other)])
        assert answers[0] == answers[1], path


async def test_both_apps_log_the_same_requests(
    asgi_client: httpx.AsyncClient, routed_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    for client in (asgi_client, routed_client):
        await client.post(LINKS, content=dumps(link_body(merchant)), headers=auth(merchant))
        await client.post(LINKS, content=b"{}", headers=auth(merchant))
    logged = (await asgi_client.get("/_sandbox/requests")).json()
    entries = [(entry["method"], entry["path"], entry["statusCode"]) for entry in logged]
    for entry in (("POST", LINKS, 200), ("POST", LINKS, 409)):
        assert entries.count(entry) == 2, entries


@contextlib.asynccontextmanager
async def _probed(app: FastAPI) -> AsyncIterator[tuple[httpx.AsyncClient, list[Any]]]:
    """A client of ``app`` and the endpoint FastAPI's own routes chose for each of its requests, in order
    (``None``: a fast lane answered)."""
    seen: list[Any] = []

    async def probe(scope: Scope, receive: Receive, send: Send) -> None:
        await app(scope, receive, send)
        # FastAPI's routes put themselves in the scope (``route``); a lane, a plain Starlette route, does not.
        seen.append(None if scope.get("route") is None else scope.get("endpoint"))

    transport = httpx.ASGITransport(app=probe)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client, seen


async def _endpoints(app: FastAPI, merchant: SandboxClient) -> list[Any]:
    """The endpoint FastAPI's routes chose for a request to each create (``None``: a fast lane answered)."""
    async with _probed(app) as (client, seen):
        await client.post(LINKS, content=dumps(link_body(merchant)), headers=auth(merchant))
        await client.post(ALTERNATIVES, content=b"{}", headers=auth(merchant))
        await client.post(LINKS + "/", content=b"{}", headers=auth(merchant))  # not the fast lane's
    return seen


async def test_fastapi_routes_the_fast_lane_requests_to_the_same_handlers(
    app: FastAPI, routed_app: FastAPI, merchant: SandboxClient
) -> None:
    handlers = [payment_links.create_payment_link, alternative_payments.create_alternative_payment]
    routed = await _endpoints(routed_app, merchant)
    assert routed[:2] == handlers
    # With the fast lanes, FastAPI's routes never see them (only what the lanes do not take).
    fast = await _endpoints(app, merchant)
    assert fast == [None, None, routed[2]]


async def test_openapi_document_is_unchanged(
    asgi_client: httpx.AsyncClient, routed_client: httpx.AsyncClient
) -> None:
    fast = await asgi_client.get("/openapi.json")
    routed = await routed_client.get("/openapi.json")
    assert fast.status_code == 200
    assert fast.content == routed.content
    paths = fast.json()["paths"]
    assert set(paths[LINKS]) == {"post"}
    assert set(paths[ALTERNATIVES]) == {"post"}


async def test_the_reset_takes_the_fast_lane_and_answers_as_routed(
    app: FastAPI, routed_app: FastAPI, merchant: SandboxClient
) -> None:
    # A merchant's suite resets before every test: the control plane's one fast-lane route (D311).
    fast, fast_endpoint = await _resets(app, merchant)
    merchant = await _recreate(app, merchant)
    routed, routed_endpoint = await _resets(routed_app, merchant)
    assert fast == routed
    assert [status for status, _, _ in fast] == [200, 415, 405]
    assert fast_endpoint is None  # with the lane, FastAPI's route never saw the reset
    assert routed_endpoint is sandbox_first.reset


async def _resets(app: FastAPI, merchant: SandboxClient) -> tuple[list[Any], Any]:
    """The answers to a reset, one with a body of no JSON type (415) and a ``GET`` (405), and the endpoint
    FastAPI's routes chose for the reset (``None``: a fast lane answered)."""
    async with _probed(app) as (client, seen):
        await client.post(LINKS, content=dumps(link_body(merchant)), headers=auth(merchant))
        reset = await client.post("/_sandbox/reset")
        gone = await client.post(LINKS, content=dumps(link_body(merchant)), headers=auth(merchant))
        assert gone.status_code == 401  # the reset emptied the tables: the merchant is gone
        wrong = await client.post("/_sandbox/reset", content=b"{}")
        not_allowed = await client.get("/_sandbox/reset")
    return [_answer(reset), _answer(wrong), _answer(not_allowed)], seen[1]


async def _recreate(app: FastAPI, merchant: SandboxClient) -> SandboxClient:
    """``merchant`` made again after a reset (the same slug and tokens), for the next app's turn."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        created = await client.post(
            "/_sandbox/clients",
            content=dumps({"slug": merchant.slug}),
            headers={"Content-Type": "application/json"},
        )
    assert created.status_code == 201, created.text
    return SandboxClient.model_validate(created.json())


#: A client's secrets (tokens, keys, the callback header value): new ones for every client.
_SECRETS = re.compile(rb'"(\w*(?:Token|Key|Value|Secret))":"[^"]*"')


def _client_answer(response: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes]:
    """:func:`_answer` of a client create, its secrets masked."""
    status, headers, content = _answer(response)
    return status, headers, _SECRETS.sub(rb'"\1":"<secret>"', content)


async def _client_creates(app: FastAPI) -> tuple[list[Any], list[Any]]:
    """The answers to every kind of ``POST /_sandbox/clients`` (and a ``GET``) after a reset, and the
    endpoints FastAPI's routes chose for them (``None``: a fast lane answered)."""
    json_headers = {"Content-Type": "application/json"}
    slug = "lane"
    clients = "/_sandbox/clients"
    async with _probed(app) as (client, seen):
        assert (await client.post("/_sandbox/reset")).status_code == 200
        answers = [
            await client.post(clients, content=dumps({"slug": slug}), headers=json_headers),
            await client.post(clients, content=dumps({"slug": slug}), headers=json_headers),
            await client.post(clients, content=dumps({"slug": "no spaces"}), headers=json_headers),
            await client.post(clients, content=b'{"slug": ', headers=json_headers),
            await client.post(clients, content=b"[1]", headers=json_headers),
            await client.post(clients, content=b"slug=x", headers={"Content-Type": "text/plain"}),
            await client.post(
                "/_sandbox/clients",
                content=dumps({"slug": f"{slug}-cb", "callbackUrl": "ftp://x"}),
                headers=json_headers,
            ),
            await client.get(clients),
        ]
    return [_client_answer(answer) for answer in answers], seen[1:]


async def test_the_client_create_takes_the_fast_lane_and_answers_as_routed(
    app: FastAPI, routed_app: FastAPI
) -> None:
    # A merchant's suite makes a client for every test (the paysdk_merchant fixture, D640).
    fast, fast_seen = await _client_creates(app)
    routed, routed_seen = await _client_creates(routed_app)
    assert routed == fast
    assert [status for status, _, _ in fast] == [201, 409, 409, 400, 409, 415, 409, 405]
    assert fast_seen[:7] == [None] * 7  # with the lane, FastAPI's routes never saw the creates
    handler = sandbox_first.create_client  # the 415 is the host guard's, before any route
    assert routed_seen[:7] == [handler, handler, handler, handler, handler, None, handler]
