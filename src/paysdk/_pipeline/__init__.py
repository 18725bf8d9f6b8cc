"""The request pipeline, as pure functions.

Nothing here does I/O, sleeps, or reads the clock or a random source: those are passed in. The client
shells (``AsyncClient._request`` and the generated ``Client._request``) only loop over these functions::

    key = idempotency_key_for(op, config, mint=uuid4-ish)       # once per logical call
    for attempt in 1, 2, ...:
        request = build_request(op, config, key, attempt=attempt)
        deadline = now + attempt_budget(op, config, elapsed=...)  # D61
        outcome = send(request)          # streamed under check_answer: httpx.Response or RequestError
        decision = retry_decision(op, attempt, outcome, config, key, rng=..., now=..., remaining=...)
        if not decision.retry:
            return result_from_outcome(op, outcome, ...)      # the parsed model, or raises
        sleep(decision.delay)

Retry rule (a payment SDK must never charge twice): idempotent calls (GET/PUT/DELETE) retry on
connect errors, timeouts, 408, 429 and 500/502/503/504. A POST is retried only when nothing was sent
(connect error, connect or pool timeout), unless the environment declares that it honours
``Idempotency-Key`` (``Environment.honours_idempotency_keys``) and the endpoint takes part: then one
key is minted per logical call and sent on every attempt, and the POST is retried like an idempotent
call. A caller's own key always wins and is always sent, but it does not make retries safe on an
environment that does not declare support. A ``409`` whose details name ``Idempotency-Key`` (the
first request with that key is still in progress, D17) is retried with the same key and backoff;
other 409s never are. An upload whose body can be read only once (a pipe, a generator) is sent once
and never retried, whatever the failure (:func:`upload_retry_rule`, D113).

A 2xx answer whose body is not the expected JSON raises :class:`~paysdk.UnexpectedResponseError` (the
answer does not match the contract, D23) and is never retried: the server may well have acted on it.

The stages live in one module each, named for their reason (all pure: no I/O, no clock, no randomness
of their own): :mod:`~paysdk._pipeline.operations` (the configuration, an operation, per-call options,
the answer's information, the shared defaults), :mod:`~paysdk._pipeline.validation` (what clients and
builders are given), :mod:`~paysdk._pipeline.request_builder` (operation -> ``httpx.Request``),
:mod:`~paysdk._pipeline.retries` (the retry rule above), :mod:`~paysdk._pipeline.deadlines` (D61),
:mod:`~paysdk._pipeline.results` (the answer -> the model or the SDK's error) and
:mod:`~paysdk._pipeline.parsers` (wrappers of a model's parse). This package is the entrance the
clients and resources import from: the names below.
"""

from __future__ import annotations

from paysdk._pipeline.deadlines import attempt_budget, buffered_response, call_total_timeout, check_answer
from paysdk._pipeline.operations import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
    MAX_RETRY_AFTER,
    USER_AGENT,
    APIResponse,
    Base,
    CallOptions,
    ClientConfig,
    Operation,
    Outcome,
    PostCallOptions,
    ResponseInfo,
    RetryDecision,
)
from paysdk._pipeline.parsers import data_envelope, list_of, no_result
from paysdk._pipeline.request_builder import base_url_for, build_request, idempotency_key_for
from paysdk._pipeline.results import (
    describe_outcome,
    error_from_exception,
    error_from_response,
    may_have_been_received,
    redact_headers,
    response_info,
    result_from_outcome,
    unexpected_response,
)
from paysdk._pipeline.retries import backoff_delay, parse_retry_after, retry_decision, upload_retry_rule
from paysdk._pipeline.validation import (
    MANAGED_HEADERS,
    apply_call_options,
    validate_headers,
    validate_max_response_bytes,
    validate_max_retries,
    validate_timeout,
    validate_token,
    validate_total_timeout,
)

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TOTAL_TIMEOUT",
    "MANAGED_HEADERS",
    "MAX_RETRY_AFTER",
    "USER_AGENT",
    "APIResponse",
    "Base",
    "CallOptions",
    "ClientConfig",
    "Operation",
    "Outcome",
    "PostCallOptions",
    "ResponseInfo",
    "RetryDecision",
    "apply_call_options",
    "attempt_budget",
    "backoff_delay",
    "base_url_for",
    "buffered_response",
    "build_request",
    "call_total_timeout",
    "check_answer",
    "data_envelope",
    "describe_outcome",
    "error_from_exception",
    "error_from_response",
    "idempotency_key_for",
    "list_of",
    "may_have_been_received",
    "no_result",
    "parse_retry_after",
    "redact_headers",
    "response_info",
    "result_from_outcome",
    "retry_decision",
    "unexpected_response",
    "upload_retry_rule",
    "validate_headers",
    "validate_max_response_bytes",
    "validate_max_retries",
    "validate_timeout",
    "validate_token",
    "validate_total_timeout",
]
