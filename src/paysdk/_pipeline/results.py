"""Results and errors: an outcome becomes the parsed model or the SDK's error, with secrets masked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import httpx
import pydantic

from paysdk import _json
from paysdk._credentials import credential_secrets
from paysdk._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ResponseTooLargeError,
    UnexpectedResponseError,
    error_class_for,
)
from paysdk._pipeline.deadlines import AnswerTooLarge
from paysdk._pipeline.operations import MAYBE_SENT, NOTHING_SENT, Operation, Outcome, ResponseInfo
from paysdk._pipeline.validation import is_sensitive_header
from paysdk._redact import MASK
from paysdk._secret import Secret

__all__ = [
    "describe_outcome",
    "error_from_exception",
    "error_from_response",
    "is_success",
    "may_have_been_received",
    "redact_headers",
    "response_info",
    "result_from_outcome",
    "scrub",
    "scrub_json",
    "secrets_in",
    "unexpected_response",
]

T = TypeVar("T")


def is_success(op: Operation[Any], status: int) -> bool:
    if op.expected is not None:
        return status in op.expected
    return 200 <= status < 300


def redact_headers(headers: Mapping[str, str] | httpx.Headers) -> dict[str, str]:
    """Lower-cased headers with credentials, cookies, idempotency keys and token-like values masked."""
    items = headers.multi_items() if isinstance(headers, httpx.Headers) else list(headers.items())
    out: dict[str, str] = {}
    for name, value in items:
        key = name.lower()
        masked = is_sensitive_header(key)
        text = MASK if masked else value
        out[key] = f"{out[key]}, {text}" if key in out and not masked else text
    return out


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every secret in ``secrets`` replaced by the mask (longest first, so a secret that
    holds another is masked whole)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, MASK)
    return text


def scrub_json(value: Any, secrets: tuple[str, ...]) -> Any:
    """A parsed JSON value with :func:`scrub` applied to every string in it, keys included."""
    if not secrets:
        return value
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {scrub(str(key), secrets): scrub_json(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub_json(item, secrets) for item in value]
    return value


def secrets_in(value: Any) -> tuple[str, ...]:
    """The values of every :class:`~paysdk.Secret` in a request body or header mapping."""
    if isinstance(value, Secret):
        return (value.reveal(),)
    if isinstance(value, Mapping):
        return tuple(secret for item in value.values() for secret in secrets_in(item))
    if isinstance(value, list | tuple):
        return tuple(secret for item in value for secret in secrets_in(item))
    return ()


def response_info(
    op: Operation[Any], response: httpx.Response, *, attempts: int, elapsed: float
) -> ResponseInfo:
    """The :class:`ResponseInfo` of a final answer."""
    return ResponseInfo(
        method=op.method.upper(),
        path=op.path,
        status_code=response.status_code,
        headers=response.headers,
        attempts=attempts,
        elapsed=elapsed,
    )


def error_from_response(
    response: httpx.Response, *, method: str, path: str, attempts: int, secrets: tuple[str, ...] = ()
) -> APIError:
    """The :class:`~paysdk.APIError` subclass for an error answer (decision D1 body, mapped by
    :func:`~paysdk._errors.error_class_for`). A body that is not JSON is kept as text.
    """
    status = response.status_code
    body: Any
    try:
        body = scrub_json(_json.loads(response.content), secrets)
    except _json.JSONDecodeError:
        body = scrub(response.text[:2000], secrets) if response.content else None
    own_code: int | None = None
    message = ""
    if isinstance(body, dict):
        code = body.get("ownCode")
        if isinstance(code, int) and not isinstance(code, bool):
            own_code = code
        text = body.get("message")
        if isinstance(text, str):
            message = scrub(text, secrets)
    if not message:
        phrase = response.reason_phrase or "error"
        message = phrase if isinstance(body, dict | list) or body is None else f"{phrase} (non-JSON body)"
    cls = error_class_for(status, own_code)
    return cls(
        message,
        status_code=status,
        own_code=own_code,
        body=body,
        headers=redact_headers(response.headers),
        method=method.upper(),
        path=path,
        attempts=attempts,
    )


def error_from_exception(
    exc: httpx.RequestError,
    *,
    method: str,
    path: str,
    attempts: int,
    secrets: tuple[str, ...] = (),
    outcome_unknown: bool = False,
) -> APIConnectionError:
    """An httpx transport error as :class:`~paysdk.APITimeoutError` or :class:`~paysdk.APIConnectionError`.

    The message ends with what is known of the request's fate: ``outcome_unknown`` (a call that is not
    idempotent, one of whose attempts may have reached the server) says it may have taken effect; a
    connect error otherwise says the request was not sent.
    """
    detail = scrub(str(exc), secrets)[:300]
    where = f"{method.upper()} {path}"
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if isinstance(exc, AnswerTooLarge):
        effect = "; the request took effect" if 200 <= exc.status_code < 300 else ""
        return ResponseTooLargeError(
            f"HTTP {exc.status_code} answer to {where} is larger than max_response_bytes ({exc.limit}): "
            f"not read, connection closed{effect}",
            limit=exc.limit,
            status_code=exc.status_code,
            method=method.upper(),
            path=path,
            attempts=attempts,
        )
    if outcome_unknown:
        fate = (
            "; the request may have reached the server and taken effect (outcome unknown): "
            "check its state before sending it again"
        )
    elif isinstance(exc, NOTHING_SENT):
        fate = "; the request was not sent"
    else:
        fate = ""
    if isinstance(exc, httpx.TimeoutException):
        phase = type(exc).__name__.removesuffix("Timeout").lower() or "request"
        deadline = " (the attempt's deadline passed)" if "deadline" in detail else ""
        message = f"{phase} timeout on {where}{tries}{deadline}{fate}"
        return APITimeoutError(
            message, method=method.upper(), path=path, attempts=attempts, outcome_unknown=outcome_unknown
        )
    message = f"connection error on {where}{tries}: {type(exc).__name__}" + (f": {detail}" if detail else "")
    return APIConnectionError(
        message + fate, method=method.upper(), path=path, attempts=attempts, outcome_unknown=outcome_unknown
    )


def may_have_been_received(outcome: Outcome) -> bool:
    """Whether an attempt failed after its bytes may have reached the server (read/write timeouts,
    resets, a connection closed before the answer); ``False`` for answers and connect errors."""
    return isinstance(outcome, MAYBE_SENT) and not isinstance(outcome, NOTHING_SENT)


def _describe_validation(exc: pydantic.ValidationError) -> str:
    # Locations and error types only: input values could be secrets (sandbox client tokens).
    parts = [".".join(str(p) for p in error["loc"]) + f" ({error['type']})" for error in exc.errors()[:5]]
    return ", ".join(parts) or "invalid"


def result_from_outcome(
    op: Operation[T],
    outcome: Outcome,
    *,
    attempts: int,
    secrets: tuple[str, ...] = (),
    maybe_received: bool = False,
) -> T:
    """The parsed result of the final outcome, or the error to raise.

    ``maybe_received``: an earlier attempt of the call failed after its bytes may have reached the
    server (:func:`may_have_been_received`). A transport error of a call that is not idempotent then
    has ``outcome_unknown`` set, as it has when the final attempt itself may have been received.

    A 2xx whose body is not valid JSON, or does not fit the result model, raises
    :class:`~paysdk.UnexpectedResponseError` (D23): the call may have taken effect but its answer does
    not match the contract.
    """
    method = op.method.upper()
    if not isinstance(outcome, httpx.Response):
        unknown = not op.is_idempotent and (maybe_received or may_have_been_received(outcome))
        raise error_from_exception(
            outcome, method=method, path=op.path, attempts=attempts, secrets=secrets, outcome_unknown=unknown
        ) from outcome
    response = outcome
    if not is_success(op, response.status_code):
        # The call's own secrets too (passwords, refresh tokens, X-User-Token), should the server echo them.
        known = (
            *secrets,
            *secrets_in(op.json),
            *secrets_in(op.headers),
            *secrets_in(op.extra_headers),
            *credential_secrets(op.credential),
        )
        raise error_from_response(response, method=method, path=op.path, attempts=attempts, secrets=known)
    if op.response_kind == "bytes":
        return _parse_checked(op, response, response.content, attempts=attempts, secrets=secrets)
    try:
        data = _json.loads(response.content) if response.content.strip() else None
    except _json.JSONDecodeError as exc:
        raise unexpected_response(op, response, f"not valid JSON ({exc})", attempts=attempts) from None
    return _parse_checked(op, response, data, attempts=attempts, secrets=secrets)


def _parse_checked(
    op: Operation[T], response: httpx.Response, data: Any, *, attempts: int, secrets: tuple[str, ...]
) -> T:
    """``op.parse(data)``; a result that does not fit is :class:`~paysdk.UnexpectedResponseError` (D23)."""
    try:
        return op.parse(data)
    except pydantic.ValidationError as exc:
        problem = _describe_validation(exc)
    except (KeyError, TypeError, ValueError) as exc:
        problem = f"{type(exc).__name__}: {scrub(str(exc), secrets)[:200]}"
    raise unexpected_response(op, response, f"unexpected shape: {problem}", attempts=attempts)


def unexpected_response(
    op: Operation[Any], response: httpx.Response, problem: str, *, attempts: int
) -> UnexpectedResponseError:
    """The :class:`~paysdk.UnexpectedResponseError` of a 2xx answer that does not match the contract."""
    method = op.method.upper()
    return UnexpectedResponseError(
        f"HTTP {response.status_code} answer to {method} {op.path} does not match the API contract "
        f"({problem}); the request may have taken effect, so it was not retried",
        status_code=response.status_code,
        problem=problem,
        headers=redact_headers(response.headers),
        method=method,
        path=op.path,
        attempts=attempts,
    )


def describe_outcome(outcome: Outcome) -> str:
    """``status=200`` or ``error=ReadTimeout``, for the one log line per attempt."""
    if isinstance(outcome, httpx.Response):
        return f"status={outcome.status_code}"
    return f"error={type(outcome).__name__}"
