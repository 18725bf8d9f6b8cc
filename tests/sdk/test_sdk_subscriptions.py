"""Subscription operation builders (pure): addresses, bodies, the bearer, the envelope, and the local
checks that name the argument before anything is sent (D138-D142, D151). The real-server flows are in
``tests/e2e/test_subscriptions_sdk.py``."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import httpx
import pytest

import paysdk
from paysdk import _json
from paysdk._pipeline import ClientConfig, Operation, build_request
from paysdk._secret import Secret
from paysdk.resources import sandbox as sb
from paysdk.resources import subscriptions as s

from .support import keyed_environment

CONFIG = ClientConfig(environment=keyed_environment())
BEARER = Secret("app-access-token")


def built(op: Operation[Any]) -> tuple[str, str, dict[str, Any] | None, dict[str, str]]:
    request = build_request(op, CONFIG, None, credential=BEARER if op.auth != "none" else None)
    body = _json.loads(request.content) if request.content else None
    return request.method, str(request.url), body, dict(request.headers)


def test_public_calls_live_on_base_with_the_wallet_application_token() -> None:
    op = s.verify_card_operation(should_create_subscription=True, plan_id="gold", email=" Ana@X.io ")
    assert (op.base, op.auth) == ("base", "wallet_app")
    method, url, body, headers = built(op)
    assert (method, url) == ("POST", "http://paysdk.test/v1/subscriptions/verify-card")
    assert body == {"shouldCreateSubscription": True, "planId": "gold", "email": "Ana@X.io"}
    assert headers["authorization"] == "Bearer app-access-token"

    only = s.verify_card_operation(should_create_subscription=False, external_id="ord-7")
    assert built(only)[2] == {"shouldCreateSubscription": False, "externalId": "ord-7"}

    method, url, body, _ = built(s.cancel_operation("sub/1"))
    assert (method, url, body) == ("DELETE", "http://paysdk.test/v1/subscriptions/sub%2F1", None)
    method, url, body, _ = built(s.update_email_operation("sub_1", "b@x.io"))
    assert (method, url, body) == (
        "PUT",
        "http://paysdk.test/v1/subscriptions",
        {"subscriptionId": "sub_1", "email": "b@x.io"},
    )
    method, url, body, _ = built(s.payment_history_operation("sub_1"))
    assert (method, url) == (
        "GET",
        "http://paysdk.test/v1/subscriptions/payment-history?subscriptionId=sub_1",
    )


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: s.verify_card_operation(should_create_subscription="yes"), "should_create_subscription"),  # type: ignore[arg-type]
        (lambda: s.verify_card_operation(should_create_subscription=True, email="a@x.io"), "plan_id"),
        (lambda: s.verify_card_operation(should_create_subscription=True, plan_id="p"), "email"),
        (
            lambda: s.verify_card_operation(should_create_subscription=True, plan_id="p", email="nope"),
            "email",
        ),
        (
            lambda: s.verify_card_operation(should_create_subscription=True, plan_id=" ", email="a@x.io"),
            "plan_id",
        ),
        (lambda: s.verify_card_operation(should_create_subscription=False, plan_id="p"), "plan_id"),
        (lambda: s.verify_card_operation(should_create_subscription=False, email="a@x.io"), "email"),
        (
            lambda: s.verify_card_operation(should_create_subscription=False, external_id="x" * 256),
            "external_id",
        ),
        (lambda: s.cancel_operation(""), "sub_uid"),
        (lambda: s.cancel_operation("s" * 65), "sub_uid"),
        (lambda: s.update_email_operation("sub_1", "a@@x"), "email"),
        (lambda: s.update_email_operation(None, "a@x.io"), "subscription_id"),  # type: ignore[arg-type]
        (lambda: s.payment_history_operation(""), "subscription_id"),
        (lambda: sb.create_plan_operation("shop", 9.99), "amount"),  # type: ignore[arg-type]
        (lambda: sb.create_plan_operation("shop", "1.001"), "amount"),
        (lambda: sb.create_plan_operation("", "1"), "client"),
        (lambda: sb.create_plan_operation("shop", "1", interval="fortnight"), "interval"),  # type: ignore[arg-type]
        (lambda: sb.create_plan_operation("shop", "1", daily_attempts=25), "daily_attempts"),
        (lambda: sb.create_plan_operation("shop", "1", grace_days=-1), "grace_days"),
        (lambda: sb.create_subscriptions_operation("gold", count=0), "count"),
        (lambda: sb.create_subscriptions_operation("gold", count=True), "count"),
        (lambda: sb.create_subscriptions_operation("gold", email="nope"), "email"),
        (lambda: sb.create_subscriptions_operation("gold", start_date="2026-02-30"), "start_date"),
        (lambda: sb.get_subscription_operation(""), "sub_uid"),
        (lambda: sb.get_plan_operation(""), "plan_id"),
    ],
)
def test_invalid_arguments_are_refused_naming_them(call: Any, field: str) -> None:
    with pytest.raises(paysdk.ValidationError) as info:
        call()
    assert info.value.field == field


def test_control_plane_bodies() -> None:
    op = sb.create_plan_operation("shop", "9.90", plan_id="gold", interval="week", term=4, grace_days=0)
    method, url, body, headers = built(op)
    assert (method, url) == ("POST", "http://paysdk.test/_sandbox/plans")
    assert "authorization" not in headers
    assert body == {
        "client": "shop",
        "planId": "gold",
        "amount": Decimal("9.90"),
        "interval": "week",
        "intervalCount": 1,
        "term": 4,
        "dailyAttempts": 3,
        "intervalAttempt": 24,
        "graceDays": 0,
    }
    create = sb.create_subscriptions_operation("gold", 5, "a@x.io", start_date=date(2024, 1, 31))
    assert built(create)[2] == {
        "planId": "gold",
        "count": 5,
        "email": "a@x.io",
        "cardNumber": "4242424242424242",
        "startDate": "2024-01-31",
    }
    assert (
        built(sb.get_subscription_operation("sub_1"))[1] == "http://paysdk.test/_sandbox/subscriptions/sub_1"
    )
    assert built(sb.get_plan_operation("gold"))[1] == "http://paysdk.test/_sandbox/plans/gold"


def test_the_envelope_is_unwrapped_and_a_failure_envelope_is_not_a_result() -> None:
    parse = s.envelope(lambda data: data)
    assert parse({"success": True, "message": "ok", "data": [1]}) == [1]
    with pytest.raises(ValueError, match="success"):
        parse({"success": False, "message": "no", "data": None})
    with pytest.raises(ValueError, match="data"):
        parse({"success": True, "message": "ok"})


def test_a_client_refuses_before_sending_and_needs_wallet_credentials() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"nothing may be sent: {request.url}")

    with paysdk.Client(environment=keyed_environment(), transport=httpx.MockTransport(refuse)) as client:
        with pytest.raises(paysdk.ValidationError) as missing_plan:
            client.subscriptions.verify_card(should_create_subscription=True, email="a@x.io")
        assert missing_plan.value.field == "plan_id"
        # Valid arguments, no wallet credentials: refused naming `wallet` (D138), nothing sent.
        with pytest.raises(paysdk.ValidationError) as no_wallet:
            client.subscriptions.payment_history("sub_1")
        assert no_wallet.value.field == "wallet"
