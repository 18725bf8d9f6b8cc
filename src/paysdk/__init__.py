"""paysdk: a typed client for the payment-link, alternative-payment and wallet API.

::

    import paysdk
    from decimal import Decimal

    with paysdk.Client(environment=paysdk.Environment.local()) as client:   # token: $PAYSDK_MERCHANT_TOKEN
        link = client.payment_links.create(
            amount=Decimal("10.50"), user_id="+50212345678", channel="wa", client="my-shop"
        )
        print(link.url)

Everything public is importable from here; the underscored modules are private. ``paysdk.AsyncClient``
is the same API for ``asyncio``. Errors derive from :class:`PaySDKError`.
"""

import importlib
from typing import TYPE_CHECKING, Any

from paysdk._errors import (
    AmountOutOfRangeError,
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    CallbackAuthenticationError,
    CallbackBodyTooLargeError,
    CallbackError,
    CallbackPayloadError,
    CardAlreadyLinkedError,
    CardNotActiveError,
    CardNotFoundError,
    CardNotFundableError,
    CardPermissionDeniedError,
    ConflictError,
    CurrencyMismatchError,
    CvvNeedsUserSessionError,
    CvvTokenInvalidError,
    InsufficientFundsError,
    InternalServerError,
    InvalidAmountError,
    InvalidCredentialsError,
    InvalidFieldError,
    InvalidSignatureError,
    KeysExpiredError,
    LinkingTokenInvalidError,
    LoginThrottledError,
    NotFoundError,
    OtpAttemptsExceededError,
    OtpExpiredError,
    OtpInvalidError,
    PasswordMismatchError,
    PasswordTooWeakError,
    PaySDKError,
    PermissionDeniedError,
    PermissionNotFoundError,
    RateLimitError,
    RefreshTokenReusedError,
    RequestError,
    ResetTokenInvalidError,
    ResponseTooLargeError,
    SameCardError,
    TokenExpiredError,
    TokenInvalidError,
    TokenRevokedError,
    UnexpectedResponseError,
    UnknownClientError,
    UnknownMerchantError,
    UnprocessableEntityError,
    UserNotFoundError,
    ValidationError,
    WalletError,
    WalletValidationError,
    WalletWrongEnvironmentError,
    WrongEnvironmentError,
    WrongTokenTypeError,
)

if TYPE_CHECKING:
    from paysdk._backoffice_auth import BackofficeCredentials, BackofficeUser, backoffice_store_key
    from paysdk._client import AsyncClient, Client
    from paysdk._deprecation import PaysdkDeprecationWarning
    from paysdk._environment import Environment
    from paysdk._file_upload import FileUpload
    from paysdk._pipeline import APIResponse, CallOptions, PostCallOptions, ResponseInfo
    from paysdk._secret import Secret
    from paysdk._sse import ServerSentEvent, UnknownEvent
    from paysdk._streaming import AsyncEventStream, EventStream
    from paysdk._token_stores import (
        AsyncRedisTokenStore,
        AsyncTokenStore,
        FileTokenStore,
        MemoryTokenStore,
        RedisTokenStore,
        TokenStore,
    )
    from paysdk._tokens import StoredTokens
    from paysdk._types import NOT_GIVEN, NotGiven
    from paysdk._version import __version__ as __version__
    from paysdk._wallet_auth import UserSession, WalletCredentials, wallet_store_key
    from paysdk.contracts.reconciliation import ReconciliationReport, ReconciliationReportPage
    from paysdk.contracts.subscriptions import Subscription, SubscriptionCharge, VerifyCard
    from paysdk.contracts.terminal import CaptureMode, TerminalPayment, TerminalStatus
    from paysdk.resources.batch_charges import (
        BatchChargeReport,
        BatchChargeRow,
        BatchPartResult,
        ChargesCsv,
        ChargesCsvPart,
        CsvValidationError,
        read_charges_csv,
    )
    from paysdk.resources.cardholders import CardholderBatchResult

#: Where each public name other than the errors lives. ``import paysdk`` loads only the exception tree:
#: a name's module is imported the first time the name is used (``paysdk.Client``, ``from paysdk import
#: Client``), so a program that only catches ``paysdk.APIError`` or imports ``paysdk.contracts`` does not
#: pay for httpx and the clients (``make bench``: ``import paysdk`` vs ``import httpx, pydantic``).
#: Type checkers and IDEs read the imports under ``TYPE_CHECKING`` above.
_LAZY: dict[str, str] = {
    "ServerSentEvent": "paysdk._sse",
    "UnknownEvent": "paysdk._sse",
    "AsyncEventStream": "paysdk._streaming",
    "EventStream": "paysdk._streaming",
    "BackofficeCredentials": "paysdk._backoffice_auth",
    "BackofficeUser": "paysdk._backoffice_auth",
    "backoffice_store_key": "paysdk._backoffice_auth",
    "FileUpload": "paysdk._file_upload",
    "PaysdkDeprecationWarning": "paysdk._deprecation",
    "APIResponse": "paysdk._pipeline",
    "CallOptions": "paysdk._pipeline",
    "PostCallOptions": "paysdk._pipeline",
    "AsyncClient": "paysdk._client",
    "Client": "paysdk._client",
    "Environment": "paysdk._environment",
    "ResponseInfo": "paysdk._pipeline",
    "__version__": "paysdk._version",
    "Secret": "paysdk._secret",
    "AsyncRedisTokenStore": "paysdk._token_stores",
    "AsyncTokenStore": "paysdk._token_stores",
    "FileTokenStore": "paysdk._token_stores",
    "MemoryTokenStore": "paysdk._token_stores",
    "RedisTokenStore": "paysdk._token_stores",
    "TokenStore": "paysdk._token_stores",
    "StoredTokens": "paysdk._tokens",
    "NOT_GIVEN": "paysdk._types",
    "NotGiven": "paysdk._types",
    "UserSession": "paysdk._wallet_auth",
    "WalletCredentials": "paysdk._wallet_auth",
    "wallet_store_key": "paysdk._wallet_auth",
    "BatchChargeReport": "paysdk.resources.batch_charges",
    "BatchChargeRow": "paysdk.resources.batch_charges",
    "BatchPartResult": "paysdk.resources.batch_charges",
    "ChargesCsv": "paysdk.resources.batch_charges",
    "ChargesCsvPart": "paysdk.resources.batch_charges",
    "CsvValidationError": "paysdk.resources.batch_charges",
    "read_charges_csv": "paysdk.resources.batch_charges",
    "CardholderBatchResult": "paysdk.resources.cardholders",
    "Subscription": "paysdk.contracts.subscriptions",
    "SubscriptionCharge": "paysdk.contracts.subscriptions",
    "VerifyCard": "paysdk.contracts.subscriptions",
    "CaptureMode": "paysdk.contracts.terminal",
    "TerminalPayment": "paysdk.contracts.terminal",
    "TerminalStatus": "paysdk.contracts.terminal",
    "ReconciliationReport": "paysdk.contracts.reconciliation",
    "ReconciliationReportPage": "paysdk.contracts.reconciliation",
}

__all__ = [
    "NOT_GIVEN",
    "APIConnectionError",
    "APIError",
    "APIResponse",
    "APITimeoutError",
    "AmountOutOfRangeError",
    "AsyncClient",
    "AsyncEventStream",
    "AsyncRedisTokenStore",
    "AsyncTokenStore",
    "AuthenticationError",
    "BackofficeCredentials",
    "BackofficeUser",
    "BadRequestError",
    "BatchChargeReport",
    "BatchChargeRow",
    "BatchPartResult",
    "CallOptions",
    "CallbackAuthenticationError",
    "CallbackBodyTooLargeError",
    "CallbackError",
    "CallbackPayloadError",
    "CaptureMode",
    "CardAlreadyLinkedError",
    "CardNotActiveError",
    "CardNotFoundError",
    "CardNotFundableError",
    "CardPermissionDeniedError",
    "CardholderBatchResult",
    "ChargesCsv",
    "ChargesCsvPart",
    "Client",
    "ConflictError",
    "CsvValidationError",
    "CurrencyMismatchError",
    "CvvNeedsUserSessionError",
    "CvvTokenInvalidError",
    "Environment",
    "EventStream",
    "FileTokenStore",
    "FileUpload",
    "InsufficientFundsError",
    "InternalServerError",
    "InvalidAmountError",
    "InvalidCredentialsError",
    "InvalidFieldError",
    "InvalidSignatureError",
    "KeysExpiredError",
    "LinkingTokenInvalidError",
    "LoginThrottledError",
    "MemoryTokenStore",
    "NotFoundError",
    "NotGiven",
    "OtpAttemptsExceededError",
    "OtpExpiredError",
    "OtpInvalidError",
    "PasswordMismatchError",
    "PasswordTooWeakError",
    "PaySDKError",
    "PaysdkDeprecationWarning",
    "PermissionDeniedError",
    "PermissionNotFoundError",
    "PostCallOptions",
    "RateLimitError",
    "ReconciliationReport",
    "ReconciliationReportPage",
    "RedisTokenStore",
    "RefreshTokenReusedError",
    "RequestError",
    "ResetTokenInvalidError",
    "ResponseInfo",
    "ResponseTooLargeError",
    "SameCardError",
    "Secret",
    "ServerSentEvent",
    "StoredTokens",
    "Subscription",
    "SubscriptionCharge",
    "TerminalPayment",
    "TerminalStatus",
    "TokenExpiredError",
    "TokenInvalidError",
    "TokenRevokedError",
    "TokenStore",
    "UnexpectedResponseError",
    "UnknownClientError",
    "UnknownEvent",
    "UnknownMerchantError",
    "UnprocessableEntityError",
    "UserNotFoundError",
    "UserSession",
    "ValidationError",
    "VerifyCard",
    "WalletCredentials",
    "WalletError",
    "WalletValidationError",
    "WalletWrongEnvironmentError",
    "WrongEnvironmentError",
    "WrongTokenTypeError",
    "__version__",
    "backoffice_store_key",
    "read_charges_csv",
    "wallet_store_key",
]


if not TYPE_CHECKING:  # a type checker sees the real imports above, and flags an unknown name

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif name.isidentifier() and not name.startswith("__"):
            # A submodule (``paysdk.resources``, ``paysdk._errors``): importing it sets the attribute.
            try:
                value = importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{name}":
                    raise
                raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
