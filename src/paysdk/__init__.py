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

from paysdk._client import AsyncClient, Client
from paysdk._environment import Environment
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
from paysdk._pipeline import ResponseInfo
from paysdk._pipeline import __version__ as __version__
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
from paysdk._wallet_auth import UserSession, WalletCredentials, wallet_store_key

__all__ = [
    "NOT_GIVEN",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AmountOutOfRangeError",
    "AsyncClient",
    "AsyncEventStream",
    "AsyncRedisTokenStore",
    "AsyncTokenStore",
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
    "Client",
    "ConflictError",
    "CurrencyMismatchError",
    "CvvNeedsUserSessionError",
    "CvvTokenInvalidError",
    "Environment",
    "EventStream",
    "FileTokenStore",
    "InsufficientFundsError",
    "InternalServerError",
    "InvalidAmountError",
    "InvalidCredentialsError",
    "InvalidFieldError",
    "InvalidSignatureError",
    "KeysExpiredError",
    "LinkingTokenInvalidError",
    "MemoryTokenStore",
    "NotFoundError",
    "NotGiven",
    "OtpAttemptsExceededError",
    "OtpExpiredError",
    "OtpInvalidError",
    "PasswordMismatchError",
    "PasswordTooWeakError",
    "PaySDKError",
    "PermissionDeniedError",
    "PermissionNotFoundError",
    "RateLimitError",
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
    "WalletCredentials",
    "WalletError",
    "WalletValidationError",
    "WalletWrongEnvironmentError",
    "WrongEnvironmentError",
    "WrongTokenTypeError",
    "__version__",
    "wallet_store_key",
]
