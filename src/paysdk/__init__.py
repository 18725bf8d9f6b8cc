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
    CallbackError,
    CallbackPayloadError,
    ConflictError,
    InternalServerError,
    InvalidFieldError,
    NotFoundError,
    PaySDKError,
    PermissionDeniedError,
    RateLimitError,
    RequestError,
    UnknownClientError,
    UnprocessableEntityError,
    ValidationError,
    WrongEnvironmentError,
)
from paysdk._pipeline import ResponseInfo
from paysdk._pipeline import __version__ as __version__
from paysdk._secret import Secret
from paysdk._types import NOT_GIVEN, NotGiven

__all__ = [
    "NOT_GIVEN",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AmountOutOfRangeError",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "CallbackAuthenticationError",
    "CallbackError",
    "CallbackPayloadError",
    "Client",
    "ConflictError",
    "Environment",
    "InternalServerError",
    "InvalidFieldError",
    "NotFoundError",
    "NotGiven",
    "PaySDKError",
    "PermissionDeniedError",
    "RateLimitError",
    "RequestError",
    "ResponseInfo",
    "Secret",
    "UnknownClientError",
    "UnprocessableEntityError",
    "ValidationError",
    "WrongEnvironmentError",
    "__version__",
]
