"""Retries: whether an attempt's outcome may be replayed, and after how long (the module docstring of
:mod:`paysdk._pipeline` states the rule)."""

from __future__ import annotations

import email.utils
import math
from collections.abc import Callable
from typing import Any

import httpx

from paysdk import _json
from paysdk._pipeline.operations import (
    IDEMPOTENCY_HEADER,
    INITIAL_RETRY_DELAY,
    MAX_RETRY_AFTER,
    MAX_RETRY_DELAY,
    MAYBE_SENT,
    NOTHING_SENT,
    RETRYABLE_STATUSES,
    ClientConfig,
    Operation,
    Outcome,
    RetryDecision,
)
from paysdk._pipeline.results import is_success

__all__ = [
    "backoff_delay",
    "is_idempotency_in_progress",
    "parse_retry_after",
    "retry_decision",
    "upload_retry_rule",
]


def _replay_is_safe(op: Operation[Any], config: ClientConfig, idempotency_key: str | None) -> bool:
    if op.is_idempotent:
        return True
    return (
        idempotency_key is not None
        and op.uses_idempotency_keys
        and config.environment.honours_idempotency_keys
    )


def parse_retry_after(headers: httpx.Headers, *, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or HTTP date), ``None`` if absent/bad."""
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if moment.tzinfo is None:
            return None
        seconds = moment.timestamp() - now
    if seconds != seconds or seconds == float("inf"):
        return None
    return max(seconds, 0.0)


def backoff_delay(retry_index: int, *, rng: Callable[[], float]) -> float:
    """``min(0.5 * 2**retry_index, 8)`` seconds, minus up to 25 % jitter drawn from ``rng()`` in [0, 1)."""
    base = min(INITIAL_RETRY_DELAY * 2.0**retry_index, MAX_RETRY_DELAY)
    return base * (1.0 - 0.25 * rng())


def is_idempotency_in_progress(response: httpx.Response) -> bool:
    """A ``409`` whose ``details`` name ``Idempotency-Key``: the first request with this key is still
    being processed (the IETF ``Idempotency-Key`` draft, decision D17). Sending the same key again
    later is safe: the server either replays the stored answer or says it is still in progress. Other
    409s (ownCode 5000, 5004, state conflicts) are not this."""
    if response.status_code != 409:
        return False
    try:
        body = _json.loads(response.content)
    except _json.JSONDecodeError:
        return False
    if not isinstance(body, dict) or body.get("ownCode") is not None:
        return False
    details = body.get("details")
    return isinstance(details, list) and any(
        isinstance(item, dict) and str(item.get("field", "")).lower() == IDEMPOTENCY_HEADER.lower()
        for item in details
    )


def upload_retry_rule(op: Operation[Any]) -> RetryDecision | None:
    """The retry rule of request bodies that can be read once: an upload from a non-seekable stream (a
    pipe, a generator) is sent once and never retried, whatever went wrong (``RetryDecision(False)``).
    ``None``: the body, if any, can be sent again (paths are re-opened, seekable files rewound to
    where they were when the call started), so :func:`retry_decision`'s usual rule applies."""
    if op.upload is not None and op.upload.replay == "once":
        return RetryDecision(False, reason="the body is a stream that can be sent only once")
    return None


def retry_decision(
    op: Operation[Any],
    attempt: int,
    outcome: Outcome,
    config: ClientConfig,
    idempotency_key: str | None,
    *,
    rng: Callable[[], float],
    now: Callable[[], float],
    remaining: float = math.inf,
) -> RetryDecision:
    """Whether to send attempt ``attempt + 1`` and after how long (``attempt`` is 1-based).

    ``rng`` returns a float in [0, 1) (jitter); ``now`` the current Unix time (HTTP-date ``Retry-After``);
    ``remaining`` the seconds left of the call's ``total_timeout``: a wait that would use them all up
    is not taken (the error is raised at once, D61). See the module docstring for the rule.
    """
    if isinstance(outcome, httpx.Response) and is_success(op, outcome.status_code):
        return RetryDecision(False, reason="success")
    once = upload_retry_rule(op)
    if once is not None:
        return once
    if isinstance(outcome, httpx.Response):
        status = outcome.status_code
        if idempotency_key is not None and is_idempotency_in_progress(outcome):
            reason = "409: the request with this Idempotency-Key is still in progress"
        elif status not in RETRYABLE_STATUSES:
            return RetryDecision(False, reason=f"status {status} is not retryable")
        elif not _replay_is_safe(op, config, idempotency_key):
            return RetryDecision(False, reason=f"status {status}: {op.method} without an honoured key")
        else:
            reason = f"status {status}"
    elif isinstance(outcome, NOTHING_SENT):
        reason = f"{type(outcome).__name__} (nothing sent)"
    elif isinstance(outcome, MAYBE_SENT):
        if not _replay_is_safe(op, config, idempotency_key):
            return RetryDecision(
                False, reason=f"{type(outcome).__name__}: {op.method} may have been received, not replayed"
            )
        reason = type(outcome).__name__
    else:
        return RetryDecision(False, reason=f"{type(outcome).__name__} is not retryable")

    if attempt > config.max_retries:
        return RetryDecision(False, reason=f"{reason}; max_retries={config.max_retries} reached")

    delay: float | None = None
    if isinstance(outcome, httpx.Response):
        delay = parse_retry_after(outcome.headers, now=now())
        if delay is not None:
            delay = min(delay, MAX_RETRY_AFTER)
    if delay is None:
        delay = backoff_delay(attempt - 1, rng=rng)
    if delay >= remaining:
        return RetryDecision(
            False, reason=f"{reason}; a {delay:.1f}s wait would pass the call's total_timeout"
        )
    return RetryDecision(True, delay=delay, reason=reason)
