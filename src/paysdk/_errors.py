"""The exception tree. Everything paysdk raises on purpose derives from :class:`PaySDKError`.

::

    PaySDKError
    ├── ValidationError            bad input caught before any request (names the field)
    ├── CallbackError              a callback failed verification or could not be parsed
    │   ├── CallbackAuthenticationError
    │   └── CallbackPayloadError
    │       └── CallbackBodyTooLargeError
    └── RequestError               a request did not get a usable answer
        ├── APIConnectionError     nothing usable came back (connection refused, reset, ...)
        │   ├── APITimeoutError    connect/read/write/pool timeout, or the attempt's deadline passed
        │   └── ResponseTooLargeError  the answer is larger than ``max_response_bytes``
        ├── UnexpectedResponseError  a 2xx answer that does not match the contract (never retried)
        └── APIError               the API answered with an error status
            ├── BadRequestError        400
            │   ├── AmountOutOfRangeError      400 / ownCode 2003
            │   └── (wallet) WalletValidationError 7001, OtpInvalidError 7202, OtpExpiredError 7203,
            │       ResetTokenInvalidError 7205, PasswordMismatchError 7206, PasswordTooWeakError 7207,
            │       InvalidAmountError 7304, SameCardError 7306, LinkingTokenInvalidError 7309
            ├── AuthenticationError    401
            │   ├── WrongEnvironmentError      401 / ownCode 2007
            │   │   └── WalletWrongEnvironmentError 401 / 7107
            │   └── (wallet) InvalidCredentialsError 7101, TokenInvalidError 7102, TokenExpiredError 7103,
            │       TokenRevokedError 7104, RefreshTokenReusedError 7105, WrongTokenTypeError 7106,
            │       UnknownMerchantError 7601, InvalidSignatureError 7604, KeysExpiredError 7616
            ├── PermissionDeniedError  403
            │   └── (wallet) CardPermissionDeniedError 7401, CvvTokenInvalidError 7501,
            │       CvvNeedsUserSessionError 7502
            ├── NotFoundError          404
            │   └── (wallet) UserNotFoundError 7201, CardNotFoundError 7301, PermissionNotFoundError 7402
            ├── ConflictError          409
            │   ├── InvalidFieldError          409 / ownCode 5000
            │   ├── UnknownClientError         409 / ownCode 5004
            │   └── (wallet) CardNotActiveError 7302, CurrencyMismatchError 7305, CardNotFundableError 7307,
            │       CardAlreadyLinkedError 7308
            ├── UnprocessableEntityError 422
            │   └── (wallet) InsufficientFundsError 7303
            ├── RateLimitError         429
            │   └── (wallet) LoginThrottledError 7108, OtpAttemptsExceededError 7204
            └── InternalServerError    5xx

Every wallet class also derives from the mixin base :class:`WalletError` (itself an :class:`APIError`), so
``except paysdk.WalletError`` catches any wallet own code (decision D31) and ``except
paysdk.NotFoundError`` still catches a :class:`CardNotFoundError`. ``WalletError.code`` is the
:class:`~paysdk.contracts.codes.WalletCode` number; the table :data:`paysdk.contracts.codes.OWN_CODES`
gives each coded class its HTTP status.

Errors never carry secrets: headers are kept with ``Authorization`` and other credentials masked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from paysdk.contracts.codes import OWN_CODES

__all__ = [
    "WALLET_ERRORS",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AmountOutOfRangeError",
    "AuthenticationError",
    "BadRequestError",
    "CallbackAuthenticationError",
    "CallbackBodyTooLargeError",
    "CallbackError",
    "CallbackPayloadError",
    "CardAlreadyLinkedError",
    "CardNotActiveError",
    "CardNotFoundError",
    "CardNotFundableError",
    "CardPermissionDeniedError",
    "ConflictError",
    "CurrencyMismatchError",
    "CvvNeedsUserSessionError",
    "CvvTokenInvalidError",
    "InsufficientFundsError",
    "InternalServerError",
    "InvalidAmountError",
    "InvalidCredentialsError",
    "InvalidFieldError",
    "InvalidSignatureError",
    "KeysExpiredError",
    "LinkingTokenInvalidError",
    "LoginThrottledError",
    "NotFoundError",
    "OtpAttemptsExceededError",
    "OtpExpiredError",
    "OtpInvalidError",
    "PasswordMismatchError",
    "PasswordTooWeakError",
    "PaySDKError",
    "PermissionDeniedError",
    "PermissionNotFoundError",
    "RateLimitError",
    "RefreshTokenReusedError",
    "RequestError",
    "ResetTokenInvalidError",
    "ResponseTooLargeError",
    "SameCardError",
    "TokenExpiredError",
    "TokenInvalidError",
    "TokenRevokedError",
    "UnexpectedResponseError",
    "UnknownClientError",
    "UnknownMerchantError",
    "UnprocessableEntityError",
    "UserNotFoundError",
    "ValidationError",
    "WalletError",
    "WalletValidationError",
    "WalletWrongEnvironmentError",
    "WrongEnvironmentError",
    "WrongTokenTypeError",
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


class CallbackBodyTooLargeError(CallbackPayloadError):
    """The callback body is (or declares to be) larger than the receiver's cap: answer ``413``."""


class RequestError(PaySDKError):
    """A request failed. ``method`` and ``path`` say which; ``attempts`` how often it was sent.

    ``outcome_unknown`` is ``True`` when a call that is not idempotent (a POST) failed after its bytes
    may have reached the server (a read or write timeout, a connection reset or closed after sending)
    and no answer came: it may or may not have taken effect, so check its state (e.g. look the
    transaction up by your ``external_id``) before sending it again. ``False`` otherwise: an answer
    came, nothing was sent (connect errors), or the call is idempotent and can simply be repeated.
    """

    def __init__(
        self,
        message: str,
        *,
        method: str = "",
        path: str = "",
        attempts: int = 1,
        outcome_unknown: bool = False,
    ) -> None:
        super().__init__(message)
        self.method = method
        self.path = path
        self.attempts = attempts
        self.outcome_unknown = outcome_unknown

    @property
    def retries(self) -> int:
        """How many times the request was retried (``attempts - 1``)."""
        return max(self.attempts - 1, 0)


class APIConnectionError(RequestError):
    """No usable answer: the connection failed, was reset, or the answer was not readable."""


class APITimeoutError(APIConnectionError):
    """The request timed out (connect, read, write or pool)."""


class UnexpectedResponseError(RequestError):
    """A success (2xx) answer whose body does not match the contract: not JSON, or not the expected shape.

    The server answered, so the request most likely took effect: it is never retried (decision D23).
    ``status_code`` is the answer's status, ``problem`` says what did not match (field locations and
    error kinds only, never values), ``headers`` are the answer's headers with credentials masked.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        problem: str,
        headers: Mapping[str, str] | None = None,
        method: str = "",
        path: str = "",
        attempts: int = 1,
    ) -> None:
        super().__init__(message, method=method, path=path, attempts=attempts)
        self.status_code = status_code
        self.problem = problem
        self.headers: dict[str, str] = dict(headers or {})

    @property
    def request_id(self) -> str | None:
        """The server's request id header, when it sent one."""
        return self.headers.get("x-request-id")


class ResponseTooLargeError(APIConnectionError):
    """The answer is larger than the client's ``max_response_bytes``: reading stopped there and the
    connection was closed. ``limit`` is that cap, ``status_code`` the answer's status (a 2xx means the
    request took effect although its answer was not read)."""

    def __init__(
        self,
        message: str,
        *,
        limit: int,
        status_code: int,
        method: str = "",
        path: str = "",
        attempts: int = 1,
    ) -> None:
        super().__init__(message, method=method, path=path, attempts=attempts)
        self.limit = limit
        self.status_code = status_code


class APIError(RequestError):
    """The API answered with an error status.

    ``status_code``, ``own_code`` (the spec's ``ownCode``, ``None`` where absent), ``body`` (the parsed
    JSON, or the text when it is not JSON), ``headers`` (credentials masked) and ``request_id``.
    ``code`` (a class attribute) is the own code a class stands for, ``0`` for the status classes.
    """

    code: ClassVar[int] = 0

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

    code = 2003


class AuthenticationError(APIError):
    """HTTP 401: no, unknown or refused credentials."""


class WrongEnvironmentError(AuthenticationError):
    """HTTP 401, ownCode 2007: the credentials belong to the other environment."""

    code = 2007


class PermissionDeniedError(APIError):
    """HTTP 403."""


class NotFoundError(APIError):
    """HTTP 404."""


class ConflictError(APIError):
    """HTTP 409."""


class InvalidFieldError(ConflictError):
    """HTTP 409, ownCode 5000: a field is missing, of the wrong type, or an unknown value."""

    code = 5000


class UnknownClientError(ConflictError):
    """HTTP 409, ownCode 5004: the client slug is wrong (it is case-sensitive)."""

    code = 5004


class UnprocessableEntityError(APIError):
    """HTTP 422."""


class RateLimitError(APIError):
    """HTTP 429."""


class InternalServerError(APIError):
    """HTTP 5xx."""


class WalletError(APIError):
    """Base of every wallet own-code error (7000-8099, decision D31); ``code`` is the wallet code.

    A mixin next to the status class: ``InsufficientFundsError`` is both an
    :class:`UnprocessableEntityError` and a :class:`WalletError`.
    """


class WalletValidationError(BadRequestError, WalletError):
    """HTTP 400, ownCode 7001: a wallet field is missing or invalid (``details`` name it)."""

    code = 7001


class InvalidCredentialsError(AuthenticationError, WalletError):
    """HTTP 401, ownCode 7101: wrong username or password."""

    code = 7101


class TokenInvalidError(AuthenticationError, WalletError):
    """HTTP 401, ownCode 7102: no, malformed or badly signed token."""

    code = 7102


class TokenExpiredError(AuthenticationError, WalletError):
    """HTTP 401, ownCode 7103: the token's ``exp`` passed (server clock)."""

    code = 7103


class TokenRevokedError(AuthenticationError, WalletError):
    """HTTP 401, ownCode 7104: logged-out session, revoked family, or reset password."""

    code = 7104


class RefreshTokenReusedError(AuthenticationError, WalletError):
    """HTTP 401, ownCode 7105: a rotated refresh token was presented again: the family is revoked."""

    code = 7105


class WrongTokenTypeError(AuthenticationError, WalletError):
    """HTTP 401, ownCode 7106: a refresh token as bearer, or a token of the wrong kind."""

    code = 7106


class WalletWrongEnvironmentError(WrongEnvironmentError, WalletError):
    """HTTP 401, ownCode 7107: a wallet token of the other environment."""

    code = 7107


class LoginThrottledError(RateLimitError, WalletError):
    """HTTP 429, ownCode 7108: 5 wrong passwords for the login name; ``Retry-After`` says how many seconds
    of the virtual clock the login stays refused (right password or not)."""

    code = 7108


class UserNotFoundError(NotFoundError, WalletError):
    """HTTP 404, ownCode 7201: no such user for this merchant."""

    code = 7201


class OtpInvalidError(BadRequestError, WalletError):
    """HTTP 400, ownCode 7202: wrong one-time code or purpose."""

    code = 7202


class OtpExpiredError(BadRequestError, WalletError):
    """HTTP 400, ownCode 7203: the one-time code is older than 10 minutes, or none was requested."""

    code = 7203


class OtpAttemptsExceededError(RateLimitError, WalletError):
    """HTTP 429, ownCode 7204: 5 wrong tries: the one-time code is dead."""

    code = 7204


class ResetTokenInvalidError(BadRequestError, WalletError):
    """HTTP 400, ownCode 7205: the password-reset token is wrong, used or expired."""

    code = 7205


class PasswordMismatchError(BadRequestError, WalletError):
    """HTTP 400, ownCode 7206: ``newPassword`` differs from ``confirmPassword``."""

    code = 7206


class PasswordTooWeakError(BadRequestError, WalletError):
    """HTTP 400, ownCode 7207: the new password has fewer than 8 characters."""

    code = 7207


class CardNotFoundError(NotFoundError, WalletError):
    """HTTP 404, ownCode 7301: no such card for this merchant."""

    code = 7301


class CardNotActiveError(ConflictError, WalletError):
    """HTTP 409, ownCode 7302: the card is blocked or inactive."""

    code = 7302


class InsufficientFundsError(UnprocessableEntityError, WalletError):
    """HTTP 422, ownCode 7303: available balance below the amount (nothing changed)."""

    code = 7303


class InvalidAmountError(BadRequestError, WalletError):
    """HTTP 400, ownCode 7304: the amount is not > 0, has more than 4 decimals, or is not finite."""

    code = 7304


class CurrencyMismatchError(ConflictError, WalletError):
    """HTTP 409, ownCode 7305: a transfer between cards of different currencies."""

    code = 7305


class SameCardError(BadRequestError, WalletError):
    """HTTP 400, ownCode 7306: a transfer to the same card."""

    code = 7306


class CardNotFundableError(ConflictError, WalletError):
    """HTTP 409, ownCode 7307: funds or transfers on a linked third-party card."""

    code = 7307


class CardAlreadyLinkedError(ConflictError, WalletError):
    """HTTP 409, ownCode 7308: the card already has a holder."""

    code = 7308


class LinkingTokenInvalidError(BadRequestError, WalletError):
    """HTTP 400, ownCode 7309: the temporary linking token is wrong, used or expired."""

    code = 7309


class CardPermissionDeniedError(PermissionDeniedError, WalletError):
    """HTTP 403, ownCode 7401: the caller lacks the card permission of the operation."""

    code = 7401


class PermissionNotFoundError(NotFoundError, WalletError):
    """HTTP 404, ownCode 7402: no such permission record."""

    code = 7402


class CvvTokenInvalidError(PermissionDeniedError, WalletError):
    """HTTP 403, ownCode 7501: the CVV view token is wrong, used, expired, or for another card or user."""

    code = 7501


class CvvNeedsUserSessionError(PermissionDeniedError, WalletError):
    """HTTP 403, ownCode 7502: the CVV was asked with application credentials (use ``wallet.as_user``)."""

    code = 7502


class UnknownMerchantError(AuthenticationError, WalletError):
    """HTTP 401, ownCode 7601: application login for a merchant that does not exist."""

    code = 7601


class InvalidSignatureError(AuthenticationError, WalletError):
    """HTTP 401, ownCode 7604: the login signature does not verify (sign the exact UTF-8 bytes)."""

    code = 7604


class KeysExpiredError(AuthenticationError, WalletError):
    """HTTP 401, ownCode 7616: the client's signature keys expired: rotate them and log in again."""

    code = 7616


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}

#: Every class that stands for one own code; its status comes from :data:`paysdk.contracts.codes.OWN_CODES`
#: (``tests/foundation/test_own_codes.py`` checks that the class derives from that status's class).
_CODED: tuple[type[APIError], ...] = (
    AmountOutOfRangeError,
    WrongEnvironmentError,
    InvalidFieldError,
    UnknownClientError,
    WalletValidationError,
    InvalidCredentialsError,
    TokenInvalidError,
    TokenExpiredError,
    TokenRevokedError,
    RefreshTokenReusedError,
    WrongTokenTypeError,
    WalletWrongEnvironmentError,
    LoginThrottledError,
    UserNotFoundError,
    OtpInvalidError,
    OtpExpiredError,
    OtpAttemptsExceededError,
    ResetTokenInvalidError,
    PasswordMismatchError,
    PasswordTooWeakError,
    CardNotFoundError,
    CardNotActiveError,
    InsufficientFundsError,
    InvalidAmountError,
    CurrencyMismatchError,
    SameCardError,
    CardNotFundableError,
    CardAlreadyLinkedError,
    LinkingTokenInvalidError,
    CardPermissionDeniedError,
    PermissionNotFoundError,
    CvvTokenInvalidError,
    CvvNeedsUserSessionError,
    UnknownMerchantError,
    InvalidSignatureError,
    KeysExpiredError,
)

#: (status, ownCode) pairs with their own class.
OWN_CODE_ERRORS: dict[tuple[int, int], type[APIError]] = {
    (OWN_CODES[cls.code].status, cls.code): cls for cls in _CODED
}

#: Wallet own codes (decision D31): (HTTP status, class).
WALLET_ERRORS: dict[int, tuple[int, type[WalletError]]] = {
    code: (status, cls) for (status, code), cls in OWN_CODE_ERRORS.items() if issubclass(cls, WalletError)
}


def error_class_for(status_code: int, own_code: int | None) -> type[APIError]:
    """The most specific error class for a status and ownCode (pure; used by the request pipeline)."""
    if own_code is not None:
        specific = OWN_CODE_ERRORS.get((status_code, own_code))
        if specific is not None:
            return specific
    if status_code >= 500:
        return InternalServerError
    return _BY_STATUS.get(status_code, APIError)
