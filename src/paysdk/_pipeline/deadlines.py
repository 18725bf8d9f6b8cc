"""Deadlines and bounded answers (decision D61): the time an attempt and a call may take, and the
largest answer read."""

from __future__ import annotations

from typing import Any

import httpx

from paysdk._adapters.httpcore import keep_content
from paysdk._pipeline.operations import DEFAULT_TIMEOUT, ClientConfig, Operation

__all__ = [
    "AnswerTooLarge",
    "attempt_budget",
    "attempt_seconds",
    "buffered_response",
    "call_total_timeout",
    "check_answer",
]


def attempt_seconds(timeout: httpx.Timeout) -> float:
    """How long one attempt may take as a whole: the timeout's ``read`` value (30 s by default)."""
    return float(timeout.read if timeout.read is not None else DEFAULT_TIMEOUT.read or 30.0)


def call_total_timeout(op: Operation[Any], config: ClientConfig) -> float:
    """Seconds the whole call may take: the client's ``total_timeout``, or the call's own ``timeout``
    when that is longer (a long upload given ``timeout=600`` gets one whole attempt, D112)."""
    if op.timeout is None:
        return config.total_timeout
    return max(config.total_timeout, attempt_seconds(op.timeout))


def attempt_budget(op: Operation[Any], config: ClientConfig, *, elapsed: float) -> float:
    """Seconds the next attempt may take: its timeout, cut to what is left of the call's total
    (:func:`call_total_timeout`)."""
    return min(attempt_seconds(op.timeout or config.timeout), call_total_timeout(op, config) - elapsed)


class AnswerTooLarge(httpx.RequestError):
    """Raised while reading an answer larger than ``limit`` bytes (becomes
    :class:`~paysdk.ResponseTooLargeError`; never retried)."""

    def __init__(self, limit: int, status_code: int, *, request: httpx.Request) -> None:
        super().__init__(f"answer larger than {limit} bytes", request=request)
        self.limit = limit
        self.status_code = status_code


def check_answer(response: httpx.Response, size: int, limit: int, *, left: float) -> None:
    """Called before and during the read of an answer: ``size`` bytes read so far (``-1`` before the
    first, when the declared ``Content-Length`` is checked), ``left`` seconds before the attempt's
    deadline. Raises :class:`AnswerTooLarge` past ``limit``, :class:`httpx.ReadTimeout` past the deadline.
    """
    if size < 0:
        declared = response.headers.get("content-length", "")
        if declared.strip().isdigit() and int(declared) > limit:
            raise AnswerTooLarge(limit, response.status_code, request=response.request)
    elif size > limit:
        raise AnswerTooLarge(limit, response.status_code, request=response.request)
    if left <= 0:
        raise httpx.ReadTimeout(
            "the attempt's deadline passed while reading the answer", request=response.request
        )


def buffered_response(response: httpx.Response, content: bytes) -> httpx.Response:
    """``response``, streamed and closed, with its decoded ``content`` kept as if it had been read whole.

    It sets what :meth:`httpx.Response.read` sets (``_content``, in :mod:`paysdk._adapters.httpcore`,
    D530): building a new response instead would parse every header again, a cost on every call.
    """
    keep_content(response, content)
    return response
