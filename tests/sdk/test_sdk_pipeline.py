"""Pure pipeline functions: request building, error mapping, redaction, response parsing."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest

import paysdk
from paysdk._pipeline import (
    ClientConfig,
    Operation,
    build_request,
    error_from_exception,
    error_from_response,
    no_result,
    redact_headers,
    result_from_outcome,
)
from paysdk.contracts.payment_links import PaymentLink
from paysdk.resources import alternative_payments, payment_links

from .support import TOKEN, keyed_environment, plain_environment

CONFIG = ClientConfig(environment=keyed_environment(), merchant_token=paysdk.Secret(TOKEN))


def link_op(**overrides: Any) -> Operation[PaymentLink]:
    args: dict[str, Any] = {
        "amount": Decimal("10.10"),
        "user_id": "+50223456789",
        "channel": "wa",
        "client": "shop",
    }
    args.update(overrides)
    return payment_links.create_operation(**args)


class TestBuildRequest:
    def test_raw_token_on_transactions(self) -> None:
        request = build_request(link_op(), CONFIG, None)
        assert request.headers["Authorization"] == TOKEN
        assert str(request.url) == "http://paysdk.test/transactions"

    def test_bearer_token_on_integrations(self) -> None:
        op = alternative_payments.create_operation(
            amount=5, channel="sms", client="shop", user_id="+50223456789"
        )
        request = build_request(op, CONFIG, None)
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        assert request.url.path == "/api/v1/integrations/transactions"

    def test_no_authorization_on_hook(self) -> None:
        op = payment_links.create_hook_operation(
            private_key="11111111-2222-3333-4444-555555555555",
            public_key="66666666-7777-8888-9999-000000000000",
            amount=5,
            user_id="+50223456789",
            channel="web",
        )
        request = build_request(op, CONFIG, None)
        assert "Authorization" not in request.headers
        assert b'"privateKey":"11111111-2222-3333-4444-555555555555"' in request.content
        assert "1111" not in repr(op)

    def test_decimal_amount_written_exactly(self) -> None:
        request = build_request(link_op(amount=Decimal("10.10")), CONFIG, None)
        assert b'"amount":10.10' in request.content
        assert request.headers["Content-Type"] == "application/json"
        assert b'"ads":[]' in request.content

    @pytest.mark.parametrize(("given", "wire"), [("10.5", b"10.5"), (7, b"7"), (Decimal("0.01"), b"0.01")])
    def test_amount_forms(self, given: object, wire: bytes) -> None:
        assert b'"amount":' + wire + b"," in build_request(link_op(amount=given), CONFIG, None).content

    def test_user_agent(self) -> None:
        agent = build_request(link_op(), CONFIG, None).headers["User-Agent"]
        assert agent.startswith(f"paysdk/{paysdk.__version__} python/3.")

    def test_idempotency_header_only_when_decided(self) -> None:
        assert "Idempotency-Key" not in build_request(link_op(), CONFIG, None).headers
        assert build_request(link_op(), CONFIG, "k-1").headers["Idempotency-Key"] == "k-1"

    def test_retry_count_header(self) -> None:
        assert "X-Paysdk-Retry-Count" not in build_request(link_op(), CONFIG, None).headers
        assert build_request(link_op(), CONFIG, None, attempt=3).headers["X-Paysdk-Retry-Count"] == "2"

    def test_missing_token_names_merchant_token(self) -> None:
        with pytest.raises(paysdk.ValidationError) as info:
            build_request(link_op(), ClientConfig(environment=plain_environment()), None)
        assert info.value.field == "merchant_token"

    def test_per_call_timeout(self) -> None:
        request = build_request(link_op(timeout=3), CONFIG, None)
        assert request.extensions["timeout"] == httpx.Timeout(3).as_dict()
        default = build_request(link_op(), CONFIG, None)
        assert default.extensions["timeout"] == httpx.Timeout(30.0, connect=5.0).as_dict()

    def test_default_headers_cannot_override_authorization(self) -> None:
        config = ClientConfig(
            environment=keyed_environment(),
            merchant_token=paysdk.Secret(TOKEN),
            default_headers=(("Authorization", "other"), ("X-Team", "payments")),
        )
        request = build_request(link_op(), config, None)
        assert request.headers["Authorization"] == TOKEN
        assert request.headers["X-Team"] == "payments"


def error_response(status: int, body: bytes, **headers: str) -> httpx.Response:
    return httpx.Response(status, content=body, headers=headers)


ERROR_CASES = [
    (401, 2007, paysdk.WrongEnvironmentError),
    (401, None, paysdk.AuthenticationError),
    (409, 5000, paysdk.InvalidFieldError),
    (409, 5004, paysdk.UnknownClientError),
    (409, None, paysdk.ConflictError),
    (400, 2003, paysdk.AmountOutOfRangeError),
    (400, None, paysdk.BadRequestError),
    (404, None, paysdk.NotFoundError),
    (429, None, paysdk.RateLimitError),
    (500, None, paysdk.InternalServerError),
    (503, None, paysdk.InternalServerError),
    (418, None, paysdk.APIError),
]


@pytest.mark.parametrize(("status", "own_code", "cls"), ERROR_CASES)
def test_error_mapping(status: int, own_code: int | None, cls: type[paysdk.APIError]) -> None:
    code = "null" if own_code is None else str(own_code)
    body = (
        b'{"ownCode": ' + code.encode() + b', "message": "Something is wrong", '
        b'"details": [{"field": "amount", "message": "bad"}]}'
    )
    error = error_from_response(
        error_response(status, body, **{"X-Request-Id": "req-1", "Authorization": TOKEN}),
        method="post",
        path="/transactions",
        attempts=2,
    )
    assert type(error) is cls
    assert error.status_code == status
    assert error.own_code == own_code
    assert error.message == "Something is wrong"
    assert error.body["details"][0]["field"] == "amount"
    assert error.request_id == "req-1"
    assert error.headers["authorization"] == "****"
    assert error.attempts == 2
    assert error.retries == 1
    assert (error.method, error.path) == ("POST", "/transactions")
    assert TOKEN not in str(error) + repr(error)


def test_non_json_error_body_is_kept_as_text() -> None:
    error = error_from_response(
        error_response(502, b"<html>Bad gateway</html>"), method="GET", path="/x", attempts=1
    )
    assert isinstance(error, paysdk.InternalServerError)
    assert error.own_code is None
    assert error.body == "<html>Bad gateway</html>"
    assert "non-JSON" in error.message


def test_error_body_with_decimal_numbers_is_exact() -> None:
    error = error_from_response(
        error_response(400, b'{"ownCode":2003,"message":"out of range","max":0.1}'),
        method="POST",
        path="/transactions",
        attempts=1,
    )
    assert error.body["max"] == Decimal("0.1")
    assert isinstance(error, paysdk.AmountOutOfRangeError)


def test_error_message_never_echoes_the_token() -> None:
    body = b'{"ownCode":null,"message":"token ' + TOKEN.encode() + b' is unknown"}'
    error = error_from_response(
        error_response(401, body), method="POST", path="/transactions", attempts=1, secrets=(TOKEN,)
    )
    assert TOKEN not in str(error)


def test_bool_own_code_is_ignored() -> None:
    error = error_from_response(
        error_response(409, b'{"ownCode": true, "message": "x"}'), method="POST", path="/t", attempts=1
    )
    assert error.own_code is None
    assert type(error) is paysdk.ConflictError


class TestExceptions:
    @pytest.mark.parametrize(
        "exc",
        [
            httpx.ReadTimeout("read"),
            httpx.ConnectTimeout("c"),
            httpx.PoolTimeout("p"),
            httpx.WriteTimeout("w"),
        ],
    )
    def test_timeouts(self, exc: httpx.RequestError) -> None:
        error = error_from_exception(exc, method="POST", path="/transactions", attempts=3)
        assert isinstance(error, paysdk.APITimeoutError)
        assert error.attempts == 3
        assert "timeout" in str(error)

    def test_connection_error(self) -> None:
        error = error_from_exception(
            httpx.ConnectError(f"refused {TOKEN}"), method="GET", path="/x", attempts=1, secrets=(TOKEN,)
        )
        assert type(error) is paysdk.APIConnectionError
        assert TOKEN not in str(error)
        assert str(error).endswith("; the request was not sent")
        assert error.outcome_unknown is False

    @pytest.mark.parametrize(
        "exc",
        [
            httpx.ReadTimeout("read"),
            httpx.WriteTimeout("write"),
            httpx.ReadError("reset by peer"),
            httpx.RemoteProtocolError("closed without an answer"),
        ],
    )
    def test_a_post_that_may_have_arrived_has_an_unknown_outcome(self, exc: httpx.RequestError) -> None:
        with pytest.raises(paysdk.APIConnectionError) as info:
            result_from_outcome(link_op(), exc, attempts=1)
        assert info.value.outcome_unknown is True
        assert "may have reached the server and taken effect (outcome unknown)" in str(info.value)
        assert "not sent" not in str(info.value)
        # The same failure of an idempotent call: simply repeat it.
        get: Operation[Any] = Operation(method="GET", path="/x", parse=no_result)
        with pytest.raises(paysdk.APIConnectionError) as info:
            result_from_outcome(get, exc, attempts=1)
        assert info.value.outcome_unknown is False
        assert "outcome unknown" not in str(info.value)

    @pytest.mark.parametrize("exc", [httpx.ConnectError("refused"), httpx.ConnectTimeout("c")])
    def test_connect_errors_say_nothing_was_sent(self, exc: httpx.RequestError) -> None:
        with pytest.raises(paysdk.APIConnectionError) as info:
            result_from_outcome(link_op(), exc, attempts=1)
        assert info.value.outcome_unknown is False
        assert str(info.value).endswith("the request was not sent")
        # ... unless an earlier attempt of the same call may have arrived (a keyed retry).
        with pytest.raises(paysdk.APIConnectionError) as info:
            result_from_outcome(link_op(), exc, attempts=2, maybe_received=True)
        assert info.value.outcome_unknown is True
        assert "not sent" not in str(info.value)

    def test_answers_are_never_unknown(self) -> None:
        with pytest.raises(paysdk.InternalServerError) as info:
            result_from_outcome(link_op(), httpx.Response(503), attempts=1, maybe_received=True)
        assert info.value.outcome_unknown is False


class TestRedaction:
    def test_sensitive_headers_masked(self) -> None:
        headers = redact_headers(
            httpx.Headers(
                {
                    "Authorization": f"Bearer {TOKEN}",
                    "Idempotency-Key": "key-123",
                    "X-Callback-Token": "cb",
                    "X-My-Secret": "s",
                    "Set-Cookie": "a=b",
                    "Content-Type": "application/json",
                    "X-Request-Id": "r",
                }
            )
        )
        assert headers == {
            "authorization": "****",
            "idempotency-key": "****",
            "x-callback-token": "****",
            "x-my-secret": "****",
            "set-cookie": "****",
            "content-type": "application/json",
            "x-request-id": "r",
        }

    def test_plain_mapping(self) -> None:
        assert redact_headers({"Cookie": "x", "Accept": "a"}) == {"cookie": "****", "accept": "a"}


class TestResults:
    def test_2xx_parsed_with_decimals(self) -> None:
        op: Operation[Any] = Operation(method="GET", path="/x", parse=lambda body: body)
        result = result_from_outcome(op, httpx.Response(200, content=b'{"a": 0.1, "b": 10.10}'), attempts=1)
        assert result == {"a": Decimal("0.1"), "b": Decimal("10.10")}
        assert str(result["b"]) == "10.10"

    def test_any_2xx_is_success(self) -> None:
        content = b'{"uid":"u","reference":"PL-1","URL":"http://c/?orderId=u"}'
        link = result_from_outcome(link_op(), httpx.Response(201, content=content), attempts=1)
        assert link.url == "http://c/?orderId=u"

    @pytest.mark.parametrize("body", [b"<html>ok</html>", b'{"uid": 1.5e999}', b"NaN"])
    def test_2xx_unreadable_body_is_an_unexpected_response(self, body: bytes) -> None:
        with pytest.raises(paysdk.UnexpectedResponseError) as info:
            result_from_outcome(link_op(), httpx.Response(200, content=body), attempts=1)
        assert not isinstance(info.value, paysdk.APIConnectionError)  # not "could not reach the API"
        assert "not valid JSON" in str(info.value)
        assert "does not match the API contract" in str(info.value)
        assert info.value.status_code == 200

    def test_2xx_wrong_shape_is_an_unexpected_response(self) -> None:
        response = httpx.Response(
            201, content=b'{"uid": "u"}', headers={"X-Request-Id": "r-1", "Authorization": TOKEN}
        )
        with pytest.raises(paysdk.UnexpectedResponseError, match="unexpected shape") as info:
            result_from_outcome(link_op(), response, attempts=1)
        error = info.value
        assert isinstance(error, paysdk.RequestError)
        assert (error.status_code, error.method, error.path) == (201, "POST", "/transactions")
        assert "reference (missing)" in error.problem
        assert error.request_id == "r-1"
        assert error.headers["authorization"] == "****"
        assert "may have taken effect" in str(error)

    def test_missing_data_envelope(self) -> None:
        op = alternative_payments.dismiss_operation("u1")
        with pytest.raises(paysdk.UnexpectedResponseError, match="data"):
            result_from_outcome(
                op, httpx.Response(200, content=b'{"uid":"u1","status":"dismissed"}'), attempts=1
            )

    def test_empty_body_for_no_result(self) -> None:
        op: Operation[None] = Operation(method="POST", path="/_sandbox/reset", parse=no_result)
        assert result_from_outcome(op, httpx.Response(204), attempts=1) is None

    def test_transport_error_raised_with_cause(self) -> None:
        exc = httpx.ReadTimeout("slow")
        with pytest.raises(paysdk.APITimeoutError) as info:
            result_from_outcome(link_op(), exc, attempts=1)
        assert info.value.__cause__ is exc
