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
import paysdk.contracts.sandbox
from paysdk.contracts.sandbox import SandboxClient
from paysdk.testing._ready import free_port

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


async def test_simulate_answers_the_outcome_of_a_rail_payment(
    sandbox: AnyClient, shop: SandboxClient, client_for: Any
) -> None:
    """Decision D60: ``/simulate`` answers a ``PayResult`` like ``/pay``, and the SDK parses it."""
    client = client_for(shop.sandbox_token)
    args: dict[str, Any] = {"amount": 15, "channel": "web", "client": shop.slug, "user_id": "+50255550123"}
    paid = await call(client.alternative_payments.create(**args))
    await call(client.alternative_payments.create_payment_intent(paid.uid, processor="pronet"))
    result = await call(sandbox.sandbox.simulate(paid.uid, "paid"))
    assert isinstance(result, paysdk.contracts.sandbox.PayResult)
    assert (result.uid, result.status, result.outcome) == (paid.uid, "approved", "rail_paid")
    assert "pronet" in result.message
    assert (await call(sandbox.sandbox.transaction(paid.uid))).status == "approved"

    expiring = await call(client.alternative_payments.create(**args))
    result = await call(sandbox.sandbox.simulate(expiring.uid, "expired"))
    assert (result.uid, result.status, result.outcome) == (expiring.uid, "expired", "expired")
    with pytest.raises(paysdk.ConflictError):  # terminal now
        await call(sandbox.sandbox.simulate(expiring.uid, "paid"))


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
    assert client.last_response.replayed is False
    again = await call(client.payment_links.create(**args, idempotency_key="order-77"))
    assert first.uid == again.uid
    assert client.last_response.replayed is True
    assert client.last_response.attempts == 1
    with pytest.raises(paysdk.UnprocessableEntityError) as info:  # the key with another body (D17)
        await call(client.payment_links.create(**{**args, "amount": 11}, idempotency_key="order-77"))
    assert info.value.status_code == 422
    assert info.value.attempts == 1  # never retried
    assert info.value.body["details"][0]["field"] == "Idempotency-Key"


@pytest.mark.parametrize("kind", ["async-socket", "sync-socket"])
async def test_a_request_still_in_progress_is_retried_with_its_key_until_replayed(
    kind: str, shop: SandboxClient, client_for: Any, sandbox: AnyClient, hold_first_request: Any
) -> None:
    """Attempt 1 times out while the server still works on it; attempt 2 gets the in-progress 409 and
    backs off; attempt 3, with the same key, gets the stored answer replayed (D17)."""
    held = hold_first_request("/transactions")
    client = client_for(shop.sandbox_token, timeout=httpx.Timeout(1.0, connect=5.0))
    sleeps: list[float] = []

    def pause(delay: float) -> None:
        sleeps.append(delay)
        if len(sleeps) == 2:  # after the in-progress 409: let the first request finish
            held.release.set()
            assert held.finished.wait(20)

    async def apause(delay: float) -> None:
        pause(delay)

    client._sleep = apause if isinstance(client, paysdk.AsyncClient) else pause
    link = await call(
        client.payment_links.create(amount=10, user_id="+50255550123", channel="wa", client=shop.slug)
    )
    info = client.last_response
    assert (info.attempts, info.status_code, info.replayed) == (3, 200, True)
    assert len(sleeps) == 2
    posts = [r for r in await call(sandbox.sandbox.requests()) if r.path == "/transactions"]
    # Logged as answered: the 409, then the held first attempt, then the replay.
    assert len(posts) == 3
    assert posts[0].status_code == 409
    assert posts[2].status_code == 200
    assert [r.headers.get("x-paysdk-retry-count") for r in posts] == ["1", None, "2"]
    assert (await call(sandbox.sandbox.transaction(link.uid))).status == "pending"


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


@pytest.mark.parametrize("kind", ["async-socket", "sync-socket"])
async def test_a_post_cut_off_after_sending_says_its_outcome_is_unknown(
    kind: str,
    shop: SandboxClient,
    client_for: Any,
    environment: paysdk.Environment,
    hold_first_request: Any,
) -> None:
    """Item 7.23: a read timeout after the POST was sent, not replayed (the environment does not declare
    key support), raises with ``outcome_unknown``; the server did create the link meanwhile."""
    held = hold_first_request("/transactions")
    plain = paysdk.Environment(
        environment.base_url, environment.webview_url, environment.wallet_base_url, environment.cms_base_url
    )
    hasty = client_for(shop.sandbox_token, plain, timeout=httpx.Timeout(0.5, connect=5.0))
    args: dict[str, Any] = {"amount": 10, "user_id": "+50255550123", "channel": "wa", "client": shop.slug}
    with pytest.raises(paysdk.APITimeoutError) as info:
        await call(hasty.payment_links.create(**args, idempotency_key="cut-1"))
    assert info.value.outcome_unknown is True
    assert info.value.attempts == 1  # not replayed: the key is not declared honoured
    assert "may have reached the server and taken effect (outcome unknown)" in str(info.value)
    held.release.set()
    assert held.finished.wait(20)
    # It did take effect: sending it again with the same key replays the link the first attempt created.
    patient = client_for(shop.sandbox_token, plain)
    await call(patient.payment_links.create(**args, idempotency_key="cut-1"))
    assert patient.last_response.replayed is True

    # Nothing listens on a closed port: the POST was never sent, and the error says so.
    port = free_port()
    closed = paysdk.Environment.local(f"http://127.0.0.1:{port}")
    refused = client_for(shop.sandbox_token, closed, max_retries=0)
    with pytest.raises(paysdk.APIConnectionError) as refused_info:
        await call(refused.payment_links.create(**args))
    assert refused_info.value.outcome_unknown is False
    assert str(refused_info.value).endswith("the request was not sent")
