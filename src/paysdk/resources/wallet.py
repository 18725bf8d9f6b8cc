"""The wallet (spec 2.5, 4.3, 5.3; decisions D30-D44): ``client.wallet``.

Every call goes to ``{wallet_base_url}`` with a bearer access token: the application's (from
``Client(wallet=WalletCredentials(...))``, logged in lazily and refreshed single-flight, see
:mod:`paysdk._tokens`) or, in a view from :meth:`AsyncWallet.as_user`, a user session's. Answers are
``{"data": ...}`` (D30); the SDK returns the inner model. The pure operation builders come first, then
the hand-written async resources, then their generated sync twins.

Retries: GETs retry like any idempotent call. Login, refresh, logout, OTP verification and the CVV
read are never replayed once their bytes may have arrived (single-use tokens and codes); other POSTs
follow the client's rule (replayed only with an idempotency key the environment honours).
"""

from __future__ import annotations

import builtins
import dataclasses
import re
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from paysdk._errors import ValidationError
from paysdk._pipeline import Operation, data_envelope, list_of, no_result
from paysdk._secret import Secret
from paysdk._token_stores import (
    AsyncStoreAdapter,
    AsyncTokenStore,
    MemoryTokenStore,
    StoreAdapter,
    TokenStore,
)
from paysdk._tokens import RECOVERABLE_CODES, REPLAY_CODES, StoredTokens
from paysdk._wallet_auth import (
    WALLET_USER_TOKENS,
    AsyncTokenManager,
    TokenManager,
    UserSession,
    pair_from_stored,
    user_key,
    user_refresh_operation,
)
from paysdk.contracts.common import Currency
from paysdk.contracts.wallet import (
    Card,
    CardPermissionType,
    CardSummary,
    Cvv,
    CvvViewToken,
    FundsResult,
    Jwks,
    Movement,
    OtpSent,
    OtpVerified,
    PasswordResetResult,
    PermissionRecord,
    TokenPair,
    TransferResult,
    parse_wallet_amount,
)
from paysdk.resources._validation import (
    check_currency,
    check_email,
    check_optional_str,
    check_str,
    check_username,
    path_segment,
)

if TYPE_CHECKING:
    from paysdk._client import AsyncClient, Client

__all__ = [
    "AsyncCards",
    "AsyncFunds",
    "AsyncPermissions",
    "AsyncTransfers",
    "AsyncWallet",
    "AsyncWalletUserView",
    "AsyncWalletUsers",
    "Cards",
    "Funds",
    "Permissions",
    "Transfers",
    "Wallet",
    "WalletUserView",
    "WalletUsers",
]

T = TypeVar("T")

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_PIN = re.compile(r"[0-9]{4}")
_OTP = re.compile(r"[0-9]{6}")


# ------------------------------------------------------------------------------------ validation


def check_date(value: object, field: str) -> str:
    """A ``date`` or a ``YYYY-MM-DD`` string (a real calendar date), as ``YYYY-MM-DD``."""
    if isinstance(value, datetime):
        raise ValidationError(field, "must be a date or a YYYY-MM-DD string, not a datetime")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str) and _DATE.fullmatch(value.strip()):
        try:
            return date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    raise ValidationError(field, "must be a date or a YYYY-MM-DD string")


def check_wallet_amount(value: object, field: str = "amount") -> Decimal:
    """A wallet amount: ``Decimal``, ``int`` or decimal string (never ``float``), > 0, at most 4 places."""
    try:
        return parse_wallet_amount(value, field=field)
    except ValueError as exc:
        raise ValidationError(field, str(exc).removeprefix(f"{field} ").strip()) from None


def check_permissions(value: object, field: str = "permissions") -> list[str]:
    """A non-empty sequence of :class:`~paysdk.contracts.wallet.CardPermissionType` (or their names)."""
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise ValidationError(field, "must be a non-empty list of card permissions")
    out: list[str] = []
    for item in value:
        try:
            out.append(CardPermissionType(item).value)
        except ValueError:
            allowed = ", ".join(p.value for p in CardPermissionType)
            raise ValidationError(field, f"unknown permission; allowed: {allowed}") from None
    return out


def _check_ttl(value: object, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValidationError(field, "must be a positive int of seconds")
    return value


def _check_pattern(value: object, field: str, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ValidationError(field, f"must be {what}")
    return value


# ------------------------------------------------------------------------------------ operations


def _op(
    method: str,
    path: str,
    parse: Any,
    *,
    json: Any = None,
    params: dict[str, str] | None = None,
    auth: str = "wallet_app",
    **options: Any,
) -> Operation[Any]:
    return Operation(
        method=method,
        path=path,
        base="wallet",
        auth=auth,  # type: ignore[arg-type]
        json=json,
        params=params,
        parse=parse,
        **options,
    )


def _one(model: Any) -> Any:
    return data_envelope(model.model_validate)


def _many(model: Any) -> Any:
    return data_envelope(list_of(model.model_validate))


#: Never replayed once sent: single-use codes and tokens, and no idempotency key.
_ONCE: dict[str, Any] = {"idempotent": False, "uses_idempotency_keys": False}


def jwks_operation() -> Operation[Jwks]:
    """``GET /.well-known/jwks.json`` (bare JWKS, no bearer)."""
    return _op("GET", "/.well-known/jwks.json", Jwks.model_validate, auth="none")


def user_login_operation(
    username: str,
    password: str | Secret,
    merchant: str | None = None,
    access_token_ttl: int | None = None,
    refresh_token_ttl: int | None = None,
) -> Operation[TokenPair]:
    """``POST /users/login`` (application bearer). The password stays a :class:`Secret` until sent."""
    secret = password.reveal() if isinstance(password, Secret) else password
    if not isinstance(secret, str) or not secret:
        raise ValidationError("password", "must be a non-empty str or paysdk.Secret")
    body: dict[str, Any] = {"username": check_username(username), "password": Secret(secret)}
    if merchant is not None:
        body["merchant"] = check_str(merchant, "merchant")
    ttls = (
        ("accessTokenTtl", access_token_ttl, "access_token_ttl"),
        ("refreshTokenTtl", refresh_token_ttl, "refresh_token_ttl"),
    )
    for wire, value, name in ttls:
        checked = _check_ttl(value, name)
        if checked is not None:
            body[wire] = checked
    return _op("POST", "/users/login", _one(TokenPair), json=body, **_ONCE)


def user_logout_operation(session: UserSession) -> Operation[None]:
    """``POST /users/logout`` (application bearer, the session named by ``X-User-Token``, D38)."""
    if not isinstance(session, UserSession):
        raise ValidationError("session", "must be a paysdk.UserSession")
    return _op("POST", "/users/logout", no_result, headers={"X-User-Token": session.access_token}, **_ONCE)


def otp_request_operation(email: str, purpose: str = "password_reset") -> Operation[OtpSent]:
    """``POST /users/auth/otp``."""
    body = {"email": check_email(email), "purpose": check_str(purpose, "purpose")}
    return _op("POST", "/users/auth/otp", _one(OtpSent), json=body)


def otp_verify_operation(email: str, otp: str, purpose: str = "password_reset") -> Operation[OtpVerified]:
    """``PUT /users/auth/otp`` (never replayed: a code is single-use)."""
    code = Secret(_check_pattern(otp, "otp", _OTP, "the 6-digit code"))
    body = {"email": check_email(email), "otp": code, "purpose": check_str(purpose, "purpose")}
    return _op("PUT", "/users/auth/otp", _one(OtpVerified), json=body, **_ONCE)


def password_reset_operation(
    email: str, new_password: str | Secret, confirm_password: str | Secret, token: str | Secret
) -> Operation[PasswordResetResult]:
    """``POST /users/auth/password/reset`` (never replayed: the reset token is single-use)."""
    values: dict[str, Secret] = {}
    pairs = (("new_password", new_password), ("confirm_password", confirm_password), ("token", token))
    for name, value in pairs:
        text = value.reveal() if isinstance(value, Secret) else value
        if not isinstance(text, str) or not text:
            raise ValidationError(name, "must be a non-empty str or paysdk.Secret")
        values[name] = Secret(text)
    body = {
        "email": check_email(email),
        "newPassword": values["new_password"],
        "confirmPassword": values["confirm_password"],
        "token": values["token"],
    }
    return _op("POST", "/users/auth/password/reset", _one(PasswordResetResult), json=body, **_ONCE)


def _user(user_id: str) -> str:
    return "/users/" + path_segment(user_id, "user_id")


def _card(card_id: str, field: str = "card_id") -> str:
    return "/cards/" + path_segment(card_id, field)


def list_cards_operation(user_id: str) -> Operation[list[Card]]:
    """``GET /users/{userId}/cards``."""
    return _op("GET", _user(user_id) + "/cards", _many(Card))


def card_summary_operation(
    user_id: str, start_date: date | str, end_date: date | str
) -> Operation[CardSummary]:
    """``GET /users/{userId}/cards/summary?startDate&endDate``."""
    params = {"startDate": check_date(start_date, "start_date"), "endDate": check_date(end_date, "end_date")}
    return _op("GET", _user(user_id) + "/cards/summary", _one(CardSummary), params=params)


def link_card_operation(user_id: str, card_id: str, client_id: str) -> Operation[Card]:
    """``POST /users/{userId}/cards?clientId=`` with ``{cardId}``."""
    params = {"clientId": check_str(client_id, "client_id")}
    body = {"cardId": check_str(card_id, "card_id")}
    return _op("POST", _user(user_id) + "/cards", _one(Card), json=body, params=params)


def issue_virtual_operation(
    user_id: str, currency: str | Currency | None = None, alias: str | None = None
) -> Operation[Card]:
    """``POST /users/{userId}/cards/virtuals``."""
    body: dict[str, Any] = {}
    checked = check_currency(currency)
    if checked is not None:
        body["currency"] = checked.value
    if check_optional_str(alias, "alias", max_length=64) is not None:
        body["alias"] = alias
    return _op("POST", _user(user_id) + "/cards/virtuals", _one(Card), json=body)


def link_external_operation(user_id: str, token: str | Secret, alias: str | None = None) -> Operation[Card]:
    """``POST /users/{userId}/linked-cards`` (the temporary token stays a :class:`Secret`)."""
    text = token.reveal() if isinstance(token, Secret) else token
    body: dict[str, Any] = {"token": Secret(check_str(text, "token", max_length=4096))}
    if check_optional_str(alias, "alias", max_length=64) is not None:
        body["alias"] = alias
    return _op("POST", _user(user_id) + "/linked-cards", _one(Card), json=body)


def get_card_operation(card_id: str) -> Operation[Card]:
    """``GET /cards/{cardId}``."""
    return _op("GET", _card(card_id), _one(Card))


def update_alias_operation(card_id: str, alias: str) -> Operation[Card]:
    """``PATCH /cards/{cardId}`` (setting the same alias twice is harmless: replayed like a PUT)."""
    body = {"alias": check_str(alias, "alias", max_length=64)}
    return _op("PATCH", _card(card_id), _one(Card), json=body, idempotent=True)


def card_action_operation(card_id: str, action: str) -> Operation[Card]:
    """``POST /cards/{cardId}/block|unblock|activation`` (no body)."""
    return _op("POST", _card(card_id) + "/" + action, _one(Card))


def set_pin_operation(card_id: str, pin: str | Secret) -> Operation[Card]:
    """``PUT /cards/{cardId}/pin`` (4 digits, kept as a :class:`Secret`)."""
    text = pin.reveal() if isinstance(pin, Secret) else pin
    body = {"pin": Secret(_check_pattern(text, "pin", _PIN, "4 digits"))}
    return _op("PUT", _card(card_id) + "/pin", _one(Card), json=body)


def movements_operation(
    card_id: str, start_date: date | str | None = None, end_date: date | str | None = None
) -> Operation[list[Movement]]:
    """``GET /cards/{cardId}/movements[?startDate&endDate]``."""
    params: dict[str, str] = {}
    if start_date is not None:
        params["startDate"] = check_date(start_date, "start_date")
    if end_date is not None:
        params["endDate"] = check_date(end_date, "end_date")
    return _op("GET", _card(card_id) + "/movements", _many(Movement), params=params or None)


def cvv_view_token_operation(card_id: str) -> Operation[CvvViewToken]:
    """``POST /cards/{cardId}/cvv/view-token`` (user bearer, ``checkCvv``)."""
    return _op("POST", _card(card_id) + "/cvv/view-token", _one(CvvViewToken), **_ONCE)


def cvv_operation(card_id: str, view_token: str | Secret | CvvViewToken) -> Operation[Cvv]:
    """``GET /cards/{cardId}/cvv`` with ``X-View-Token`` (answers once: never replayed)."""
    text = view_token.view_token if isinstance(view_token, CvvViewToken) else view_token
    raw = text.reveal() if isinstance(text, Secret) else text
    header = Secret(check_str(raw, "view_token", max_length=4096))
    return _op("GET", _card(card_id) + "/cvv", _one(Cvv), headers={"X-View-Token": header}, **_ONCE)


def funds_operation(
    card_id: str, operation: str, amount: Decimal | int | str, reference: str | None = None
) -> Operation[FundsResult]:
    """``POST /cards/{cardId}/funds {operation, amount, reference?}`` (D41)."""
    body: dict[str, Any] = {"operation": operation, "amount": check_wallet_amount(amount)}
    if check_optional_str(reference, "reference") is not None:
        body["reference"] = reference
    return _op("POST", _card(card_id) + "/funds", _one(FundsResult), json=body)


def transfer_operation(
    from_card_id: str, to_card_id: str, amount: Decimal | int | str, description: str | None = None
) -> Operation[TransferResult]:
    """``POST /cards/{cardId}/transfers {toCardId, amount, description?}`` (D41)."""
    body: dict[str, Any] = {
        "toCardId": check_str(to_card_id, "to_card_id"),
        "amount": check_wallet_amount(amount),
    }
    if check_optional_str(description, "description") is not None:
        body["description"] = description
    return _op("POST", _card(from_card_id, "from_card_id") + "/transfers", _one(TransferResult), json=body)


def grant_permissions_operation(
    card_id: str, user_id: str, permissions: Sequence[str | CardPermissionType]
) -> Operation[PermissionRecord]:
    """``POST /cards/{cardId}/users/{authUserId}/permissions``."""
    path = _card(card_id) + "/users/" + path_segment(user_id, "user_id") + "/permissions"
    return _op("POST", path, _one(PermissionRecord), json={"permissions": check_permissions(permissions)})


def update_permissions_operation(
    permission_id: str, permissions: Sequence[str | CardPermissionType]
) -> Operation[PermissionRecord]:
    """``PATCH /cards/users/permissions/{id}`` (sets the list: replayed like a PUT)."""
    path = "/cards/users/permissions/" + path_segment(permission_id, "permission_id")
    body = {"permissions": check_permissions(permissions)}
    return _op("PATCH", path, _one(PermissionRecord), json=body, idempotent=True)


def user_permissions_operation(user_id: str) -> Operation[list[PermissionRecord]]:
    """``GET /cards/users/{authUserId}/permissions``."""
    path = "/cards/users/" + path_segment(user_id, "user_id") + "/permissions"
    return _op("GET", path, _many(PermissionRecord))


def card_permissions_operation(card_id: str) -> Operation[list[PermissionRecord]]:
    """``GET /cards/{cardId}/users/permissions``."""
    return _op("GET", _card(card_id) + "/users/permissions", _many(PermissionRecord))


def card_user_permissions_operation(card_id: str, user_id: str) -> Operation[list[PermissionRecord]]:
    """``GET /cards/{cardId}/users/{authUserId}/permissions``."""
    path = _card(card_id) + "/users/" + path_segment(user_id, "user_id") + "/permissions"
    return _op("GET", path, _many(PermissionRecord))


def user_view_key(session: UserSession) -> str:
    """The (private) store key of a user session's view."""
    return f"user|{session.user_id}|{id(session):x}"



def _session(value: object) -> UserSession:
    if not isinstance(value, UserSession):
        raise ValidationError("session", "must be a paysdk.UserSession (from wallet.users.login)")
    return value


# unasync: begin
class AsyncWalletResource:
    """Base of the wallet resources: sends operations with the right bearer token.

    ``tokens`` ``None``: the client's application token; otherwise a user session's manager.
    """

    def __init__(self, client: AsyncClient, tokens: AsyncTokenManager | None = None) -> None:
        self._client = client
        self._tokens = tokens

    async def _call(self, op: Operation[T], recover: frozenset[int] = RECOVERABLE_CODES) -> T:
        # ``recover``: the 401 codes that mean "the bearer needs renewing" for this call.
        if self._tokens is None:
            return await self._client._authed_request(op, self._client._wallet_manager(), recover)
        user_op = dataclasses.replace(op, auth="wallet_user")
        return await self._client._authed_request(user_op, self._tokens, recover)


class AsyncWalletUsers(AsyncWalletResource):
    """Wallet users (``client.wallet.users``): sessions, one-time codes, password reset.

    Every call sends the application token (spec 5.3.6).
    """

    async def login(
        self,
        username: str,
        password: str | Secret,
        merchant: str | None = None,
        access_token_ttl: int | None = None,
        refresh_token_ttl: int | None = None,
    ) -> UserSession:
        """Log a user in (``POST /users/login``); returns the :class:`~paysdk.UserSession`.

        ``access_token_ttl``/``refresh_token_ttl`` (seconds, bounds in D34) are sent as
        ``accessTokenTtl``/``refreshTokenTtl``. Wrong credentials: :class:`~paysdk.InvalidCredentialsError`.
        """
        op = user_login_operation(username, password, merchant, access_token_ttl, refresh_token_ttl)
        pair = await self._call(op)
        return UserSession.from_pair(pair, now=self._client._now())

    async def refresh(
        self,
        session: UserSession,
        access_token_ttl: int | None = None,
        refresh_token_ttl: int | None = None,
    ) -> UserSession:
        """Rotate the session's tokens (``POST /users/refresh``). Keep the returned session and
        discard ``session``: its refresh token is spent, and presenting it again revokes the family
        (:class:`~paysdk.RefreshTokenReusedError`)."""
        op = user_refresh_operation(
            _session(session).refresh_token,
            access_token_ttl=_check_ttl(access_token_ttl, "access_token_ttl"),
            refresh_token_ttl=_check_ttl(refresh_token_ttl, "refresh_token_ttl"),
        )
        # A 7104/7105 here is about the session's refresh token, not the application bearer.
        pair = await self._call(op, REPLAY_CODES)
        return UserSession.from_pair(pair, now=self._client._now())

    async def logout(self, session: UserSession) -> None:
        """End the session (``POST /users/logout``, D38): its tokens stop working at once."""
        await self._call(user_logout_operation(session), REPLAY_CODES)

    async def request_otp(self, email: str, purpose: str = "password_reset") -> OtpSent:
        """Ask for a 6-digit code by email (the answer does not reveal whether the email exists)."""
        return await self._call(otp_request_operation(email, purpose))

    async def verify_otp(self, email: str, otp: str, purpose: str = "password_reset") -> OtpVerified:
        """Check a code; for ``password_reset`` the answer carries the reset ``token`` (masked repr)."""
        return await self._call(otp_verify_operation(email, otp, purpose))

    async def reset_password(
        self, email: str, new_password: str | Secret, confirm_password: str | Secret, token: str | Secret
    ) -> PasswordResetResult:
        """Set a new password with the reset token of :meth:`verify_otp`; every session of the user ends."""
        return await self._call(password_reset_operation(email, new_password, confirm_password, token))


class AsyncCards(AsyncWalletResource):
    """Cards (``wallet.cards``): list, issue, link, details, alias, status, PIN, movements, CVV."""

    async def list(self, user_id: str) -> builtins.list[Card]:
        """The user's cards (``getCards``)."""
        return await self._call(list_cards_operation(user_id))

    async def summary(self, user_id: str, start_date: date | str, end_date: date | str) -> CardSummary:
        """Per-card figures for a period (dates ``YYYY-MM-DD``, inclusive; ``getAllTransfersByDate``)."""
        return await self._call(card_summary_operation(user_id, start_date, end_date))

    async def link(self, user_id: str, card_id: str, client_id: str) -> Card:
        """Link an issued, unassigned card to the user (application token; starts ``inactive``)."""
        return await self._call(link_card_operation(user_id, card_id, client_id))

    async def issue_virtual(
        self, user_id: str, currency: str | Currency | None = None, alias: str | None = None
    ) -> Card:
        """Issue a virtual card (``active``, balance 0) for the user."""
        return await self._call(issue_virtual_operation(user_id, currency, alias))

    async def link_external(self, user_id: str, token: str | Secret, alias: str | None = None) -> Card:
        """Link a third-party card through its temporary linking token."""
        return await self._call(link_external_operation(user_id, token, alias))

    async def get(self, card_id: str) -> Card:
        """Card details (``checkCard``)."""
        return await self._call(get_card_operation(card_id))

    async def update_alias(self, card_id: str, alias: str) -> Card:
        """Rename the card (``updateAlias``)."""
        return await self._call(update_alias_operation(card_id, alias))

    async def block(self, card_id: str) -> Card:
        """Block the card (``updateStatus``)."""
        return await self._call(card_action_operation(card_id, "block"))

    async def unblock(self, card_id: str) -> Card:
        """Unblock the card (``updateStatus``)."""
        return await self._call(card_action_operation(card_id, "unblock"))

    async def activate(self, card_id: str) -> Card:
        """Activate a linked physical card (``activation``)."""
        return await self._call(card_action_operation(card_id, "activation"))

    async def set_pin(self, card_id: str, pin: str | Secret) -> Card:
        """Set the 4-digit PIN (``assignPIN``); the PIN never appears in a repr or log."""
        return await self._call(set_pin_operation(card_id, pin))

    async def movements(
        self, card_id: str, start_date: date | str | None = None, end_date: date | str | None = None
    ) -> builtins.list[Movement]:
        """The card's balance changes, optionally between two dates (``getAllTransfersByDate``)."""
        return await self._call(movements_operation(card_id, start_date, end_date))

    async def cvv_view_token(self, card_id: str) -> CvvViewToken:
        """Step 1 of reading the CVV (a user session with ``checkCvv``; see :meth:`AsyncWallet.as_user`)."""
        return await self._call(cvv_view_token_operation(card_id))

    async def cvv(self, card_id: str, view_token: str | Secret | CvvViewToken) -> Cvv:
        """Step 2: the CVV, once per view token (masked repr). Application tokens get
        :class:`~paysdk.CvvNeedsUserSessionError`."""
        return await self._call(cvv_operation(card_id, view_token))


class AsyncFunds(AsyncWalletResource):
    """Issuer funding (``wallet.funds``, application token): amounts ``Decimal``/``int``/str, 4 places."""

    async def add(
        self, card_id: str, amount: Decimal | int | str, reference: str | None = None
    ) -> FundsResult:
        """Add funds to the card."""
        return await self._call(funds_operation(card_id, "add", amount, reference))

    async def withdraw(
        self, card_id: str, amount: Decimal | int | str, reference: str | None = None
    ) -> FundsResult:
        """Withdraw funds; more than the available balance raises :class:`~paysdk.InsufficientFundsError`."""
        return await self._call(funds_operation(card_id, "withdraw", amount, reference))


class AsyncTransfers(AsyncWalletResource):
    """Card-to-card transfers (``wallet.transfers``)."""

    async def create(
        self,
        from_card_id: str,
        to_card_id: str,
        amount: Decimal | int | str,
        description: str | None = None,
    ) -> TransferResult:
        """Move ``amount`` between two cards of one currency, atomically (``transferBetweenCards``)."""
        return await self._call(transfer_operation(from_card_id, to_card_id, amount, description))


class AsyncPermissions(AsyncWalletResource):
    """Card permissions of authorized users (``wallet.permissions``, D40)."""

    async def grant(
        self, card_id: str, user_id: str, permissions: Sequence[str | CardPermissionType]
    ) -> PermissionRecord:
        """Grant ``permissions`` on the card to a user (application token or the card's owner)."""
        return await self._call(grant_permissions_operation(card_id, user_id, permissions))

    async def update(
        self, permission_id: str, permissions: Sequence[str | CardPermissionType]
    ) -> PermissionRecord:
        """Replace the permissions of a record."""
        return await self._call(update_permissions_operation(permission_id, permissions))

    async def list_for_user(self, user_id: str) -> builtins.list[PermissionRecord]:
        """Every permission record of a user."""
        return await self._call(user_permissions_operation(user_id))

    async def list_for_card(self, card_id: str) -> builtins.list[PermissionRecord]:
        """Every permission record on a card."""
        return await self._call(card_permissions_operation(card_id))

    async def list(self, card_id: str, user_id: str) -> builtins.list[PermissionRecord]:
        """One user's permission records on one card."""
        return await self._call(card_user_permissions_operation(card_id, user_id))


class AsyncWalletUserView:
    """The wallet as one user sees it (``client.wallet.as_user(session)``).

    Its ``cards``, ``funds``, ``transfers`` and ``permissions`` send the user's access token. It is
    refreshed with the session's refresh token by the same single-flight machinery as the application
    token (a user session cannot log in again: a dead session raises the typed error, e.g.
    :class:`~paysdk.TokenRevokedError`). :attr:`session` is the current, possibly rotated, session.

    Without ``store`` the pair lives in this view only (a private :class:`~paysdk.MemoryTokenStore`).
    With a shared ``store`` (:class:`~paysdk.FileTokenStore`, :class:`~paysdk.RedisTokenStore`, ...)
    under ``key`` (default :meth:`AsyncWallet.user_key` of the session's user id), the pair lives in
    the store: ``session`` is written to it on first use, under ``store.lock(key)``, unless the store
    already holds a pair obtained later (its own rotation, saved by another holder); every refreshed
    pair is saved BEFORE it is used, and holders of the same key refresh only once between them. With
    a store and a key, ``session`` may be left out: the view acts as whatever session the store holds.
    """

    def __init__(
        self,
        client: AsyncClient,
        session: UserSession | None,
        store: TokenStore | AsyncTokenStore | None = None,
        key: str | None = None,
    ) -> None:
        via = client._wallet_manager()
        if store is None:
            if key is not None:
                raise ValidationError("key", "names an entry of a shared store: pass store= too")
            session = _session(session)
            private = MemoryTokenStore()
            key = user_view_key(session)
            private.save(key, session.stored)
            self._user_id: str | None = session.user_id
            self._tokens = AsyncTokenManager(
                client,
                WALLET_USER_TOKENS,
                key=key,
                store=AsyncStoreAdapter.of(private),
                via=via,
                initial=session.stored,
            )
        else:
            if session is not None:
                session = _session(session)
            if key is None:
                if session is None:
                    raise ValidationError("key", "is needed when no session is given")
                key = user_key(via.key, session.user_id)
            self._user_id = session.user_id if session is not None else None
            self._tokens = AsyncTokenManager(
                client,
                WALLET_USER_TOKENS,
                key=check_str(key, "key"),
                store=AsyncStoreAdapter.of(store),
                via=via,
                seed=session.stored if session is not None else None,
            )
        self.cards = AsyncCards(client, self._tokens)
        self.funds = AsyncFunds(client, self._tokens)
        self.transfers = AsyncTransfers(client, self._tokens)
        self.permissions = AsyncPermissions(client, self._tokens)

    @property
    def key(self) -> str:
        """The store key of this view's session."""
        return self._tokens.key

    @property
    def session(self) -> UserSession:
        """The current session (after an automatic refresh, the rotated one). A view on a store
        without a given session has none before its first call (or :meth:`stored_session`)."""
        current = self._tokens.current
        if current is None:
            raise ValidationError("session", "not loaded yet: make a call or await stored_session() first")
        return UserSession.from_stored(current)

    async def stored_session(self) -> UserSession | None:
        """The session in the store now (``session`` given to the view written first, as on first use);
        ``None`` when there is none. Nothing is refreshed or sent."""
        stored = await self._tokens.stored()
        return None if stored is None else UserSession.from_stored(stored)

    async def forget_tokens(self) -> bool:
        """Remove the session's pair from the store (after :meth:`AsyncWalletUsers.logout`, or to
        drop a dead session); whether one was stored. The server is not told: log out first."""
        return await self._tokens.forget()

    def __repr__(self) -> str:
        current = self._tokens.current
        user_id = UserSession.from_stored(current).user_id if current is not None else self._user_id
        return f"{type(self).__name__}(user_id={user_id!r}, key={self._tokens.key!r})"


class AsyncWallet(AsyncWalletResource):
    """The wallet (``client.wallet``): application login, users, cards, funds, transfers, permissions.

    Needs ``Client(wallet=paysdk.WalletCredentials(merchant, private_key))``; the application logs
    in on the first call (or explicitly with :meth:`login`).
    """

    def __init__(self, client: AsyncClient) -> None:
        super().__init__(client)
        self.users = AsyncWalletUsers(client)
        self.cards = AsyncCards(client)
        self.funds = AsyncFunds(client)
        self.transfers = AsyncTransfers(client)
        self.permissions = AsyncPermissions(client)

    async def login(self) -> TokenPair:
        """Log the application in now (``POST /auth/login``), store the pair and return it (masked
        repr). Refused keys raise :class:`~paysdk.InvalidSignatureError`,
        :class:`~paysdk.KeysExpiredError` or :class:`~paysdk.UnknownMerchantError`."""
        stored = await self._client._wallet_manager().login()
        return pair_from_stored(stored)

    async def stored_tokens(self) -> StoredTokens | None:
        """The application's token pair as the client's ``token_store`` holds it now (``None``: not
        logged in). Read under the store's lock; nothing is refreshed or sent. Masked repr."""
        return await self._client._wallet_manager().stored()

    async def forget_tokens(self) -> bool:
        """Remove the application's token pair from the ``token_store`` (the next call logs in again);
        whether one was stored. The server is not told (application tokens simply expire)."""
        return await self._client._wallet_manager().forget()

    def user_key(self, name: str) -> str:
        """The store key of the user session ``name`` (a user id, or any name of yours, such as a
        username) for this client's environment and merchant (as :func:`paysdk.wallet_store_key`);
        :meth:`as_user`'s default is ``user_key(session.user_id)``."""
        return user_key(self._client._wallet_manager().key, check_str(name, "name"))

    async def jwks(self) -> Jwks:
        """The public keys the wallet signs tokens with (``GET /.well-known/jwks.json``, no token)."""
        return await self._client._request(jwks_operation())

    def as_user(
        self,
        session: UserSession | None = None,
        *,
        store: TokenStore | AsyncTokenStore | None = None,
        key: str | None = None,
    ) -> AsyncWalletUserView:
        """A view whose calls carry ``session``'s access token, kept in ``store`` under ``key`` when
        given (see :class:`AsyncWalletUserView`)."""
        return AsyncWalletUserView(self._client, session, store, key)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class WalletResource:
    """Base of the wallet resources: sends operations with the right bearer token.

    ``tokens`` ``None``: the client's application token; otherwise a user session's manager.
    """

    def __init__(self, client: Client, tokens: TokenManager | None = None) -> None:
        self._client = client
        self._tokens = tokens

    def _call(self, op: Operation[T], recover: frozenset[int] = RECOVERABLE_CODES) -> T:
        # ``recover``: the 401 codes that mean "the bearer needs renewing" for this call.
        if self._tokens is None:
            return self._client._authed_request(op, self._client._wallet_manager(), recover)
        user_op = dataclasses.replace(op, auth="wallet_user")
        return self._client._authed_request(user_op, self._tokens, recover)


class WalletUsers(WalletResource):
    """Wallet users (``client.wallet.users``): sessions, one-time codes, password reset.

    Every call sends the application token (spec 5.3.6).
    """

    def login(
        self,
        username: str,
        password: str | Secret,
        merchant: str | None = None,
        access_token_ttl: int | None = None,
        refresh_token_ttl: int | None = None,
    ) -> UserSession:
        """Log a user in (``POST /users/login``); returns the :class:`~paysdk.UserSession`.

        ``access_token_ttl``/``refresh_token_ttl`` (seconds, bounds in D34) are sent as
        ``accessTokenTtl``/``refreshTokenTtl``. Wrong credentials: :class:`~paysdk.InvalidCredentialsError`.
        """
        op = user_login_operation(username, password, merchant, access_token_ttl, refresh_token_ttl)
        pair = self._call(op)
        return UserSession.from_pair(pair, now=self._client._now())

    def refresh(
        self,
        session: UserSession,
        access_token_ttl: int | None = None,
        refresh_token_ttl: int | None = None,
    ) -> UserSession:
        """Rotate the session's tokens (``POST /users/refresh``). Keep the returned session and
        discard ``session``: its refresh token is spent, and presenting it again revokes the family
        (:class:`~paysdk.RefreshTokenReusedError`)."""
        op = user_refresh_operation(
            _session(session).refresh_token,
            access_token_ttl=_check_ttl(access_token_ttl, "access_token_ttl"),
            refresh_token_ttl=_check_ttl(refresh_token_ttl, "refresh_token_ttl"),
        )
        # A 7104/7105 here is about the session's refresh token, not the application bearer.
        pair = self._call(op, REPLAY_CODES)
        return UserSession.from_pair(pair, now=self._client._now())

    def logout(self, session: UserSession) -> None:
        """End the session (``POST /users/logout``, D38): its tokens stop working at once."""
        self._call(user_logout_operation(session), REPLAY_CODES)

    def request_otp(self, email: str, purpose: str = "password_reset") -> OtpSent:
        """Ask for a 6-digit code by email (the answer does not reveal whether the email exists)."""
        return self._call(otp_request_operation(email, purpose))

    def verify_otp(self, email: str, otp: str, purpose: str = "password_reset") -> OtpVerified:
        """Check a code; for ``password_reset`` the answer carries the reset ``token`` (masked repr)."""
        return self._call(otp_verify_operation(email, otp, purpose))

    def reset_password(
        self, email: str, new_password: str | Secret, confirm_password: str | Secret, token: str | Secret
    ) -> PasswordResetResult:
        """Set a new password with the reset token of :meth:`verify_otp`; every session of the user ends."""
        return self._call(password_reset_operation(email, new_password, confirm_password, token))


class Cards(WalletResource):
    """Cards (``wallet.cards``): list, issue, link, details, alias, status, PIN, movements, CVV."""

    def list(self, user_id: str) -> builtins.list[Card]:
        """The user's cards (``getCards``)."""
        return self._call(list_cards_operation(user_id))

    def summary(self, user_id: str, start_date: date | str, end_date: date | str) -> CardSummary:
        """Per-card figures for a period (dates ``YYYY-MM-DD``, inclusive; ``getAllTransfersByDate``)."""
        return self._call(card_summary_operation(user_id, start_date, end_date))

    def link(self, user_id: str, card_id: str, client_id: str) -> Card:
        """Link an issued, unassigned card to the user (application token; starts ``inactive``)."""
        return self._call(link_card_operation(user_id, card_id, client_id))

    def issue_virtual(
        self, user_id: str, currency: str | Currency | None = None, alias: str | None = None
    ) -> Card:
        """Issue a virtual card (``active``, balance 0) for the user."""
        return self._call(issue_virtual_operation(user_id, currency, alias))

    def link_external(self, user_id: str, token: str | Secret, alias: str | None = None) -> Card:
        """Link a third-party card through its temporary linking token."""
        return self._call(link_external_operation(user_id, token, alias))

    def get(self, card_id: str) -> Card:
        """Card details (``checkCard``)."""
        return self._call(get_card_operation(card_id))

    def update_alias(self, card_id: str, alias: str) -> Card:
        """Rename the card (``updateAlias``)."""
        return self._call(update_alias_operation(card_id, alias))

    def block(self, card_id: str) -> Card:
        """Block the card (``updateStatus``)."""
        return self._call(card_action_operation(card_id, "block"))

    def unblock(self, card_id: str) -> Card:
        """Unblock the card (``updateStatus``)."""
        return self._call(card_action_operation(card_id, "unblock"))

    def activate(self, card_id: str) -> Card:
        """Activate a linked physical card (``activation``)."""
        return self._call(card_action_operation(card_id, "activation"))

    def set_pin(self, card_id: str, pin: str | Secret) -> Card:
        """Set the 4-digit PIN (``assignPIN``); the PIN never appears in a repr or log."""
        return self._call(set_pin_operation(card_id, pin))

    def movements(
        self, card_id: str, start_date: date | str | None = None, end_date: date | str | None = None
    ) -> builtins.list[Movement]:
        """The card's balance changes, optionally between two dates (``getAllTransfersByDate``)."""
        return self._call(movements_operation(card_id, start_date, end_date))

    def cvv_view_token(self, card_id: str) -> CvvViewToken:
        """Step 1 of reading the CVV (a user session with ``checkCvv``; see :meth:`Wallet.as_user`)."""
        return self._call(cvv_view_token_operation(card_id))

    def cvv(self, card_id: str, view_token: str | Secret | CvvViewToken) -> Cvv:
        """Step 2: the CVV, once per view token (masked repr). Application tokens get
        :class:`~paysdk.CvvNeedsUserSessionError`."""
        return self._call(cvv_operation(card_id, view_token))


class Funds(WalletResource):
    """Issuer funding (``wallet.funds``, application token): amounts ``Decimal``/``int``/str, 4 places."""

    def add(
        self, card_id: str, amount: Decimal | int | str, reference: str | None = None
    ) -> FundsResult:
        """Add funds to the card."""
        return self._call(funds_operation(card_id, "add", amount, reference))

    def withdraw(
        self, card_id: str, amount: Decimal | int | str, reference: str | None = None
    ) -> FundsResult:
        """Withdraw funds; more than the available balance raises :class:`~paysdk.InsufficientFundsError`."""
        return self._call(funds_operation(card_id, "withdraw", amount, reference))


class Transfers(WalletResource):
    """Card-to-card transfers (``wallet.transfers``)."""

    def create(
        self,
        from_card_id: str,
        to_card_id: str,
        amount: Decimal | int | str,
        description: str | None = None,
    ) -> TransferResult:
        """Move ``amount`` between two cards of one currency, atomically (``transferBetweenCards``)."""
        return self._call(transfer_operation(from_card_id, to_card_id, amount, description))


class Permissions(WalletResource):
    """Card permissions of authorized users (``wallet.permissions``, D40)."""

    def grant(
        self, card_id: str, user_id: str, permissions: Sequence[str | CardPermissionType]
    ) -> PermissionRecord:
        """Grant ``permissions`` on the card to a user (application token or the card's owner)."""
        return self._call(grant_permissions_operation(card_id, user_id, permissions))

    def update(
        self, permission_id: str, permissions: Sequence[str | CardPermissionType]
    ) -> PermissionRecord:
        """Replace the permissions of a record."""
        return self._call(update_permissions_operation(permission_id, permissions))

    def list_for_user(self, user_id: str) -> builtins.list[PermissionRecord]:
        """Every permission record of a user."""
        return self._call(user_permissions_operation(user_id))

    def list_for_card(self, card_id: str) -> builtins.list[PermissionRecord]:
        """Every permission record on a card."""
        return self._call(card_permissions_operation(card_id))

    def list(self, card_id: str, user_id: str) -> builtins.list[PermissionRecord]:
        """One user's permission records on one card."""
        return self._call(card_user_permissions_operation(card_id, user_id))


class WalletUserView:
    """The wallet as one user sees it (``client.wallet.as_user(session)``).

    Its ``cards``, ``funds``, ``transfers`` and ``permissions`` send the user's access token. It is
    refreshed with the session's refresh token by the same single-flight machinery as the application
    token (a user session cannot log in again: a dead session raises the typed error, e.g.
    :class:`~paysdk.TokenRevokedError`). :attr:`session` is the current, possibly rotated, session.

    Without ``store`` the pair lives in this view only (a private :class:`~paysdk.MemoryTokenStore`).
    With a shared ``store`` (:class:`~paysdk.FileTokenStore`, :class:`~paysdk.RedisTokenStore`, ...)
    under ``key`` (default :meth:`Wallet.user_key` of the session's user id), the pair lives in
    the store: ``session`` is written to it on first use, under ``store.lock(key)``, unless the store
    already holds a pair obtained later (its own rotation, saved by another holder); every refreshed
    pair is saved BEFORE it is used, and holders of the same key refresh only once between them. With
    a store and a key, ``session`` may be left out: the view acts as whatever session the store holds.
    """

    def __init__(
        self,
        client: Client,
        session: UserSession | None,
        store: TokenStore | TokenStore | None = None,
        key: str | None = None,
    ) -> None:
        via = client._wallet_manager()
        if store is None:
            if key is not None:
                raise ValidationError("key", "names an entry of a shared store: pass store= too")
            session = _session(session)
            private = MemoryTokenStore()
            key = user_view_key(session)
            private.save(key, session.stored)
            self._user_id: str | None = session.user_id
            self._tokens = TokenManager(
                client,
                WALLET_USER_TOKENS,
                key=key,
                store=StoreAdapter.of(private),
                via=via,
                initial=session.stored,
            )
        else:
            if session is not None:
                session = _session(session)
            if key is None:
                if session is None:
                    raise ValidationError("key", "is needed when no session is given")
                key = user_key(via.key, session.user_id)
            self._user_id = session.user_id if session is not None else None
            self._tokens = TokenManager(
                client,
                WALLET_USER_TOKENS,
                key=check_str(key, "key"),
                store=StoreAdapter.of(store),
                via=via,
                seed=session.stored if session is not None else None,
            )
        self.cards = Cards(client, self._tokens)
        self.funds = Funds(client, self._tokens)
        self.transfers = Transfers(client, self._tokens)
        self.permissions = Permissions(client, self._tokens)

    @property
    def key(self) -> str:
        """The store key of this view's session."""
        return self._tokens.key

    @property
    def session(self) -> UserSession:
        """The current session (after an automatic refresh, the rotated one). A view on a store
        without a given session has none before its first call (or :meth:`stored_session`)."""
        current = self._tokens.current
        if current is None:
            raise ValidationError("session", "not loaded yet: make a call or stored_session() first")
        return UserSession.from_stored(current)

    def stored_session(self) -> UserSession | None:
        """The session in the store now (``session`` given to the view written first, as on first use);
        ``None`` when there is none. Nothing is refreshed or sent."""
        stored = self._tokens.stored()
        return None if stored is None else UserSession.from_stored(stored)

    def forget_tokens(self) -> bool:
        """Remove the session's pair from the store (after :meth:`WalletUsers.logout`, or to
        drop a dead session); whether one was stored. The server is not told: log out first."""
        return self._tokens.forget()

    def __repr__(self) -> str:
        current = self._tokens.current
        user_id = UserSession.from_stored(current).user_id if current is not None else self._user_id
        return f"{type(self).__name__}(user_id={user_id!r}, key={self._tokens.key!r})"


class Wallet(WalletResource):
    """The wallet (``client.wallet``): application login, users, cards, funds, transfers, permissions.

    Needs ``Client(wallet=paysdk.WalletCredentials(merchant, private_key))``; the application logs
    in on the first call (or explicitly with :meth:`login`).
    """

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.users = WalletUsers(client)
        self.cards = Cards(client)
        self.funds = Funds(client)
        self.transfers = Transfers(client)
        self.permissions = Permissions(client)

    def login(self) -> TokenPair:
        """Log the application in now (``POST /auth/login``), store the pair and return it (masked
        repr). Refused keys raise :class:`~paysdk.InvalidSignatureError`,
        :class:`~paysdk.KeysExpiredError` or :class:`~paysdk.UnknownMerchantError`."""
        stored = self._client._wallet_manager().login()
        return pair_from_stored(stored)

    def stored_tokens(self) -> StoredTokens | None:
        """The application's token pair as the client's ``token_store`` holds it now (``None``: not
        logged in). Read under the store's lock; nothing is refreshed or sent. Masked repr."""
        return self._client._wallet_manager().stored()

    def forget_tokens(self) -> bool:
        """Remove the application's token pair from the ``token_store`` (the next call logs in again);
        whether one was stored. The server is not told (application tokens simply expire)."""
        return self._client._wallet_manager().forget()

    def user_key(self, name: str) -> str:
        """The store key of the user session ``name`` (a user id, or any name of yours, such as a
        username) for this client's environment and merchant (as :func:`paysdk.wallet_store_key`);
        :meth:`as_user`'s default is ``user_key(session.user_id)``."""
        return user_key(self._client._wallet_manager().key, check_str(name, "name"))

    def jwks(self) -> Jwks:
        """The public keys the wallet signs tokens with (``GET /.well-known/jwks.json``, no token)."""
        return self._client._request(jwks_operation())

    def as_user(
        self,
        session: UserSession | None = None,
        *,
        store: TokenStore | TokenStore | None = None,
        key: str | None = None,
    ) -> WalletUserView:
        """A view whose calls carry ``session``'s access token, kept in ``store`` under ``key`` when
        given (see :class:`WalletUserView`)."""
        return WalletUserView(self._client, session, store, key)
# unasync: generated end
