"""The API's own error codes (spec 7, decision D31): one table, ``code -> (name, HTTP status, meaning)``.

Everything else that knows a code reads it from here or is checked against it by
``tests/foundation/test_own_codes.py``: the SDK's error classes (``paysdk._errors``, one class per code,
its status from this table), the reference server's answers (``APIProblem`` refuses a code that is not
here or a status that differs), the CLI's hints (:attr:`CodeInfo.remedy`), the wallet router's OpenAPI
descriptions and the table "Own codes" of ``docs/spec-decisions.md``.

A new family adds its enum (``BackofficeCode`` ...) and its rows here, then one SDK class per code.
Pure and cheap to import: no pydantic, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from types import MappingProxyType
from typing import Final

__all__ = ["OWN_CODES", "CodeInfo", "OwnCode", "Remedy", "WalletCode", "code_info"]


class OwnCode(IntEnum):
    """The general own codes of the merchant API (spec 7): payment links and alternative payments."""

    AMOUNT_OUT_OF_RANGE = 2003
    WRONG_ENVIRONMENT = 2007
    INVALID_FIELD = 5000
    UNKNOWN_CLIENT = 5004


class WalletCode(IntEnum):
    """Wallet own codes (D31, the range 7000-8099)."""

    VALIDATION_ERROR = 7001
    INVALID_CREDENTIALS = 7101
    TOKEN_INVALID = 7102
    TOKEN_EXPIRED = 7103
    TOKEN_REVOKED = 7104
    REFRESH_TOKEN_REUSED = 7105
    WRONG_TOKEN_TYPE = 7106
    WRONG_ENVIRONMENT = 7107
    LOGIN_THROTTLED = 7108
    USER_NOT_FOUND = 7201
    OTP_INVALID = 7202
    OTP_EXPIRED = 7203
    OTP_ATTEMPTS_EXCEEDED = 7204
    RESET_TOKEN_INVALID = 7205
    PASSWORD_MISMATCH = 7206
    PASSWORD_TOO_WEAK = 7207
    CARD_NOT_FOUND = 7301
    CARD_NOT_ACTIVE = 7302
    INSUFFICIENT_FUNDS = 7303
    INVALID_AMOUNT = 7304
    CURRENCY_MISMATCH = 7305
    SAME_CARD = 7306
    CARD_NOT_FUNDABLE = 7307
    CARD_ALREADY_LINKED = 7308
    LINKING_TOKEN_INVALID = 7309
    PERMISSION_DENIED = 7401
    PERMISSION_NOT_FOUND = 7402
    CVV_TOKEN_INVALID = 7501
    CVV_NEEDS_USER_SESSION = 7502
    UNKNOWN_MERCHANT = 7601
    INVALID_SIGNATURE = 7604
    KEYS_EXPIRED = 7616


class Remedy(StrEnum):
    """What a caller does about a code; the CLI turns it into a hint line."""

    MERCHANT_TOKEN = "merchant_token"  # check the merchant token (or its environment)
    LOG_IN_AGAIN = "log_in_again"  # the wallet token is dead: log in again
    OTHER_TOKEN_KIND = "other_token_kind"  # application token where a user token is needed, or the reverse
    SIGNING_KEY = "signing_key"  # the merchant slug or the signing key is wrong or expired


@dataclass(frozen=True, slots=True)
class CodeInfo:
    """One row of the table: the code (an enum member, so its ``name`` is the code's name), the HTTP
    status it is always sent with, what it means, the family (``"general"``, ``"wallet"``) and the
    remedy, if any."""

    code: IntEnum
    status: int
    meaning: str
    remedy: Remedy | None = None

    @property
    def name(self) -> str:
        return self.code.name

    @property
    def family(self) -> str:
        return "wallet" if isinstance(self.code, WalletCode) else "general"


_ROWS: Final = (
    CodeInfo(
        OwnCode.AMOUNT_OUT_OF_RANGE,
        400,
        "`amount` outside the client's configured range (zero and negatives too)",
    ),
    CodeInfo(
        OwnCode.WRONG_ENVIRONMENT, 401, "a merchant token of the other environment", Remedy.MERCHANT_TOKEN
    ),
    CodeInfo(
        OwnCode.INVALID_FIELD,
        409,
        "a field is missing, of the wrong type, or an unknown value (details name it)",
    ),
    CodeInfo(
        OwnCode.UNKNOWN_CLIENT, 409, "the client slug does not name the caller's client (case-sensitive)"
    ),
    CodeInfo(WalletCode.VALIDATION_ERROR, 400, "a field is missing or invalid (details name it)"),
    CodeInfo(WalletCode.INVALID_CREDENTIALS, 401, "wrong username or password"),
    CodeInfo(
        WalletCode.TOKEN_INVALID,
        401,
        "no, malformed or badly signed token; wrong `alg`, `typ`, `iss`, `aud` or `kid`; "
        "missing claims; `crit`",
        Remedy.LOG_IN_AGAIN,
    ),
    CodeInfo(WalletCode.TOKEN_EXPIRED, 401, "`exp` passed on the virtual clock", Remedy.LOG_IN_AGAIN),
    CodeInfo(
        WalletCode.TOKEN_REVOKED,
        401,
        "logged-out session, revoked family, or reset password",
        Remedy.LOG_IN_AGAIN,
    ),
    CodeInfo(
        WalletCode.REFRESH_TOKEN_REUSED,
        401,
        "a rotated refresh token presented again: the family is revoked",
        Remedy.LOG_IN_AGAIN,
    ),
    CodeInfo(
        WalletCode.WRONG_TOKEN_TYPE,
        401,
        "a refresh token as bearer, an access token to a refresh endpoint, a user token where the "
        "application's is needed, or the reverse",
        Remedy.OTHER_TOKEN_KIND,
    ),
    CodeInfo(WalletCode.WRONG_ENVIRONMENT, 401, "a token of the other environment", Remedy.LOG_IN_AGAIN),
    CodeInfo(
        WalletCode.LOGIN_THROTTLED,
        429,
        "5 wrong passwords for the login name: wait `Retry-After` seconds (virtual clock)",
    ),
    CodeInfo(WalletCode.USER_NOT_FOUND, 404, "no such user for this merchant"),
    CodeInfo(WalletCode.OTP_INVALID, 400, "wrong code or purpose"),
    CodeInfo(WalletCode.OTP_EXPIRED, 400, "code older than 10 minutes, or none requested"),
    CodeInfo(WalletCode.OTP_ATTEMPTS_EXCEEDED, 429, "5 wrong tries"),
    CodeInfo(WalletCode.RESET_TOKEN_INVALID, 400, "reset token wrong, used or expired"),
    CodeInfo(WalletCode.PASSWORD_MISMATCH, 400, "`newPassword` differs from `confirmPassword`"),
    CodeInfo(WalletCode.PASSWORD_TOO_WEAK, 400, "fewer than 8 characters"),
    CodeInfo(WalletCode.CARD_NOT_FOUND, 404, "no such card for this merchant"),
    CodeInfo(WalletCode.CARD_NOT_ACTIVE, 409, "the card is blocked or inactive"),
    CodeInfo(WalletCode.INSUFFICIENT_FUNDS, 422, "available balance below the amount (nothing changes)"),
    CodeInfo(WalletCode.INVALID_AMOUNT, 400, "not > 0, more than 4 decimals, not finite"),
    CodeInfo(WalletCode.CURRENCY_MISMATCH, 409, "a transfer between cards of different currencies"),
    CodeInfo(WalletCode.SAME_CARD, 400, "a transfer to the same card"),
    CodeInfo(WalletCode.CARD_NOT_FUNDABLE, 409, "funds or transfers on a linked third-party card"),
    CodeInfo(WalletCode.CARD_ALREADY_LINKED, 409, "linking a card that already has a holder"),
    CodeInfo(WalletCode.LINKING_TOKEN_INVALID, 400, "the temporary linking token is wrong, used or expired"),
    CodeInfo(WalletCode.PERMISSION_DENIED, 403, "the caller lacks the card permission of the operation"),
    CodeInfo(WalletCode.PERMISSION_NOT_FOUND, 404, "no such permission record"),
    CodeInfo(
        WalletCode.CVV_TOKEN_INVALID, 403, "view token wrong, used, expired, or for another card or user"
    ),
    CodeInfo(WalletCode.CVV_NEEDS_USER_SESSION, 403, "CVV asked with application credentials"),
    CodeInfo(
        WalletCode.UNKNOWN_MERCHANT,
        401,
        "application login for a merchant that does not exist",
        Remedy.SIGNING_KEY,
    ),
    CodeInfo(WalletCode.INVALID_SIGNATURE, 401, "the login signature does not verify", Remedy.SIGNING_KEY),
    CodeInfo(WalletCode.KEYS_EXPIRED, 401, "the client's signature keys expired", Remedy.SIGNING_KEY),
)

#: Every own code, ``int(code) -> CodeInfo``, in ascending order.
OWN_CODES: Final[Mapping[int, CodeInfo]] = MappingProxyType({int(row.code): row for row in _ROWS})


def code_info(code: int | None) -> CodeInfo | None:
    """The row of ``code``, ``None`` for ``None`` or a code the table does not hold."""
    return OWN_CODES.get(code) if code is not None else None


def _check_table() -> None:
    members = [*OwnCode, *WalletCode]
    if len(OWN_CODES) != len(_ROWS) or {int(m) for m in members} != set(OWN_CODES):
        raise RuntimeError("paysdk.contracts.codes: every enum member needs exactly one row")
    if list(OWN_CODES) != sorted(OWN_CODES):
        raise RuntimeError("paysdk.contracts.codes: rows must be in ascending code order")


_check_table()
