"""The retry policy and idempotency-key rules, as pure functions (no client, no I/O)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from paysdk import Environment
from paysdk._pipeline import (
    MAX_RETRY_AFTER,
    ClientConfig,
    Operation,
    Outcome,
    backoff_delay,
    idempotency_key_for,
    no_result,
    parse_retry_after,
    retry_decision,
)

from .support import keyed_environment, plain_environment

NOW = 1_700_000_000.0
REQUEST = httpx.Request("POST", "https://api.example/transactions")


def config(environment: Environment, max_retries: int = 2) -> ClientConfig:
    return ClientConfig(environment=environment, max_retries=max_retries)


POST = Operation(method="POST", path="/transactions", parse=no_result, auth="raw")
GET = Operation(method="GET", path="/_sandbox/clock", parse=no_result)
SANDBOX_POST = Operation(
    method="POST", path="/_sandbox/clock/advance", parse=no_result, uses_idempotency_keys=False
)
CALLER_KEY_POST = Operation(
    method="POST", path="/transactions", parse=no_result, idempotency_key="caller-key-1"
)


def response(status: int, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=REQUEST)


def problem(status: int, own_code: int | None, field: str) -> httpx.Response:
    """A D1 error body naming ``field``."""
    body = {"ownCode": own_code, "message": "m", "details": [{"field": field, "message": "m"}]}
    return httpx.Response(status, json=body, request=REQUEST)


IN_PROGRESS = problem(409, None, "Idempotency-Key")


def decide(
    op: Operation[Any],
    outcome: Outcome,
    environment: Environment,
    key: str | None,
    attempt: int = 1,
    max_retries: int = 2,
) -> tuple[bool, float]:
    decision = retry_decision(
        op, attempt, outcome, config(environment, max_retries), key, rng=lambda: 0.0, now=lambda: NOW
    )
    return decision.retry, decision.delay


PLAIN = plain_environment()
KEYED = keyed_environment()

CASES = [
    # id, op, outcome, environment, key, expected retry
    ("keyless POST, read timeout: never replayed", POST, httpx.ReadTimeout("t"), PLAIN, None, False),
    ("keyless POST, write timeout: never replayed", POST, httpx.WriteTimeout("t"), PLAIN, None, False),
    (
        "keyless POST, protocol error: never replayed",
        POST,
        httpx.RemoteProtocolError("x"),
        PLAIN,
        None,
        False,
    ),
    ("keyless POST, read error: never replayed", POST, httpx.ReadError("x"), PLAIN, None, False),
    ("keyless POST, 503: not replayed", POST, response(503), PLAIN, None, False),
    ("keyless POST, 429: not replayed", POST, response(429), PLAIN, None, False),
    ("keyless POST, connect error: retried", POST, httpx.ConnectError("refused"), PLAIN, None, True),
    ("keyless POST, connect timeout: retried", POST, httpx.ConnectTimeout("t"), PLAIN, None, True),
    ("keyless POST, pool timeout: retried", POST, httpx.PoolTimeout("t"), PLAIN, None, True),
    (
        "caller key, environment without support: not replayed",
        CALLER_KEY_POST,
        httpx.ReadTimeout("t"),
        PLAIN,
        "caller-key-1",
        False,
    ),
    ("keyed POST, 503: retried", POST, response(503), KEYED, "k", True),
    ("keyed POST, read timeout: retried", POST, httpx.ReadTimeout("t"), KEYED, "k", True),
    ("keyed POST, 502: retried", POST, response(502), KEYED, "k", True),
    ("keyed POST, 504: retried", POST, response(504), KEYED, "k", True),
    ("keyed POST, 500: retried", POST, response(500), KEYED, "k", True),
    ("keyed POST, 409: not retried", POST, response(409), KEYED, "k", False),
    ("keyed POST, 409 in progress (details name Idempotency-Key)", POST, IN_PROGRESS, KEYED, "k", True),
    (
        "caller key, 409 in progress on a server not declared: retried with the key",
        CALLER_KEY_POST,
        IN_PROGRESS,
        PLAIN,
        "caller-key-1",
        True,
    ),
    ("keyless POST, 409 naming Idempotency-Key: no key sent", POST, IN_PROGRESS, PLAIN, None, False),
    ("keyed POST, 409 / 5000: not retried", POST, problem(409, 5000, "amount"), KEYED, "k", False),
    ("keyed POST, 409 / 5004: not retried", POST, problem(409, 5004, "client"), KEYED, "k", False),
    ("keyed POST, 409 state conflict: not retried", POST, problem(409, None, "uid"), KEYED, "k", False),
    (
        "keyed POST, 422 key reused with another body: not retried",
        POST,
        problem(422, None, "Idempotency-Key"),
        KEYED,
        "k",
        False,
    ),
    ("keyed POST, 409 with a non-JSON body: not retried", POST, response(409), KEYED, "k", False),
    ("keyed POST, 400: not retried", POST, response(400), KEYED, "k", False),
    ("keyed POST, 501: not retried", POST, response(501), KEYED, "k", False),
    ("any call, 200: done", POST, response(200), KEYED, "k", False),
    (
        "sandbox POST never keyed: read timeout not replayed",
        SANDBOX_POST,
        httpx.ReadTimeout("t"),
        KEYED,
        None,
        False,
    ),
    ("sandbox POST, connect error: retried", SANDBOX_POST, httpx.ConnectError("x"), KEYED, None, True),
    ("GET, read timeout: retried", GET, httpx.ReadTimeout("t"), PLAIN, None, True),
    ("GET, 429: retried", GET, response(429), PLAIN, None, True),
    ("GET, 503: retried", GET, response(503), PLAIN, None, True),
    ("GET, 404: not retried", GET, response(404), PLAIN, None, False),
    ("GET, unsupported protocol: not retried", GET, httpx.UnsupportedProtocol("x"), PLAIN, None, False),
]


@pytest.mark.parametrize(
    ("op", "outcome", "environment", "key", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_retry_table(
    op: Operation[Any], outcome: Outcome, environment: Environment, key: str | None, expected: bool
) -> None:
    retry, _ = decide(op, outcome, environment, key)
    assert retry is expected


@pytest.mark.parametrize("max_retries", [0, 1, 2, 5])
def test_max_retries_respected(max_retries: int) -> None:
    retried = 0
    for attempt in range(1, 20):
        retry, _ = decide(GET, response(503), PLAIN, None, attempt=attempt, max_retries=max_retries)
        if not retry:
            break
        retried += 1
    assert retried == max_retries


def test_backoff_doubles_and_caps_at_8s() -> None:
    delays = [decide(GET, response(503), PLAIN, None, attempt=n, max_retries=10)[1] for n in range(1, 8)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_jitter_takes_off_at_most_a_quarter() -> None:
    assert backoff_delay(0, rng=lambda: 0.0) == 0.5
    assert backoff_delay(2, rng=lambda: 0.999999) == pytest.approx(1.5, rel=1e-5)
    assert 0.375 <= backoff_delay(0, rng=lambda: 0.5) <= 0.5


def test_retry_after_seconds_is_honoured() -> None:
    retry, delay = decide(GET, response(429, **{"Retry-After": "7"}), PLAIN, None)
    assert (retry, delay) == (True, 7.0)


def test_retry_after_http_date_is_honoured() -> None:
    date = "Tue, 14 Nov 2023 22:13:40 GMT"  # NOW + 20 s
    retry, delay = decide(GET, response(503, **{"Retry-After": date}), PLAIN, None)
    assert retry
    assert delay == pytest.approx(20.0)


def test_retry_after_is_capped() -> None:
    retry, delay = decide(GET, response(429, **{"Retry-After": "3600"}), PLAIN, None)
    assert retry
    assert delay == MAX_RETRY_AFTER == 60.0


def test_unparseable_retry_after_falls_back_to_backoff() -> None:
    assert decide(GET, response(429, **{"Retry-After": "soon"}), PLAIN, None)[1] == 0.5


@pytest.mark.parametrize(
    ("raw", "expected"), [("0", 0.0), ("-5", 0.0), ("1.5", 1.5), ("nan", None), ("", None)]
)
def test_parse_retry_after(raw: str, expected: float | None) -> None:
    assert parse_retry_after(httpx.Headers({"Retry-After": raw}), now=NOW) == expected


def test_retry_after_date_in_the_past_means_now() -> None:
    assert parse_retry_after(httpx.Headers({"Retry-After": "Mon, 01 Jan 2001 00:00:00 GMT"}), now=NOW) == 0.0


class TestIdempotencyKeyFor:
    def mint(self) -> str:
        self.minted += 1
        return f"minted-{self.minted}"

    def setup_method(self) -> None:
        self.minted = 0

    def test_minted_for_post_when_environment_honours_keys(self) -> None:
        assert idempotency_key_for(POST, config(KEYED), mint=self.mint) == "minted-1"

    def test_not_minted_when_environment_does_not_honour_keys(self) -> None:
        assert idempotency_key_for(POST, config(PLAIN), mint=self.mint) is None
        assert self.minted == 0

    def test_caller_key_wins_and_is_always_sent(self) -> None:
        assert idempotency_key_for(CALLER_KEY_POST, config(KEYED), mint=self.mint) == "caller-key-1"
        assert idempotency_key_for(CALLER_KEY_POST, config(PLAIN), mint=self.mint) == "caller-key-1"
        assert self.minted == 0

    def test_not_minted_for_get_or_sandbox_post(self) -> None:
        assert idempotency_key_for(GET, config(KEYED), mint=self.mint) is None
        assert idempotency_key_for(SANDBOX_POST, config(KEYED), mint=self.mint) is None


def test_in_progress_409_backs_off_and_stops_at_max_retries() -> None:
    assert decide(POST, IN_PROGRESS, KEYED, "k", attempt=1) == (True, 0.5)
    assert decide(POST, IN_PROGRESS, KEYED, "k", attempt=2) == (True, 1.0)
    assert decide(POST, IN_PROGRESS, KEYED, "k", attempt=3) == (False, 0.0)
    waited = httpx.Response(409, json=IN_PROGRESS.json(), headers={"Retry-After": "2"}, request=REQUEST)
    assert decide(POST, waited, KEYED, "k") == (True, 2.0)
