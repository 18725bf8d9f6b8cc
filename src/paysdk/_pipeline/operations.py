"""What a call is: the client's configuration, an operation, the per-call options, the answer's
information, and the defaults and header names every stage of the pipeline shares."""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeAlias, TypedDict, TypeVar, Unpack

import httpx

from paysdk._credentials import CredentialName, CredentialValue
from paysdk._environment import Environment
from paysdk._secret import Secret
from paysdk._types import NotGiven
from paysdk._version import __version__

if TYPE_CHECKING:  # paysdk._uploads is imported by the first upload, not by ``import paysdk``
    from paysdk._uploads import UploadBody

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TOTAL_TIMEOUT",
    "IDEMPOTENCY_HEADER",
    "IDEMPOTENT_METHODS",
    "INITIAL_RETRY_DELAY",
    "MAX_RETRY_AFTER",
    "MAX_RETRY_DELAY",
    "MAYBE_SENT",
    "NOTHING_SENT",
    "REPLAYED_HEADER",
    "REQUEST_ID_HEADER",
    "RETRYABLE_STATUSES",
    "RETRY_COUNT_HEADER",
    "USER_AGENT",
    "APIResponse",
    "Auth",
    "Base",
    "CallOptions",
    "ClientConfig",
    "Operation",
    "Outcome",
    "PostCallOptions",
    "ResponseInfo",
    "ResponseKind",
    "RetryDecision",
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
#: Errors raised before a single byte of the request left: always safe to retry.
NOTHING_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
#: Errors after which the server may or may not have received the request.
MAYBE_SENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)

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
    #: The caller's ``extra_headers=`` (:func:`.validation.apply_call_options`); values of sensitive names are
    #: :class:`~paysdk.Secret`, so they are scrubbed from errors like the SDK's own credentials.
    extra_headers: tuple[tuple[str, str | Secret], ...] = field(default=(), repr=False)

    @property
    def is_idempotent(self) -> bool:
        """Whether sending this twice has the effect of sending it once."""
        if self.idempotent is not None:
            return self.idempotent
        return self.method.upper() in IDEMPOTENT_METHODS

    def with_call_options(self, **options: Unpack[PostCallOptions]) -> Operation[T]:
        """This operation with the per-call options applied (see :func:`.validation.apply_call_options`)."""
        from paysdk._pipeline.validation import apply_call_options  # validation imports this module

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
            from paysdk._pipeline.results import redact_headers  # results imports this module

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
