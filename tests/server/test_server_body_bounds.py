"""Body bounds on every route, in process (D85): the body streams through ``httpx.ASGITransport`` one
chunk per ``receive``, so the test sees how much of it the server read. Over a real socket (memory,
concurrency, timeouts, disconnects): ``test_server_body_bounds_live.py``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from server_helpers import body

from paysdk.server import create_app
from paysdk.server.bodies import MAX_BODY_BYTES

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

CHUNK = 64 * 1024
#: One route of each kind: fast lane, idempotent public POST, other public POST, hosted checkout form,
#: control plane, wallet.
JSON_ONLY = {"Content-Type": "application/json"}  # the control plane takes JSON bodies only (D92)

ROUTES = [
    ("/transactions", {}),
    ("/transactions", {"Idempotency-Key": "k-1"}),
    ("/api/v1/integrations/transactions", {}),
    ("/checkout/pay", {"Content-Type": "application/x-www-form-urlencoded"}),
    ("/_sandbox/clients", {"Content-Type": "application/json"}),  # D92: JSON only
    ("/rest/auth/login", {}),
]


class Counted:
    """An endless async body that counts the chunks the server pulled; ``stall`` waits after the first."""

    def __init__(self, stall: float = 0.0) -> None:
        self.pulled = 0
        self.stall = stall

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            self.pulled += 1
            yield b"a" * CHUNK
            if self.stall:
                await asyncio.sleep(self.stall)


@pytest.fixture
def bounded_app(db_url: str) -> Iterator[FastAPI]:
    application = create_app(db_url, start_ticker=False, body_timeout=0.5)
    try:
        yield application
    finally:
        application.state.paysdk.db.dispose()


async def _post(app: FastAPI, path: str, content: Counted, headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.post(path, content=content, headers=headers)


def _assert_refused(response: httpx.Response, status: int, message: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["connection"] == "close"
    answer = body(response)
    assert answer["ownCode"] is None
    assert answer["details"] == [{"field": "body", "message": message}]


@pytest.mark.parametrize(("path", "headers"), ROUTES)
async def test_a_body_growing_past_the_limit_is_cut_off(
    bounded_app: FastAPI, path: str, headers: dict[str, str]
) -> None:
    content = Counted()
    response = await _post(bounded_app, path, content, headers)
    _assert_refused(response, 413, f"exceeds {MAX_BODY_BYTES} bytes")
    assert content.pulled == MAX_BODY_BYTES // CHUNK + 1  # read up to the chunk that crossed it, no more


@pytest.mark.parametrize(("path", "headers"), ROUTES)
async def test_a_declared_length_over_the_limit_is_refused_unread(
    bounded_app: FastAPI, path: str, headers: dict[str, str]
) -> None:
    content = Counted()
    response = await _post(bounded_app, path, content, {**headers, "Content-Length": str(1 << 30)})
    _assert_refused(response, 413, f"exceeds {MAX_BODY_BYTES} bytes")
    assert content.pulled == 0


@pytest.mark.parametrize(("path", "headers"), ROUTES)
async def test_a_stalled_body_is_408(bounded_app: FastAPI, path: str, headers: dict[str, str]) -> None:
    content = Counted(stall=60)
    started = time.monotonic()
    response = await _post(bounded_app, path, content, headers)
    _assert_refused(response, 408, "was not received completely within 0.5 seconds")
    assert time.monotonic() - started < 30
    assert content.pulled == 1


async def test_a_body_at_the_limit_is_read(bounded_app: FastAPI) -> None:
    padded = b'{"callbackUrl": null, "note": "' + b"x" * (MAX_BODY_BYTES - 64) + b'"}'
    padded = padded.ljust(MAX_BODY_BYTES, b" ")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=bounded_app), base_url="http://testserver"
    ) as client:
        response = await client.post("/_sandbox/clients", content=padded, headers=JSON_ONLY)
        small = await client.post("/_sandbox/clients", content=b"{}", headers=JSON_ONLY)
    # Exactly the limit: read whole and served (the unknown field is ignored).
    assert len(padded) == MAX_BODY_BYTES
    assert response.status_code == 201, response.text
    assert small.status_code == 201


@pytest.mark.parametrize(
    ("option", "value"), [("body_limit", -1), ("body_timeout", 0), ("body_timeout", float("nan"))]
)
def test_bad_bounds_are_refused_naming_the_option(db_url: str, option: str, value: float) -> None:
    settings: dict[str, Any] = {option: value}
    with pytest.raises(ValueError, match=f"^{option}: must be"):
        create_app(db_url, start_ticker=False, **settings)
