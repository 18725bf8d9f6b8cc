"""The virtual clock shared by several server instances on one database (issue 20 item 11, D361): every
``POST /_sandbox/clock/advance`` adds its whole step, atomically in the database, whichever instance
answers it, and the first advances of a new database (no clock row yet) never fail on its key."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal

import httpx
import pytest
from fastapi import FastAPI
from server_helpers import JSON_TYPE, body, create_link, dumps, transaction

from paysdk.contracts.sandbox import ClockState, SandboxClient
from paysdk.server import create_app

HOUR = 3600


@pytest.fixture
async def second_client(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A second app instance over the same database (as a second ``paysdk serve`` process has)."""
    other: FastAPI = create_app(db_url, start_ticker=False)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=other), base_url="http://testserver"
        ) as client:
            yield client
    finally:
        other.state.paysdk.db.dispose()


async def _advance(client: httpx.AsyncClient, seconds: int) -> httpx.Response:
    return await client.post(
        "/_sandbox/clock/advance", content=dumps({"seconds": seconds}), headers=JSON_TYPE
    )


async def _offset(client: httpx.AsyncClient) -> Decimal:
    return ClockState.model_validate(body(await client.get("/_sandbox/clock"))).offset_seconds


async def test_concurrent_advances_on_two_instances_add_up_exactly(
    asgi_client: httpx.AsyncClient, second_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    # A link expiring on the way: it expires at its own time, whichever instance runs the expiry.
    link = await create_link(asgi_client, merchant)  # expires after 24 h
    clients = [asgi_client, second_client] * 15
    responses = await asyncio.gather(*(_advance(client, HOUR) for client in clients))
    assert [r.status_code for r in responses] == [200] * 30, [
        r.text for r in responses if r.status_code != 200
    ]
    assert await _offset(asgi_client) == await _offset(second_client) == 30 * HOUR
    assert max(ClockState.model_validate(body(r)).offset_seconds for r in responses) == 30 * HOUR
    stored = await transaction(asgi_client, link["uid"])
    assert stored.status == "expired"
    assert stored.updated_at == stored.expire_at


async def test_two_simultaneous_advances_to_two_instances_move_the_clock_twice(
    asgi_client: httpx.AsyncClient, second_client: httpx.AsyncClient
) -> None:
    for round_ in range(1, 4):
        first, second = await asyncio.gather(_advance(asgi_client, HOUR), _advance(second_client, HOUR))
        assert (first.status_code, second.status_code) == (200, 200), (first.text, second.text)
        assert await _offset(second_client) == 2 * HOUR * round_


async def test_the_first_concurrent_advances_of_a_new_database_never_fail(
    asgi_client: httpx.AsyncClient, second_client: httpx.AsyncClient
) -> None:
    """No clock row yet (a new database, or one just reset): each advance inserts it or adds to it."""
    for round_ in range(3):
        if round_:
            reset = await asgi_client.post("/_sandbox/reset")  # the clock row is gone again
            assert reset.status_code in (200, 204), reset.text
        responses = await asyncio.gather(
            *(_advance(client, 60) for client in [asgi_client, second_client] * 4)
        )
        assert [r.status_code for r in responses] == [200] * 8, [r.text for r in responses]
        assert await _offset(asgi_client) == 8 * 60, round_
