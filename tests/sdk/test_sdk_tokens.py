"""paysdk._tokens: the pure token state machine, as a table of cases."""

from __future__ import annotations

import nacl.signing
import pytest

from paysdk._jwt import encode_jwt
from paysdk._secret import Secret
from paysdk._tokens import (
    RefreshPolicy,
    Step,
    StoredTokens,
    TokenFlow,
    is_fresh,
    tokens_from_pair,
)

NOW = 1_000_000.0
POLICY = RefreshPolicy()


def stored(
    access: str = "A1",
    *,
    left: float = 1000.0,
    lifetime: float = 1800.0,
    refresh_left: float = 86400.0,
) -> StoredTokens:
    """A pair with ``left`` seconds of access life (out of ``lifetime``) at NOW."""
    expires = NOW + left
    return StoredTokens(
        Secret(access), Secret("R-" + access), expires, NOW + refresh_left, expires - lifetime
    )


CASES = [
    # (id, stored, can_login, rejected, code, expected step, uses stored?)
    ("empty-store-login", None, True, None, None, Step.LOGIN),
    ("empty-store-user-fails", None, False, None, None, Step.FAIL),
    ("fresh-use", stored(), True, None, None, Step.USE),
    ("stale-61s-fresh", stored(left=61), True, None, None, Step.USE),
    ("stale-59s-refresh", stored(left=59), True, None, None, Step.REFRESH),
    ("expired-refresh", stored(left=-5), True, None, None, Step.REFRESH),
    ("short-token-10pct", stored(left=7, lifetime=60), True, None, None, Step.USE),
    ("short-token-under-10pct", stored(left=5, lifetime=60), True, None, None, Step.REFRESH),
    ("refresh-expired-login", stored(left=-5, refresh_left=-1), True, None, None, Step.LOGIN),
    ("refresh-expired-user-tries-refresh", stored(left=-5, refresh_left=-1), False, None, None, Step.REFRESH),
    ("rejected-same-refresh", stored("A1"), True, "A1", 7103, Step.REFRESH),
    ("rejected-7102-refresh", stored("A1"), True, "A1", 7102, Step.REFRESH),
    ("rejected-other-stored-use", stored("A2"), True, "A1", 7103, Step.USE),
    ("rejected-other-stale-refresh", stored("A2", left=10), True, "A1", 7103, Step.REFRESH),
    ("rejected-revoked-login", stored("A1"), True, "A1", 7104, Step.LOGIN),
    ("rejected-reused-login", stored("A1"), True, "A1", 7105, Step.LOGIN),
    ("rejected-revoked-user-fails", stored("A1"), False, "A1", 7104, Step.FAIL),
    ("rejected-none-stored-login", None, True, "A1", 7103, Step.LOGIN),
]


@pytest.mark.parametrize(
    ("stored_tokens", "can_login", "rejected", "code", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_start(
    stored_tokens: StoredTokens | None,
    can_login: bool,
    rejected: str | None,
    code: int | None,
    expected: Step,
) -> None:
    flow = TokenFlow(
        stored_tokens,
        NOW,
        POLICY,
        can_login=can_login,
        rejected=None if rejected is None else Secret(rejected),
        rejected_code=code,
    )
    decision = flow.start()
    assert decision.step is expected, decision.reason
    if expected in (Step.USE, Step.REFRESH):
        assert decision.tokens is stored_tokens
        assert not decision.save


AFTER_REFRESH_FAILURE = [
    (7105, True, Step.LOGIN),
    (7104, True, Step.LOGIN),
    (7103, True, Step.LOGIN),
    (7102, True, Step.LOGIN),
    (7106, True, Step.LOGIN),
    (7105, False, Step.FAIL),
    (None, True, Step.FAIL),  # no answer (timeout): never replayed, never "fixed" by a login
    (500, True, Step.FAIL),
    (7604, True, Step.FAIL),
]


@pytest.mark.parametrize(("code", "can_login", "expected"), AFTER_REFRESH_FAILURE)
def test_refresh_failure(code: int | None, can_login: bool, expected: Step) -> None:
    flow = TokenFlow(stored(left=-1), NOW, POLICY, can_login=can_login)
    assert flow.start().step is Step.REFRESH
    assert flow.refresh_failed(code).step is expected


@pytest.mark.parametrize("code", [7604, 7616, 7601, None, 7103])
def test_login_failure_gives_up(code: int | None) -> None:
    flow = TokenFlow(None, NOW, POLICY, can_login=True)
    assert flow.start().step is Step.LOGIN
    assert flow.login_failed(code).step is Step.FAIL


def test_no_loop_refresh_then_login_then_fail() -> None:
    """A dead refresh token leads to exactly one login; a second dead answer gives up."""
    flow = TokenFlow(stored(left=-1), NOW, POLICY, can_login=True)
    assert flow.start().step is Step.REFRESH
    assert flow.refresh_failed(7105).step is Step.LOGIN
    assert flow.login_failed(7616).step is Step.FAIL
    # Even a (buggy) second dead refresh after the login never asks for another login.
    assert flow.refresh_failed(7105).step is Step.FAIL


def test_success_saves_new_tokens() -> None:
    flow = TokenFlow(stored(left=-1), NOW, POLICY, can_login=True)
    flow.start()
    decision = flow.refresh_succeeded("A2", "R2", expires_in=1800, refresh_expires_in=600, now=NOW)
    assert decision.step is Step.USE
    assert decision.save
    assert decision.tokens is not None
    assert decision.tokens.access_token == "A2"
    assert decision.tokens.access_expires_at == NOW + 1800
    assert decision.tokens.refresh_expires_at == NOW + 600
    login = TokenFlow(None, NOW, POLICY, can_login=True)
    login.start()
    assert login.login_succeeded("A3", "R3", expires_in=60, refresh_expires_in=600, now=NOW).save


def test_lifetime_from_jwt_claims_anchored_on_local_clock() -> None:
    """exp/iat are read (unverified) for the lifetime; a skewed server clock does not matter."""
    key = nacl.signing.SigningKey.generate()
    server_time = 5_000_000_000  # far in the future of the local clock
    access = encode_jwt(key, {"iat": server_time, "exp": server_time + 900}, typ="at+jwt", kid="k")
    refresh = encode_jwt(key, {"iat": server_time, "exp": server_time + 3600}, typ="rt+jwt", kid="k")
    tokens = tokens_from_pair(access, refresh, expires_in=1, refresh_expires_in=1, now=NOW)
    assert tokens.access_expires_at == NOW + 900
    assert tokens.refresh_expires_at == NOW + 3600
    assert tokens.lifetime == 900
    # Not a JWT: the answer's expiresIn is used.
    opaque = tokens_from_pair("opaque", "opaque2", expires_in=30, refresh_expires_in=60, now=NOW)
    assert opaque.access_expires_at == NOW + 30


def test_policy_margin() -> None:
    assert POLICY.margin(1800) == 60
    assert POLICY.margin(60) == 6
    assert POLICY.margin(0) == 0
    assert is_fresh(stored(left=100), NOW, POLICY)
    assert not is_fresh(stored(left=60), NOW, POLICY)


def test_stored_tokens_json_round_trip_and_masked_repr() -> None:
    tokens = stored("SECRET-ACCESS")
    again = StoredTokens.from_json(tokens.to_json())
    assert again == tokens
    assert "SECRET-ACCESS" not in repr(tokens)
    with pytest.raises(ValueError, match="not a stored token pair"):
        StoredTokens.from_json({"accessToken": "x"})
