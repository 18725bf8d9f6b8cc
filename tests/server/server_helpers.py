"""Helpers of the reference-server tests (imported by the test modules of this directory)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from paysdk import _json
from paysdk.contracts.sandbox import CallbackAttempt, SandboxClient, SandboxTransaction

#: Where a verdict depends on the time of day (a client's local date against the UTC date): the server's
#: wall clock pinned early, at midday and late in a UTC day (``@pytest.mark.parametrize("wall_clock",
#: TIMES_OF_DAY)``, the ``wall_clock`` fixture of ``tests/conftest.py``), so the test is the same test
#: whenever the suite runs.
TIMES_OF_DAY = [
    pytest.param(datetime(2026, 3, 2, 0, 30, tzinfo=UTC), id="0030Z"),
    pytest.param(datetime(2026, 3, 2, 12, 0, tzinfo=UTC), id="1200Z"),
    pytest.param(datetime(2026, 3, 2, 23, 30, tzinfo=UTC), id="2330Z"),
]

#: The control plane takes JSON bodies only (D92): requests sent with ``content=`` name the type.
JSON_TYPE = {"Content-Type": "application/json"}

PHONE = "+50212345678"


def dumps(value: Any) -> bytes:
    """Exact JSON (Decimal kept)."""
    return _json.dumps(value)


def body(response: httpx.Response) -> Any:
    """The answer parsed Decimal-exact."""
    return _json.loads(response.content)


def link_body(merchant: SandboxClient, **overrides: Any) -> dict[str, Any]:
    """A valid ``POST /transactions`` body for ``merchant``."""
    data: dict[str, Any] = {
        "amount": Decimal("10.50"),
        "userId": PHONE,
        "channel": "wa",
        "client": merchant.slug,
        "ads": [],
    }
    data.update(overrides)
    return data


def auth(merchant: SandboxClient, *, bearer: bool = False, production: bool = False) -> dict[str, str]:
    """The ``Authorization`` header of ``merchant``."""
    token = merchant.production_token if production else merchant.sandbox_token
    return {"Authorization": f"Bearer {token}" if bearer else token}


async def create_link(client: httpx.AsyncClient, merchant: SandboxClient, **overrides: Any) -> dict[str, Any]:
    """Create a payment link and return the answer body."""
    response = await client.post(
        "/transactions", content=dumps(link_body(merchant, **overrides)), headers=auth(merchant)
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = body(response)
    return result


async def create_alternative(
    client: httpx.AsyncClient, merchant: SandboxClient, **overrides: Any
) -> dict[str, Any]:
    """Create an alternative payment and return ``data``."""
    payload = {
        "amount": Decimal("25.00"),
        "userId": PHONE,
        "channel": "web",
        "client": merchant.slug,
        **overrides,
    }
    response = await client.post(
        "/api/v1/integrations/transactions", content=dumps(payload), headers=auth(merchant, bearer=True)
    )
    assert response.status_code == 201, response.text
    result: dict[str, Any] = body(response)["data"]
    return result


async def pay(client: httpx.AsyncClient, uid: str, card: str, three_ds: str | None = None) -> dict[str, Any]:
    """Pay a link headlessly through the control plane."""
    payload: dict[str, Any] = {"cardNumber": card}
    if three_ds is not None:
        payload["threeDSResult"] = three_ds
    response = await client.post(
        f"/_sandbox/transactions/{uid}/pay", content=dumps(payload), headers=JSON_TYPE
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = body(response)
    return result


async def advance(client: httpx.AsyncClient, seconds: int | Decimal) -> dict[str, Any]:
    """Advance the virtual clock."""
    response = await client.post(
        "/_sandbox/clock/advance", content=dumps({"seconds": seconds}), headers=JSON_TYPE
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = body(response)
    return result


async def transaction(client: httpx.AsyncClient, uid: str) -> SandboxTransaction:
    """The control plane's view of a transaction."""
    response = await client.get(f"/_sandbox/transactions/{uid}")
    assert response.status_code == 200, response.text
    return SandboxTransaction.model_validate(body(response))


async def attempts(client: httpx.AsyncClient, uid: str | None = None) -> list[CallbackAttempt]:
    """Recorded callback attempts."""
    response = await client.get("/_sandbox/callbacks", params={"uid": uid} if uid else None)
    assert response.status_code == 200, response.text
    return [CallbackAttempt.model_validate(item) for item in body(response)]


def assert_error(
    response: httpx.Response, status: int, own_code: int | None, field: str | None = None
) -> Any:
    """Check the D1 error body and return it."""
    assert response.status_code == status, (response.status_code, response.text)
    data = body(response)
    assert set(data) == {"ownCode", "message", "details"}, data
    assert data["ownCode"] == own_code, data
    assert isinstance(data["message"], str)
    assert data["message"]
    if field is not None:
        assert field in [detail["field"] for detail in data["details"]], data
    return data


def form_token(html: str) -> str:
    """The ``formToken`` the forms of a checkout page post back (D94)."""
    match = re.search(r"name='formToken' value='([^']+)'", html)
    assert match is not None, "the page has no form token"
    return match.group(1)


async def page_token(client: httpx.AsyncClient, url: str) -> str:
    """:func:`form_token` of the page at ``url``."""
    return form_token((await client.get(url)).text)
