"""Both clients end to end against a mock transport: calls, retries, keys, errors, options."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx
import pytest
import respx

import paysdk
from paysdk.contracts.alternative_payments import DismissResult, PaymentIntent, ProcessResult

from .conftest import HarnessFactory
from .support import LOCAL_URL, TOKEN, keyed_environment, plain_environment

LINK = {"uid": "u1", "reference": "PL-ABCDEFGHJK", "URL": "http://paysdk.test/checkout/?orderId=u1"}
PNG = b"\x89PNG\r\n\x1a\nfake"


def create_link(client: Any, **overrides: Any) -> Any:
    args: dict[str, Any] = {
        "amount": Decimal("10.10"),
        "user_id": "+50223456789",
        "channel": "wa",
        "client": "shop",
    }
    args.update(overrides)
    return client.payment_links.create(**args)


class Recorder:
    """A MockTransport handler answering from a queue, keeping every request."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def ok_link() -> httpx.Response:
    return httpx.Response(200, json=LINK, headers={"X-Request-Id": "req-42"})


def test_create_payment_link(make_harness: HarnessFactory) -> None:
    recorder = Recorder(ok_link())
    harness = make_harness(recorder)
    link = harness.call(create_link)
    assert (link.uid, link.reference, link.url) == ("u1", "PL-ABCDEFGHJK", LINK["URL"])
    request = recorder.requests[0]
    assert request.method == "POST"
    assert request.headers["Authorization"] == TOKEN
    assert json.loads(request.content) == {
        "amount": 10.10,
        "userId": "+50223456789",
        "channel": "wa",
        "client": "shop",
        "ads": [],
    }
    assert b'"amount":10.10,' in request.content
    info = harness.client.last_response
    assert isinstance(info, paysdk.ResponseInfo)
    assert (info.status_code, info.attempts, info.request_id) == (200, 1, "req-42")
    assert info.elapsed >= 0


def test_optional_link_fields_and_e164_normalisation(make_harness: HarnessFactory) -> None:
    recorder = Recorder(ok_link())
    harness = make_harness(recorder)
    harness.call(
        lambda c: create_link(
            c,
            user_id=" +502 (2345) 67-89 ",  # separators and spaces dropped (D525)
            channel=paysdk_channel("sms"),
            currency="USD",
            external_id="order-9",
            custom_keys={"k": "v"},
            ads=["x"],
        )
    )
    body = json.loads(recorder.requests[0].content)
    assert body["userId"] == "+50223456789"
    assert body["channel"] == "sms"
    assert body["currency"] == "USD"
    assert body["externalId"] == "order-9"
    assert body["customKeys"] == {"k": "v"}
    assert body["ads"] == ["x"]


def paysdk_channel(value: str) -> Any:
    from paysdk.contracts.common import Channel

    return Channel(value)


def test_hook_keys_need_no_token(make_harness: HarnessFactory) -> None:
    recorder = Recorder(ok_link())
    harness = make_harness(recorder, token=None)
    link = harness.call(
        lambda c: c.payment_links.create_with_hook_keys(
            private_key=paysdk.Secret("11111111-2222-3333-4444-555555555555"),
            public_key="66666666-7777-8888-9999-000000000000",
            amount="25.00",
            user_id="+50223456789",
            channel="web",
        )
    )
    assert link.uid == "u1"
    request = recorder.requests[0]
    assert request.url.path == "/transactions-hook"
    assert "Authorization" not in request.headers
    body = json.loads(request.content)
    assert body["privateKey"] == "11111111-2222-3333-4444-555555555555"
    assert "client" not in body
    assert b'"amount":25.00' in request.content


def test_token_required_only_when_needed(
    make_harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAYSDK_MERCHANT_TOKEN", raising=False)
    recorder = Recorder(ok_link())
    harness = make_harness(recorder, token=None)
    with pytest.raises(paysdk.ValidationError) as info:
        harness.call(create_link)
    assert info.value.field == "merchant_token"
    assert recorder.requests == []


def test_token_from_environment_variable(
    make_harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYSDK_MERCHANT_TOKEN", "envtoken123")
    recorder = Recorder(ok_link())
    harness = make_harness(recorder, token=None)
    harness.call(create_link)
    assert recorder.requests[0].headers["Authorization"] == "envtoken123"


def test_alternative_payments_flow(make_harness: HarnessFactory) -> None:
    data_uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    recorder = Recorder(
        httpx.Response(
            201,
            json={"data": {"uid": "a1", "paymentMethods": ["akisiQR", "zigi"], "expireAt": 1700000000000}},
        ),
        httpx.Response(200, json={"data": {"type": "base64", "data": data_uri}}),
        httpx.Response(
            201,
            json={
                "data": {
                    "intentId": "pi_1",
                    "uid": "a1",
                    "processor": "zigi",
                    "status": "requires_action",
                    "expireAt": 1700000000000,
                }
            },
        ),
        httpx.Response(200, json={"data": {"uid": "a1", "status": "dismissed"}}),
    )
    harness = make_harness(recorder)
    payment = harness.call(
        lambda c: c.alternative_payments.create(
            amount=Decimal("99.99"),
            channel="app",
            client="shop",
            user_id="+50223456789",
            custom_keys={"a": 1},
        )
    )
    assert payment.uid == "a1"
    assert payment.payment_methods == ["akisiQR", "zigi"]
    result = harness.call(lambda c: c.alternative_payments.process("a1", processor="akisiQR"))
    assert isinstance(result, ProcessResult)
    assert result.png_bytes() == PNG
    intent = harness.call(lambda c: c.alternative_payments.create_payment_intent("a1", processor="zigi"))
    assert isinstance(intent, PaymentIntent)
    dismissed = harness.call(lambda c: c.alternative_payments.dismiss("a1"))
    assert isinstance(dismissed, DismissResult)

    create, process, intent_req, dismiss = recorder.requests
    for request in recorder.requests:
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert create.url.path == "/api/v1/integrations/transactions"
    assert json.loads(process.content) == {"processor": "akisiQR", "data": {}}
    assert process.url.path == "/api/v1/integrations/transactions/a1/payments"
    assert intent_req.url.path == "/api/v1/integrations/transactions/a1/payment-intents"
    assert dismiss.url.path == "/api/v1/integrations/transactions/a1/dismiss"
    assert dismiss.content == b""


def test_uid_is_one_path_segment(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.Response(200, json={"data": {"uid": "x", "status": "dismissed"}}))
    harness = make_harness(recorder)
    harness.call(lambda c: c.alternative_payments.dismiss("../admin?x=1"))
    assert (
        recorder.requests[0].url.raw_path == b"/api/v1/integrations/transactions/..%2Fadmin%3Fx%3D1/dismiss"
    )


# ---------------------------------------------------------------------------------------------- retries


def test_keyed_post_retried_with_the_same_key_via_respx(make_harness: HarnessFactory) -> None:
    with respx.mock(base_url=LOCAL_URL, assert_all_called=True) as mock:
        route = mock.post("/transactions").mock(
            side_effect=[httpx.Response(503), httpx.ReadTimeout("slow"), httpx.Response(200, json=LINK)]
        )
        harness = make_harness()  # default transport, intercepted by respx
        link = harness.call(create_link)
    assert link.uid == "u1"
    assert route.call_count == 3
    keys = {call.request.headers["Idempotency-Key"] for call in route.calls}
    assert len(keys) == 1
    (key,) = keys
    assert len(key) == 36  # a UUID4
    assert [call.request.headers.get("X-Paysdk-Retry-Count") for call in route.calls] == [None, "1", "2"]
    bodies = {call.request.content for call in route.calls}
    assert len(bodies) == 1
    assert harness.sleeps == [0.5, 1.0]
    assert harness.client.last_response.attempts == 3


def test_each_logical_call_gets_its_own_key(make_harness: HarnessFactory) -> None:
    recorder = Recorder(ok_link())
    harness = make_harness(recorder)
    harness.call(create_link)
    harness.call(create_link)
    first, second = (r.headers["Idempotency-Key"] for r in recorder.requests)
    assert first != second


def test_caller_key_wins(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.Response(502), ok_link())
    harness = make_harness(recorder)
    harness.call(lambda c: create_link(c, idempotency_key="order-77"))
    assert [r.headers["Idempotency-Key"] for r in recorder.requests] == ["order-77", "order-77"]


def test_caller_key_sent_but_not_replayed_without_support(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.ReadTimeout("slow"), ok_link())
    harness = make_harness(recorder, environment=plain_environment())
    with pytest.raises(paysdk.APITimeoutError):
        harness.call(lambda c: create_link(c, idempotency_key="order-77"))
    assert len(recorder.requests) == 1
    assert recorder.requests[0].headers["Idempotency-Key"] == "order-77"


def test_keyless_post_not_retried_after_read_timeout(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.ReadTimeout("slow"), ok_link())
    harness = make_harness(recorder, environment=plain_environment())
    with pytest.raises(paysdk.APITimeoutError) as info:
        harness.call(create_link)
    assert len(recorder.requests) == 1
    assert "Idempotency-Key" not in recorder.requests[0].headers
    assert info.value.attempts == 1
    assert harness.sleeps == []


def test_keyless_post_not_retried_after_503(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.Response(503), ok_link())
    harness = make_harness(recorder, environment=plain_environment())
    with pytest.raises(paysdk.InternalServerError) as info:
        harness.call(create_link)
    assert info.value.attempts == 1
    assert len(recorder.requests) == 1


def test_keyless_post_retried_after_connect_error(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.ConnectError("refused"), ok_link())
    harness = make_harness(recorder, environment=plain_environment())
    link = harness.call(create_link)
    assert link.uid == "u1"
    assert len(recorder.requests) == 2
    assert harness.client.last_response.attempts == 2


def test_connect_errors_exhaust_max_retries(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.ConnectError("refused"))
    harness = make_harness(recorder, environment=plain_environment(), max_retries=3)
    with pytest.raises(paysdk.APIConnectionError) as info:
        harness.call(create_link)
    assert not isinstance(info.value, paysdk.APITimeoutError)
    assert info.value.attempts == 4
    assert harness.sleeps == [0.5, 1.0, 2.0]
    assert harness.client.last_response is None


def test_get_retried_on_429_honouring_retry_after(make_harness: HarnessFactory) -> None:
    clock = {"now": "2025-01-01T00:00:00Z", "offsetSeconds": 0}
    recorder = Recorder(
        httpx.Response(429, headers={"Retry-After": "3"}, json={"ownCode": None, "message": "slow down"}),
        httpx.Response(200, json=clock),
    )
    harness = make_harness(recorder)
    state = harness.call(lambda c: c.sandbox.clock())
    assert state.offset_seconds == Decimal(0)
    assert harness.sleeps == [3.0]
    assert len(recorder.requests) == 2


def test_rate_limit_error_after_retries(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.Response(429, json={"ownCode": None, "message": "slow down"}))
    harness = make_harness(recorder, max_retries=1)
    with pytest.raises(paysdk.RateLimitError) as info:
        harness.call(lambda c: c.sandbox.health())
    assert info.value.attempts == 2
    assert harness.client.last_response.status_code == 429


def test_max_retries_zero(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.Response(503))
    harness = make_harness(recorder, max_retries=0)
    with pytest.raises(paysdk.InternalServerError):
        harness.call(lambda c: c.sandbox.health())
    assert len(recorder.requests) == 1


def test_sandbox_posts_never_keyed_nor_replayed(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.ReadTimeout("slow"))
    harness = make_harness(recorder)
    with pytest.raises(paysdk.APITimeoutError):
        harness.call(lambda c: c.sandbox.advance_clock(60))
    assert len(recorder.requests) == 1
    assert "Idempotency-Key" not in recorder.requests[0].headers


@pytest.mark.parametrize(
    ("exc", "cls"),
    [
        (httpx.ReadTimeout("r"), paysdk.APITimeoutError),
        (httpx.ConnectTimeout("c"), paysdk.APITimeoutError),
        (httpx.RemoteProtocolError("closed"), paysdk.APIConnectionError),
    ],
)
def test_transport_errors_mapped(make_harness: HarnessFactory, exc: Exception, cls: type[Exception]) -> None:
    recorder = Recorder(exc)
    harness = make_harness(recorder, environment=plain_environment(), max_retries=0)
    with pytest.raises(cls) as info:
        harness.call(create_link)
    assert TOKEN not in str(info.value) + repr(info.value)


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("status", "own_code", "cls"),
    [
        (401, 2007, paysdk.WrongEnvironmentError),
        (409, 5000, paysdk.InvalidFieldError),
        (409, 5004, paysdk.UnknownClientError),
        (400, 2003, paysdk.AmountOutOfRangeError),
        (404, None, paysdk.NotFoundError),
    ],
)
def test_error_answers(
    make_harness: HarnessFactory, status: int, own_code: int | None, cls: type[paysdk.APIError]
) -> None:
    body = {"ownCode": own_code, "message": "refused", "details": [{"field": "client", "message": "unknown"}]}
    recorder = Recorder(httpx.Response(status, json=body, headers={"X-Request-Id": "r-9"}))
    harness = make_harness(recorder)
    with pytest.raises(cls) as info:
        harness.call(create_link)
    error = info.value
    assert (error.status_code, error.own_code, error.message) == (status, own_code, "refused")
    assert error.body["details"][0]["field"] == "client"
    assert error.request_id == "r-9"
    assert error.attempts == 1
    assert harness.client.last_response.status_code == status


def test_unreadable_success_body(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.Response(200, content=b"<html>hello</html>"))
    harness = make_harness(recorder)
    with pytest.raises(paysdk.UnexpectedResponseError, match="not valid JSON"):
        harness.call(create_link)
    assert len(recorder.requests) == 1  # never replayed: the link may exist


# ---------------------------------------------------------------------------------------------- sandbox


SANDBOX_CLIENT = {
    "slug": "shop",
    "amountMin": 1.00,
    "amountMax": 100000.00,
    "channels": ["wa", "sms"],
    "currencies": ["GTQ"],
    "paymentMethods": ["akisiQR"],
    "country": "GT",
    "timezone": "America/Guatemala",
    "callbackUrl": None,
    "callbackHeaderName": "X-Callback-Token",
    "callbackHeaderValue": "cbsecret",
    "threeDS": False,
    "sandboxToken": "s" * 64,
    "productionToken": "p" * 64,
    "hookPrivateKey": "11111111-2222-3333-4444-555555555555",
    "hookPublicKey": "66666666-7777-8888-9999-000000000000",
}


def test_sandbox_calls(make_harness: HarnessFactory) -> None:
    now = "2025-01-01T00:00:00Z"
    txn = {
        "uid": "u1",
        "reference": "PL-1",
        "kind": "payment_link",
        "client": "shop",
        "status": "approved",
        "amount": 10.10,
        "currency": "GTQ",
        "channel": "wa",
        "userId": "+50223456789",
        "createdAt": now,
        "expireAt": now,
        "updatedAt": now,
    }
    routes: dict[tuple[str, str], Any] = {
        ("GET", "/_sandbox/health"): {
            "status": "ok",
            "environment": "sandbox",
            "database": "sqlite",
            "now": now,
        },
        ("POST", "/_sandbox/reset"): None,
        ("POST", "/_sandbox/clients"): SANDBOX_CLIENT,
        ("GET", "/_sandbox/clients/shop"): SANDBOX_CLIENT,
        ("POST", "/_sandbox/clock/advance"): {"now": now, "offsetSeconds": 90.5},
        ("POST", "/_sandbox/transactions/u1/pay"): {
            "uid": "u1",
            "status": "approved",
            "outcome": "approved",
            "message": "ok",
        },
        ("POST", "/_sandbox/transactions/u1/simulate"): {
            "uid": "u1",
            "status": "approved",
            "outcome": "rail_paid",
            "message": "Paid on akisiQR.",
        },
        ("GET", "/_sandbox/transactions/u1"): txn,
        ("GET", "/_sandbox/callbacks"): [
            {"eventId": "e1", "uid": "u1", "attempt": 1, "url": "http://m/cb", "statusCode": 200, "at": now}
        ],
        ("GET", "/_sandbox/requests"): [
            {"method": "POST", "path": "/transactions", "statusCode": 200, "at": now}
        ],
        ("POST", "/_sandbox/faults"): {
            "id": "f1",
            "kind": "error",
            "route": "*",
            "count": 2,
            "status": 503,
            "remaining": 2,
        },
        ("GET", "/_sandbox/faults"): [],
        ("DELETE", "/_sandbox/faults"): None,
        ("GET", "/_sandbox/test-cards"): [
            {"number": "4242424242424242", "brand": "visa", "outcome": "approved", "description": "approves"}
        ],
    }
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = routes[(request.method, request.url.path)]
        return httpx.Response(204) if body is None else httpx.Response(200, json=body)

    harness = make_harness(handler, token=None)
    sb: Callable[[Callable[[Any], Any]], Any] = lambda fn: harness.call(lambda c: fn(c.sandbox))  # noqa: E731
    assert sb(lambda s: s.health()).status == "ok"
    assert sb(lambda s: s.reset()) is None
    created = sb(
        lambda s: s.create_client(slug="shop", amount_min="1.00", channels=["wa", "sms"], three_ds=False)
    )
    assert created.amount_max == Decimal("100000.00")
    assert "s" * 64 not in repr(created)
    assert sb(lambda s: s.get_client("shop")).slug == "shop"
    assert sb(lambda s: s.advance_clock(Decimal("90.5"))).offset_seconds == Decimal("90.5")
    assert sb(lambda s: s.pay("u1", "4242424242424242")).status == "approved"
    assert sb(lambda s: s.simulate("u1", "paid")).outcome == "rail_paid"
    assert sb(lambda s: s.transaction("u1")).user_id == "+50223456789"
    assert sb(lambda s: s.callbacks("u1"))[0].event_id == "e1"
    assert sb(lambda s: s.requests())[0].status_code == 200
    assert sb(lambda s: s.add_fault("error", count=2, status=503)).remaining == 2
    assert sb(lambda s: s.faults()) == []
    assert sb(lambda s: s.clear_faults()) is None
    assert sb(lambda s: s.test_cards())[0].number == "4242424242424242"

    bodies = {(r.method, r.url.path): r.content for r in seen}
    assert json.loads(bodies[("POST", "/_sandbox/clients")]) == {
        "slug": "shop",
        "amountMin": 1.00,
        "channels": ["wa", "sms"],
        "threeDS": False,
    }
    assert bodies[("POST", "/_sandbox/clock/advance")] == b'{"seconds":90.5}'
    assert json.loads(bodies[("POST", "/_sandbox/transactions/u1/pay")]) == {"cardNumber": "4242424242424242"}
    assert json.loads(bodies[("POST", "/_sandbox/faults")]) == {
        "kind": "error",
        "route": "*",
        "count": 2,
        "status": 503,
    }
    callbacks_request = next(r for r in seen if r.url.path == "/_sandbox/callbacks")
    assert callbacks_request.url.params["uid"] == "u1"
    assert all("Authorization" not in r.headers for r in seen)


def test_sandbox_validation(make_harness: HarnessFactory) -> None:
    harness = make_harness(Recorder(httpx.Response(200)))
    with pytest.raises(paysdk.ValidationError) as info:
        harness.call(lambda c: c.sandbox.advance_clock(1.5))
    assert info.value.field == "seconds"
    with pytest.raises(paysdk.ValidationError) as info:
        harness.call(lambda c: c.sandbox.simulate("u1", "refunded"))
    assert info.value.field == "outcome"
    with pytest.raises(paysdk.ValidationError) as info:
        harness.call(lambda c: c.sandbox.add_fault("error", status=200))
    assert info.value.field == "status"


# ---------------------------------------------------------------------------------------------- options


def test_with_options_shares_pool_and_overrides(make_harness: HarnessFactory) -> None:
    recorder = Recorder(httpx.Response(503), ok_link())
    harness = make_harness(recorder)
    quick = harness.client.with_options(max_retries=0, timeout=2.5)
    assert type(quick) is type(harness.client)
    assert quick._http is harness.client._http
    assert quick.max_retries == 0
    assert quick.timeout == httpx.Timeout(2.5)
    assert harness.client.max_retries == 2
    with pytest.raises(paysdk.InternalServerError):
        harness.call(lambda _: create_link(quick))
    assert recorder.requests[0].extensions["timeout"] == httpx.Timeout(2.5).as_dict()
    # closing the copy leaves the shared pool open
    if harness.kind == "async":
        asyncio.run(quick.aclose())
    else:
        quick.close()
    assert not harness.client._http.is_closed
    assert harness.call(create_link).uid == "u1"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_timeout_none_refused(kind: str) -> None:
    cls: Any = paysdk.Client if kind == "sync" else paysdk.AsyncClient
    with pytest.raises(paysdk.ValidationError) as info:
        cls(TOKEN, keyed_environment(), timeout=None)
    assert info.value.field == "timeout"
    with pytest.raises(paysdk.ValidationError):
        cls(TOKEN, keyed_environment(), timeout=httpx.Timeout(None))
    with pytest.raises(paysdk.ValidationError):
        cls(TOKEN, keyed_environment(), max_retries=-1)


def test_default_timeout() -> None:
    with paysdk.Client(TOKEN, keyed_environment()) as client:
        assert client.timeout == httpx.Timeout(30.0, connect=5.0)


def test_environment_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYSDK_BASE_URL", "http://127.0.0.1:9999")
    with paysdk.Client(TOKEN) as client:
        assert client.environment.base_url == "http://127.0.0.1:9999"
    monkeypatch.delenv("PAYSDK_BASE_URL")
    with pytest.raises(paysdk.ValidationError) as info:
        paysdk.Client(TOKEN)
    assert info.value.field == "PAYSDK_BASE_URL"


def test_sync_context_manager_closes_pool() -> None:
    with paysdk.Client(TOKEN, keyed_environment()) as client:
        pool = client._http
    assert pool.is_closed


async def test_async_context_manager_closes_pool() -> None:
    async with paysdk.AsyncClient(TOKEN, keyed_environment()) as client:
        pool = client._http
    assert pool.is_closed


def test_user_http_client_not_closed() -> None:
    pool = httpx.Client(transport=httpx.MockTransport(lambda r: ok_link()))
    with paysdk.Client(TOKEN, keyed_environment(), http_client=pool) as client:
        assert create_link(client).uid == "u1"
    assert not pool.is_closed
    pool.close()


def test_http_client_and_transport_exclusive() -> None:
    with pytest.raises(paysdk.ValidationError):
        paysdk.Client(
            TOKEN,
            keyed_environment(),
            http_client=httpx.Client(),
            transport=httpx.MockTransport(lambda r: ok_link()),
        )


async def test_async_concurrent_calls() -> None:
    recorder = Recorder(ok_link())
    async with paysdk.AsyncClient(
        TOKEN, keyed_environment(), transport=httpx.MockTransport(recorder)
    ) as client:
        links = await asyncio.gather(*(create_link(client) for _ in range(5)))
    assert [link.uid for link in links] == ["u1"] * 5
    assert len({r.headers["Idempotency-Key"] for r in recorder.requests}) == 5


def test_default_headers_sent(make_harness: HarnessFactory) -> None:
    recorder = Recorder(ok_link())
    harness = make_harness(recorder, default_headers={"X-Team": "payments"})
    harness.call(create_link)
    assert recorder.requests[0].headers["X-Team"] == "payments"
