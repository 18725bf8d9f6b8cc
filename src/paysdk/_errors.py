"""The exception tree. Everything paysdk raises on purpose derives from :class:`PaySDKError`.

::

    PaySDKError
    ├── ValidationError            bad input caught before any request (names the field)
    ├── CallbackError              a callback failed verification or could not be parsed
    │   ├── CallbackAuthenticationError
    │   └── CallbackPayloadError
    └── RequestError               a request did not get a usable answer
        ├── APIConnectionError     nothing usable came back (connection refused, reset, ...)
        │   └── APITimeoutError    connect/read/write/pool timeout
        └── APIError               the API answered with an error status
            ├── BadRequestError        400
            │   └── AmountOutOfRangeError      400 / ownCode 2003
            ├── AuthenticationError    401
            │   └── WrongEnvironmentError      401 / ownCode 2007
            ├── PermissionDeniedError  403
            ├── NotFoundError          404
            ├── ConflictError          409
            │   ├── InvalidFieldError          409 / ownCode 5000
            │   └── UnknownClientError         409 / ownCode 5004
            ├── UnprocessableEntityError 422
            ├── RateLimitError         429
            └── InternalServerError    5xx

Errors never carry secrets: headers are kept with ``Authorization`` and other credentials masked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AmountOutOfRangeError",
    "AuthenticationError",
    "BadRequestError",
    "CallbackAuthenticationError",
    "CallbackError",
    "CallbackPayloadError",
    "ConflictError",
    "InternalServerError",
    "InvalidFieldError",
    "NotFoundError",
    "PaySDKError",
    "PermissionDeniedError",
    "RateLimitError",
    "RequestError",
    "UnknownClientError",
    "UnprocessableEntityError",
    "ValidationError",
    "WrongEnvironmentError",
]


class PaySDKError(Exception):
    """Root of every error paysdk raises on purpose."""


class ValidationError(PaySDKError, ValueError):
    """Input refused before any request was sent. ``field`` names the offending argument."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class CallbackError(PaySDKError):
    """A merchant callback could not be accepted."""


class CallbackAuthenticationError(CallbackError):
    """The callback's static header is missing or does not match any accepted value."""


class CallbackPayloadError(CallbackError):
    """The callback body is not a valid payload (spec 2.4)."""


class RequestError(PaySDKError):
    """A request failed. ``method`` and ``path`` say which; ``attempts`` how often it was sent."""

    def __init__(self, message: str, *, method: str = "", path: str = "", attempts: int = 1) -> None:
        super().__init__(message)
        self.method = method
        self.path = path
        self.attempts = attempts

    @property
    def retries(self) -> int:
        """How many times the request was retried (``attempts - 1``)."""
        return max(self.attempts - 1, 0)


class APIConnectionError(RequestError):
    """No usable answer: the connection failed, was reset, or the answer was not readable."""


class APITimeoutError(APIConnectionError):
    """The request timed out (connect, read, write or pool)."""


class APIError(RequestError):
    """The API answered with an error status.

    ``status_code``, ``own_code`` (the spec's ``ownCode``, ``None`` where absent), ``body`` (the parsed
    JSON, or the text when it is not JSON), ``headers`` (credentials masked) and ``request_id``.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        own_code: int | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        method: str = "",
        path: str = "",
        attempts: int = 1,
    ) -> None:
        super().__init__(message, method=method, path=path, attempts=attempts)
        self.status_code = status_code
        self.own_code = own_code
        self.body = body
        self.headers: dict[str, str] = dict(headers or {})
        self.message = message

    @property
    def request_id(self) -> str | None:
        """The server's request id header, when it sent one."""
        return self.headers.get("x-request-id")

    def __str__(self) -> str:
        code = f" ownCode {self.own_code}" if self.own_code is not None else ""
        where = f" ({self.method} {self.path})" if self.method else ""
        return f"HTTP {self.status_code}{code}: {self.message}{where}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status_code={self.status_code}, own_code={self.own_code}, "
            f"message={self.message!r})"
        )


class BadRequestError(APIError):
    """HTTP 400."""


class AmountOutOfRangeError(BadRequestError):
    """HTTP 400, ownCode 2003: the amount lies outside the client's configured range."""


class AuthenticationError(APIError):
    """HTTP 401: no, unknown or refused credentials."""


class WrongEnvironmentError(AuthenticationError):
    """HTTP 401, ownCode 2007: the credentials belong to the other environment."""


class PermissionDeniedError(APIError):
    """HTTP 403."""


class NotFoundError(APIError):
    """HTTP 404."""


class ConflictError(APIError):
    """HTTP 409."""


class InvalidFieldError(ConflictError):
    """HTTP 409, ownCode 5000: a field is missing, of the wrong type, or an unknown value."""


class UnknownClientError(ConflictError):
    """HTTP 409, ownCode 5004: the client slug is wrong (it is case-sensitive)."""


class UnprocessableEntityError(APIError):
    """HTTP 422."""


class RateLimitError(APIError):
    """HTTP 429."""


class InternalServerError(APIError):
    """HTTP 5xx."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}

#: (status, ownCode) pairs with their own class. Later families (wallet 7xxx) register here.
OWN_CODE_ERRORS: dict[tuple[int | None, int], type[APIError]] = {
    (401, 2007): WrongEnvironmentError,
    (400, 2003): AmountOutOfRangeError,
    (409, 5000): InvalidFieldError,
    (409, 5004): UnknownClientError,
}


def error_class_for(status_code: int, own_code: int | None) -> type[APIError]:
    """The most specific error class for a status and ownCode (pure; used by the request pipeline)."""
    if own_code is not None:
        specific = OWN_CODE_ERRORS.get((status_code, own_code)) or OWN_CODE_ERRORS.get((None, own_code))
        if specific is not None:
            return specific
    if status_code >= 500:
        return InternalServerError
    return _BY_STATUS.get(status_code, APIError)
