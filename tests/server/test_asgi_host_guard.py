"""The host guard (:mod:`paysdk.server.asgi.host_guard`, D91, D92, D270): alone, and in the real app."""

from __future__ import annotations

import hashlib

import httpx
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from paysdk.server.addresses import ServerAddresses
from paysdk.server.asgi.host_guard import HostGuard
from paysdk.server.control_token import ControlPlaneAccess


def _guard(calls: list[str], access: ControlPlaneAccess | None = None) -> HostGuard:
    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        calls.append(scope["path"])
        await PlainTextResponse("ok")(scope, receive, send)

    return HostGuard(inner, ServerAddresses(None, ["api.example"]), access or ControlPlaneAccess())


async def test_an_unknown_host_is_421_and_nothing_inside_runs() -> None:
    calls: list[str] = []
    transport = httpx.ASGITransport(app=_guard(calls))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        refused = await client.get("/x", headers={"Host": "evil.example"})
        allowed = await client.get("/x", headers={"Host": "api.example"})
        loopback = await client.get("/x", headers={"Host": "127.0.0.1:8000"})
    assert refused.status_code == 421
    assert (allowed.status_code, loopback.status_code) == (200, 200)
    assert calls == ["/x", "/x"]


async def test_a_guarded_control_plane_needs_its_token() -> None:
    calls: list[str] = []
    access = ControlPlaneAccess(hashlib.sha256(b"s3cret-token").digest(), False)
    transport = httpx.ASGITransport(app=_guard(calls, access))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        missing = await client.get("/_sandbox/clients")
        wrong = await client.get("/_sandbox/clients", headers={"Paysdk-Control-Token": "nope"})
        right = await client.get("/_sandbox/clients", headers={"Paysdk-Control-Token": "s3cret-token"})
        public = await client.get("/transactions")
    assert (missing.status_code, wrong.status_code, right.status_code, public.status_code) == (
        401,
        403,
        200,
        200,
    )
    assert calls == ["/_sandbox/clients", "/transactions"]


async def test_the_real_app_refuses_unknown_hosts_and_cross_site_control_calls(
    asgi_client: httpx.AsyncClient,
) -> None:
    assert (await asgi_client.get("/_sandbox/health", headers={"Host": "evil.example"})).status_code == 421
    cross = await asgi_client.post("/_sandbox/clients", json={}, headers={"Origin": "https://evil.example"})
    assert cross.status_code == 403
    logged = (await asgi_client.get("/_sandbox/requests")).json()
    assert logged == []  # refused before the request log
