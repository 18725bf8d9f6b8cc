"""Wallet credentials and user sessions, and the wallet's token kinds and login/refresh operations.

The token manager that serves them (and the backoffice's) is generic: :mod:`paysdk._auth`
(:class:`AsyncTokenManager`, generated :class:`TokenManager`, re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from paysdk._auth import (
    ApplicationKey,
    AsyncTokenManager,
    TokenKind,
    TokenManager,
    check_ttls,
    credential_key,
    pair_from_stored,
    token_operation,
    user_key,
)
from paysdk._environment import Environment
from paysdk._errors import ValidationError
from paysdk._jwt import JWTError, decode_unverified
from paysdk._pipeline import Operation
from paysdk._secret import Secret
from paysdk._tokens import StoredTokens, tokens_from_pair

if TYPE_CHECKING:
    from paysdk.contracts.wallet import TokenPair  # the wallet contracts load with the first login (D460)

__all__ = [
    "WALLET_APP_TOKENS",
    "WALLET_USER_TOKENS",
    "AsyncTokenManager",
    "TokenManager",
    "UserSession",
    "WalletCredentials",
    "app_login_operation",
    "app_refresh_operation",
    "application_key",
    "pair_from_stored",
    "user_key",
    "user_refresh_operation",
    "wallet_store_key",
]


class WalletCredentials(ApplicationKey):
    """An application's wallet credentials: the merchant slug and its Ed25519 private key (D36).

    ``private_key`` is the 32-byte seed (raw bytes, base64, base64url or hex), a
    :class:`~paysdk.Secret` of one, or an OKP JWK (a mapping, or its JSON text). It is checked here
    (:class:`~paysdk.ValidationError` ``private_key`` otherwise, never showing the key) and never
    appears in a repr, log line or error.
    """

    __slots__ = ()

    def __init__(self, merchant: str, private_key: str | bytes | Secret | Mapping[str, Any]) -> None:
        super().__init__(merchant, private_key)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


@dataclass(frozen=True, eq=False)
class UserSession:
    """A wallet user's session: the user token pair, whose ``sub`` is :attr:`user_id`.

    ``tokens`` is the :class:`~paysdk.contracts.wallet.TokenPair` (masked repr). ``expires_at`` /
    ``refresh_expires_at`` are when the tokens expire by the local clock. A refresh rotates both
    tokens: keep the new session and discard the old one (its refresh token is spent).
    """

    tokens: TokenPair = field(repr=False)
    user_id: str
    expires_at: datetime
    refresh_expires_at: datetime
    stored: StoredTokens = field(repr=False)

    @classmethod
    def from_pair(cls, pair: TokenPair, *, now: float) -> UserSession:
        """The session of a ``/users/login`` or ``/users/refresh`` answer received at ``now``."""
        stored = tokens_from_pair(
            pair.access_token,
            pair.refresh_token,
            expires_in=pair.expires_in,
            refresh_expires_in=pair.refresh_expires_in,
            now=now,
        )
        return cls.from_stored(stored)

    @classmethod
    def from_stored(cls, stored: StoredTokens) -> UserSession:
        """The session of a stored pair (``user_id`` read from the access token's ``sub``)."""
        access = stored.access_token.reveal()
        try:
            _, claims = decode_unverified(access)
            subject = claims.get("sub")
        except JWTError:
            subject = None
        return cls(
            tokens=pair_from_stored(stored),
            user_id=subject if isinstance(subject, str) else "",
            expires_at=_utc(stored.access_expires_at),
            refresh_expires_at=_utc(stored.refresh_expires_at),
            stored=stored,
        )

    @property
    def access_token(self) -> Secret:
        """The user access token (a :class:`~paysdk.Secret`)."""
        return self.stored.access_token

    @property
    def refresh_token(self) -> Secret:
        """The user refresh token (a :class:`~paysdk.Secret`; single-use)."""
        return self.stored.refresh_token

    def __repr__(self) -> str:
        return f"UserSession(user_id={self.user_id!r}, expires_at={self.expires_at.isoformat()}, tokens=****)"

    __str__ = __repr__


# ----------------------------------------------------------------------------- auth operations


def application_key(environment: Environment, merchant: str) -> str:
    """The store key of a wallet application credential (one per environment and merchant)."""
    return credential_key(environment, "wallet", "app", merchant)


def wallet_store_key(environment: Environment, merchant: str, user: str | None = None) -> str:
    """The key under which a :class:`~paysdk.TokenStore` holds a wallet token pair: the application's
    (``merchant`` in ``environment``) or, with ``user``, the user session of that name (a user id, or
    any name of yours; :meth:`paysdk.Client.wallet.user_key <paysdk.resources.wallet.Wallet.user_key>`
    gives the same key). Read a pair with ``store.load(key)``; change one only holding
    ``store.lock(key)``, e.g. ``with store.lock(key): store.delete(key)`` to forget it."""
    if not isinstance(merchant, str) or not merchant.strip():
        raise ValidationError("merchant", "must be the non-empty merchant (client) slug")
    key = application_key(environment, merchant.strip())
    if user is None:
        return key
    if not isinstance(user, str) or not user.strip():
        raise ValidationError("user", "must be a non-empty string")
    return user_key(key, user.strip())


def _token_op(path: str, body: dict[str, Any], auth: str = "none") -> Operation[TokenPair]:
    return token_operation("wallet", path, body, auth)


def app_login_operation(credentials: WalletCredentials) -> Operation[TokenPair]:
    """``POST /auth/login {merchant, signature}`` (D36)."""
    return _token_op(
        "/auth/login", {"merchant": credentials.merchant, "signature": Secret(credentials.signature())}
    )


def app_refresh_operation(refresh_token: Secret) -> Operation[TokenPair]:
    """``POST /auth/refresh {refreshToken}``."""
    return _token_op("/auth/refresh", {"refreshToken": refresh_token})


def user_refresh_operation(
    refresh_token: Secret,
    *,
    merchant: str | None = None,
    access_token_ttl: int | None = None,
    refresh_token_ttl: int | None = None,
) -> Operation[TokenPair]:
    """``POST /users/refresh`` (application bearer)."""
    body: dict[str, Any] = {"refreshToken": refresh_token}
    if merchant is not None:
        if not isinstance(merchant, str) or not merchant:
            raise ValidationError("merchant", "must be a non-empty string")
        body["merchant"] = merchant
    check_ttls(body, access_token_ttl, refresh_token_ttl)
    return _token_op("/users/refresh", body, auth="wallet_app")


#: The wallet application token (``/auth/login``, ``/auth/refresh``).
WALLET_APP_TOKENS = TokenKind("wallet_app", "wallet", app_refresh_operation)
#: A wallet user session (``/users/login`` gives it; ``/users/refresh`` with the application bearer).
WALLET_USER_TOKENS = TokenKind("wallet_user", "wallet", user_refresh_operation)
