"""Wallet cards: a user's card list and summary, creating cards, card operations, the CVV (D40-D44).

* Access (D37, D40) is :mod:`.wallet_card_access`; every change of a card's money is
  :mod:`.wallet_balance` (the funds rule); funds and transfers are :mod:`.wallet_funds`, permission
  records :mod:`.wallet_permissions`, the control plane's cards and card payments :mod:`.wallet_sandbox`.
* States (D42): block/unblock toggles ``active``/``blocked`` (repeating one is a no-op; an inactive card
  cannot be blocked or unblocked, ``7302``); activation turns ``inactive`` into ``active`` (a no-op on an
  active card, ``7302`` on a blocked one). Funds ``add`` works in every state (the issuer may preload or
  credit a frozen card); debits, transfer legs, authorizations and CVV need ``active``.
* Linked third-party cards hold no money here: funds, transfers, charges, PIN and CVV are
  ``409 / 7307``.
* The CVV (D44) is shown once per view token, only to a user session with ``checkCvv``.
"""

from __future__ import annotations

import secrets
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import case, func, select, update
from sqlalchemy.orm import Session

from paysdk.contracts.wallet import (
    AliasUpdate,
    Card,
    CardPeriodSummary,
    CardPermissionType,
    CardSummary,
    Cvv,
    CvvViewToken,
    IssueVirtualCardRequest,
    LinkCardRequest,
    LinkExternalCardRequest,
    Movement,
    PinRequest,
    WalletCode,
)
from paysdk.server.core_tables import ClientRow
from paysdk.server.passwords import hash_secret
from paysdk.server.services.wallet_balance import card_view, movement_view, reload
from paysdk.server.services.wallet_card_access import (
    application_only,
    card_for,
    card_not_active,
    card_not_found,
    card_not_fundable,
    find_card,
    may_use,
    permission_denied,
)
from paysdk.server.services.wallet_common import from_units, new_id, sha256_hex, wallet_problem
from paysdk.server.services.wallet_tokens import Principal
from paysdk.server.services.wallet_users import load_user
from paysdk.server.wallet_tables import (
    WalletCardRow,
    WalletCvvTokenRow,
    WalletLinkingTokenRow,
    WalletMovementRow,
)

__all__ = [
    "CVV_TOKEN_TTL",
    "activate",
    "cvv_view_token",
    "get_card",
    "issue_virtual",
    "link_external",
    "link_stock",
    "list_cards",
    "list_movements",
    "new_card",
    "read_cvv",
    "set_alias",
    "set_pin",
    "set_status",
    "summary",
]

CVV_TOKEN_TTL = 60
_EARLIEST = date(1900, 1, 1)
_LATEST = date(9000, 12, 31)


def _client_of(session: Session, client_id: int) -> ClientRow:
    """The merchant client ``client_id`` (it exists: a principal was issued for it)."""
    client = session.get(ClientRow, client_id)
    assert client is not None
    return client


def _pan() -> tuple[str, str]:
    """A Luhn-valid 16-digit PAN's last four digits and its masked form (the PAN itself is not kept)."""
    digits = [4] + [secrets.randbelow(10) for _ in range(14)]
    total = 0
    for index, digit in enumerate(reversed(digits)):
        doubled = digit * 2 if index % 2 == 0 else digit
        total += doubled - 9 if doubled > 9 else doubled
    digits.append((10 - total % 10) % 10)
    last4 = "".join(str(d) for d in digits[-4:])
    return last4, f"**** **** **** {last4}"


def new_card(
    client: ClientRow,
    now: datetime,
    *,
    type_: str,
    status: str,
    currency: str,
    holder: str | None,
    alias: str | None = None,
    masked: str | None = None,
) -> WalletCardRow:
    """A new card row, not yet added (the bulk cardholder upload issues virtual cards with it, D186)."""
    _, masked_pan = _pan()
    return WalletCardRow(
        id=new_id("crd"),
        client_id=client.id,
        merchant=client.slug,
        holder_id=holder,
        type=type_,
        status=status,
        currency=currency,
        balance=0,
        pending_debits=0,
        pending_credits=0,
        masked_pan=masked or masked_pan,
        cvv=None if type_ == "linked" else f"{secrets.randbelow(1000):03d}",
        alias=alias,
        created_at=now,
    )


def _cards_of(
    session: Session, principal: Principal, user_id: str, permission: CardPermissionType
) -> list[WalletCardRow]:
    load_user(session, principal.client_id, user_id)
    cards = list(
        session.scalars(
            select(WalletCardRow)
            .where(WalletCardRow.client_id == principal.client_id, WalletCardRow.holder_id == user_id)
            .order_by(WalletCardRow.created_at, WalletCardRow.id)
        )
    )
    if principal.is_application or principal.user_id == user_id:
        return cards
    visible = [card for card in cards if may_use(session, principal, card, permission)]
    if not visible:
        raise permission_denied(permission.value)
    return visible


def list_cards(session: Session, principal: Principal, user_id: str) -> list[Card]:
    """``GET /users/{userId}/cards`` (``getCards``)."""
    return [card_view(card) for card in _cards_of(session, principal, user_id, CardPermissionType.GET_CARDS)]


def _window(
    session: Session, principal: Principal, start: date | None, end: date | None
) -> tuple[datetime | None, datetime | None]:
    for value, field in ((start, "startDate"), (end, "endDate")):
        if value is not None and not _EARLIEST <= value <= _LATEST:
            raise wallet_problem(
                WalletCode.VALIDATION_ERROR,
                f"{field} must be between {_EARLIEST} and {_LATEST}.",
                field,
                "out of range",
            )
    if start is not None and end is not None and start > end:
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR, "startDate must not be after endDate.", "startDate", "after endDate"
        )
    zone = ZoneInfo(_client_of(session, principal.client_id).timezone)
    low = datetime.combine(start, time(), zone).astimezone(UTC) if start is not None else None
    high = (
        datetime.combine(end + timedelta(days=1), time(), zone).astimezone(UTC) if end is not None else None
    )
    return low, high


def summary(session: Session, principal: Principal, user_id: str, start: date, end: date) -> CardSummary:
    """``GET /users/{userId}/cards/summary`` (``getAllTransfersByDate``); inclusive dates, client timezone."""
    cards = _cards_of(session, principal, user_id, CardPermissionType.GET_ALL_TRANSFERS_BY_DATE)
    low, high = _window(session, principal, start, end)
    assert low is not None
    assert high is not None
    M = WalletMovementRow
    figures: list[CardPeriodSummary] = []
    for card in cards:
        opening = session.scalar(
            select(M.balance_after)
            .where(M.card_id == card.id, M.created_at < low)
            .order_by(M.seq.desc())
            .limit(1)
        )
        count, credits, debits = session.execute(
            select(
                func.count(M.seq),
                func.coalesce(func.sum(case((M.direction == "credit", M.amount), else_=0)), 0),
                func.coalesce(func.sum(case((M.direction == "debit", M.amount), else_=0)), 0),
            ).where(M.card_id == card.id, M.created_at >= low, M.created_at < high)
        ).one()
        opening_units = int(opening or 0)
        figures.append(
            CardPeriodSummary(
                card_id=card.id,
                currency=card.currency,
                opening_balance=from_units(opening_units),
                credits=from_units(int(credits)),
                debits=from_units(int(debits)),
                closing_balance=from_units(opening_units + int(credits) - int(debits)),
                movements=int(count),
            )
        )
    return CardSummary(start_date=start, end_date=end, cards=figures)


def link_stock(
    session: Session,
    now: datetime,
    principal: Principal,
    user_id: str,
    client_slug: str | None,
    body: LinkCardRequest,
) -> Card:
    """``POST /users/{userId}/cards?clientId=``: give a stock physical card a holder (``inactive``, D42)."""
    application_only(principal)
    if client_slug is None or client_slug == "":
        raise wallet_problem(WalletCode.VALIDATION_ERROR, "clientId is required.", "clientId", "is required")
    if client_slug != principal.merchant:
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR, "clientId does not name your client.", "clientId", "not your client"
        )
    user = load_user(session, principal.client_id, user_id)
    card = find_card(session, principal, body.card_id, "cardId")
    locked = session.execute(
        update(WalletCardRow)
        .where(
            WalletCardRow.id == card.id, WalletCardRow.holder_id.is_(None), WalletCardRow.type == "physical"
        )
        .values(holder_id=user.id)
        .execution_options(synchronize_session=False)
    )
    if getattr(locked, "rowcount", 0) != 1:
        if card.type != "physical":
            raise card_not_found("cardId")
        raise wallet_problem(WalletCode.CARD_ALREADY_LINKED, "The card already has a holder.", "cardId")
    return card_view(reload(session, card))


def issue_virtual(
    session: Session, now: datetime, principal: Principal, user_id: str, body: IssueVirtualCardRequest
) -> Card:
    """``POST /users/{userId}/cards/virtuals``: a new ``active`` virtual card, balance 0."""
    application_only(principal)
    user = load_user(session, principal.client_id, user_id)
    client = _client_of(session, principal.client_id)
    currency = body.currency.value if body.currency is not None else str(client.currencies[0])
    if currency not in client.currencies:
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR, "currency is not enabled for this client.", "currency", "not enabled"
        )
    card = new_card(
        client, now, type_="virtual", status="active", currency=currency, holder=user.id, alias=body.alias
    )
    session.add(card)
    session.flush()
    return card_view(card)


def link_external(
    session: Session, now: datetime, principal: Principal, user_id: str, body: LinkExternalCardRequest
) -> Card:
    """``POST /users/{userId}/linked-cards``: application or the user; the token is single-use."""
    if not principal.is_application and principal.user_id != user_id:
        raise wallet_problem(
            WalletCode.PERMISSION_DENIED,
            "Only the user may link a card to themself.",
            "userId",
            "another user",
        )
    user = load_user(session, principal.client_id, user_id)
    digest = sha256_hex(body.token)
    token = session.get(WalletLinkingTokenRow, digest)
    used = session.execute(
        update(WalletLinkingTokenRow)
        .where(
            WalletLinkingTokenRow.token_sha256 == digest,
            WalletLinkingTokenRow.used_at.is_(None),
            WalletLinkingTokenRow.expires_at > now,
        )
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if token is None or getattr(used, "rowcount", 0) != 1:
        raise wallet_problem(
            WalletCode.LINKING_TOKEN_INVALID,
            "The linking token is wrong, used or expired.",
            "token",
            "invalid",
        )
    client = _client_of(session, principal.client_id)
    card = new_card(
        client,
        now,
        type_="linked",
        status="active",
        currency=str(client.currencies[0]),
        holder=user.id,
        alias=body.alias,
        masked=f"**** **** **** {token.pan_last4}",
    )
    session.add(card)
    session.flush()
    return card_view(card)


def get_card(session: Session, principal: Principal, card_id: str) -> Card:
    """``GET /cards/{cardId}`` (``checkCard``)."""
    return card_view(card_for(session, principal, card_id, CardPermissionType.CHECK_CARD))


def set_alias(session: Session, principal: Principal, card_id: str, body: AliasUpdate) -> Card:
    """``PATCH /cards/{cardId}`` (``updateAlias``)."""
    card = card_for(session, principal, card_id, CardPermissionType.UPDATE_ALIAS)
    card.alias = body.alias
    session.flush()
    return card_view(card)


def set_status(session: Session, principal: Principal, card_id: str, blocked: bool) -> Card:
    """``POST /cards/{cardId}/block`` and ``/unblock`` (``updateStatus``, D42)."""
    card = card_for(session, principal, card_id, CardPermissionType.UPDATE_STATUS)
    session.refresh(card, with_for_update=True)
    if card.status == "inactive":
        raise card_not_active(card)
    card.status = "blocked" if blocked else "active"
    session.flush()
    return card_view(card)


def activate(session: Session, principal: Principal, card_id: str) -> Card:
    """``POST /cards/{cardId}/activation`` (``activation``, D42)."""
    card = card_for(session, principal, card_id, CardPermissionType.ACTIVATION)
    session.refresh(card, with_for_update=True)
    if card.status == "blocked":
        raise card_not_active(card)
    card.status = "active"
    session.flush()
    return card_view(card)


def set_pin(session: Session, principal: Principal, card_id: str, body: PinRequest) -> Card:
    """``PUT /cards/{cardId}/pin`` (``assignPIN``): only a scrypt hash of the PIN is kept."""
    card = card_for(session, principal, card_id, CardPermissionType.ASSIGN_PIN)
    if card.type == "linked":
        raise card_not_fundable()
    card.pin_hash = hash_secret(body.pin)
    session.flush()
    return card_view(card)


def list_movements(
    session: Session, principal: Principal, card_id: str, start: date | None, end: date | None
) -> list[Movement]:
    """``GET /cards/{cardId}/movements`` (``getAllTransfersByDate``), oldest first."""
    card = card_for(session, principal, card_id, CardPermissionType.GET_ALL_TRANSFERS_BY_DATE)
    low, high = _window(session, principal, start, end)
    statement = select(WalletMovementRow).where(WalletMovementRow.card_id == card.id)
    if low is not None:
        statement = statement.where(WalletMovementRow.created_at >= low)
    if high is not None:
        statement = statement.where(WalletMovementRow.created_at < high)
    return [movement_view(row) for row in session.scalars(statement.order_by(WalletMovementRow.seq))]


def cvv_view_token(session: Session, now: datetime, principal: Principal, card_id: str) -> CvvViewToken:
    """``POST /cards/{cardId}/cvv/view-token`` (user token with ``checkCvv``, D44)."""
    card = card_for(session, principal, card_id, CardPermissionType.CHECK_CVV)
    if card.type == "linked" or card.cvv is None:
        raise card_not_fundable()
    if card.status != "active":
        raise card_not_active(card)
    assert principal.user_id is not None
    token = secrets.token_urlsafe(32)
    session.add(
        WalletCvvTokenRow(
            token_sha256=sha256_hex(token),
            card_id=card.id,
            user_id=principal.user_id,
            expires_at=now + timedelta(seconds=CVV_TOKEN_TTL),
        )
    )
    return CvvViewToken(view_token=token, expires_in=CVV_TOKEN_TTL)


def read_cvv(
    session: Session, now: datetime, principal: Principal, card_id: str, view_token: str | None
) -> Cvv:
    """``GET /cards/{cardId}/cvv`` with ``X-View-Token``: once, by the user it was issued to (D44)."""
    card = card_for(session, principal, card_id, CardPermissionType.CHECK_CVV)
    invalid = wallet_problem(
        WalletCode.CVV_TOKEN_INVALID, "The view token is wrong, used, expired or not yours.", "X-View-Token"
    )
    if not view_token or len(view_token) > 200:
        raise invalid
    if card.status != "active" or card.cvv is None:
        raise card_not_active(card)
    consumed = session.execute(
        update(WalletCvvTokenRow)
        .where(
            WalletCvvTokenRow.token_sha256 == sha256_hex(view_token),
            WalletCvvTokenRow.card_id == card.id,
            WalletCvvTokenRow.user_id == principal.user_id,
            WalletCvvTokenRow.used_at.is_(None),
            WalletCvvTokenRow.expires_at > now,
        )
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if getattr(consumed, "rowcount", 0) != 1:
        raise invalid
    return Cvv(cvv=card.cvv)
