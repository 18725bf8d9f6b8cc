"""Wallet operation builders (pure): methods, paths, bodies, headers, retry flags, client-side checks;
the wallet error classes against the D31 table; the sandbox wallet control-plane builders."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest

import paysdk
from paysdk import _json
from paysdk._errors import OWN_CODE_ERRORS, WALLET_ERRORS, error_class_for
from paysdk._pipeline import ClientConfig, Operation, build_request, redact_headers
from paysdk._secret import Secret
from paysdk._wallet_auth import UserSession, app_login_operation, app_refresh_operation
from paysdk.contracts.wallet import WALLET_CODE_STATUS, CardPermissionType, TokenPair, WalletCode
from paysdk.resources import sandbox as sb
from paysdk.resources import wallet as w

from .support import keyed_environment

CONFIG = ClientConfig(environment=keyed_environment())
BEARER = Secret("app-access-token")


def built(op: Operation[Any]) -> tuple[str, str, dict[str, Any] | None, dict[str, str]]:
    request = build_request(op, CONFIG, None, credential=BEARER)
    body = _json.loads(request.content) if request.content else None
    return request.method, str(request.url), body, dict(request.headers)


def session() -> UserSession:
    pair = TokenPair(
        access_token="user-access", refresh_token="user-refresh", expires_in=900, refresh_expires_in=3600
    )
    return UserSession.from_pair(pair, now=1000.0)


W = "http://paysdk.test/rest"

SHAPES: list[tuple[str, Operation[Any], str, str, Any]] = [
    ("cards.list", w.list_cards_operation("u 1"), "GET", f"{W}/users/u%201/cards", None),
    (
        "cards.summary",
        w.card_summary_operation("u1", date(2026, 1, 2), "2026-01-31"),
        "GET",
        f"{W}/users/u1/cards/summary?startDate=2026-01-02&endDate=2026-01-31",
        None,
    ),
    (
        "cards.link",
        w.link_card_operation("u1", "card_9", "shop"),
        "POST",
        f"{W}/users/u1/cards?clientId=shop",
        {"cardId": "card_9"},
    ),
    (
        "cards.issue_virtual",
        w.issue_virtual_operation("u1", "USD", "travel"),
        "POST",
        f"{W}/users/u1/cards/virtuals",
        {"currency": "USD", "alias": "travel"},
    ),
    (
        "cards.issue_virtual-empty",
        w.issue_virtual_operation("u1"),
        "POST",
        f"{W}/users/u1/cards/virtuals",
        {},
    ),
    (
        "cards.link_external",
        w.link_external_operation("u1", "tok_1"),
        "POST",
        f"{W}/users/u1/linked-cards",
        {"token": "tok_1"},
    ),
    ("cards.get", w.get_card_operation("c1"), "GET", f"{W}/cards/c1", None),
    (
        "cards.update_alias",
        w.update_alias_operation("c1", "Main"),
        "PATCH",
        f"{W}/cards/c1",
        {"alias": "Main"},
    ),
    ("cards.block", w.card_action_operation("c1", "block"), "POST", f"{W}/cards/c1/block", None),
    ("cards.set_pin", w.set_pin_operation("c1", "1234"), "PUT", f"{W}/cards/c1/pin", {"pin": "1234"}),
    (
        "cards.movements",
        w.movements_operation("c1", "2026-01-01"),
        "GET",
        f"{W}/cards/c1/movements?startDate=2026-01-01",
        None,
    ),
    ("cards.cvv_view_token", w.cvv_view_token_operation("c1"), "POST", f"{W}/cards/c1/cvv/view-token", None),
    (
        "funds.add",
        w.funds_operation("c1", "add", Decimal("10.1234"), "ref-1"),
        "POST",
        f"{W}/cards/c1/funds",
        {"operation": "add", "amount": Decimal("10.1234"), "reference": "ref-1"},
    ),
    (
        "transfers.create",
        w.transfer_operation("c1", "c2", 5, "rent"),
        "POST",
        f"{W}/cards/c1/transfers",
        {"toCardId": "c2", "amount": 5, "description": "rent"},
    ),
    (
        "permissions.grant",
        w.grant_permissions_operation("c1", "u2", ["checkCard", CardPermissionType.CHECK_CVV]),
        "POST",
        f"{W}/cards/c1/users/u2/permissions",
        {"permissions": ["checkCard", "checkCvv"]},
    ),
    (
        "permissions.update",
        w.update_permissions_operation("p1", ["getCards"]),
        "PATCH",
        f"{W}/cards/users/permissions/p1",
        {"permissions": ["getCards"]},
    ),
    (
        "permissions.list_for_user",
        w.user_permissions_operation("u2"),
        "GET",
        f"{W}/cards/users/u2/permissions",
        None,
    ),
    (
        "permissions.list_for_card",
        w.card_permissions_operation("c1"),
        "GET",
        f"{W}/cards/c1/users/permissions",
        None,
    ),
    (
        "permissions.list",
        w.card_user_permissions_operation("c1", "u2"),
        "GET",
        f"{W}/cards/c1/users/u2/permissions",
        None,
    ),
    (
        "users.login",
        w.user_login_operation("ana", "pw", "shop", 600),
        "POST",
        f"{W}/users/login",
        {"username": "ana", "password": "pw", "merchant": "shop", "accessTokenTtl": 600},
    ),
    (
        "users.otp",
        w.otp_request_operation("a@x.io"),
        "POST",
        f"{W}/users/auth/otp",
        {"email": "a@x.io", "purpose": "password_reset"},
    ),
    (
        "users.verify_otp",
        w.otp_verify_operation("a@x.io", "123456"),
        "PUT",
        f"{W}/users/auth/otp",
        {"email": "a@x.io", "otp": "123456", "purpose": "password_reset"},
    ),
    (
        "users.reset",
        w.password_reset_operation("a@x.io", "n3w-pass", "n3w-pass", "rt"),
        "POST",
        f"{W}/users/auth/password/reset",
        {"email": "a@x.io", "newPassword": "n3w-pass", "confirmPassword": "n3w-pass", "token": "rt"},
    ),
    (
        "auth.refresh",
        app_refresh_operation(Secret("rt-1")),
        "POST",
        f"{W}/auth/refresh",
        {"refreshToken": "rt-1"},
    ),
]


@pytest.mark.parametrize(("op", "method", "url", "body"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_operation_shapes(op: Operation[Any], method: str, url: str, body: Any) -> None:
    got_method, got_url, got_body, headers = built(op)
    assert (got_method, got_url, got_body) == (method, url, body)
    if op.auth != "none":
        assert headers["authorization"] == "Bearer app-access-token"
    assert "app-access-token" not in repr(op)


def test_secrets_in_bodies_are_masked_in_reprs() -> None:
    for op in (
        w.user_login_operation("ana", "hunter2-pw"),
        w.set_pin_operation("c1", "9876"),
        w.otp_verify_operation("a@x.io", "654321"),
        w.password_reset_operation("a@x.io", "n3w-pass", "n3w-pass", "reset-tok"),
        w.link_external_operation("u1", "link-tok"),
        w.cvv_operation("c1", "view-tok"),
        w.user_logout_operation(session()),
    ):
        text = repr(op)
        for secret in (
            "hunter2-pw",
            "9876",
            "654321",
            "n3w-pass",
            "reset-tok",
            "link-tok",
            "view-tok",
            "user-access",
        ):
            assert secret not in text


def test_logout_and_cvv_headers_are_redacted() -> None:
    _, url, body, headers = built(w.user_logout_operation(session()))
    assert url == f"{W}/users/logout"
    assert body is None
    assert headers["x-user-token"] == "user-access"
    _, url, _, cvv_headers = built(w.cvv_operation("c1", "view-tok"))
    assert url == f"{W}/cards/c1/cvv"
    assert cvv_headers["x-view-token"] == "view-tok"
    redacted = redact_headers(cvv_headers | headers)
    assert redacted["x-view-token"] == "****"
    assert redacted["x-user-token"] == "****"
    assert "user-access" not in str(redacted.values())


def test_single_use_calls_are_never_replayed() -> None:
    creds = paysdk.WalletCredentials("shop", "33" * 32)
    for op in (
        app_login_operation(creds),
        app_refresh_operation(Secret("r")),
        w.user_login_operation("a", "b"),
        w.user_logout_operation(session()),
        w.otp_verify_operation("a@x.io", "123456"),
        w.password_reset_operation("a@x.io", "x", "x", "t"),
        w.cvv_operation("c1", "v"),
        w.cvv_view_token_operation("c1"),
    ):
        assert not op.is_idempotent
        assert not op.uses_idempotency_keys
    assert w.funds_operation("c1", "add", 1).uses_idempotency_keys  # replayed only with an honoured key
    assert w.update_alias_operation("c1", "x").is_idempotent


def test_login_signature_is_over_exact_merchant_bytes() -> None:
    import base64

    import nacl.signing

    seed = bytes(range(32))
    creds = paysdk.WalletCredentials("tienda-ñ", base64.b64encode(seed).decode())
    _, url, body, headers = built(app_login_operation(creds))
    assert url == f"{W}/auth/login"
    assert "authorization" not in headers
    assert body is not None
    assert body["merchant"] == "tienda-ñ"
    nacl.signing.SigningKey(seed).verify_key.verify("tienda-ñ".encode(), base64.b64decode(body["signature"]))


BAD_ARGUMENTS = [
    ("amount", lambda: w.funds_operation("c1", "add", 1.5)),  # type: ignore[arg-type]
    ("amount", lambda: w.funds_operation("c1", "add", "0")),
    ("amount", lambda: w.funds_operation("c1", "add", "-1")),
    ("amount", lambda: w.funds_operation("c1", "add", "1.00001")),
    ("amount", lambda: w.funds_operation("c1", "add", "NaN")),
    ("amount", lambda: w.transfer_operation("c1", "c2", True)),
    ("start_date", lambda: w.card_summary_operation("u1", "2026-13-01", "2026-01-01")),
    ("start_date", lambda: w.card_summary_operation("u1", "01/02/2026", "2026-01-01")),
    ("end_date", lambda: w.card_summary_operation("u1", "2026-01-01", datetime(2026, 1, 2))),
    ("end_date", lambda: w.movements_operation("c1", None, "tomorrow")),
    ("permissions", lambda: w.grant_permissions_operation("c1", "u2", [])),
    ("permissions", lambda: w.grant_permissions_operation("c1", "u2", ["fly"])),  # type: ignore[list-item]
    ("permissions", lambda: w.grant_permissions_operation("c1", "u2", "checkCard")),  # type: ignore[arg-type]
    ("pin", lambda: w.set_pin_operation("c1", "12345")),
    ("otp", lambda: w.otp_verify_operation("a@x.io", "12ab56")),
    ("card_id", lambda: w.get_card_operation("")),
    ("user_id", lambda: w.list_cards_operation("  ")),
    ("currency", lambda: w.issue_virtual_operation("u1", "EUR")),  # type: ignore[arg-type]
    ("access_token_ttl", lambda: w.user_login_operation("a", "b", access_token_ttl=-5)),
    ("session", lambda: w.user_logout_operation("token")),  # type: ignore[arg-type]
    ("password", lambda: w.user_login_operation("a", "")),
]


@pytest.mark.parametrize(("field", "make"), BAD_ARGUMENTS)
def test_client_side_validation(field: str, make: Any) -> None:
    with pytest.raises(paysdk.ValidationError) as info:
        make()
    assert info.value.field == field


def test_every_wallet_code_has_its_error_class() -> None:
    assert {code.value for code in WalletCode} == set(WALLET_ERRORS)
    for code in WalletCode:
        status, cls = WALLET_ERRORS[code.value]
        assert status == WALLET_CODE_STATUS[code]
        assert OWN_CODE_ERRORS[(status, code.value)] is cls
        assert error_class_for(status, code.value) is cls
        assert issubclass(cls, paysdk.WalletError)
        assert cls.code == code.value
        assert getattr(paysdk, cls.__name__) is cls
        assert cls.__name__ in paysdk.__all__
        assert cls.__doc__
    assert issubclass(paysdk.InsufficientFundsError, paysdk.UnprocessableEntityError)
    assert issubclass(paysdk.CardPermissionDeniedError, paysdk.PermissionDeniedError)
    assert issubclass(paysdk.InvalidSignatureError, paysdk.AuthenticationError)
    assert issubclass(paysdk.WalletWrongEnvironmentError, paysdk.WrongEnvironmentError)
    assert error_class_for(500, 7303) is paysdk.InternalServerError  # wrong status: the status class


SANDBOX_SHAPES: list[tuple[Operation[Any], str, str, Any]] = [
    (
        sb.rotate_wallet_keys_operation("shop", "PUB"),
        "POST",
        "http://paysdk.test/_sandbox/clients/shop/keys",
        {"publicKey": "PUB"},
    ),
    (
        sb.create_user_operation("shop", "ana", "a@x.io", "password1", {"firstName": "Ana"}),
        "POST",
        "http://paysdk.test/_sandbox/users",
        {
            "merchant": "shop",
            "username": "ana",
            "email": "a@x.io",
            "password": "password1",
            "profile": {"firstName": "Ana"},
        },
    ),
    (
        sb.create_stock_card_operation("shop", "USD", "12.5"),
        "POST",
        "http://paysdk.test/_sandbox/cards",
        {"merchant": "shop", "currency": "USD", "balance": Decimal("12.5")},
    ),
    (
        sb.create_linking_token_operation("4000000000000002", "12/30"),
        "POST",
        "http://paysdk.test/_sandbox/linking-tokens",
        {"pan": "4000000000000002", "expiry": "12/30"},
    ),
    (
        sb.charge_operation("c1", "3.25", capture=True),
        "POST",
        "http://paysdk.test/_sandbox/cards/c1/charges",
        {"amount": Decimal("3.25"), "capture": True},
    ),
    (sb.capture_operation("ch1"), "POST", "http://paysdk.test/_sandbox/charges/ch1/capture", None),
    (sb.refund_operation("ch1", 1), "POST", "http://paysdk.test/_sandbox/charges/ch1/refunds", {"amount": 1}),
    (sb.clear_refund_operation("r1"), "POST", "http://paysdk.test/_sandbox/refunds/r1/clear", None),
    (sb.outbox_operation("a@x.io"), "GET", "http://paysdk.test/_sandbox/outbox?to=a%40x.io", None),
]


@pytest.mark.parametrize(("op", "method", "url", "body"), SANDBOX_SHAPES)
def test_sandbox_wallet_shapes(op: Operation[Any], method: str, url: str, body: Any) -> None:
    got_method, got_url, got_body, headers = built(op)
    assert (got_method, got_url, got_body) == (method, url, body)
    assert "authorization" not in headers
    assert not op.uses_idempotency_keys


def test_sandbox_parsers_accept_bare_and_enveloped() -> None:
    op = sb.outbox_operation()
    message = {"to": "a@x.io", "subject": "Code", "body": "123456", "at": "2026-01-01T00:00:00Z"}
    assert op.parse([message])[0].to == "a@x.io"
    assert op.parse({"data": [message]})[0].subject == "Code"


def test_create_client_accepts_wallet_fields() -> None:
    op = sb.create_client_operation(
        slug="shop",
        signing_public_key="PUB",
        keys_expire_at=datetime(2030, 1, 1),
        user_access_token_ttl=120,
        user_refresh_token_ttl=3600,
    )
    assert op.json is not None
    assert op.json["signingPublicKey"] == "PUB"
    assert op.json["userAccessTokenTtl"] == 120
    assert op.json["userRefreshTokenTtl"] == 3600
    assert "keysExpireAt" in op.json
