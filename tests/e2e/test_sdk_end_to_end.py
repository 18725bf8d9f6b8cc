"""The SDK against the real reference server: async in process (ASGITransport), async and sync over a
real uvicorn socket, each on SQLite and PostgreSQL. One test body serves every client kind: ``call``
awaits what the async client returns and passes through what the sync client returns.
"""

from __future__ import annotations

import inspect
import io
import time
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any, TypeVar

import httpx
import pytest
import zxingcpp
from fastapi import FastAPI
from PIL import Image

import paysdk
from paysdk.contracts.sandbox import SandboxClient

T = TypeVar("T")
AnyClient = paysdk.Client | paysdk.AsyncClient


async def call(value: T | Any) -> Any:
    """Await an async client's result; pass a sync client's result through."""
    return await value if inspect.isawaitable(value) else value


@pytest.fixture(params=["async-asgi", "async-socket", "sync-socket"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def environment(kind: str, db_url: str, request: pytest.FixtureRequest) -> paysdk.Environment:
    """The server under test, on ``db_url`` (both databases)."""
    if kind == "async-asgi":
        return paysdk.Environment.local("http://testserver")
    return paysdk.Environment.local(request.getfixturevalue("live_server"))


def _make(kind: str, request: pytest.FixtureRequest, environment: paysdk.Environment, **kw: Any) -> AnyClient:
    if kind == "async-asgi":
        app: FastAPI = request.getfixturevalue("app")
        return paysdk.AsyncClient(environment=environment, transport=httpx.ASGITransport(app=app), **kw)
    if kind == "async-socket":
        return paysdk.AsyncClient(environment=environment, **kw)
    return paysdk.Client(environment=environment, **kw)


@pytest.fixture
async def sandbox(
    kind: str, request: pytest.FixtureRequest, environment: paysdk.Environment
) -> AsyncIterator[Any]:
    client = _make(kind, request, environment)
    yield client
    if isinstance(client, paysdk.AsyncClient):
        await client.aclose()
    else:
        client.close()


@pytest.fixture
async def shop(sandbox: AnyClient) -> SandboxClient:
    merchant: SandboxClient = await call(
        sandbox.sandbox.create_client(amount_min=Decimal("1.00"), amount_max=Decimal("5000"))
    )
    return merchant


@pytest.fixture
async def client_for(
    kind: str, request: pytest.FixtureRequest, environment: paysdk.Environment
) -> AsyncIterator[Any]:
    made: list[AnyClient] = []

    def make(token: str, env: paysdk.Environment | None = None, **kw: Any) -> AnyClient:
        client = _make(kind, request, env or environment, merchant_token=token, **kw)
        made.append(client)
        return client

    yield make
    for client in made:
        if isinstance(client, paysdk.AsyncClient):
            await client.aclose()
        else:
            client.close()


@pytest.mark.covers("payment_links.create", "sandbox.create_client", "sandbox.transaction", "sandbox.pay")
async def test_payment_link_paid_by_test_card_sends_the_callback(
    sandbox: AnyClient, shop: SandboxClient, client_for: Any, environment: paysdk.Environment
) -> None:
    client = client_for(shop.sandbox_token)
    link = await call(
        client.payment_links.create(
            amount=Decimal("125.50"),
            user_id="+502 5555 0123",
            channel="wa",
            client=shop.slug,
            external_id="o-1",
        )
    )
    assert link.url == f"{environment.webview_url}/?orderId={link.uid}"
    assert link.reference.startswith("PL-")
    assert client.last_response.status_code == 200

    view = await call(sandbox.sandbox.transaction(link.uid))
    assert (view.status, view.amount, view.currency, view.user_id) == (
        "pending",
        Decimal("125.50"),
        "GTQ",
        "+50255550123",
    )

    result = await call(sandbox.sandbox.pay(link.uid, "4242424242424242"))
    assert result.status == "approved"
    assert (await call(sandbox.sandbox.transaction(link.uid))).status == "approved"


@pytest.mark.covers("sandbox.requests")
async def test_error_contract_maps_to_typed_errors(
    sandbox: AnyClient, shop: SandboxClient, client_for: Any
) -> None:
    args: dict[str, Any] = {
        "amount": Decimal("10"),
        "user_id": "+50255550123",
        "channel": "wa",
        "client": shop.slug,
    }
    wrong_env = client_for(shop.production_token)
    with pytest.raises(paysdk.WrongEnvironmentError) as info:
        await call(wrong_env.payment_links.create(**args))
    assert (info.value.status_code, info.value.own_code) == (401, 2007)
    assert shop.production_token not in str(info.value) + repr(info.value)

    client = client_for(shop.sandbox_token)
    with pytest.raises(paysdk.UnknownClientError) as unknown:
        await call(client.payment_links.create(**{**args, "client": shop.slug.upper()}))
    assert (unknown.value.status_code, unknown.value.own_code) == (409, 5004)

    with pytest.raises(paysdk.AmountOutOfRangeError) as out_of_range:
        await call(client.payment_links.create(**{**args, "amount": Decimal("5000.01")}))
    assert (out_of_range.value.status_code, out_of_range.value.own_code) == (400, 2003)

    with pytest.raises(paysdk.AuthenticationError) as unauthenticated:
        await call(client_for("0" * 64).payment_links.create(**args))
    assert unauthenticated.value.status_code == 401
    assert unauthenticated.value.own_code is None

    before = len(await call(sandbox.sandbox.requests()))
    with pytest.raises(paysdk.ValidationError) as invalid:
        await call(client.payment_links.create(**{**args, "user_id": "12345"}))
    assert invalid.value.field == "user_id"
    assert len(await call(sandbox.sandbox.requests())) == before  # nothing was sent


@pytest.mark.covers(
    "alternative_payments.create",
    "alternative_payments.process",
    "alternative_payments.create_payment_intent",
    "alternative_payments.dismiss",
)
async def test_alternative_payment_qr_intent_and_dismiss(
    sandbox: AnyClient, shop: SandboxClient, client_for: Any
) -> None:
    client = client_for(shop.sandbox_token)
    payment = await call(
        client.alternative_payments.create(
            amount=Decimal("80.25"),
            channel="app",
            client=shop.slug,
            user_id="+50255550123",
            custom_keys={"order": "A-9"},
        )
    )
    assert "akisiQR" in payment.payment_methods
    assert payment.expire_at > int(time.time() * 1000)

    qr = await call(client.alternative_payments.process(payment.uid, processor="akisiQR"))
    assert qr.type == "base64"
    assert qr.data.startswith("data:image/png;base64,")
    decoded = zxingcpp.read_barcodes(Image.open(io.BytesIO(qr.png_bytes())))
    assert len(decoded) == 1
    assert payment.uid in decoded[0].text

    intent = await call(client.alternative_payments.create_payment_intent(payment.uid, processor="pronet"))
    assert (intent.uid, intent.processor, intent.status) == (payment.uid, "pronet", "requires_action")

    dismissed = await call(client.alternative_payments.dismiss(payment.uid))
    assert dismissed.status == "dismissed"
    with pytest.raises(paysdk.ConflictError):
        await call(client.alternative_payments.dismiss(payment.uid))
    with pytest.raises(paysdk.NotFoundError):
        await call(client.alternative_payments.process("no-such-uid", processor="akisiQR"))


async def test_rail_the_client_lacks_is_an_invalid_field(sandbox: AnyClient, client_for: Any) -> None:
    shop: SandboxClient = await call(sandbox.sandbox.create_client(payment_methods=["akisiQR"]))
    client = client_for(shop.sandbox_token)
    payment = await call(
        client.alternative_payments.create(amount=5, channel="web", client=shop.slug, user_id="+50255550123")
    )
    assert payment.payment_methods == ["akisiQR"]
    with pytest.raises(paysdk.InvalidFieldError) as info:
        await call(client.alternative_payments.process(payment.uid, processor="zigi"))
    assert info.value.own_code == 5000
    assert any(d["field"] == "processor" for d in info.value.body["details"])


@pytest.mark.covers("sandbox.add_fault")
async def test_post_is_retried_with_one_key_only_where_keys_are_honoured(
    sandbox: AnyClient, shop: SandboxClient, client_for: Any, environment: paysdk.Environment
) -> None:
    args: dict[str, Any] = {"amount": 10, "user_id": "+50255550123", "channel": "wa", "client": shop.slug}
    await call(sandbox.sandbox.add_fault("error", route="POST /transactions", count=1, status=503))
    client = client_for(shop.sandbox_token)
    link = await call(client.payment_links.create(**args))
    assert client.last_response.attempts == 2
    posts = [r for r in await call(sandbox.sandbox.requests()) if r.path == "/transactions"]
    assert [r.status_code for r in posts[-2:]] == [503, 200]

    # The same deployment, not declared to honour keys: a POST that may have arrived is not retried.
    plain = paysdk.Environment(
        environment.base_url, environment.webview_url, environment.wallet_base_url, environment.cms_base_url
    )
    await call(sandbox.sandbox.add_fault("error", route="POST /transactions", count=1, status=503))
    cautious = client_for(shop.sandbox_token, plain)
    with pytest.raises(paysdk.InternalServerError) as info:
        await call(cautious.payment_links.create(**args))
    assert info.value.attempts == 1
    assert link.uid


async def test_idempotency_key_replays_the_same_transaction(shop: SandboxClient, client_for: Any) -> None:
    client = client_for(shop.sandbox_token)
    args: dict[str, Any] = {"amount": 10, "user_id": "+50255550123", "channel": "wa", "client": shop.slug}
    first = await call(client.payment_links.create(**args, idempotency_key="order-77"))
    again = await call(client.payment_links.create(**args, idempotency_key="order-77"))
    assert first.uid == again.uid
    with pytest.raises(paysdk.ConflictError):
        await call(client.payment_links.create(**{**args, "amount": 11}, idempotency_key="order-77"))


async def test_rate_limit_is_retried_after_retry_after(
    sandbox: AnyClient, shop: SandboxClient, client_for: Any
) -> None:
    await call(sandbox.sandbox.add_fault("rate_limit", route="POST /transactions", count=1, retry_after=1))
    client = client_for(shop.sandbox_token)
    started = time.monotonic()
    await call(client.payment_links.create(amount=10, user_id="+50255550123", channel="wa", client=shop.slug))
    assert client.last_response.attempts == 2
    assert time.monotonic() - started >= 1.0


@pytest.mark.covers("payment_links.create_with_hook_keys")
async def test_hook_keys_create_a_link_without_a_merchant_token(
    sandbox: AnyClient, shop: SandboxClient, client_for: Any
) -> None:
    anonymous = client_for("")  # no merchant token at all: the body keys authenticate
    link = await call(
        anonymous.payment_links.create_with_hook_keys(
            private_key=shop.hook_private_key,
            public_key=shop.hook_public_key,
            amount=Decimal("12.00"),
            user_id="+50255550123",
            channel="web",
        )
    )
    assert (await call(sandbox.sandbox.transaction(link.uid))).client == shop.slug
    with pytest.raises(paysdk.AuthenticationError):
        await call(
            anonymous.payment_links.create_with_hook_keys(
                private_key=shop.hook_public_key,
                public_key=shop.hook_private_key,
                amount=Decimal("12.00"),
                user_id="+50255550123",
                channel="web",
            )
        )
