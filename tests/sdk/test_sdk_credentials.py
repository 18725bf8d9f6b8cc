"""Named credentials (pure): which secret an operation names, how it is applied, what a 401 means;
the backoffice credential types and their login/refresh operation builders."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import paysdk
from paysdk import _json
from paysdk._backoffice_auth import (
    BACKOFFICE_APP_TOKENS,
    BACKOFFICE_USER_TOKENS,
    backoffice_app_login_operation,
    backoffice_app_refresh_operation,
    backoffice_user_login_operation,
    backoffice_user_refresh_operation,
)
from paysdk._credentials import (
    CREDENTIALS,
    HookKeys,
    Placement,
    Source,
    credential_for,
    needs_token_manager,
    recovery_codes,
)
from paysdk._jwt import verify_key_from_b64, verify_merchant_signature
from paysdk._pipeline import ClientConfig, Operation, build_request, no_result, result_from_outcome
from paysdk._secret import Secret
from paysdk._tokens import RECOVERABLE_CODES, REPLAY_CODES
from paysdk._wallet_auth import WALLET_APP_TOKENS, WALLET_USER_TOKENS

from .support import TOKEN, keyed_environment

KEY = "A" * 43 + "="  # 32 bytes of base64
CONFIG = ClientConfig(environment=keyed_environment(), merchant_token=Secret(TOKEN))
BARE = ClientConfig(environment=keyed_environment())
CMS = "http://paysdk.test/cms/rest"


def op(auth: str, **options: Any) -> Operation[None]:
    return Operation(method="POST", path="/p", parse=no_result, auth=auth, json={"a": 1}, **options)  # type: ignore[arg-type]


def sent(request: Any) -> tuple[str | None, dict[str, Any]]:
    return request.headers.get("authorization"), _json.loads(request.content)


def test_every_name_the_operations_use_is_known() -> None:
    legacy = {"none", "raw", "bearer", "wallet_app", "wallet_user"}  # the names before named credentials
    assert set(CREDENTIALS) == legacy | {"hook_keys", "backoffice_app", "backoffice_user"}
    with pytest.raises(paysdk.ValidationError) as info:
        credential_for("wallet")
    assert info.value.field == "auth"
    managed = {name for name in CREDENTIALS if needs_token_manager(name)}
    assert managed == {"wallet_app", "wallet_user", "backoffice_app", "backoffice_user"}
    for kind in (WALLET_APP_TOKENS, WALLET_USER_TOKENS, BACKOFFICE_APP_TOKENS, BACKOFFICE_USER_TOKENS):
        assert CREDENTIALS[kind.credential].source is Source.TOKENS
        assert CREDENTIALS[kind.credential].field == kind.field


@pytest.mark.parametrize(
    ("auth", "header"),
    [("none", None), ("raw", TOKEN), ("bearer", f"Bearer {TOKEN}")],
)
def test_merchant_token_placements(auth: str, header: str | None) -> None:
    assert sent(build_request(op(auth), CONFIG, None)) == (header, {"a": 1})


@pytest.mark.parametrize("auth", ["wallet_app", "wallet_user", "backoffice_app", "backoffice_user"])
def test_token_managed_credentials_send_the_given_token_as_bearer(auth: str) -> None:
    request = build_request(op(auth), BARE, None, credential=Secret("tok-1"))
    assert sent(request) == ("Bearer tok-1", {"a": 1})
    with pytest.raises(paysdk.ValidationError) as info:
        build_request(op(auth), CONFIG, None)  # the shell must supply the token
    assert info.value.field == CREDENTIALS[auth].field
    assert CREDENTIALS[auth].placement is Placement.BEARER


def test_hook_keys_travel_in_the_body_only() -> None:
    keys = HookKeys(Secret("priv-123"), "pub-456")
    request = build_request(op("hook_keys", credential=keys), CONFIG, None)
    assert sent(request) == (None, {"a": 1, "privateKey": "priv-123", "publicKey": "pub-456"})
    assert "priv-123" not in repr(keys)
    assert "priv-123" not in repr(op("hook_keys", credential=keys))
    with pytest.raises(paysdk.ValidationError) as info:
        build_request(op("hook_keys"), CONFIG, None)
    assert info.value.field == "private_key"


def test_the_hook_create_names_its_credential() -> None:
    from paysdk.resources.payment_links import create_hook_operation

    hook = create_hook_operation(
        private_key="priv-123", public_key="pub-456", amount=1, user_id="+50255555555", channel="wa"
    )
    assert hook.auth == "hook_keys"
    assert "privateKey" not in hook.json
    assert "publicKey" not in hook.json
    assert sent(build_request(hook, BARE, None))[1]["privateKey"] == "priv-123"


def test_missing_merchant_token_names_the_argument() -> None:
    for auth in ("raw", "bearer"):
        with pytest.raises(paysdk.ValidationError) as info:
            build_request(op(auth), BARE, None)
        assert info.value.field == "merchant_token"


def test_what_a_401_means() -> None:
    assert recovery_codes(CREDENTIALS["raw"]) == frozenset()
    assert recovery_codes(CREDENTIALS["hook_keys"]) == frozenset()
    for name in ("wallet_app", "wallet_user", "backoffice_app", "backoffice_user"):
        assert recovery_codes(CREDENTIALS[name]) == RECOVERABLE_CODES
        assert recovery_codes(CREDENTIALS[name], REPLAY_CODES) == REPLAY_CODES


def test_a_call_credential_is_scrubbed_from_errors() -> None:
    import httpx

    keys = HookKeys(Secret("priv-echoed"), "pub")
    hook = op("hook_keys", credential=keys)
    echo = httpx.Response(409, json={"ownCode": 5000, "message": "bad key priv-echoed"})
    with pytest.raises(paysdk.APIError) as info:
        result_from_outcome(hook, echo, attempts=1)
    assert "priv-echoed" not in str(info.value)
    assert "priv-echoed" not in repr(info.value.body)


# ------------------------------------------------------------------------ backoffice types and builders


def test_backoffice_credentials_validate_and_mask() -> None:
    user = paysdk.BackofficeUser(" ops@shop.example ", Secret("pw-secret"))
    creds = paysdk.BackofficeCredentials("shop", KEY, user=user)
    assert user.email == "ops@shop.example"
    assert user.password == Secret("pw-secret")
    assert repr(creds) == (
        "BackofficeCredentials(merchant='shop', private_key='****', "
        "user=BackofficeUser(email='ops@shop.example', password='****'))"
    )
    assert "pw-secret" not in str(creds)
    assert repr(paysdk.BackofficeCredentials("shop", KEY)) == (
        "BackofficeCredentials(merchant='shop', private_key='****')"
    )
    for value in (creds, user):
        with pytest.raises(TypeError):
            pickle.dumps(value)
    cases: list[tuple[Any, str]] = [
        (lambda: paysdk.BackofficeUser("not-an-email", "pw"), "email"),
        (lambda: paysdk.BackofficeUser("a@b.example", ""), "password"),
        (lambda: paysdk.BackofficeCredentials("", KEY), "merchant"),
        (lambda: paysdk.BackofficeCredentials("shop", "nope"), "private_key"),
        (lambda: paysdk.BackofficeCredentials("shop", KEY, user="ops"), "user"),  # type: ignore[arg-type]
        (lambda: paysdk.Client(environment=keyed_environment(), backoffice="x"), "backoffice"),  # type: ignore[arg-type]
    ]
    for make, field in cases:
        with pytest.raises(paysdk.ValidationError) as info:
            make()
        assert info.value.field == field


def test_backoffice_login_and_refresh_operations() -> None:
    creds = paysdk.BackofficeCredentials("shop", KEY, user=paysdk.BackofficeUser("ops@shop.example", "pw"))
    assert creds.user is not None
    login = build_request(backoffice_app_login_operation(creds), BARE, None)
    assert str(login.url) == f"{CMS}/app/auth/login"
    header, body = sent(login)
    assert header is None
    assert body["merchant"] == "shop"
    assert verify_merchant_signature(verify_key_from_b64(creds.public_key), "shop", body["signature"])
    refresh = build_request(backoffice_app_refresh_operation(Secret("r1")), BARE, None)
    assert (str(refresh.url), sent(refresh)) == (f"{CMS}/app/auth/refresh", (None, {"refreshToken": "r1"}))
    user_login = backoffice_user_login_operation(creds.user, access_token_ttl=600)
    assert user_login.auth == "backoffice_app"  # 4.4: the user logs in with the application bearer
    request = build_request(user_login, BARE, None, credential=Secret("app-tok"))
    assert str(request.url) == f"{CMS}/app/users/login"
    assert sent(request) == (
        "Bearer app-tok",
        {"email": "ops@shop.example", "password": "pw", "accessTokenTtl": 600},
    )
    assert "pw" not in repr(user_login)
    user_refresh = backoffice_user_refresh_operation(Secret("r2"))
    assert (user_refresh.auth, user_refresh.path) == ("backoffice_app", "/app/users/refresh")
    for built in (backoffice_app_login_operation(creds), user_login, user_refresh):
        assert built.is_idempotent is False
        assert built.uses_idempotency_keys is False


def test_backoffice_store_keys() -> None:
    env = keyed_environment()
    app = paysdk.backoffice_store_key(env, "shop")
    assert app == f"local|{CMS}|backoffice-app|shop"
    assert paysdk.backoffice_store_key(env, "shop", " ops@shop.example") == f"{app}|user|ops@shop.example"
    assert app != paysdk.wallet_store_key(env, "shop")
    with pytest.raises(paysdk.ValidationError):
        paysdk.backoffice_store_key(env, " ")
