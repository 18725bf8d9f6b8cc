"""The wallet and its authentication (spec 2.5, 4.3, 5.3; decisions D30-D44).

Shared by the SDK (``client.wallet``), the reference server (``/rest``) and the CLI. Every success
answer is ``{"data": ...}`` (D30); errors are the D1 body with a :class:`WalletCode`. Amounts are
``Decimal`` with at most 4 places (:data:`WalletAmount`). Models holding secrets (tokens, passwords,
keys, CVV) mask them in ``repr``.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

from paysdk.contracts.codes import OWN_CODES, WalletCode
from paysdk.contracts.common import Currency, DecimalNumber, NoFormula, NonEmptyStr, WireModel

__all__ = [
    "ACCESS_TOKEN_TYP",
    "REFRESH_TOKEN_TYP",
    "WALLET_CODE_STATUS",
    "AliasUpdate",
    "AppLoginRequest",
    "Card",
    "CardPeriodSummary",
    "CardPermissionName",
    "CardPermissionType",
    "CardStatus",
    "CardSummary",
    "CardType",
    "Cardholder",
    "Cvv",
    "CvvViewToken",
    "Email",
    "FundsRequest",
    "FundsResult",
    "IssueVirtualCardRequest",
    "Jwk",
    "Jwks",
    "LinkCardRequest",
    "LinkExternalCardRequest",
    "LogoutResult",
    "Movement",
    "NewProfile",
    "NewUserProfile",
    "OtpRequest",
    "OtpSent",
    "OtpVerified",
    "OtpVerifyRequest",
    "OutboxMessage",
    "PasswordResetRequest",
    "PasswordResetResult",
    "PermissionGrant",
    "PermissionRecord",
    "PinRequest",
    "RefreshRequest",
    "SandboxCharge",
    "SandboxChargeCreate",
    "SandboxLinkingToken",
    "SandboxLinkingTokenCreate",
    "SandboxRefund",
    "SandboxRefundCreate",
    "SandboxStockCardCreate",
    "SandboxUserCreate",
    "SandboxWalletKeys",
    "SandboxWalletKeysCreate",
    "TokenPair",
    "TransferRequest",
    "TransferResult",
    "UserLoginRequest",
    "UserProfile",
    "UserRefreshRequest",
    "Username",
    "WalletAmount",
    "WalletCode",
    "check_visible",
    "email_key",
    "parse_wallet_amount",
    "username_key",
    "validate_email",
    "validate_username",
]

#: Unicode categories refused in usernames and emails (D96): controls (Cc), format characters (Cf: zero-width
#: characters, bidirectional overrides and isolates such as U+202E, the BOM), surrogates, private use, and
#: the line and paragraph separators.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
#: Characters an email address may not hold here (D96): quoted local parts and comments are not taken.
_EMAIL_REFUSED = frozenset(' "(),:;<>[\\]')


#: What separates the labels of a domain once NFKC has run (IDNA's full stops: ``.``, ``。``, ``｡``).
_DOMAIN_DOTS = re.compile("[.\u3002\uff61]")


def check_visible(value: str) -> str:
    """``value`` when it holds no character of the categories refused in usernames and emails (D96: Cc,
    Cf, Cs, Co, Zl, Zp), else ``ValueError`` naming the code point and its position. Shared by every
    name a person reads back (usernames, emails, lead document names)."""
    _visible(value)
    return value


def _visible(value: str) -> None:
    for index, char in enumerate(value, 1):
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES:
            raise ValueError(
                "must not contain invisible, control or bidirectional characters "
                f"(U+{ord(char):04X} at position {index})"
            )


def username_key(username: str) -> str:
    """The form in which usernames are unique and looked up (D96): NFKC, case-folded, NFKC again, so
    ``"Ana"``, ``"ana"`` and ``"ＡＮＡ"`` (fullwidth) are one username."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username).casefold())


def validate_username(value: str) -> str:
    """``value`` (already stripped) when it is a usable username (D96), else ``ValueError`` saying why."""
    _visible(value)
    if len(username_key(value)) > 255:
        raise ValueError("is too long once normalised (at most 255 characters)")
    return value


def email_key(email: str) -> str:
    """The one form in which emails are stored, unique and compared (D96, D380): the local part as
    :func:`username_key` makes it (NFKC, case folding, NFKC), the domain NFKC and case-folded label by
    label, a punycode label (``xn--...``) decoded to the letters it stands for. So ``Ana@Exámple.com``,
    ``ａｎａ@ｅｘáｍｐｌｅ.com`` (fullwidth), ``ana@exa\u0301mple.com`` (a combining accent) and
    ``ana@xn--exmple-qta.com`` are all ``ana@exámple.com``. ``ValueError`` for a punycode label that
    does not decode; the form itself is :func:`validate_email`'s to check."""
    local, _, domain = unicodedata.normalize("NFKC", email.strip()).rpartition("@")
    labels: list[str] = []
    for label in _DOMAIN_DOTS.split(domain):
        folded = unicodedata.normalize("NFKC", label.casefold())
        if folded.startswith("xn--"):
            try:
                decoded = folded[4:].encode("ascii").decode("punycode")
            except (UnicodeError, ValueError):
                raise ValueError(f"has a domain label {label!r} that is not valid punycode") from None
            folded = unicodedata.normalize("NFKC", decoded.casefold())
        labels.append(folded)
    return f"{username_key(local)}@{'.'.join(labels)}"


def validate_email(value: str) -> str:
    """``value`` (already stripped) when it has the form of an email address (D96), else ``ValueError``.

    A pragmatic check, not RFC 5322: at most 254 characters; one ``@``; a local part of 1..64 characters;
    a domain of dot-separated non-empty labels of at most 63 characters, at least two of them; no spaces,
    quotes, brackets, commas, colons or semicolons; no invisible or control characters. Non-ASCII letters
    are allowed (internationalised addresses). Whether the mailbox exists is not checked. The form is
    checked as :func:`email_key` normalises it (fullwidth letters and full stops are letters and dots; a
    punycode label must decode to visible letters), and the characters and the one ASCII ``@`` as given
    (a fullwidth ``＠`` is refused).
    """
    _visible(value)
    if len(value) > 254:
        raise ValueError("is too long (at most 254 characters)")
    _email_characters(value)
    key = email_key(value)
    _visible(key)
    if len(key) > 254:
        raise ValueError("is too long once normalised (at most 254 characters)")
    _email_shape(key)
    return value


def _email_characters(value: str) -> None:
    if any(char in _EMAIL_REFUSED or char.isspace() for char in value):
        raise ValueError("must be an email address without spaces, quotes, brackets, commas or colons")
    if value.count("@") != 1:
        raise ValueError("must be an email address with exactly one '@'")


def _email_shape(value: str) -> None:
    _email_characters(value)
    local, _, domain = value.partition("@")
    if not 1 <= len(local) <= 64:
        raise ValueError("must have 1 to 64 characters before the '@'")
    labels = domain.split(".")
    if len(labels) < 2 or not all(1 <= len(label) <= 63 for label in labels):
        raise ValueError("must have a domain such as example.com after the '@'")


#: A wallet username: stripped, 1..255 characters, no invisible or bidirectional characters; unique per
#: merchant in its :func:`username_key` form (D96).
Username = Annotated[NonEmptyStr, AfterValidator(validate_username)]
#: An email address of the form :func:`validate_email` checks (D96).
Email = Annotated[NonEmptyStr, AfterValidator(validate_email)]

#: A JWT on the wire: JWTs are longer than :data:`NonEmptyStr`'s 255 characters.
TokenStr = Annotated[str, Field(min_length=1, max_length=8192)]

#: JWT header ``typ`` of access and refresh tokens (D33).
ACCESS_TOKEN_TYP = "at+jwt"
REFRESH_TOKEN_TYP = "rt+jwt"


#: The HTTP status of each wallet code, from the one table :data:`paysdk.contracts.codes.OWN_CODES`.
WALLET_CODE_STATUS: dict[WalletCode, int] = {code: OWN_CODES[code].status for code in WalletCode}


class CardPermissionType(StrEnum):
    """The nine card permissions (spec 2.5; what each one governs: D40)."""

    CHECK_CARD = "checkCard"
    CHECK_CVV = "checkCvv"
    UPDATE_ALIAS = "updateAlias"
    UPDATE_STATUS = "updateStatus"
    ASSIGN_PIN = "assignPIN"
    GET_CARDS = "getCards"
    GET_ALL_TRANSFERS_BY_DATE = "getAllTransfersByDate"
    TRANSFER_BETWEEN_CARDS = "transferBetweenCards"
    ACTIVATION = "activation"


#: The card permissions as literals, for method signatures (a test keeps them equal to the enum).
CardPermissionName: TypeAlias = Literal[
    "checkCard",
    "checkCvv",
    "updateAlias",
    "updateStatus",
    "assignPIN",
    "getCards",
    "getAllTransfersByDate",
    "transferBetweenCards",
    "activation",
]


CardStatus = Literal["active", "blocked", "inactive"]
CardType = Literal["physical", "virtual", "linked"]


def parse_wallet_amount(value: object, *, field: str = "amount", wire: bool = False) -> Decimal:
    """An exact, finite amount > 0 with at most 4 decimal places (spec 2.5, D41).

    ``wire=True`` (server side) accepts only JSON numbers (``int``/``Decimal``); otherwise a decimal
    string is accepted too. ``float`` and ``bool`` are always refused.
    """
    if isinstance(value, bool | float) or (wire and isinstance(value, str)):
        raise ValueError(f"{field} must be a number with at most 4 decimals, not {type(value).__name__}")
    if isinstance(value, str):
        try:
            value = Decimal(value.strip())
        except ArithmeticError:
            raise ValueError(f"{field} is not a decimal number") from None
    if not isinstance(value, int | Decimal):
        raise ValueError(f"{field} must be a number, not {type(value).__name__}")
    amount = Decimal(value)
    if not amount.is_finite():
        raise ValueError(f"{field} must be finite")
    if amount <= 0:
        raise ValueError(f"{field} must be greater than zero")
    # The size first: quantize() of a number with more than 28 digits raises InvalidOperation.
    if amount.adjusted() >= 14 or amount != amount.quantize(Decimal("0.0001")):
        raise ValueError(f"{field} has more than 4 decimal places or is too large")
    return amount


def _wire_wallet_amount(value: object) -> Decimal:
    return parse_wallet_amount(value, wire=True)


#: A wallet amount on the wire: JSON number, > 0, finite, at most 4 decimals; a string is refused (D45), and
#: the schema says so (D130).
WalletAmount = Annotated[
    Decimal,
    BeforeValidator(_wire_wallet_amount),
    WithJsonSchema({"type": "number", "exclusiveMinimum": 0}),
]


def _masked(model: WireModel, *secret_fields: str) -> str:
    shown = ", ".join(
        f"{name}={'****' if name in secret_fields else repr(getattr(model, name))}"
        for name in type(model).model_fields
    )
    return f"{type(model).__name__}({shown})"


# ------------------------------------------------------------------------------------------ auth


class AppLoginRequest(WireModel):
    """``POST /auth/login``: the merchant slug and the base64 Ed25519 signature of its UTF-8 bytes (D36)."""

    merchant: NonEmptyStr
    signature: NonEmptyStr

    def __repr__(self) -> str:
        return _masked(self, "signature")


class RefreshRequest(WireModel):
    """``POST /auth/refresh``."""

    refresh_token: TokenStr

    def __repr__(self) -> str:
        return _masked(self, "refresh_token")


class TokenPair(WireModel):
    """``data`` of every login and refresh answer (D32); ``expires_in``/``refresh_expires_in`` in seconds."""

    access_token: str
    refresh_token: str
    token_type: Literal["Bearer"] = "Bearer"
    expires_in: int
    refresh_expires_in: int

    def __repr__(self) -> str:
        return _masked(self, "access_token", "refresh_token")

    __str__ = __repr__


class UserLoginRequest(WireModel):
    """``POST /users/login`` (application bearer); optional lifetime overrides in seconds (5.3.3, D34)."""

    username: Username
    password: str = Field(min_length=1, max_length=1024)
    merchant: str | None = None
    access_token_ttl: int | None = Field(default=None, strict=True)
    refresh_token_ttl: int | None = Field(default=None, strict=True)

    def __repr__(self) -> str:
        return _masked(self, "password")


class UserRefreshRequest(WireModel):
    """``POST /users/refresh`` (application bearer), with optional lifetime overrides in seconds as at
    login (``accessTokenTtl`` 60 s to 24 h, ``refreshTokenTtl`` 5 min to 90 days and at least the access
    lifetime; D34)."""

    refresh_token: TokenStr
    merchant: str | None = None
    access_token_ttl: int | None = Field(default=None, strict=True)
    refresh_token_ttl: int | None = Field(default=None, strict=True)

    def __repr__(self) -> str:
        return _masked(self, "refresh_token")


class OtpRequest(WireModel):
    """``POST /users/auth/otp``."""

    email: Email
    purpose: NonEmptyStr


class OtpSent(WireModel):
    """``data`` of ``POST /users/auth/otp`` (D39: the same whether or not the email exists)."""

    sent: bool = True


class OtpVerifyRequest(WireModel):
    """``PUT /users/auth/otp``."""

    email: Email
    otp: str = Field(pattern=r"^[0-9]{6}$")
    purpose: NonEmptyStr

    def __repr__(self) -> str:
        return _masked(self, "otp")


class OtpVerified(WireModel):
    """``data`` of ``PUT /users/auth/otp``: ``token`` for ``purpose = password_reset`` (D39)."""

    verified: bool
    token: str | None = None

    def __repr__(self) -> str:
        return _masked(self, "token")


class PasswordResetRequest(WireModel):
    """``POST /users/auth/password/reset``."""

    email: Email
    new_password: str = Field(min_length=1, max_length=1024)
    confirm_password: str = Field(min_length=1, max_length=1024)
    token: NonEmptyStr

    def __repr__(self) -> str:
        return _masked(self, "new_password", "confirm_password", "token")


class PasswordResetResult(WireModel):
    """``data`` of a password reset: every session of the user has ended."""

    reset: bool = True


class LogoutResult(WireModel):
    """``data`` of ``POST /users/logout`` (D38)."""

    logged_out: bool = True


class Jwk(WireModel):
    """One public key of the JWKS (RFC 8037 OKP)."""

    kty: Literal["OKP"]
    crv: Literal["Ed25519"]
    x: str
    kid: str
    use: Literal["sig"] = "sig"
    alg: Literal["EdDSA"] = "EdDSA"


class Jwks(WireModel):
    """``GET {wallet_base_url}/.well-known/jwks.json`` (a bare JWKS, no ``data`` envelope)."""

    keys: list[Jwk]


# ------------------------------------------------------------------------------ users and cards


class UserProfile(WireModel):
    """A cardholder's profile (spec 2.5: fields beyond these are not shown; extra keys are kept)."""

    first_name: str | None = None
    last_name: str | None = None
    phone: str | None = None


class NewUserProfile(UserProfile):
    """The profile a new user is given (:data:`NewProfile`): names that are no formula (D384)."""

    first_name: Annotated[str, NoFormula] | None = None
    last_name: Annotated[str, NoFormula] | None = None


def _profile_fields(value: Any) -> Any:
    if isinstance(value, UserProfile) and not isinstance(value, NewUserProfile):
        return value.model_dump(by_alias=True, exclude_none=True)
    return value


#: A profile as a new user is given it (a :class:`UserProfile`, or its wire dict): its names are free
#: text, never a formula (D384), refused naming ``profile.firstName``/``profile.lastName``. What the
#: server answers is a plain :class:`UserProfile`.
NewProfile = Annotated[NewUserProfile, BeforeValidator(_profile_fields)]


#: The wallet user's id: ``user_id`` in Python (as ``UserSession.user_id`` and the resources'
#: ``user_id`` arguments) and ``--user-id``/``userId`` in the CLI; the wire keeps the spec's
#: ``authUserId`` in bodies (``{userId}``/``{authUserId}`` in paths). docs/wallet.md has the mapping.
_WireUserId = Annotated[str, Field(alias="authUserId")]


class _DeprecatedAuthUserId:
    """``auth_user_id``: the old Python name of ``user_id``, kept as a deprecated read-only alias."""

    user_id: str

    @property
    def auth_user_id(self) -> str:
        """Deprecated: use ``user_id`` (the wire name stays ``authUserId``)."""
        warnings.warn(
            "auth_user_id is deprecated; use user_id (the wire name stays authUserId)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.user_id


class PermissionRecord(_DeprecatedAuthUserId, WireModel):
    """A grant of card permissions to an authorized user (4.3 permission endpoints).

    ``user_id`` is the authorized user's id (``authUserId`` on the wire)."""

    id: str
    card_id: str
    user_id: _WireUserId
    permissions: list[CardPermissionType]
    created_at: datetime
    updated_at: datetime


class Cardholder(_DeprecatedAuthUserId, WireModel):
    """A wallet user (spec 2.5). ``user_id`` (``authUserId`` on the wire) is the ``{userId}`` of the
    card paths and the ``user_id`` of the SDK's wallet calls."""

    user_id: _WireUserId
    username: str
    email: str
    merchant: str
    profile: UserProfile = Field(default_factory=UserProfile)
    permissions: list[PermissionRecord] = Field(default_factory=list)


class Card(WireModel):
    """A card. ``available_balance`` = ``balance`` - ``pending_debits`` (D43). Linked cards hold 0."""

    card_id: str
    masked_pan: str
    type: CardType
    status: CardStatus
    currency: str
    balance: DecimalNumber
    available_balance: DecimalNumber
    pending_debits: DecimalNumber
    pending_credits: DecimalNumber
    holder_id: str | None = None
    merchant: str
    alias: str | None = None
    created_at: datetime


class Movement(WireModel):
    """One change of a card's balance. ``amount`` is positive; ``direction`` says which way."""

    movement_id: str
    card_id: str
    type: Literal["fund", "withdrawal", "transfer_in", "transfer_out", "capture", "refund"]
    direction: Literal["credit", "debit"]
    amount: DecimalNumber
    balance_after: DecimalNumber
    currency: str
    reference: str | None = None
    counterpart_card_id: str | None = None
    created_at: datetime


class CardPeriodSummary(WireModel):
    """One card's figures for a period (``GET /users/{userId}/cards/summary``)."""

    card_id: str
    currency: str
    opening_balance: DecimalNumber
    credits: DecimalNumber
    debits: DecimalNumber
    closing_balance: DecimalNumber
    movements: int


class CardSummary(WireModel):
    """``data`` of the summary: the period (inclusive dates, client timezone) and each card's figures."""

    start_date: date
    end_date: date
    cards: list[CardPeriodSummary]


class LinkCardRequest(WireModel):
    """``POST /users/{userId}/cards?clientId=<merchant slug>``: link an issued, unassigned card (D41)."""

    card_id: NonEmptyStr


class IssueVirtualCardRequest(WireModel):
    """``POST /users/{userId}/cards/virtuals``: issue a virtual card (balance 0, ``active``)."""

    currency: Currency | None = None
    alias: Annotated[str, Field(max_length=64), NoFormula] | None = None


class LinkExternalCardRequest(WireModel):
    """``POST /users/{userId}/linked-cards``: the temporary token from the third party's tokenization."""

    token: NonEmptyStr
    alias: Annotated[str, Field(max_length=64), NoFormula] | None = None

    def __repr__(self) -> str:
        return _masked(self, "token")


class FundsRequest(WireModel):
    """``POST /cards/{cardId}/funds`` (application token, D41)."""

    operation: Literal["add", "withdraw"]
    amount: WalletAmount
    reference: Annotated[str, Field(max_length=255), NoFormula] | None = None


class FundsResult(WireModel):
    """``data`` of a funds operation: the card after it and the movement it made."""

    card: Card
    movement: Movement


class TransferRequest(WireModel):
    """``POST /cards/{cardId}/transfers``: move ``amount`` to ``to_card_id`` (both legs atomic, D41)."""

    to_card_id: NonEmptyStr
    amount: WalletAmount
    description: Annotated[str, Field(max_length=255), NoFormula] | None = None


class TransferResult(WireModel):
    """``data`` of a transfer: both movements."""

    transfer_id: str
    debit: Movement
    credit: Movement


class AliasUpdate(WireModel):
    """``PATCH /cards/{cardId}`` (``updateAlias``)."""

    alias: Annotated[str, Field(min_length=1, max_length=64), NoFormula]


class PinRequest(WireModel):
    """``PUT /cards/{cardId}/pin`` (``assignPIN``)."""

    pin: str = Field(pattern=r"^[0-9]{4}$")

    def __repr__(self) -> str:
        return _masked(self, "pin")


class CvvViewToken(WireModel):
    """``data`` of ``POST /cards/{cardId}/cvv/view-token`` (D44)."""

    view_token: str
    expires_in: int

    def __repr__(self) -> str:
        return _masked(self, "view_token")


class Cvv(WireModel):
    """``data`` of ``GET /cards/{cardId}/cvv``."""

    cvv: str

    def __repr__(self) -> str:
        return _masked(self, "cvv")


class PermissionGrant(WireModel):
    """Body of ``POST /cards/{cardId}/users/{authUserId}/permissions`` and ``PATCH .../permissions/{id}``."""

    permissions: list[CardPermissionType] = Field(min_length=1)


# ------------------------------------------------------------------- control plane (/_sandbox)


class SandboxWalletKeysCreate(WireModel):
    """``POST /_sandbox/clients/{slug}/keys``: generate a key pair, or register ``public_key``; rotate."""

    public_key: str | None = None
    expires_at: datetime | None = None


class SandboxWalletKeys(WireModel):
    """The client's current signing key. ``private_key`` (base64 32-byte seed) only when generated."""

    merchant: str
    public_key: str
    key_id: str
    expires_at: datetime | None = None
    private_key: str | None = None

    def __repr__(self) -> str:
        return _masked(self, "private_key")


class SandboxUserCreate(WireModel):
    """``POST /_sandbox/users``: a wallet user (cardholder) of ``merchant``."""

    merchant: NonEmptyStr
    username: Username
    email: Email
    password: str = Field(min_length=8, max_length=1024)
    profile: NewProfile | None = None

    def __repr__(self) -> str:
        return _masked(self, "password")


class SandboxStockCardCreate(WireModel):
    """``POST /_sandbox/cards``: an issued physical card no one holds yet (see ``LinkCardRequest``)."""

    merchant: NonEmptyStr
    currency: Currency = Currency.GTQ
    balance: DecimalNumber | None = None


class SandboxLinkingTokenCreate(WireModel):
    """``POST /_sandbox/linking-tokens``: what a third party's tokenization would hand the wallet."""

    pan: str = Field(pattern=r"^[0-9]{12,19}$")
    expiry: str = Field(pattern=r"^(0[1-9]|1[0-2])/[0-9]{2}$")

    def __repr__(self) -> str:
        return f"SandboxLinkingTokenCreate(pan='****{self.pan[-4:]}', expiry={self.expiry!r})"


class SandboxLinkingToken(WireModel):
    """A single-use linking token (10 minutes)."""

    token: str
    expires_at: datetime

    def __repr__(self) -> str:
        return _masked(self, "token")


class SandboxChargeCreate(WireModel):
    """``POST /_sandbox/cards/{cardId}/charges``: a card payment; ``capture`` false holds a pending debit."""

    amount: WalletAmount
    capture: bool = False
    merchant_name: str | None = None


class SandboxCharge(WireModel):
    """A simulated card payment (D43)."""

    charge_id: str
    card_id: str
    amount: DecimalNumber
    captured_amount: DecimalNumber = Decimal(0)
    refunded_amount: DecimalNumber = Decimal(0)
    status: Literal["authorized", "captured", "expired", "refunded", "partially_refunded"]
    created_at: datetime
    expires_at: datetime


class SandboxRefundCreate(WireModel):
    """``POST /_sandbox/charges/{chargeId}/refunds``: refund part or all of a captured charge."""

    amount: WalletAmount | None = None


class SandboxRefund(WireModel):
    """A refund: a pending credit until ``POST /_sandbox/refunds/{refundId}/clear``."""

    refund_id: str
    charge_id: str
    card_id: str
    amount: DecimalNumber
    status: Literal["pending", "cleared"]
    created_at: datetime


class OutboxMessage(WireModel):
    """An email the sandbox would have sent (``GET /_sandbox/outbox``)."""

    to: str
    subject: str
    body: str
    at: datetime
    data: dict[str, Any] = Field(default_factory=dict)
