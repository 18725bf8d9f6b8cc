"""Backoffice credentials (spec 4.4, 5.3.5-5.3.7; decisions D105-D107): the application token and the
backoffice user token, held together by one client.

Backoffice access needs two tokens at once (5.3.7): the application JWT for application-scoped routes
and the backoffice user JWT for user-scoped routes, both as bearer. ``Client(backoffice=
BackofficeCredentials(merchant, private_key, user=BackofficeUser(email, password)))`` holds both: an
operation naming ``auth="backoffice_app"`` sends the first, one naming ``auth="backoffice_user"`` the
second (:mod:`paysdk._credentials`). Each is a token-managed credential (:mod:`paysdk._auth`): logged
in lazily, refreshed single-flight through the client's ``token_store``, saved before use. The user
logs in with the application bearer (``POST {cms}/app/users/login {email, password}``), and since the
client holds the password a dead user session logs in again, as the application does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from paysdk._auth import ApplicationKey, TokenKind, check_ttls, credential_key, token_operation, user_key
from paysdk._environment import Environment
from paysdk._errors import ValidationError
from paysdk._pipeline import Operation
from paysdk._secret import Secret

if TYPE_CHECKING:
    from paysdk.contracts.wallet import TokenPair  # the wallet contracts load with the first login (D460)

__all__ = [
    "BACKOFFICE_APP_TOKENS",
    "BACKOFFICE_USER_TOKENS",
    "BackofficeCredentials",
    "BackofficeUser",
    "backoffice_app_key",
    "backoffice_app_login_operation",
    "backoffice_app_refresh_operation",
    "backoffice_store_key",
    "backoffice_user_login_operation",
    "backoffice_user_refresh_operation",
]


class BackofficeUser:
    """A backoffice user's login: ``email`` and ``password`` (a ``str`` or :class:`~paysdk.Secret`,
    kept as a ``Secret``: never in a repr, log line or error). Not picklable."""

    __slots__ = ("_email", "_password")

    def __init__(self, email: str, password: str | Secret) -> None:
        if not isinstance(email, str):
            raise ValidationError("email", "must be a string")
        from paysdk.contracts.wallet import validate_email  # the form of an address (D96)

        try:
            self._email = validate_email(email.strip())
        except ValueError as exc:
            raise ValidationError("email", str(exc)) from None
        text = password.reveal() if isinstance(password, Secret) else password
        if not isinstance(text, str) or not text:
            raise ValidationError("password", "must be a non-empty str or paysdk.Secret")
        self._password = Secret(text)

    @property
    def email(self) -> str:
        """The user's email (the login name)."""
        return self._email

    @property
    def password(self) -> Secret:
        """The password, as a :class:`~paysdk.Secret`."""
        return self._password

    def __repr__(self) -> str:
        return f"BackofficeUser(email={self._email!r}, password='****')"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("paysdk.BackofficeUser is not picklable")


class BackofficeCredentials(ApplicationKey):
    """A merchant's backoffice credentials: the application's Ed25519 key (as
    :class:`~paysdk.WalletCredentials`, D36 and D105) and, for user-scoped routes, a
    :class:`BackofficeUser` whose token the client obtains with the application token (5.3.7).

    Without ``user``, calls naming the backoffice user token raise :class:`~paysdk.ValidationError`
    ``backoffice`` before sending anything.
    """

    __slots__ = ("_user",)

    def __init__(
        self,
        merchant: str,
        private_key: str | bytes | Secret | Mapping[str, Any],
        *,
        user: BackofficeUser | None = None,
    ) -> None:
        super().__init__(merchant, private_key)
        if user is not None and not isinstance(user, BackofficeUser):
            raise ValidationError("user", "must be paysdk.BackofficeUser(email, password)")
        self._user = user

    @property
    def user(self) -> BackofficeUser | None:
        """The backoffice user, when one was given."""
        return self._user

    def __repr__(self) -> str:
        user = f", user={self._user!r}" if self._user is not None else ""
        return f"BackofficeCredentials(merchant={self.merchant!r}, private_key='****'{user})"

    __str__ = __repr__


# ----------------------------------------------------------------------------- store keys


def backoffice_app_key(environment: Environment, merchant: str) -> str:
    """The store key of a backoffice application credential (one per environment and merchant)."""
    return credential_key(environment, "cms", "backoffice-app", merchant)


def backoffice_store_key(environment: Environment, merchant: str, email: str | None = None) -> str:
    """The key under which a :class:`~paysdk.TokenStore` holds a backoffice token pair: the
    application's (``merchant`` in ``environment``) or, with ``email``, that backoffice user's."""
    if not isinstance(merchant, str) or not merchant.strip():
        raise ValidationError("merchant", "must be the non-empty merchant (client) slug")
    key = backoffice_app_key(environment, merchant.strip())
    if email is None:
        return key
    return user_key(key, BackofficeUser(email, "-").email)


# ----------------------------------------------------------------------------- operations (D105, D106)


def backoffice_app_login_operation(credentials: ApplicationKey) -> Operation[TokenPair]:
    """``POST {cms}/app/auth/login {merchant, signature}`` (4.4; the signature as in D36, D105)."""
    body = {"merchant": credentials.merchant, "signature": Secret(credentials.signature())}
    return token_operation("cms", "/app/auth/login", body)


def backoffice_app_refresh_operation(refresh_token: Secret) -> Operation[TokenPair]:
    """``POST {cms}/app/auth/refresh {refreshToken}`` (D106)."""
    return token_operation("cms", "/app/auth/refresh", {"refreshToken": refresh_token})


def backoffice_user_login_operation(
    user: BackofficeUser, access_token_ttl: int | None = None, refresh_token_ttl: int | None = None
) -> Operation[TokenPair]:
    """``POST {cms}/app/users/login {email, password}`` with the application bearer (4.4, 5.3.7)."""
    if not isinstance(user, BackofficeUser):
        raise ValidationError("user", "must be paysdk.BackofficeUser(email, password)")
    body = check_ttls({"email": user.email, "password": user.password}, access_token_ttl, refresh_token_ttl)
    return token_operation("cms", "/app/users/login", body, auth="backoffice_app")


def backoffice_user_refresh_operation(refresh_token: Secret) -> Operation[TokenPair]:
    """``POST {cms}/app/users/refresh {refreshToken}`` with the application bearer (D106)."""
    body = {"refreshToken": refresh_token}
    return token_operation("cms", "/app/users/refresh", body, auth="backoffice_app")


#: The backoffice application token.
BACKOFFICE_APP_TOKENS = TokenKind("backoffice_app", "backoffice", backoffice_app_refresh_operation)
#: The backoffice user token (its login and refresh send the application token).
BACKOFFICE_USER_TOKENS = TokenKind("backoffice_user", "backoffice", backoffice_user_refresh_operation)
