"""The backoffice's own bodies and answers (spec 4.4, 5.3.5-5.3.7; decisions D105-D107, D183-D185, D189).

Shared by the SDK (``client.backoffice``, ``client.sandbox.backoffice``), the reference server
(``/cms/rest/app/...`` and ``/_sandbox/backoffice/...``) and the CLI. Login and refresh answer the
wallet's :class:`~paysdk.contracts.wallet.TokenPair` inside ``{"data": ...}`` (D32, D105); the
application login takes :class:`~paysdk.contracts.wallet.AppLoginRequest` and both refreshes
:class:`~paysdk.contracts.wallet.RefreshRequest`. Card association answers the wallet's
:class:`~paysdk.contracts.wallet.Card` inside ``{"data": ...}`` (D189).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, Field

from paysdk.contracts.common import NoFormula, NonEmptyStr, WireModel
from paysdk.contracts.wallet import Email, TokenStr

__all__ = [
    "PARTNER_ID_PATTERN",
    "BackofficeUserLoginRequest",
    "BackofficeUserRefreshRequest",
    "CardAssociationRequest",
    "Operator",
    "Partner",
    "SandboxOperatorCreate",
    "SandboxPartnerCardholderCreate",
    "SandboxPartnerCreate",
    "validate_partner_id",
]

#: A partner id (D185): 1-64 of letters, digits, ``_`` and ``-``.
PARTNER_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_PARTNER_ID = re.compile(PARTNER_ID_PATTERN)


def validate_partner_id(value: str) -> str:
    """``value`` when it is a partner id of D185's form, else ``ValueError``."""
    if not _PARTNER_ID.match(value):
        raise ValueError("must be 1-64 of letters, digits, '_' and '-'")
    return value


def _masked(model: WireModel, *names: str) -> str:
    shown = ", ".join(
        f"{name}='****'" if name in names else f"{name}={getattr(model, name)!r}"
        for name in type(model).model_fields
    )
    return f"{type(model).__name__}({shown})"


class BackofficeUserLoginRequest(WireModel):
    """``POST {cms}/app/users/login`` (application bearer, D105): the operator's email and password, with
    optional lifetimes in seconds (5.3.3; defaults 15 min and 12 h, D184)."""

    email: Email
    password: str = Field(min_length=1, max_length=1024)
    access_token_ttl: int | None = Field(default=None, strict=True)
    refresh_token_ttl: int | None = Field(default=None, strict=True)

    def __repr__(self) -> str:
        return _masked(self, "password")


class BackofficeUserRefreshRequest(WireModel):
    """``POST {cms}/app/users/refresh`` (application bearer, D106), with optional lifetimes as at login."""

    refresh_token: TokenStr
    access_token_ttl: int | None = Field(default=None, strict=True)
    refresh_token_ttl: int | None = Field(default=None, strict=True)

    def __repr__(self) -> str:
        return _masked(self, "refresh_token")


class CardAssociationRequest(WireModel):
    """``POST {cms}/app/partners/{partnerId}/cardholders/{cardholderId}/cards/association`` (D189)."""

    card_id: Annotated[str, Field(min_length=1, max_length=64)]


class SandboxOperatorCreate(WireModel):
    """``POST /_sandbox/backoffice/operators`` (D185): a password is generated when omitted."""

    merchant: NonEmptyStr
    email: Email
    password: str | None = Field(default=None, min_length=8, max_length=1024)

    def __repr__(self) -> str:
        return _masked(self, "password")


class Operator(WireModel):
    """A backoffice operator. ``password`` only in the creation's answer, and only when generated."""

    operator_id: str
    merchant: str
    email: str
    created_at: datetime
    password: str | None = None

    def __repr__(self) -> str:
        return _masked(self, "password")

    __str__ = __repr__


class SandboxPartnerCreate(WireModel):
    """``POST /_sandbox/backoffice/partners`` (D185): ``partnerId`` generated (``ptn_<12 hex>``) when
    omitted."""

    merchant: NonEmptyStr
    name: Annotated[NonEmptyStr, Field(max_length=200), NoFormula]
    partner_id: Annotated[str, AfterValidator(validate_partner_id)] | None = None


class Partner(WireModel):
    """A partner of a merchant: a company whose cardholders are managed together (D185)."""

    partner_id: str
    merchant: str
    name: str


class SandboxPartnerCardholderCreate(WireModel):
    """``POST /_sandbox/backoffice/partners/{partnerId}/cardholders`` (D200): an existing wallet user of
    the merchant becomes the partner's cardholder."""

    merchant: NonEmptyStr
    user_id: Annotated[str, Field(min_length=1, max_length=64)]
