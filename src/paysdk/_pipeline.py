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
"""

from __future__ import annotations

import dataclasses
import email.utils
import functools
import math
import platform
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeAlias, TypedDict, TypeVar, Unpack

import httpx
import pydantic

from paysdk import _json
from paysdk._adapters.httpcore import keep_content
from paysdk._credentials import (
    CredentialName,
    CredentialValue,
    apply_credential,
    credential_for,
    credential_secrets,
    credential_value,
)
from paysdk._environment import CONTROL_PREFIX, CONTROL_TOKEN_HEADER, Environment
from paysdk._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ResponseTooLargeError,
    UnexpectedResponseError,
    ValidationError,
    error_class_for,
)
from paysdk._redact import MASK, SENSITIVE_HEADERS, is_sensitive_name
from paysdk._secret import Secret
from paysdk._types import NOT_GIVEN, NotGiven
from paysdk._version import __version__

if TYPE_CHECKING:  # paysdk._uploads is imported by the first upload, not by ``import paysdk``
    from paysdk._uploads import UploadBody, UploadStream

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "APIResponse",
    "CallOptions",
    "ClientConfig",
    "Operation",
    "Outcome",
    "PostCallOptions",
    "ResponseInfo",
    "RetryDecision",
    "apply_call_options",
    "build_request",
    "call_total_timeout",
    "error_from_exception",
    "error_from_response",
    "idempotency_key_for",
    "redact_headers",
    "result_from_outcome",
    "retry_decision",
    "upload_retry_rule",
]

T = TypeVar("T")
U = TypeVar("U")

Base: TypeAlias = Literal["base", "wallet", "cms"]
#: The credential an operation names (:mod:`paysdk._credentials`): ``raw``/``bearer`` the merchant
#: token (D9), ``hook_keys`` the body key pair, ``wallet_app``/``wallet_user`` and
#: ``backoffice_app``/``backoffice_user`` access tokens from the client's token managers, ``none``.
Auth: TypeAlias = CredentialName
#: What a success answer's body is handed to ``Operation.parse`` as: Decimal-exact JSON, or its raw bytes.
ResponseKind: TypeAlias = Literal["json", "bytes"]
#: What one attempt produced: an answer, or the httpx error raised while sending.
Outcome: TypeAlias = httpx.Response | httpx.RequestError

#: 30 s for the whole exchange, 5 s to connect. The ``read`` value bounds each attempt as a whole
#: (connect, send, and the whole answer), however slowly the bytes come (:func:`attempt_seconds`).
DEFAULT_TIMEOUT: Final = httpx.Timeout(30.0, connect=5.0)
DEFAULT_MAX_RETRIES: Final = 2
#: Seconds a whole call may take: every attempt and every wait between them (decision D61).
DEFAULT_TOTAL_TIMEOUT: Final = 60.0
#: The largest answer the SDK reads, in bytes (after decompression); larger ones are cut off (D61).
DEFAULT_MAX_RESPONSE_BYTES: Final = 16 * 1024 * 1024
#: Backoff before retry ``n`` (0-based): ``min(INITIAL * 2**n, MAX)``, minus up to 25 % jitter.
INITIAL_RETRY_DELAY: Final = 0.5
MAX_RETRY_DELAY: Final = 8.0
#: A server's ``Retry-After`` is honoured up to this many seconds.
MAX_RETRY_AFTER: Final = 60.0
#: Statuses worth retrying when a replay is safe.
RETRYABLE_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})
IDEMPOTENT_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
RETRY_COUNT_HEADER: Final = "X-Paysdk-Retry-Count"
REQUEST_ID_HEADER: Final = "x-request-id"
#: The answer header of a replayed idempotent request (decision D17).
REPLAYED_HEADER: Final = "idempotent-replayed"


USER_AGENT: Final = f"paysdk/{__version__} python/{platform.python_version()}"


# --------------------------------------------------------------------------------------------------
# Configuration and operations


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Everything a client knows that shapes a request. Built by the client from its arguments."""

    environment: Environment
    merchant_token: Secret | None = None
    timeout: httpx.Timeout = field(default_factory=lambda: DEFAULT_TIMEOUT)
    max_retries: int = DEFAULT_MAX_RETRIES
    default_headers: tuple[tuple[str, str], ...] = ()
    user_agent: str = USER_AGENT
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    def secrets(self) -> tuple[str, ...]:
        """The secret strings that must never appear in a message (for :func:`scrub`)."""
        found = (self.merchant_token.reveal(),) if self.merchant_token else ()
        control = self.environment.control_token
        return (*found, control.reveal()) if control else found


class CallOptions(TypedDict, total=False):
    """The per-call options every SDK method takes as keywords (``**options``), after its own arguments.

    ``timeout``: seconds or an :class:`httpx.Timeout` for this call's attempts (default: the client's);
    ``extra_headers``: headers added to this call's request (ASCII names and values, no line breaks;
    the headers the SDK manages, such as ``Authorization`` or ``Idempotency-Key``, are refused).
    """

    timeout: float | httpx.Timeout | NotGiven
    extra_headers: Mapping[str, str] | None


class PostCallOptions(CallOptions, total=False):
    """The per-call options of a ``POST`` method: :class:`CallOptions` and ``idempotency_key``
    (1-255 printable ASCII characters; always sent when given, see :func:`idempotency_key_for`)."""

    idempotency_key: str | None


@dataclass(frozen=True, slots=True)
class Operation(Generic[T]):
    """One API call, described as data.

    ``json`` is the body (``None``: no body); it may hold :class:`~paysdk.Secret` values, revealed only
    when the request is built. ``parse`` turns the Decimal-exact JSON of a success answer into the result.
    ``idempotent`` defaults from the method (GET/PUT/DELETE). ``uses_idempotency_keys`` is false for
    endpoints that never honour keys (the sandbox control plane), whatever the environment says.
    ``expected`` lists the success statuses (``None``: any 2xx, decision D2). ``headers`` are extra
    request headers (values may be :class:`~paysdk.Secret`, e.g. ``X-User-Token``; never in a repr).
    ``auth`` names the credential (:data:`~paysdk._credentials.CREDENTIALS`); ``credential`` is its
    value when the call supplies it itself (the ``hook_keys`` pair; never in a repr). Token-managed
    credentials (``wallet_*``, ``backoffice_*``) get their token from the client shell.
    ``upload`` is a streamed body instead of ``json`` (multipart files or raw bytes,
    :mod:`paysdk._uploads`); ``response_kind="bytes"`` hands ``parse`` the answer's raw bytes
    (still at most ``max_response_bytes``).
    """

    method: str
    path: str
    parse: Callable[[Any], T]
    base: Base = "base"
    auth: Auth = "none"
    json: Any = field(default=None, repr=False)
    params: Mapping[str, str] | None = None
    idempotent: bool | None = None
    uses_idempotency_keys: bool = True
    idempotency_key: str | None = field(default=None, repr=False)
    timeout: httpx.Timeout | None = None
    expected: frozenset[int] | None = None
    headers: Mapping[str, str | Secret] | None = field(default=None, repr=False)
    credential: CredentialValue | None = field(default=None, repr=False)
    upload: UploadBody | None = field(default=None, repr=False)
    response_kind: ResponseKind = "json"
    #: The caller's ``extra_headers=`` (:func:`apply_call_options`); values of sensitive names are
    #: :class:`~paysdk.Secret`, so they are scrubbed from errors like the SDK's own credentials.
    extra_headers: tuple[tuple[str, str | Secret], ...] = field(default=(), repr=False)

    @property
    def is_idempotent(self) -> bool:
        """Whether sending this twice has the effect of sending it once."""
        if self.idempotent is not None:
            return self.idempotent
        return self.method.upper() in IDEMPOTENT_METHODS

    def with_call_options(self, **options: Unpack[PostCallOptions]) -> Operation[T]:
        """This operation with the per-call options applied (see :func:`apply_call_options`)."""
        return apply_call_options(self, options)


class ResponseInfo:
    """Metadata of the last answer: no body, credentials masked.

    ``attempts`` counts every send of the logical call (``1`` when it was not retried); ``elapsed`` is
    the seconds from the first send to the final answer, backoff included. ``headers`` are lower-cased
    with credentials masked; they are redacted when first read, not on every call.
    """

    __slots__ = ("_headers", "_raw_headers", "attempts", "elapsed", "method", "path", "status_code")

    def __init__(
        self,
        *,
        method: str,
        path: str,
        status_code: int,
        headers: Mapping[str, str] | httpx.Headers,
        attempts: int,
        elapsed: float,
    ) -> None:
        self.method = method
        self.path = path
        self.status_code = status_code
        self.attempts = attempts
        self.elapsed = elapsed
        self._raw_headers = headers
        self._headers: dict[str, str] | None = None

    @property
    def headers(self) -> Mapping[str, str]:
        """The answer's headers, lower-cased, credentials masked."""
        if self._headers is None:
            self._headers = redact_headers(self._raw_headers)
        return self._headers

    @property
    def request_id(self) -> str | None:
        """The server's request id header, when it sent one."""
        return self.headers.get(REQUEST_ID_HEADER.lower())

    @property
    def retries(self) -> int:
        """How many times the call was retried (``attempts - 1``)."""
        return max(self.attempts - 1, 0)

    @property
    def replayed(self) -> bool:
        """Whether the server replayed a stored answer for this idempotency key (``Idempotent-Replayed:
        true``, decision D17) instead of running the request again."""
        return self.headers.get(REPLAYED_HEADER, "").strip().lower() == "true"

    def __repr__(self) -> str:
        return (
            f"ResponseInfo(method={self.method!r}, path={self.path!r}, status_code={self.status_code}, "
            f"attempts={self.attempts}, elapsed={self.elapsed:.3f})"
        )


class APIResponse(Generic[T]):
    """One call's result together with the metadata of the answer that carried it.

    What ``client.with_raw_response.<resource>.<method>(...)`` returns: :meth:`parse` gives the
    method's usual result; ``status_code``, ``headers`` (lower-cased, credentials masked),
    ``request_id``, ``attempts``, ``retries``, ``replayed`` and ``elapsed`` belong to this call only,
    so concurrent calls never see each other's (unlike ``client.last_response``).
    """

    __slots__ = ("_result", "info")

    def __init__(self, result: T, info: ResponseInfo) -> None:
        self._result = result
        #: The answer's metadata, as ``client.last_response`` holds it.
        self.info = info

    def parse(self) -> T:
        """The method's result (what the method returns without ``with_raw_response``)."""
        return self._result

    def map(self, convert: Callable[[T], U]) -> APIResponse[U]:
        """The same metadata with the result converted (how a method turns a wire model into its result)."""
        return APIResponse(convert(self._result), self.info)

    @property
    def status_code(self) -> int:
        """The answer's HTTP status."""
        return self.info.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        """The answer's headers, lower-cased, credentials masked."""
        return self.info.headers

    @property
    def request_id(self) -> str | None:
        """The server's ``X-Request-Id`` of this answer, when it sent one."""
        return self.info.request_id

    @property
    def attempts(self) -> int:
        """How many times the call was sent (``1`` when it was not retried)."""
        return self.info.attempts

    @property
    def retries(self) -> int:
        """How many times the call was retried (``attempts - 1``)."""
        return self.info.retries

    @property
    def replayed(self) -> bool:
        """Whether the server replayed its stored answer for this idempotency key (D17)."""
        return self.info.replayed

    @property
    def elapsed(self) -> float:
        """Seconds from the first send to the final answer, backoff included."""
        return self.info.elapsed

    @property
    def method(self) -> str:
        """The request's method."""
        return self.info.method

    @property
    def path(self) -> str:
        """The request's path (relative to its base address)."""
        return self.info.path

    def __repr__(self) -> str:
        return (
            f"APIResponse(method={self.method!r}, path={self.path!r}, status_code={self.status_code}, "
            f"request_id={self.request_id!r}, attempts={self.attempts}, replayed={self.replayed})"
        )


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """What to do after an attempt: retry after ``delay`` seconds, or stop. ``reason`` is for logs."""

    retry: bool
    delay: float = 0.0
    reason: str = ""


# --------------------------------------------------------------------------------------------------
# Validation helpers shared by the clients and the resource builders


def validate_timeout(value: object, field_name: str = "timeout") -> httpx.Timeout:
    """A number of seconds or an :class:`httpx.Timeout`; ``None`` (no timeout at all) is refused."""
    if value is None:
        raise ValidationError(
            field_name, "None would disable every timeout; pass seconds or an httpx.Timeout"
        )
    if isinstance(value, httpx.Timeout):
        if value.connect is None or value.read is None:
            raise ValidationError(field_name, "connect and read timeouts must be set")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValidationError(field_name, "must be a number of seconds or an httpx.Timeout")
    seconds = float(value)
    if not seconds > 0 or seconds == float("inf"):
        raise ValidationError(field_name, "must be a positive, finite number of seconds")
    return httpx.Timeout(seconds)


def optional_timeout(value: float | httpx.Timeout | NotGiven) -> httpx.Timeout | None:
    """A per-call ``timeout=`` argument: ``NOT_GIVEN`` means the client's timeout."""
    if value is NOT_GIVEN or isinstance(value, NotGiven):
        return None
    return validate_timeout(value)


def validate_max_retries(value: object) -> int:
    """A non-negative ``int``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError("max_retries", "must be an int >= 0")
    return value


def validate_total_timeout(value: object, timeout: httpx.Timeout) -> float:
    """Seconds a whole call may take: positive, finite, and at least one attempt's ``timeout``."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValidationError("total_timeout", "must be a number of seconds")
    seconds = float(value)
    if not 0 < seconds < math.inf:
        raise ValidationError("total_timeout", "must be a positive, finite number of seconds")
    if seconds < attempt_seconds(timeout):
        raise ValidationError(
            "total_timeout",
            f"{seconds:g} s is shorter than one attempt's timeout ({attempt_seconds(timeout):g} s): "
            "raise total_timeout too",
        )
    return seconds


def validate_max_response_bytes(value: object) -> int:
    """A positive ``int``: the largest answer read, in bytes."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError("max_response_bytes", "must be an int >= 1 (bytes)")
    return value


_HEADER_VALUE = re.compile(r"[\x21-\x7e]+( [\x21-\x7e]+)*")


def validate_token(value: object) -> Secret | None:
    """The merchant token as a :class:`Secret` (``None``/empty: not configured). Never echoes it."""
    if value is None:
        return None
    if not isinstance(value, str | Secret):
        raise ValidationError("merchant_token", "must be a str or paysdk.Secret")
    text = value.reveal() if isinstance(value, Secret) else value
    secret = Secret(text)
    if not text:
        return None
    if not _HEADER_VALUE.fullmatch(text) or " " in text:
        raise ValidationError("merchant_token", "must be printable ASCII without spaces")
    return secret


def validate_idempotency_key(value: object) -> str | None:
    """A caller's idempotency key: 1-255 printable ASCII characters, or ``None``."""
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= 255 or not _HEADER_VALUE.fullmatch(value):
        raise ValidationError("idempotency_key", "must be 1-255 printable ASCII characters")
    return value


_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def validate_headers(
    value: Mapping[str, str] | None, field_name: str = "default_headers"
) -> tuple[tuple[str, str], ...]:
    """Headers (``default_headers`` of a client, ``extra_headers`` of a call) as pairs of ASCII
    strings: names are HTTP tokens, values hold no line break. Errors name ``field_name`` and the
    header, never its value."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValidationError(field_name, "must be a mapping of header names to values")
    pairs: list[tuple[str, str]] = []
    for name, text in value.items():
        if not isinstance(name, str) or not isinstance(text, str) or not name.isascii() or not text.isascii():
            raise ValidationError(field_name, "names and values must be ASCII strings")
        if not _HEADER_NAME.fullmatch(name):
            raise ValidationError(field_name, f"{name!r} is not a valid header name")
        if "\n" in text or "\r" in text or "\x00" in text:
            raise ValidationError(field_name, f"value of {name} holds a line break or NUL")
        pairs.append((name, text))
    return tuple(pairs)


#: Headers the SDK writes itself: ``extra_headers`` may not set them (use the matching argument).
MANAGED_HEADERS: Final = frozenset(
    {
        "authorization",
        "content-type",
        "content-length",
        "transfer-encoding",
        "host",
        IDEMPOTENCY_HEADER.lower(),
        RETRY_COUNT_HEADER.lower(),
    }
)
#: The names :func:`apply_call_options` knows (:class:`PostCallOptions`).
CALL_OPTION_NAMES: Final = frozenset(PostCallOptions.__annotations__)


def is_sensitive_header(name: str) -> bool:
    """Whether a header's value is masked in errors, logs and :class:`ResponseInfo`."""
    key = name.lower()
    return key in SENSITIVE_HEADERS or is_sensitive_name(key)


def apply_call_options(op: Operation[T], options: Mapping[str, Any]) -> Operation[T]:
    """``op`` with the per-call options (:class:`PostCallOptions`) applied: the ONE place they are checked
    and put on an operation. Every SDK method passes its ``**options`` here (through its operation
    builder); ``client.with_options(timeout=..., default_headers=...)`` uses the same validators, and
    :func:`build_request` lets a call's options win over the client's.

    Raises :class:`~paysdk.ValidationError` naming the option (``timeout``, ``idempotency_key`` on a
    call that is not a ``POST``, ``extra_headers`` with a bad or SDK-managed header) before anything is
    sent, and :class:`TypeError` for an unknown option, as Python does for an unknown keyword.
    """
    if not options:
        return op
    unknown = set(options) - CALL_OPTION_NAMES
    if unknown:
        raise TypeError(f"unexpected keyword argument {min(unknown)!r}")
    changes: dict[str, Any] = {}
    timeout = options.get("timeout", NOT_GIVEN)
    if not isinstance(timeout, NotGiven):
        changes["timeout"] = validate_timeout(timeout)
    key = options.get("idempotency_key")
    if key is not None:
        if op.method.upper() != "POST":
            raise ValidationError("idempotency_key", f"only POST calls take one; this call is {op.method}")
        changes["idempotency_key"] = validate_idempotency_key(key)
    extra = validate_headers(options.get("extra_headers"), "extra_headers")
    if extra:
        own = {name.lower() for name in op.headers or ()}
        for name, _ in extra:
            if name.lower() in MANAGED_HEADERS or name.lower() in own:
                raise ValidationError("extra_headers", f"{name} is set by the SDK for this call")
        changes["extra_headers"] = tuple(
            (name, Secret(text) if is_sensitive_header(name) else text) for name, text in extra
        )
    return dataclasses.replace(op, **changes) if changes else op


# --------------------------------------------------------------------------------------------------
# Building requests


@functools.lru_cache(maxsize=1024)
def _url(text: str) -> httpx.URL:
    """Parsed URLs, cached: parsing costs ~20 us per request and paths repeat (httpx.URL is immutable)."""
    return httpx.URL(text)


def base_url_for(environment: Environment, base: Base) -> str:
    """The address an operation's path is relative to."""
    if base == "wallet":
        return environment.wallet_base_url
    if base == "cms":
        return environment.cms_base_url
    return environment.base_url


def reveal_secrets(value: Any) -> Any:
    """A copy of a JSON-ready structure with every :class:`Secret` replaced by its value."""
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, Mapping):
        return {key: reveal_secrets(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [reveal_secrets(item) for item in value]
    return value


def idempotency_key_for(op: Operation[Any], config: ClientConfig, *, mint: Callable[[], str]) -> str | None:
    """The ``Idempotency-Key`` of one logical call, decided once before the retry loop.

    The caller's key wins and is always sent. Otherwise a key is minted (by ``mint``) only for a
    non-idempotent call to an endpoint that takes part, on an environment that honours keys.
    """
    if op.idempotency_key is not None:
        return op.idempotency_key
    if not op.is_idempotent and op.uses_idempotency_keys and config.environment.honours_idempotency_keys:
        return mint()
    return None


def _is_control_path(path: str) -> bool:
    """Whether ``path`` is on the reference server's control plane (``/_sandbox`` and below)."""
    return path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/")


def build_request(
    op: Operation[Any],
    config: ClientConfig,
    idempotency_key: str | None,
    *,
    attempt: int = 1,
    credential: CredentialValue | None = None,
) -> httpx.Request:
    """The :class:`httpx.Request` of one attempt.

    Headers: ``Accept``, ``User-Agent`` (``paysdk/<version> python/<version>``), the client's
    ``default_headers``, the call's ``extra_headers`` (they win over those), then ``Content-Type`` for a
    JSON body, the credential ``op.auth`` names
    (:func:`~paysdk._credentials.apply_credential`: the raw merchant token for ``raw``,
    ``Bearer <token>`` for ``bearer`` (D9) and the token-managed kinds, the ``privateKey``/``publicKey``
    body fields for ``hook_keys``), ``Idempotency-Key`` when one was decided, and
    ``X-Paysdk-Retry-Count`` on retries; ``op.headers`` come last, then ``Paysdk-Control-Token`` on a
    control-plane call (``/_sandbox``) when the environment has a control token. ``credential`` is the
    secret the shell obtained (an access token); without it the merchant token or the call's own value
    is used.
    Raises :class:`~paysdk.ValidationError` naming the missing credential (``merchant_token``,
    ``wallet``, ``backoffice``, ...) when it is not there.
    """
    accept = "application/json" if op.response_kind == "json" else "*/*"
    headers: dict[str, str] = {"Accept": accept, "User-Agent": config.user_agent}
    for name, value in config.default_headers:
        headers[name] = value
    if op.extra_headers:  # the call's own headers win over the client's (case-insensitively)
        replaced = {name.lower() for name, _ in op.extra_headers}
        headers = {name: value for name, value in headers.items() if name.lower() not in replaced}
        for name, given in op.extra_headers:
            headers[name] = given.reveal() if isinstance(given, Secret) else given
    spec = credential_for(op.auth)
    if credential is None:
        credential = credential_value(spec, merchant_token=config.merchant_token, call=op.credential)
    body = apply_credential(spec, credential, headers, op.json)
    content: bytes | None = None
    stream: UploadStream | None = None
    if body is not None:
        content = _json.dumps(reveal_secrets(body))
        headers["Content-Type"] = "application/json"
    elif op.upload is not None:
        stream = upload_stream(op.upload, headers)
    if idempotency_key is not None:
        headers[IDEMPOTENCY_HEADER] = idempotency_key
    if attempt > 1:
        headers[RETRY_COUNT_HEADER] = str(attempt - 1)
    if op.headers:
        for extra, given in op.headers.items():
            headers[extra] = given.reveal() if isinstance(given, Secret) else given
    control = config.environment.control_token
    if control is not None and op.base == "base" and _is_control_path(op.path):
        headers[CONTROL_TOKEN_HEADER] = control.reveal()
    timeout = op.timeout or config.timeout
    request = httpx.Request(
        op.method.upper(),
        _url(base_url_for(config.environment, op.base) + op.path),
        params=dict(op.params) if op.params else None,
        headers=headers,
        content=content,
        extensions={"timeout": timeout.as_dict()},
    )
    if stream is not None:
        # Set after construction: httpx adds ``Host`` only to a request built without ``stream=``; the
        # body's length headers are in ``headers`` already, so it adds no ``Content-Length: 0``.
        request.stream = stream
    return request


def upload_stream(body: UploadBody, headers: dict[str, str]) -> UploadStream:
    """The stream of one attempt of an upload, and its ``Content-Type`` and ``Content-Length`` (or
    ``Transfer-Encoding: chunked`` when a source's length is unknown) added to ``headers``. Nothing is
    read here: the stream reads its sources as httpx sends it (:mod:`paysdk._uploads`)."""
    from paysdk._uploads import UploadStream

    headers["Content-Type"] = body.content_type
    length = body.content_length
    if length is None:
        headers["Transfer-Encoding"] = "chunked"
    else:
        headers["Content-Length"] = str(length)
    return UploadStream(body)


# --------------------------------------------------------------------------------------------------
# Retries


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


#: Errors raised before a single byte of the request left: always safe to retry.
_NOTHING_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
#: Errors after which the server may or may not have received the request.
_MAYBE_SENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


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
    if isinstance(outcome, httpx.Response) and _is_success(op, outcome.status_code):
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
    elif isinstance(outcome, _NOTHING_SENT):
        reason = f"{type(outcome).__name__} (nothing sent)"
    elif isinstance(outcome, _MAYBE_SENT):
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


# --------------------------------------------------------------------------------------------------
# Deadlines and bounded answers (decision D61)


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


# --------------------------------------------------------------------------------------------------
# Results and errors


def _is_success(op: Operation[Any], status: int) -> bool:
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
    elif isinstance(exc, _NOTHING_SENT):
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
    return isinstance(outcome, _MAYBE_SENT) and not isinstance(outcome, _NOTHING_SENT)


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
    if not _is_success(op, response.status_code):
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


# --------------------------------------------------------------------------------------------------
# Parsers used by the resource builders


def data_envelope(parse: Callable[[Any], T]) -> Callable[[Any], T]:
    """Unwrap ``{"data": {...}}`` (the integrations answers) before ``parse``."""

    def unwrap(body: Any) -> T:
        if not isinstance(body, dict) or "data" not in body:
            raise ValueError("answer has no 'data' object")
        return parse(body["data"])

    return unwrap


def list_of(parse: Callable[[Any], T]) -> Callable[[Any], list[T]]:
    """Parse a JSON array item by item."""

    def parse_list(body: Any) -> list[T]:
        if not isinstance(body, list):
            raise ValueError("answer is not a JSON array")
        return [parse(item) for item in body]

    return parse_list


def no_result(body: Any) -> None:
    """For calls whose answer carries nothing the caller needs."""
    return None
