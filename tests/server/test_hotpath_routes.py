"""The families' routes are built once per process and shared by the apps made in it (D762)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from fastapi import APIRouter

from paysdk.server import create_app
from paysdk.server.errors import APIProblem
from paysdk.server.hotpath.routes import SERVING, include_shared
from paysdk.server.routers._bearer import wallet_db


def _apps(tmp_path: Path, count: int) -> list[Any]:
    return [create_app(f"sqlite:///{tmp_path / f'{n}.db'}", start_ticker=False) for n in range(count)]


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


def test_two_apps_hold_the_same_route_objects(tmp_path: Path) -> None:
    first, second = _apps(tmp_path, 2)
    try:
        assert len(first.router.routes) == len(second.router.routes)
        shared = [a for a, b in zip(first.router.routes, second.router.routes, strict=True) if a is b]
        # every family router's routes are shared; the app's own pages (openapi, docs) are its own
        assert len(shared) >= 20
    finally:
        first.state.paysdk.db.dispose()
        second.state.paysdk.db.dispose()


async def test_each_app_serves_and_overrides_stay_with_their_app(tmp_path: Path) -> None:
    first, second = _apps(tmp_path, 2)

    async def refuse() -> Any:
        raise APIProblem(403, 7401, "overridden for the first app only")

    first.dependency_overrides[wallet_db] = refuse
    try:
        async with _client(first) as one, _client(second) as two:
            for _ in range(2):  # the second app's routes are the first app's, built once
                refused = await one.get("/rest/users/someone/cards", headers={"Authorization": "Bearer x"})
                plain = await two.get("/rest/users/someone/cards", headers={"Authorization": "Bearer x"})
                assert refused.status_code == 403
                assert plain.status_code == 401
        assert SERVING.get() is None  # set for a request only
    finally:
        first.state.paysdk.db.dispose()
        second.state.paysdk.db.dispose()


async def test_a_router_is_built_once_per_mount(tmp_path: Path) -> None:
    router = APIRouter()

    @router.get("/ping")
    async def ping() -> dict[str, str]:
        return {"pong": "yes"}

    first, second = _apps(tmp_path, 2)
    try:
        include_shared(first, router, "/a")
        include_shared(second, router, "/a")
        include_shared(second, router, "/b")
        assert first.router.routes[-1] is second.router.routes[-2]
        assert second.router.routes[-1] is not second.router.routes[-2]
        async with _client(second) as client:
            for path in ("/a/ping", "/b/ping"):
                assert (await client.get(path)).json() == {"pong": "yes"}
    finally:
        first.state.paysdk.db.dispose()
        second.state.paysdk.db.dispose()
