"""The backoffice (spec 4.4, 5.3.5-5.3.7; decisions D105-D107, D183-D185, D189, D200-D209): logins,
refreshes, operators, partners and card association.

Tokens are the wallet's machinery (:mod:`.wallet_tokens`: sessions, single-use refresh rotation, family
revocation) with the kinds ``backoffice_app``/``backoffice_user`` and the audience ``paysdk-cms``, so a
wallet token on a backoffice route and a backoffice token on a wallet route are ``401 / 7102``, and the
wrong one of the two backoffice tokens is ``401 / 7106`` naming ``Authorization`` (D184).

What other backoffice routes (the cardholder upload and its progress) use:

* :func:`operator_principal` ``(session, context, now, authorization) -> OperatorPrincipal``: verify the
  backoffice *user* access token of a user-scoped route (``authorization``: the bearer, ``Bearer ``
  optional, or ``None``); the principal carries ``client_id``, ``merchant``, ``operator_id``, ``email``.
* :func:`partner_for` ``(session, principal, partner_id) -> PartnerRow``: the principal's merchant's
  partner, else ``404`` naming ``partnerId`` (unknown and another merchant's alike, D185).
* :func:`enroll_cardholder` ``(session, partner, user_id, now)``: record an existing wallet user as the
  partner's cardholder (the control plane, D200); :func:`partner_cardholder` ``(session, partner,
  cardholder_id)`` finds one (created by an upload, or enrolled), else ``404`` naming ``cardholderId``.
* :func:`parse_backoffice_body` ``(model, raw)``: a bad body is ``400`` with ``ownCode`` null naming
  each field (D183).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.contracts.backoffice import (
    BackofficeUserLoginRequest,
    BackofficeUserRefreshRequest,
    CardAssociationRequest,
    Operator,
    Partner,
    SandboxOperatorCreate,
    SandboxPartnerCardholderCreate,
    SandboxPartnerCreate,
)
from paysdk.contracts.wallet import AppLoginRequest, Card, TokenPair, WalletCode, email_key
from paysdk.server.backoffice_tables import OperatorRow, PartnerEnrollmentRow, PartnerRow
from paysdk.server.bodies import parse_json_object
from paysdk.server.cardholder_tables import BatchCardholderRow
from paysdk.server.context import ServerContext
from paysdk.server.core_tables import ClientRow
from paysdk.server.errors import APIProblem, problem_from_validation
from paysdk.server.passwords import dummy_hash, hash_secret, verify_secret
from paysdk.server.services import login_throttle, wallet_tokens
from paysdk.server.services.wallet_balance import card_view
from paysdk.server.services.wallet_common import new_id, valid_id, valid_slug, wallet_problem
from paysdk.server.services.wallet_tokens import BACKOFFICE_AUDIENCE, Principal
from paysdk.server.wallet_tables import WalletCardRow, WalletUserRow

__all__ = [
    "USER_ACCESS_TTL",
    "USER_REFRESH_TTL",
    "OperatorPrincipal",
    "app_login",
    "app_principal",
    "app_refresh",
    "associate_card",
    "create_operator",
    "create_partner",
    "enroll_cardholder",
    "list_operators",
    "list_partners",
    "operator_principal",
    "parse_backoffice_body",
    "partner_cardholder",
    "partner_for",
    "partner_view",
    "sandbox_enroll",
    "user_login",
    "user_refresh",
]

M = TypeVar("M", bound=BaseModel)

#: Backoffice user token lifetimes unless the login asks otherwise (D184).
USER_ACCESS_TTL = 15 * 60
USER_REFRESH_TTL = 12 * 3600


# ------------------------------------------------------------------------------------------ bodies


def parse_backoffice_body(model: type[M], raw: bytes, *, allow_empty: bool = False) -> M:
    """A JSON body validated with ``model``; anything wrong is ``400`` with ``ownCode`` null naming the
    field (``body`` when it is no JSON object; D183). A body over the limit stays ``413``."""
    try:
        data = parse_json_object(raw, allow_empty=allow_empty)
    except APIProblem as problem:
        if problem.status == 413:
            raise
        raise APIProblem(400, None, problem.message, problem.details) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise problem_from_validation(list(exc.errors()), status=400, own_code=None) from None


# ------------------------------------------------------------------------------------------ tokens


@dataclass(frozen=True, slots=True)
class OperatorPrincipal:
    """Who a verified backoffice user token speaks for: an operator of ``merchant``."""

    client_id: int
    merchant: str
    operator_id: str
    email: str
    session_id: str


def app_login(session: Session, context: ServerContext, now: datetime, body: AppLoginRequest) -> TokenPair:
    """``POST {cms}/app/auth/login {merchant, signature}`` (D105): the wallet's checks (D36)."""
    return wallet_tokens.app_login(session, context, now, body, kind="backoffice_app")


def app_refresh(
    session: Session, context: ServerContext, now: datetime, refresh_token: str
) -> TokenPair | APIProblem:
    """``POST {cms}/app/auth/refresh`` (D106): single use; a reuse revokes the family (returned ``7105``)."""
    return wallet_tokens.refresh(session, context, now, refresh_token, "backoffice_app")


def app_principal(
    session: Session, context: ServerContext, now: datetime, authorization: str | None
) -> Principal:
    """The backoffice application token of an application-scoped route (a user token ``7106``, another
    surface's ``7102``; D184)."""
    return wallet_tokens.authenticate(
        session, context, now, authorization, kind="backoffice_app", audience=BACKOFFICE_AUDIENCE
    )


def operator_principal(
    session: Session, context: ServerContext, now: datetime, authorization: str | None
) -> OperatorPrincipal:
    """The backoffice user token of a user-scoped route (the application token ``7106``, another
    surface's ``7102``; D184). ``authorization``: the token (a ``Bearer `` prefix is dropped)."""
    token = authorization
    if token is not None and token[:7].lower() == "bearer ":
        token = token[7:].strip() or None
    principal = wallet_tokens.authenticate(
        session, context, now, token, kind="backoffice_user", audience=BACKOFFICE_AUDIENCE
    )
    operator = session.get(OperatorRow, principal.user_id) if principal.user_id else None
    if operator is None or operator.client_id != principal.client_id:
        raise wallet_problem(WalletCode.TOKEN_INVALID, "The token names no operator.", "Authorization")
    return OperatorPrincipal(
        client_id=operator.client_id,
        merchant=operator.merchant,
        operator_id=operator.id,
        email=operator.email,
        session_id=principal.session_id,
    )


def _bounded(value: int | None, low: int, high: int, field: str) -> int | None:
    if value is not None and not low <= value <= high:
        raise APIProblem(
            400,
            None,
            f"{field} must be between {low} and {high} seconds.",
            [(field, f"must be between {low} and {high}")],
        )
    return value


def _ttls(access_ttl: int | None, refresh_ttl: int | None) -> tuple[int, int]:
    """User token lifetimes (D184), overridden within the wallet's bounds (D34)."""
    access = _bounded(access_ttl, 60, 86400, "accessTokenTtl") or USER_ACCESS_TTL
    refresh = _bounded(refresh_ttl, 300, 90 * 86400, "refreshTokenTtl") or max(USER_REFRESH_TTL, access)
    if refresh < access:
        raise APIProblem(
            400,
            None,
            "refreshTokenTtl must be at least the access token lifetime.",
            [("refreshTokenTtl", "must be at least the access token lifetime")],
        )
    return access, refresh


def user_login(
    session: Session, context: ServerContext, now: datetime, app: Principal, body: BackofficeUserLoginRequest
) -> TokenPair | APIProblem:
    """``POST {cms}/app/users/login`` (application bearer, D105): wrong email or password ``401 / 7101``
    (one answer for both; the hash is checked either way); wrong passwords back off as the wallet's do
    (D381: ``429 / 7108``; the count is committed, the problem returned)."""
    ttls = _ttls(body.access_token_ttl, body.refresh_token_ttl)
    key = email_key(body.email)
    refused = login_throttle.locked(session, now, "backoffice_user", app.client_id, key)
    if refused is not None:
        return refused
    operator = session.scalars(
        select(OperatorRow).where(OperatorRow.client_id == app.client_id, OperatorRow.email == key)
    ).first()
    ok = verify_secret(body.password, operator.password_hash if operator is not None else dummy_hash())
    if operator is None or not ok:
        login_throttle.record_failure(session, now, "backoffice_user", app.client_id, key)
        return wallet_problem(
            WalletCode.INVALID_CREDENTIALS, "Wrong email or password.", "password", "wrong credentials"
        )
    login_throttle.forget(session, "backoffice_user", app.client_id, key)
    row = wallet_tokens.create_session(
        session, context, now, "backoffice_user", app.client_id, app.merchant, operator.id
    )
    return wallet_tokens.issue_pair(session, context, now, row, *ttls)


def user_refresh(
    session: Session,
    context: ServerContext,
    now: datetime,
    app: Principal,
    body: BackofficeUserRefreshRequest,
) -> TokenPair | APIProblem:
    """``POST {cms}/app/users/refresh`` (application bearer, D106): the application's merchant only."""
    ttls = _ttls(body.access_token_ttl, body.refresh_token_ttl)
    return wallet_tokens.refresh(
        session, context, now, body.refresh_token, "backoffice_user", merchant=app.merchant, ttls=ttls
    )


# ---------------------------------------------------------------------------------- control plane


def _client(session: Session, merchant: str) -> ClientRow:
    client = (
        session.scalars(select(ClientRow).where(ClientRow.slug == merchant)).first()
        if valid_slug(merchant)
        else None
    )
    if client is None:
        raise APIProblem.not_found("Client", "merchant")
    return client


def _operator_view(row: OperatorRow, password: str | None = None) -> Operator:
    return Operator(
        operator_id=row.id,
        merchant=row.merchant,
        email=row.email,
        created_at=row.created_at,
        password=password,
    )


def create_operator(session: Session, now: datetime, spec: SandboxOperatorCreate) -> Operator:
    """``POST /_sandbox/backoffice/operators`` (D185): unknown merchant ``404``; a taken email ``409``.
    A generated password is shown once, in this answer."""
    client = _client(session, spec.merchant)
    email = email_key(spec.email)
    generated = secrets.token_urlsafe(12) if spec.password is None else None
    password = spec.password if spec.password is not None else generated
    assert password is not None
    row = OperatorRow(
        id=new_id("opr"),
        client_id=client.id,
        merchant=client.slug,
        email=email,
        password_hash=hash_secret(password),
        created_at=now,
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        raise APIProblem.conflict("An operator with this email already exists.", "email") from None
    return _operator_view(row, generated)


def list_operators(session: Session, merchant: str) -> list[Operator]:
    """``GET /_sandbox/backoffice/operators?merchant=`` (D185), oldest first; never a password."""
    client = _client(session, merchant)
    rows = session.scalars(
        select(OperatorRow)
        .where(OperatorRow.client_id == client.id)
        .order_by(OperatorRow.created_at, OperatorRow.id)
    )
    return [_operator_view(row) for row in rows]


def partner_view(row: PartnerRow) -> Partner:
    """The wire form of a partner."""
    return Partner(partner_id=row.partner_id, merchant=row.merchant, name=row.name)


def create_partner(session: Session, now: datetime, spec: SandboxPartnerCreate) -> Partner:
    """``POST /_sandbox/backoffice/partners`` (D185): a taken ``partnerId`` of the merchant ``409``."""
    client = _client(session, spec.merchant)
    row = PartnerRow(
        client_id=client.id,
        merchant=client.slug,
        partner_id=spec.partner_id or f"ptn_{secrets.token_hex(6)}",
        name=spec.name,
        created_at=now,
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        raise APIProblem.conflict(
            "The merchant already has a partner with this partnerId.", "partnerId"
        ) from None
    return partner_view(row)


def list_partners(session: Session, merchant: str) -> list[Partner]:
    """``GET /_sandbox/backoffice/partners?merchant=``, oldest first."""
    client = _client(session, merchant)
    rows = session.scalars(
        select(PartnerRow).where(PartnerRow.client_id == client.id).order_by(PartnerRow.id)
    )
    return [partner_view(row) for row in rows]


# --------------------------------------------------------------------------------- partners


def _partner(session: Session, client_id: int, partner_id: str) -> PartnerRow:
    row = session.scalars(
        select(PartnerRow).where(PartnerRow.client_id == client_id, PartnerRow.partner_id == partner_id)
    ).first()
    if row is None:
        raise APIProblem.not_found("Partner", "partnerId")
    return row


def partner_for(session: Session, principal: OperatorPrincipal, partner_id: str) -> PartnerRow:
    """The operator's merchant's partner ``partner_id``; unknown or another merchant's: ``404`` naming
    ``partnerId`` (one answer for both, D185)."""
    return _partner(session, principal.client_id, partner_id)


def enroll_cardholder(session: Session, partner: PartnerRow, user_id: str, now: datetime) -> None:
    """Record the wallet user ``user_id`` (of the partner's merchant) as the partner's cardholder (D200);
    an upload's cardholders need none (they are rows of the upload's own table).
    A user already of another partner: ``409`` naming ``userId``; of this one: nothing changes."""
    existing = session.get(PartnerEnrollmentRow, user_id)
    if existing is not None:
        if existing.partner_pk != partner.id:
            raise APIProblem.conflict("The user is a cardholder of another partner.", "userId")
        return
    session.add(PartnerEnrollmentRow(user_id=user_id, partner_pk=partner.id, created_at=now))
    session.flush()


def partner_cardholder(session: Session, partner: PartnerRow, cardholder_id: str) -> WalletUserRow:
    """The partner's cardholder (a wallet user, ``cardholderId`` = its ``authUserId``), else ``404``
    naming ``cardholderId`` (D189)."""
    user = session.get(WalletUserRow, cardholder_id) if valid_id(cardholder_id) else None
    if user is None or user.client_id != partner.client_id:
        raise APIProblem.not_found("Cardholder", "cardholderId")
    uploaded = session.scalar(
        select(BatchCardholderRow.id).where(
            BatchCardholderRow.client_id == partner.client_id,
            BatchCardholderRow.partner_pk == partner.id,
            BatchCardholderRow.user_id == user.id,
        )
    )
    if uploaded is None:
        enrolled = session.get(PartnerEnrollmentRow, user.id)
        if enrolled is None or enrolled.partner_pk != partner.id:
            raise APIProblem.not_found("Cardholder", "cardholderId")
    return user


def sandbox_enroll(
    session: Session, now: datetime, partner_id: str, spec: SandboxPartnerCardholderCreate
) -> dict[str, str]:
    """``POST /_sandbox/backoffice/partners/{partnerId}/cardholders {merchant, userId}`` (D200): an
    existing wallet user of the merchant becomes the partner's cardholder."""
    client = _client(session, spec.merchant)
    partner = _partner(session, client.id, partner_id)
    user = session.get(WalletUserRow, spec.user_id) if valid_id(spec.user_id) else None
    if user is None or user.client_id != client.id:
        raise APIProblem.not_found("User", "userId")
    enroll_cardholder(session, partner, user.id, now)
    return {"partnerId": partner.partner_id, "cardholderId": user.id, "merchant": client.slug}


# --------------------------------------------------------------------------------- association


def associate_card(
    session: Session,
    principal: OperatorPrincipal,
    partner_id: str,
    cardholder_id: str,
    body: CardAssociationRequest,
) -> tuple[Card, bool]:
    """``POST {cms}/app/partners/{partnerId}/cardholders/{cardholderId}/cards/association {cardId}``
    (D189): ``(card, created)``. A card no one holds becomes the cardholder's (``created``); one this
    cardholder already holds is answered unchanged; another's ``409`` naming ``cardId``; an unknown card
    or another merchant's ``404`` naming ``cardId``. The partner is checked first, then the cardholder."""
    partner = partner_for(session, principal, partner_id)
    user = partner_cardholder(session, partner, cardholder_id)
    card = session.get(WalletCardRow, body.card_id) if valid_id(body.card_id) else None
    if card is None or card.client_id != principal.client_id:
        raise APIProblem.not_found("Card", "cardId")
    if card.holder_id == user.id:
        return card_view(card), False
    taken = session.execute(
        update(WalletCardRow)
        .where(WalletCardRow.id == card.id, WalletCardRow.holder_id.is_(None))
        .values(holder_id=user.id)
        .execution_options(synchronize_session=False)
    )
    if getattr(taken, "rowcount", 0) != 1:
        raise APIProblem.conflict("The card already belongs to another cardholder.", "cardId")
    session.refresh(card)
    return card_view(card), True
