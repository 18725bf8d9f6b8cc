"""Secrets never show: not in logs (even at DEBUG), reprs, errors or ResponseInfo."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import httpx
import pytest

import paysdk

from .conftest import HarnessFactory
from .support import TOKEN

CALLER_KEY = "caller-idem-key-3f1c"
PRIVATE_KEY = "11111111-2222-3333-4444-555555555555"


def test_nothing_secret_in_logs_reprs_or_errors(
    make_harness: HarnessFactory, caplog: pytest.LogCaptureFixture
) -> None:
    answers: list[httpx.Response | Exception] = list(
        [
            httpx.Response(503, headers={"Retry-After": "0"}),
            httpx.Response(
                200,
                json={"uid": "u1", "reference": "PL-1", "URL": "http://c/?orderId=u1"},
                headers={"Set-Cookie": f"s={TOKEN}", "Idempotency-Key": CALLER_KEY},
            ),
            httpx.Response(
                401,
                json={"ownCode": 2007, "message": "wrong environment"},
                headers={"WWW-Authenticate": f"Bearer {TOKEN}", "Idempotency-Key": CALLER_KEY},
            ),
            httpx.ReadTimeout(f"timed out {TOKEN}"),
        ]
    )

    def handler(request: httpx.Request) -> httpx.Response:
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    harness = make_harness(handler)
    caplog.set_level(logging.DEBUG)  # everything, httpx's own loggers included
    args: dict[str, Any] = {
        "amount": Decimal("1.00"),
        "user_id": "+50223456789",
        "channel": "wa",
        "client": "shop",
        "idempotency_key": CALLER_KEY,
    }
    link = harness.call(lambda c: c.payment_links.create(**args))
    info = harness.client.last_response
    texts = [repr(harness.client), str(harness.client), repr(info), str(info), repr(link)]
    with pytest.raises(paysdk.WrongEnvironmentError) as wrong:
        harness.call(lambda c: c.payment_links.create(**args))
    texts += [str(wrong.value), repr(wrong.value), repr(wrong.value.headers), repr(wrong.value.body)]
    with pytest.raises(paysdk.APITimeoutError) as timeout:
        harness.call(
            lambda c: c.payment_links.create_with_hook_keys(
                private_key=PRIVATE_KEY, public_key="p", amount=1, user_id="+50223456789", channel="wa"
            )
        )
    texts += [str(timeout.value), repr(timeout.value), repr(harness.client.with_options(max_retries=1))]
    texts += [record.getMessage() for record in caplog.records]
    texts.append(caplog.text)

    everything = "\n".join(texts)
    assert TOKEN not in everything
    assert CALLER_KEY not in everything
    assert PRIVATE_KEY not in everything
    # the log has one metadata line per attempt, and a retry line
    messages = [r.getMessage() for r in caplog.records if r.name == "paysdk"]
    assert any("POST /transactions attempt=1 status=503" in m for m in messages)
    assert any("retrying POST /transactions" in m for m in messages)
    assert any("POST /transactions attempt=2 status=200" in m for m in messages)
    assert any(r.levelno == logging.INFO for r in caplog.records if r.name == "paysdk")


def test_custom_logger_used(make_harness: HarnessFactory, caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("myapp.payments")
    harness = make_harness(
        lambda r: httpx.Response(
            200,
            json={"status": "ok", "environment": "sandbox", "database": "x", "now": "2025-01-01T00:00:00Z"},
        ),
        logger=logger,
    )
    caplog.set_level(logging.DEBUG, logger="myapp.payments")
    harness.call(lambda c: c.sandbox.health())
    assert [r.name for r in caplog.records if "attempt=1" in r.getMessage()] == ["myapp.payments"]


def test_secret_token_object_accepted() -> None:
    with paysdk.Client(paysdk.Secret(TOKEN), paysdk.Environment.local()) as client:
        assert TOKEN not in repr(client)
        assert "Secret('****')" in repr(client)


@pytest.mark.parametrize("bad", ["has space", "new\nline", "tøken"])
def test_bad_token_refused_without_echo(bad: str) -> None:
    with pytest.raises(paysdk.ValidationError) as info:
        paysdk.Client(bad, paysdk.Environment.local())
    assert info.value.field == "merchant_token"
    assert bad not in str(info.value)


def test_error_body_masks_the_secrets_the_sdk_knows(make_harness: HarnessFactory) -> None:
    """A server that echoes the merchant token in an error body: ``APIError.body`` masks it everywhere
    (strings, nested details, keys), as the message does (issue 8.9)."""
    echoed = {
        "ownCode": None,
        "message": f"bad token {TOKEN}",
        "details": [{"field": "Authorization", "message": f"got {TOKEN}"}],
        "echo": {TOKEN: [f"{TOKEN}-suffix", 7, None]},
    }
    harness = make_harness(lambda request: httpx.Response(400, json=echoed))
    with pytest.raises(paysdk.APIError) as info:
        harness.call(lambda c: c.sandbox.health())
    error = info.value
    assert TOKEN not in repr(error.body)
    assert TOKEN not in str(error)
    assert error.body["details"] == [{"field": "Authorization", "message": "got ****"}]
    assert error.body["echo"] == {"****": ["****-suffix", 7, None]}


def test_error_body_masks_the_secrets_of_the_call() -> None:
    """A call's own secrets (a password in its body, ``X-User-Token``) are masked in an error body too."""
    from paysdk._pipeline import Operation, result_from_outcome

    op: Operation[None] = Operation(
        "POST",
        "/users/login",
        lambda data: None,
        json={"username": "ana", "password": paysdk.Secret("pw-hunter-22")},
        headers={"X-User-Token": paysdk.Secret("user-access-jwt")},
    )
    answer = httpx.Response(
        401,
        json={"ownCode": 7101, "message": "no", "seen": ["pw-hunter-22", "user-access-jwt", "wallet-bearer"]},
        request=httpx.Request("POST", "http://x/users/login"),
    )
    with pytest.raises(paysdk.APIError) as info:
        result_from_outcome(op, answer, attempts=1, secrets=("wallet-bearer",))
    assert info.value.body["seen"] == ["****", "****", "****"]
