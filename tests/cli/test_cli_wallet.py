"""The wallet commands against an httpx mock transport: key handling, token storage, amounts, errors.

End-to-end runs against the reference server are in ``test_cli_wallet_e2e.py``.
"""

from __future__ import annotations

import base64
import json
import stat
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from paysdk import _jwt
from paysdk_cli._config import update_profile
from paysdk_cli._secrets import WALLET_KEY, load_secret, user_sessions_path, wallet_token_path
from paysdk_cli._wallet import SessionStore

from .conftest import MemoryKeyring, MockAPI, run_cli

SEED = bytes(range(32))
SEED_B64 = base64.b64encode(SEED).decode()
SIGNING = _jwt.load_signing_key(SEED)
SERVER_KEY = _jwt.load_signing_key(bytes(range(1, 33)))
KID = _jwt.public_jwk(SERVER_KEY)["kid"]
MERCHANT = "shop"


def _jwt_for(sub: str, kind: str, use: str, ttl: int) -> str:
    now = int(time.time())
    claims = {
        "iss": "paysdk-wallet:sandbox",
        "aud": "wallet",
        "sub": sub,
        "merchant": MERCHANT,
        "kind": kind,
        "token_use": use,
        "sid": "s1",
        "fam": "f1",
        "jti": f"{sub}-{use}-{time.monotonic_ns()}",
        "iat": now,
        "exp": now + ttl,
    }
    return _jwt.encode_jwt(SERVER_KEY, claims, typ="at+jwt" if use == "access" else "rt+jwt", kid=KID)


def _pair(sub: str, kind: str) -> dict[str, Any]:
    return {
        "accessToken": _jwt_for(sub, kind, "access", 1800),
        "refreshToken": _jwt_for(sub, kind, "refresh", 7 * 86400),
        "tokenType": "Bearer",
        "expiresIn": 1800,
        "refreshExpiresIn": 7 * 86400,
    }


CARD = {
    "cardId": "card_1",
    "maskedPan": "4000********0001",
    "type": "virtual",
    "status": "active",
    "currency": "GTQ",
    "balance": 100.0001,
    "availableBalance": 100.0001,
    "pendingDebits": 0,
    "pendingCredits": 0,
    "holderId": "usr_1",
    "merchant": MERCHANT,
    "alias": None,
    "createdAt": "2026-01-01T00:00:00Z",
}
MOVEMENT = {
    "movementId": "mov_1",
    "cardId": "card_1",
    "type": "fund",
    "direction": "credit",
    "amount": 100.0001,
    "balanceAfter": 100.0001,
    "currency": "GTQ",
    "reference": None,
    "counterpartCardId": None,
    "createdAt": "2026-01-01T00:00:00Z",
}


def _response(status: int, body: Any) -> httpx.Response:
    # Decimal-exact numbers: write the JSON text by hand so 100.0001 keeps its digits.
    return httpx.Response(
        status, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )


class WalletMock:
    """A tiny wallet: app login (checks the signature), user login, cards, funds with 7303."""

    def __init__(self) -> None:
        self.app_tokens: list[str] = []
        self.user_tokens: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/rest")
        body = json.loads(request.content) if request.content else {}
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if path == "/auth/login":
            verify = SIGNING.verify_key
            if body.get("merchant") != MERCHANT or not _jwt.verify_merchant_signature(
                verify, MERCHANT, body.get("signature", "")
            ):
                return _response(401, {"ownCode": 7604, "message": "Invalid signature.", "details": []})
            pair = _pair(MERCHANT, "application")
            self.app_tokens.append(pair["accessToken"])
            return _response(200, {"data": pair})
        if bearer not in self.app_tokens and bearer not in self.user_tokens:
            return _response(401, {"ownCode": 7102, "message": "Invalid token.", "details": []})
        if path == "/users/login":
            if body.get("password") != "s3cret-pass":
                return _response(401, {"ownCode": 7101, "message": "Invalid credentials.", "details": []})
            pair = _pair("usr_1", "user")
            self.user_tokens.append(pair["accessToken"])
            return _response(200, {"data": pair})
        if path == "/users/logout":
            return _response(200, {"data": {"loggedOut": True}})
        if path == "/users/usr_1/cards" and request.method == "GET":
            return _response(200, {"data": [CARD]})
        if path == "/cards/card_1/funds":
            if body["operation"] == "withdraw" and float(body["amount"]) > 100.0001:
                return _response(422, {"ownCode": 7303, "message": "Insufficient funds.", "details": []})
            return _response(200, {"data": {"card": CARD, "movement": MOVEMENT}})
        return _response(404, {"ownCode": 7301, "message": "Card not found.", "details": []})


@pytest.fixture
def wallet(mock_api: MockAPI) -> WalletMock:
    handler = WalletMock()
    mock_api.handler = handler
    return handler


def _login(*extra: str, input: str | None = None) -> Any:
    return run_cli("-o", "json", "wallet", "login", "--merchant", MERCHANT, *extra, input=input)


def _secret_free(*texts: str) -> None:
    for text in texts:
        assert SEED_B64 not in text
        assert "eyJ" not in text  # no JWT (header base64url of '{"')


def test_login_with_key_file_stores_key_and_tokens_0600(
    wallet: WalletMock, config_dir: Path, tmp_path: Path
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(SEED_B64 + "\n")
    key_file.chmod(0o644)
    result = _login("--key-file", str(key_file))
    assert f"Warning: {key_file} can be read by other users" in result.stderr

    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["merchant"] == MERCHANT
    assert out["expiresIn"] == 1800
    _secret_free(result.stdout, result.stderr)
    stored = load_secret(WALLET_KEY, "default")
    assert stored is not None
    assert (stored.value, stored.source) == (SEED_B64, "file")
    credentials = config_dir / "credentials.json"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert "Warning: no usable OS keyring" in result.stderr
    tokens = wallet_token_path("default")
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    assert wallet.app_tokens[-1] in tokens.read_text()
    profiles = json.loads((config_dir / "profiles.json").read_text())["profiles"]
    assert profiles["default"]["merchant"] == MERCHANT
    assert SEED_B64 not in (config_dir / "profiles.json").read_text()


def test_login_with_keyring_keeps_key_off_disk(
    wallet: WalletMock, config_dir: Path, memory_keyring: MemoryKeyring
) -> None:
    result = _login("--key-stdin", input=SEED.hex())
    assert result.exit_code == 0, result.stderr
    assert memory_keyring.passwords == {(WALLET_KEY.service, "default"): SEED.hex()}
    assert not (config_dir / "credentials.json").exists()
    _secret_free(result.stdout, result.stderr)


@pytest.mark.usefixtures("terminal_stdin")
def test_login_reuses_the_stored_key_and_prompts_when_there_is_none(wallet: WalletMock) -> None:
    prompted = _login(input=SEED_B64 + "\n")
    assert prompted.exit_code == 0, prompted.stderr
    assert "Wallet private key" in prompted.stderr
    again = _login()
    assert again.exit_code == 0, again.stderr
    assert "Wallet private key" not in again.stderr
    assert len(wallet.app_tokens) == 2


def test_malformed_key_exits_2_before_any_request(wallet: WalletMock, mock_api: MockAPI) -> None:
    result = _login("--key-stdin", input="not-a-key")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: invalid private key")
    assert mock_api.requests == []
    assert load_secret(WALLET_KEY, "default") is None


def test_wrong_key_exits_4_with_own_code_and_is_not_stored(wallet: WalletMock) -> None:
    other = base64.b64encode(bytes(32)).decode()
    result = _login("--key-stdin", input=other)
    assert result.exit_code == 4
    assert "Error: HTTP 401 ownCode 7604" in result.stderr
    assert "wallet login --merchant SLUG --key-file FILE" in result.stderr
    assert load_secret(WALLET_KEY, "default") is None


def test_whoami_prints_expiry_never_tokens(wallet: WalletMock) -> None:
    assert _login("--key-stdin", input=SEED_B64).exit_code == 0
    result = run_cli("-o", "json", "wallet", "whoami")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["merchant"] == MERCHANT
    assert data["accessTokenExpired"] is False
    assert data["tokenIssuer"] == "paysdk-wallet:sandbox"
    assert data["accessTokenExpiresAt"]
    _secret_free(result.stdout, result.stderr)
    table = run_cli("-o", "table", "wallet", "whoami")
    assert table.exit_code == 0
    _secret_free(table.stdout, table.stderr)


def test_without_merchant_exit_2_and_without_login_or_key_exit_4(wallet: WalletMock) -> None:
    nomerchant = run_cli("wallet", "whoami")
    assert nomerchant.exit_code == 2
    assert "no wallet merchant" in nomerchant.stderr

    update_profile("default", merchant=MERCHANT)
    whoami = run_cli("wallet", "whoami")
    assert whoami.exit_code == 4
    assert "not logged in to the wallet" in whoami.stderr
    nokey = run_cli("cards", "list", "--user-id", "usr_1")
    assert nokey.exit_code == 4
    assert "no wallet signing key" in nokey.stderr
    assert "wallet login --key-file" in nokey.stderr


def test_logout_forgets_tokens_and_optionally_the_key(wallet: WalletMock) -> None:
    assert _login("--key-stdin", input=SEED_B64).exit_code == 0
    assert run_cli("wallet", "logout").exit_code == 0
    assert run_cli("wallet", "whoami").exit_code == 4
    assert load_secret(WALLET_KEY, "default") is not None
    assert run_cli("wallet", "logout", "--forget-key").exit_code == 0
    assert load_secret(WALLET_KEY, "default") is None


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        ("1.00001", "more than 4 decimal places"),
        ("0", "greater than zero"),
        ("-5", "no sign, spaces or exponent"),
        ("NaN", "must be digits"),
        ("ten", "not a decimal number"),
    ],
)
def test_bad_amounts_exit_2_naming_the_option(
    wallet: WalletMock, mock_api: MockAPI, amount: str, message: str
) -> None:
    result = run_cli("funds", "add", "card_1", "--amount", amount)
    assert result.exit_code == 2
    assert "--amount" in result.stderr
    assert message in result.stderr
    assert mock_api.requests == []


def test_funds_send_exact_decimal_and_7303_exits_6(wallet: WalletMock, mock_api: MockAPI) -> None:
    assert _login("--key-stdin", input=SEED_B64).exit_code == 0
    added = run_cli("-o", "json", "funds", "add", "card_1", "--amount", "100.0001")
    assert added.exit_code == 0, added.stderr
    assert b'"amount":100.0001' in mock_api.requests[-1].content
    assert '"balance":100.0001' in added.stdout
    table = run_cli("-o", "table", "funds", "add", "card_1", "--amount", "100.0001")
    assert "100.0001" in table.stdout

    refused = run_cli("funds", "withdraw", "card_1", "--amount", "200")
    assert refused.exit_code == 6
    assert refused.stderr.startswith("Error: HTTP 422 ownCode 7303: Insufficient funds.")
    assert refused.stdout == ""


def test_users_login_stores_the_session_and_as_user_uses_it(wallet: WalletMock, mock_api: MockAPI) -> None:
    assert _login("--key-stdin", input=SEED_B64).exit_code == 0
    bad = run_cli("users", "login", "--username", "ana", "--password-stdin", input="wrong\n")
    assert bad.exit_code == 4
    assert "ownCode 7101" in bad.stderr
    good = run_cli(
        "-o", "json", "users", "login", "--username", "ana", "--password-stdin", input="s3cret-pass\n"
    )
    assert good.exit_code == 0, good.stderr
    assert json.loads(good.stdout)["userId"] == "usr_1"
    _secret_free(good.stdout, good.stderr)
    assert "s3cret-pass" not in good.stdout + good.stderr
    path = user_sessions_path("default")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    cards = run_cli("-o", "json", "cards", "list", "--as-user", "ana")
    assert cards.exit_code == 0, cards.stderr
    assert json.loads(cards.stdout)[0]["cardId"] == "card_1"
    assert mock_api.requests[-1].url.path == "/rest/users/usr_1/cards"  # --user-id defaulted
    assert mock_api.requests[-1].headers["authorization"] == f"Bearer {wallet.user_tokens[-1]}"

    unknown = run_cli("cards", "list", "--as-user", "bob")
    assert unknown.exit_code == 4
    assert "users login --username bob" in unknown.stderr

    out = run_cli("users", "logout")
    assert out.exit_code == 0, out.stderr
    assert mock_api.requests[-1].url.path == "/rest/users/logout"
    assert run_cli("cards", "list", "--as-user", "ana").exit_code == 4


def test_a_session_record_without_its_store_key_asks_to_log_in_again(
    wallet: WalletMock, mock_api: MockAPI
) -> None:
    assert _login("--key-stdin", input=SEED_B64).exit_code == 0
    SessionStore(user_sessions_path("default")).put("ana", {"username": "ana", "userId": "usr_1"})
    sent = len(mock_api.requests)
    result = run_cli("cards", "list", "--as-user", "ana")
    assert result.exit_code == 4
    assert "the stored session of user 'ana' is unreadable" in result.stderr
    assert "users login --username ana" in result.stderr
    assert len(mock_api.requests) == sent


def test_secret_options_do_not_exist() -> None:
    for args in (
        ["wallet", "login", "--key", "x"],
        ["wallet", "login", "--private-key", "x"],
        ["users", "login", "--username", "u", "--password", "x"],
    ):
        result = run_cli(*args)
        assert result.exit_code == 2
        assert "Error: no such option" in result.stderr


def test_wallet_error_hints_and_credential_errors_exit_4() -> None:
    import paysdk
    from paysdk_cli._errors import _describe, exit_code_for

    unusable = paysdk.ValidationError("wallet", "no usable wallet token: no stored tokens")
    assert exit_code_for(unusable) == 4
    assert _describe(unusable, False)[0] == "wallet credentials: no usable wallet token: no stored tokens"
    wrong_type = paysdk.APIError("Needs the application token.", status_code=401, own_code=7106)
    assert "--as-user" in _describe(wrong_type, False)[1]
    expired = paysdk.APIError("Expired.", status_code=401, own_code=7103)
    assert "paysdk wallet login" in _describe(expired, False)[1]
    denied = paysdk.APIError("Permission denied.", status_code=403, own_code=7401)
    assert _describe(denied, False) == ["HTTP 403 ownCode 7401: Permission denied."]
    assert exit_code_for(denied) == 4
    merchant = paysdk.APIError("Unauthorized.", status_code=401, own_code=None)
    assert "paysdk login" in _describe(merchant, False)[1]


def test_tables_never_fold_amounts(capsys: pytest.CaptureFixture[str]) -> None:
    from decimal import Decimal

    from paysdk_cli._output import OutputFormat, emit

    row = {f"column{i}": "x" * 20 for i in range(6)} | {"balance": Decimal("123456.0001")}
    emit(OutputFormat.table, [row], title="Cards")
    assert "123456.0001" in capsys.readouterr().out
