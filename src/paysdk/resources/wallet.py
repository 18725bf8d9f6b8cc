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

import dataclasses
import functools
import re
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar, Unpack

from paysdk._errors import ValidationError
from paysdk._pipeline import (
    APIResponse,
    CallOptions,
    Operation,
    PostCallOptions,
    apply_call_options,
    data_envelope,
    list_of,
    no_result,
)
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
from paysdk.contracts.common import Currency, CurrencyCode
from paysdk.contracts.wallet import (
    Card,
    CardPermissionName,
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
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource, operation
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


#: The family's operations (:func:`~paysdk.resources._base.operation` with its defaults).
_op = functools.partial(operation, base="wallet", auth="wallet_app")


def _one(model: Any) -> Any:
    return data_envelope(model.model_validate)


def _many(model: Any) -> Any:
    return data_envelope(list_of(model.model_validate))


#: Never replayed once sent: single-use codes and tokens, and no idempotency key.
_ONCE: dict[str, Any] = {"idempotent": False, "uses_idempotency_keys": False}


def jwks_operation(**options: Unpack[CallOptions]) -> Operation[Jwks]:
    """The public keys the wallet signs tokens with (``GET /.well-known/jwks.json``, bare JWKS, no token)."""
    return _op("GET", "/.well-known/jwks.json", Jwks.model_validate, auth="none", options=options)


def user_login_operation(
    username: str,
    password: str | Secret,
    merchant: str | None = None,
    access_token_ttl: int | None = None,
    refresh_token_ttl: int | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[TokenPair]:
    """Log a user in (``POST /users/login``, application bearer); returns the :class:`~paysdk.UserSession`.

    The password stays a :class:`Secret` until sent. ``access_token_ttl``/``refresh_token_ttl``
    (seconds, bounds in D34) are sent as ``accessTokenTtl``/``refreshTokenTtl``. Wrong credentials:
    :class:`~paysdk.InvalidCredentialsError`. Never replayed once sent.
    """
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
    return _op("POST", "/users/login", _one(TokenPair), json=body, options=options, **_ONCE)


def user_logout_operation(session: UserSession, **options: Unpack[PostCallOptions]) -> Operation[None]:
    """End the session (``POST /users/logout``, application bearer, the session named by
    ``X-User-Token``, D38): its tokens stop working at once."""
    if not isinstance(session, UserSession):
        raise ValidationError("session", "must be a paysdk.UserSession")
    headers = {"X-User-Token": session.access_token}
    return _op("POST", "/users/logout", no_result, headers=headers, options=options, **_ONCE)


def session_refresh_operation(
    session: UserSession,
    access_token_ttl: int | None = None,
    refresh_token_ttl: int | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[TokenPair]:
    """Rotate the session's tokens (``POST /users/refresh``). Keep the returned session and discard
    ``session``: its refresh token is spent, and presenting it again revokes the family
    (:class:`~paysdk.RefreshTokenReusedError`)."""
    op = user_refresh_operation(
        _session(session).refresh_token,
        access_token_ttl=_check_ttl(access_token_ttl, "access_token_ttl"),
        refresh_token_ttl=_check_ttl(refresh_token_ttl, "refresh_token_ttl"),
    )
    return apply_call_options(op, options)


def otp_request_operation(
    email: str, purpose: str = "password_reset", **options: Unpack[PostCallOptions]
) -> Operation[OtpSent]:
    """Ask for a 6-digit code by email (``POST /users/auth/otp``; the answer does not reveal whether
    the email exists). ``purpose`` is free text (spec 5.3.8); ``password_reset`` is the documented one."""
    body = {"email": check_email(email), "purpose": check_str(purpose, "purpose")}
    return _op("POST", "/users/auth/otp", _one(OtpSent), json=body, options=options)


def otp_verify_operation(
    email: str, otp: str, purpose: str = "password_reset", **options: Unpack[CallOptions]
) -> Operation[OtpVerified]:
    """Check a code (``PUT /users/auth/otp``, never replayed: a code is single-use); for
    ``password_reset`` the answer carries the reset ``token`` (masked repr)."""
    code = Secret(_check_pattern(otp, "otp", _OTP, "the 6-digit code"))
    body = {"email": check_email(email), "otp": code, "purpose": check_str(purpose, "purpose")}
    return _op("PUT", "/users/auth/otp", _one(OtpVerified), json=body, options=options, **_ONCE)


def password_reset_operation(
    email: str,
    new_password: str | Secret,
    confirm_password: str | Secret,
    token: str | Secret,
    **options: Unpack[PostCallOptions],
) -> Operation[PasswordResetResult]:
    """Set a new password with the reset token of ``verify_otp`` (``POST /users/auth/password/reset``,
    never replayed: the reset token is single-use); every session of the user ends."""
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
    path = "/users/auth/password/reset"
    return _op("POST", path, _one(PasswordResetResult), json=body, options=options, **_ONCE)


def _user(user_id: str) -> str:
    return "/users/" + path_segment(user_id, "user_id")


def _card(card_id: str, field: str = "card_id") -> str:
    return "/cards/" + path_segment(card_id, field)


def list_cards_operation(user_id: str, **options: Unpack[CallOptions]) -> Operation[list[Card]]:
    """The user's cards (``GET /users/{userId}/cards``, ``getCards``)."""
    return _op("GET", _user(user_id) + "/cards", _many(Card), options=options)


def card_summary_operation(
    user_id: str, start_date: date | str, end_date: date | str, **options: Unpack[CallOptions]
) -> Operation[CardSummary]:
    """Per-card figures for a period (``GET /users/{userId}/cards/summary?startDate&endDate``; dates
    ``YYYY-MM-DD``, inclusive; ``getAllTransfersByDate``)."""
    params = {"startDate": check_date(start_date, "start_date"), "endDate": check_date(end_date, "end_date")}
    return _op("GET", _user(user_id) + "/cards/summary", _one(CardSummary), params=params, options=options)


def link_card_operation(
    user_id: str, card_id: str, client_id: str, **options: Unpack[PostCallOptions]
) -> Operation[Card]:
    """Link an issued, unassigned card to the user (``POST /users/{userId}/cards?clientId=`` with
    ``{cardId}``; application token; the card starts ``inactive``)."""
    params = {"clientId": check_str(client_id, "client_id")}
    body = {"cardId": check_str(card_id, "card_id")}
    return _op("POST", _user(user_id) + "/cards", _one(Card), json=body, params=params, options=options)


def issue_virtual_operation(
    user_id: str,
    currency: Currency | CurrencyCode | None = None,
    alias: str | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[Card]:
    """Issue a virtual card (``active``, balance 0) for the user (``POST /users/{userId}/cards/virtuals``)."""
    body: dict[str, Any] = {}
    checked = check_currency(currency)
    if checked is not None:
        body["currency"] = checked.value
    if check_optional_str(alias, "alias", max_length=64) is not None:
        body["alias"] = alias
    return _op("POST", _user(user_id) + "/cards/virtuals", _one(Card), json=body, options=options)


def link_external_operation(
    user_id: str, token: str | Secret, alias: str | None = None, **options: Unpack[PostCallOptions]
) -> Operation[Card]:
    """Link a third-party card through its temporary linking token (``POST /users/{userId}/linked-cards``;
    the token stays a :class:`Secret`)."""
    text = token.reveal() if isinstance(token, Secret) else token
    body: dict[str, Any] = {"token": Secret(check_str(text, "token", max_length=4096))}
    if check_optional_str(alias, "alias", max_length=64) is not None:
        body["alias"] = alias
    return _op("POST", _user(user_id) + "/linked-cards", _one(Card), json=body, options=options)


def get_card_operation(card_id: str, **options: Unpack[CallOptions]) -> Operation[Card]:
    """Card details (``GET /cards/{cardId}``, ``checkCard``)."""
    return _op("GET", _card(card_id), _one(Card), options=options)


def update_alias_operation(card_id: str, alias: str, **options: Unpack[CallOptions]) -> Operation[Card]:
    """Rename the card (``PATCH /cards/{cardId}``, ``updateAlias``; setting the same alias twice is
    harmless: replayed like a PUT)."""
    body = {"alias": check_str(alias, "alias", max_length=64)}
    return _op("PATCH", _card(card_id), _one(Card), json=body, idempotent=True, options=options)


CardAction: TypeAlias = Literal["block", "unblock", "activation"]


def card_action_operation(
    card_id: str, action: CardAction, **options: Unpack[PostCallOptions]
) -> Operation[Card]:
    """``POST /cards/{cardId}/block|unblock|activation`` (no body)."""
    if action not in ("block", "unblock", "activation"):
        raise ValidationError("action", "must be block, unblock or activation")
    return _op("POST", _card(card_id) + "/" + action, _one(Card), options=options)


def block_card_operation(card_id: str, **options: Unpack[PostCallOptions]) -> Operation[Card]:
    """Block the card (``POST /cards/{cardId}/block``, ``updateStatus``)."""
    return card_action_operation(card_id, "block", **options)


def unblock_card_operation(card_id: str, **options: Unpack[PostCallOptions]) -> Operation[Card]:
    """Unblock the card (``POST /cards/{cardId}/unblock``, ``updateStatus``)."""
    return card_action_operation(card_id, "unblock", **options)


def activate_card_operation(card_id: str, **options: Unpack[PostCallOptions]) -> Operation[Card]:
    """Activate a linked physical card (``POST /cards/{cardId}/activation``)."""
    return card_action_operation(card_id, "activation", **options)


def set_pin_operation(card_id: str, pin: str | Secret, **options: Unpack[CallOptions]) -> Operation[Card]:
    """Set the 4-digit PIN (``PUT /cards/{cardId}/pin``, ``assignPIN``); the PIN is kept as a
    :class:`Secret` and never appears in a repr or log."""
    text = pin.reveal() if isinstance(pin, Secret) else pin
    body = {"pin": Secret(_check_pattern(text, "pin", _PIN, "4 digits"))}
    return _op("PUT", _card(card_id) + "/pin", _one(Card), json=body, options=options)


def movements_operation(
    card_id: str,
    start_date: date | str | None = None,
    end_date: date | str | None = None,
    **options: Unpack[CallOptions],
) -> Operation[list[Movement]]:
    """The card's balance changes, optionally between two dates (``GET /cards/{cardId}/movements
    [?startDate&endDate]``, ``getAllTransfersByDate``)."""
    params: dict[str, str] = {}
    if start_date is not None:
        params["startDate"] = check_date(start_date, "start_date")
    if end_date is not None:
        params["endDate"] = check_date(end_date, "end_date")
    return _op("GET", _card(card_id) + "/movements", _many(Movement), params=params or None, options=options)


def cvv_view_token_operation(card_id: str, **options: Unpack[PostCallOptions]) -> Operation[CvvViewToken]:
    """Step 1 of reading the CVV (``POST /cards/{cardId}/cvv/view-token``: a user session with
    ``checkCvv``; see ``wallet.as_user``)."""
    return _op("POST", _card(card_id) + "/cvv/view-token", _one(CvvViewToken), options=options, **_ONCE)


def cvv_operation(
    card_id: str, view_token: str | Secret | CvvViewToken, **options: Unpack[CallOptions]
) -> Operation[Cvv]:
    """Step 2: the CVV (``GET /cards/{cardId}/cvv`` with ``X-View-Token``), once per view token (masked
    repr; never replayed). Application tokens get :class:`~paysdk.CvvNeedsUserSessionError`."""
    text = view_token.view_token if isinstance(view_token, CvvViewToken) else view_token
    raw = text.reveal() if isinstance(text, Secret) else text
    header = Secret(check_str(raw, "view_token", max_length=4096))
    headers = {"X-View-Token": header}
    return _op("GET", _card(card_id) + "/cvv", _one(Cvv), headers=headers, options=options, **_ONCE)


def funds_operation(
    card_id: str,
    operation: Literal["add", "withdraw"],
    amount: Decimal | int | str,
    reference: str | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[FundsResult]:
    """``POST /cards/{cardId}/funds {operation, amount, reference?}`` (D41)."""
    if operation not in ("add", "withdraw"):
        raise ValidationError("operation", "must be add or withdraw")
    body: dict[str, Any] = {"operation": operation, "amount": check_wallet_amount(amount)}
    if check_optional_str(reference, "reference") is not None:
        body["reference"] = reference
    return _op("POST", _card(card_id) + "/funds", _one(FundsResult), json=body, options=options)


def add_funds_operation(
    card_id: str,
    amount: Decimal | int | str,
    reference: str | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[FundsResult]:
    """Add funds to the card (``POST /cards/{cardId}/funds``, operation ``add``)."""
    return funds_operation(card_id, "add", amount, reference, **options)


def withdraw_funds_operation(
    card_id: str,
    amount: Decimal | int | str,
    reference: str | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[FundsResult]:
    """Withdraw funds (``POST /cards/{cardId}/funds``, operation ``withdraw``); more than the available
    balance raises :class:`~paysdk.InsufficientFundsError`."""
    return funds_operation(card_id, "withdraw", amount, reference, **options)


def transfer_operation(
    from_card_id: str,
    to_card_id: str,
    amount: Decimal | int | str,
    description: str | None = None,
    **options: Unpack[PostCallOptions],
) -> Operation[TransferResult]:
    """Move ``amount`` between two cards of one currency, atomically (``POST /cards/{cardId}/transfers
    {toCardId, amount, description?}``, D41, ``transferBetweenCards``)."""
    body: dict[str, Any] = {
        "toCardId": check_str(to_card_id, "to_card_id"),
        "amount": check_wallet_amount(amount),
    }
    if check_optional_str(description, "description") is not None:
        body["description"] = description
    path = _card(from_card_id, "from_card_id") + "/transfers"
    return _op("POST", path, _one(TransferResult), json=body, options=options)


def grant_permissions_operation(
    card_id: str,
    user_id: str,
    permissions: Sequence[CardPermissionType | CardPermissionName],
    **options: Unpack[PostCallOptions],
) -> Operation[PermissionRecord]:
    """Grant ``permissions`` on the card to a user (``POST /cards/{cardId}/users/{authUserId}/permissions``;
    application token or the card's owner)."""
    path = _card(card_id) + "/users/" + path_segment(user_id, "user_id") + "/permissions"
    body = {"permissions": check_permissions(permissions)}
    return _op("POST", path, _one(PermissionRecord), json=body, options=options)


def update_permissions_operation(
    permission_id: str,
    permissions: Sequence[CardPermissionType | CardPermissionName],
    **options: Unpack[CallOptions],
) -> Operation[PermissionRecord]:
    """Replace the permissions of a record (``PATCH /cards/users/permissions/{id}``; sets the list:
    replayed like a PUT)."""
    path = "/cards/users/permissions/" + path_segment(permission_id, "permission_id")
    body = {"permissions": check_permissions(permissions)}
    return _op("PATCH", path, _one(PermissionRecord), json=body, idempotent=True, options=options)


def user_permissions_operation(
    user_id: str, **options: Unpack[CallOptions]
) -> Operation[list[PermissionRecord]]:
    """Every permission record of a user (``GET /cards/users/{authUserId}/permissions``)."""
    path = "/cards/users/" + path_segment(user_id, "user_id") + "/permissions"
    return _op("GET", path, _many(PermissionRecord), options=options)


def card_permissions_operation(
    card_id: str, **options: Unpack[CallOptions]
) -> Operation[list[PermissionRecord]]:
    """Every permission record on a card (``GET /cards/{cardId}/users/permissions``)."""
    return _op("GET", _card(card_id) + "/users/permissions", _many(PermissionRecord), options=options)


def card_user_permissions_operation(
    card_id: str, user_id: str, **options: Unpack[CallOptions]
) -> Operation[list[PermissionRecord]]:
    """One user's permission records on one card (``GET /cards/{cardId}/users/{authUserId}/permissions``)."""
    path = _card(card_id) + "/users/" + path_segment(user_id, "user_id") + "/permissions"
    return _op("GET", path, _many(PermissionRecord), options=options)


def user_view_key(session: UserSession) -> str:
    """The (private) store key of a user session's view."""
    return f"user|{session.user_id}|{id(session):x}"


def session_from_pair(resource: Any, pair: TokenPair) -> UserSession:
    """The :class:`~paysdk.UserSession` of a login or refresh answer, on the client's clock."""
    return UserSession.from_pair(pair, now=resource._client._now())


def _session(value: object) -> UserSession:
    if not isinstance(value, UserSession):
        raise ValidationError("session", "must be a paysdk.UserSession (from wallet.users.login)")
    return value


# unasync: begin
class AsyncWalletResource(AsyncResource[M]):
    """Base of the wallet resources: sends operations with the right bearer token.

    ``tokens`` ``None``: the client's application token; otherwise a user session's manager.
    """

    def __init__(
        self, client: AsyncClient, tokens: AsyncTokenManager | None = None, *, raw: bool = False
    ) -> None:
        super().__init__(client, raw=raw)
        self._tokens = tokens

    async def _send(self, op: Operation[T], recover: frozenset[int] | None = None) -> T:
        return (await self._send_raw(op, recover)).parse()

    async def _send_raw(self, op: Operation[T], recover: frozenset[int] | None = None) -> APIResponse[T]:
        # ``recover``: the 401 codes that mean "the bearer needs renewing" for this call.
        codes = RECOVERABLE_CODES if recover is None else recover
        if op.auth == "none":
            return await self._client._request_raw(op)
        if self._tokens is None:
            return await self._client._authed_request_raw(op, self._client._wallet_manager(), codes)
        user_op = dataclasses.replace(op, auth="wallet_user")
        return await self._client._authed_request_raw(user_op, self._tokens, codes)


class AsyncWalletUsers(AsyncWalletResource[M]):
    """Wallet users (``client.wallet.users``): sessions, one-time codes, password reset.

    Every call sends the application token (spec 5.3.6).
    """

    login = AsyncEndpoint(user_login_operation, then=session_from_pair)
    # A 7104/7105 answering a refresh or logout is about the session's token, not the application bearer.
    refresh = AsyncEndpoint(session_refresh_operation, then=session_from_pair, recover=REPLAY_CODES)
    logout = AsyncEndpoint(user_logout_operation, recover=REPLAY_CODES)
    request_otp = AsyncEndpoint(otp_request_operation)
    verify_otp = AsyncEndpoint(otp_verify_operation)
    reset_password = AsyncEndpoint(password_reset_operation)


class AsyncCards(AsyncWalletResource[M]):
    """Cards (``wallet.cards``): list, issue, link, details, alias, status, PIN, movements, CVV."""

    list = AsyncEndpoint(list_cards_operation)
    summary = AsyncEndpoint(card_summary_operation)
    link = AsyncEndpoint(link_card_operation)
    issue_virtual = AsyncEndpoint(issue_virtual_operation)
    link_external = AsyncEndpoint(link_external_operation)
    get = AsyncEndpoint(get_card_operation)
    update_alias = AsyncEndpoint(update_alias_operation)
    block = AsyncEndpoint(block_card_operation)
    unblock = AsyncEndpoint(unblock_card_operation)
    activate = AsyncEndpoint(activate_card_operation)
    set_pin = AsyncEndpoint(set_pin_operation)
    movements = AsyncEndpoint(movements_operation)
    cvv_view_token = AsyncEndpoint(cvv_view_token_operation)
    cvv = AsyncEndpoint(cvv_operation)


class AsyncFunds(AsyncWalletResource[M]):
    """Issuer funding (``wallet.funds``, application token): amounts ``Decimal``/``int``/str, 4 places."""

    add = AsyncEndpoint(add_funds_operation)
    withdraw = AsyncEndpoint(withdraw_funds_operation)


class AsyncTransfers(AsyncWalletResource[M]):
    """Card-to-card transfers (``wallet.transfers``)."""

    create = AsyncEndpoint(transfer_operation)


class AsyncPermissions(AsyncWalletResource[M]):
    """Card permissions of authorized users (``wallet.permissions``, D40)."""

    grant = AsyncEndpoint(grant_permissions_operation)
    update = AsyncEndpoint(update_permissions_operation)
    list_for_user = AsyncEndpoint(user_permissions_operation)
    list_for_card = AsyncEndpoint(card_permissions_operation)
    list = AsyncEndpoint(card_user_permissions_operation)


class AsyncWalletUserView(Generic[M]):
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
        *,
        raw: bool = False,
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
        self.cards: AsyncCards[M] = AsyncCards(client, self._tokens, raw=raw)
        self.funds: AsyncFunds[M] = AsyncFunds(client, self._tokens, raw=raw)
        self.transfers: AsyncTransfers[M] = AsyncTransfers(client, self._tokens, raw=raw)
        self.permissions: AsyncPermissions[M] = AsyncPermissions(client, self._tokens, raw=raw)

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


class AsyncWallet(AsyncWalletResource[M]):
    """The wallet (``client.wallet``): application login, users, cards, funds, transfers, permissions.

    Needs ``Client(wallet=paysdk.WalletCredentials(merchant, private_key))``; the application logs
    in on the first call (or explicitly with :meth:`login`).
    """

    jwks = AsyncEndpoint(jwks_operation)

    def __init__(self, client: AsyncClient, *, raw: bool = False) -> None:
        super().__init__(client, raw=raw)
        self.users: AsyncWalletUsers[M] = AsyncWalletUsers(client, raw=raw)
        self.cards: AsyncCards[M] = AsyncCards(client, raw=raw)
        self.funds: AsyncFunds[M] = AsyncFunds(client, raw=raw)
        self.transfers: AsyncTransfers[M] = AsyncTransfers(client, raw=raw)
        self.permissions: AsyncPermissions[M] = AsyncPermissions(client, raw=raw)

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

    def as_user(
        self,
        session: UserSession | None = None,
        *,
        store: TokenStore | AsyncTokenStore | None = None,
        key: str | None = None,
    ) -> AsyncWalletUserView[M]:
        """A view whose calls carry ``session``'s access token, kept in ``store`` under ``key`` when
        given (see :class:`AsyncWalletUserView`); under ``with_raw_response`` its methods answer
        :class:`~paysdk.APIResponse` too."""
        return AsyncWalletUserView(self._client, session, store, key, raw=self._raw)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class WalletResource(Resource[M]):
    """Base of the wallet resources: sends operations with the right bearer token.

    ``tokens`` ``None``: the client's application token; otherwise a user session's manager.
    """

    def __init__(self, client: Client, tokens: TokenManager | None = None, *, raw: bool = False) -> None:
        super().__init__(client, raw=raw)
        self._tokens = tokens

    def _send(self, op: Operation[T], recover: frozenset[int] | None = None) -> T:
        return (self._send_raw(op, recover)).parse()

    def _send_raw(self, op: Operation[T], recover: frozenset[int] | None = None) -> APIResponse[T]:
        # ``recover``: the 401 codes that mean "the bearer needs renewing" for this call.
        codes = RECOVERABLE_CODES if recover is None else recover
        if op.auth == "none":
            return self._client._request_raw(op)
        if self._tokens is None:
            return self._client._authed_request_raw(op, self._client._wallet_manager(), codes)
        user_op = dataclasses.replace(op, auth="wallet_user")
        return self._client._authed_request_raw(user_op, self._tokens, codes)


class WalletUsers(WalletResource[M]):
    """Wallet users (``client.wallet.users``): sessions, one-time codes, password reset.

    Every call sends the application token (spec 5.3.6).
    """

    login = Endpoint(user_login_operation, then=session_from_pair)
    # A 7104/7105 answering a refresh or logout is about the session's token, not the application bearer.
    refresh = Endpoint(session_refresh_operation, then=session_from_pair, recover=REPLAY_CODES)
    logout = Endpoint(user_logout_operation, recover=REPLAY_CODES)
    request_otp = Endpoint(otp_request_operation)
    verify_otp = Endpoint(otp_verify_operation)
    reset_password = Endpoint(password_reset_operation)


class Cards(WalletResource[M]):
    """Cards (``wallet.cards``): list, issue, link, details, alias, status, PIN, movements, CVV."""

    list = Endpoint(list_cards_operation)
    summary = Endpoint(card_summary_operation)
    link = Endpoint(link_card_operation)
    issue_virtual = Endpoint(issue_virtual_operation)
    link_external = Endpoint(link_external_operation)
    get = Endpoint(get_card_operation)
    update_alias = Endpoint(update_alias_operation)
    block = Endpoint(block_card_operation)
    unblock = Endpoint(unblock_card_operation)
    activate = Endpoint(activate_card_operation)
    set_pin = Endpoint(set_pin_operation)
    movements = Endpoint(movements_operation)
    cvv_view_token = Endpoint(cvv_view_token_operation)
    cvv = Endpoint(cvv_operation)


class Funds(WalletResource[M]):
    """Issuer funding (``wallet.funds``, application token): amounts ``Decimal``/``int``/str, 4 places."""

    add = Endpoint(add_funds_operation)
    withdraw = Endpoint(withdraw_funds_operation)


class Transfers(WalletResource[M]):
    """Card-to-card transfers (``wallet.transfers``)."""

    create = Endpoint(transfer_operation)


class Permissions(WalletResource[M]):
    """Card permissions of authorized users (``wallet.permissions``, D40)."""

    grant = Endpoint(grant_permissions_operation)
    update = Endpoint(update_permissions_operation)
    list_for_user = Endpoint(user_permissions_operation)
    list_for_card = Endpoint(card_permissions_operation)
    list = Endpoint(card_user_permissions_operation)


class WalletUserView(Generic[M]):
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
        *,
        raw: bool = False,
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
        self.cards: Cards[M] = Cards(client, self._tokens, raw=raw)
        self.funds: Funds[M] = Funds(client, self._tokens, raw=raw)
        self.transfers: Transfers[M] = Transfers(client, self._tokens, raw=raw)
        self.permissions: Permissions[M] = Permissions(client, self._tokens, raw=raw)

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


class Wallet(WalletResource[M]):
    """The wallet (``client.wallet``): application login, users, cards, funds, transfers, permissions.

    Needs ``Client(wallet=paysdk.WalletCredentials(merchant, private_key))``; the application logs
    in on the first call (or explicitly with :meth:`login`).
    """

    jwks = Endpoint(jwks_operation)

    def __init__(self, client: Client, *, raw: bool = False) -> None:
        super().__init__(client, raw=raw)
        self.users: WalletUsers[M] = WalletUsers(client, raw=raw)
        self.cards: Cards[M] = Cards(client, raw=raw)
        self.funds: Funds[M] = Funds(client, raw=raw)
        self.transfers: Transfers[M] = Transfers(client, raw=raw)
        self.permissions: Permissions[M] = Permissions(client, raw=raw)

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

    def as_user(
        self,
        session: UserSession | None = None,
        *,
        store: TokenStore | TokenStore | None = None,
        key: str | None = None,
    ) -> WalletUserView[M]:
        """A view whose calls carry ``session``'s access token, kept in ``store`` under ``key`` when
        given (see :class:`WalletUserView`); under ``with_raw_response`` its methods answer
        :class:`~paysdk.APIResponse` too."""
        return WalletUserView(self._client, session, store, key, raw=self._raw)


# unasync: generated end
