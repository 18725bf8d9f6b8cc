"""Cards and their ledger: balances, movements, pending debits/credits, transfers, permissions, CVV.

Decisions D40-D44 (and D18 for storage):

* Money is ``x 10000`` integers (:mod:`.wallet_common`). ``available = balance - pending_debits``.
* Every debit is guarded in the database, inside the request's transaction:
  ``UPDATE wallet_cards SET balance = balance - :a WHERE id = :id AND status = 'active' AND
  balance - pending_debits >= :a RETURNING balance``; no row means nothing changed (``422 / 7303``, or
  ``409 / 7302`` when the card is not active). SQLite transactions start with ``BEGIN IMMEDIATE`` (one
  writer); on PostgreSQL the conditional update takes the row lock and re-checks its condition after a
  concurrent writer commits. Transfers first lock both rows ``FOR UPDATE`` in card-id order (no
  deadlock), then debit and credit: both legs or neither. Every balance change writes one movement whose
  ``balance_after`` is the value the ``UPDATE`` returned, so a card's balance is always the sum of its
  movements.
* Authorizations (``/_sandbox/cards/{id}/charges``) raise ``pending_debits`` under the same guard and
  expire after 7 days on the virtual clock (a scheduler job releases the hold, or a capture that comes
  too late does). A capture moves the hold to the balance; a refund is a pending credit until cleared.
* Access (D37, D40): the application token reaches every card of its merchant (CVV excepted, ``7502``);
  a user token reaches the cards it holds (every permission) and the cards it was granted permissions
  on (only those); a card of another merchant is ``404 / 7301``; a missing permission ``403 / 7401``.
  Endpoints only the issuer's backend may call (funds, linking a stock card, issuing a virtual card)
  refuse user tokens with ``401 / 7106``.
* States (D42): block/unblock toggles ``active``/``blocked`` (repeating one is a no-op; an inactive card
  cannot be blocked or unblocked, ``7302``); activation turns ``inactive`` into ``active`` (a no-op on an
  active card, ``7302`` on a blocked one). Funds ``add`` works in every state (the issuer may preload or
  credit a frozen card); debits, transfer legs, authorizations and CVV need ``active``.
* Linked third-party cards hold no money here: funds, transfers, charges, PIN and CVV are
  ``409 / 7307``.
* Permissions: one record per (card, user). ``POST`` on a pair that has one replaces its permission set
  (``200``; ``201`` when created). The card's holder cannot be granted permissions (``400 / 7001``).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
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
    FundsRequest,
    FundsResult,
    IssueVirtualCardRequest,
    LinkCardRequest,
    LinkExternalCardRequest,
    Movement,
    PermissionGrant,
    PermissionRecord,
    PinRequest,
    SandboxCharge,
    SandboxChargeCreate,
    SandboxLinkingToken,
    SandboxLinkingTokenCreate,
    SandboxRefund,
    SandboxRefundCreate,
    SandboxStockCardCreate,
    TransferRequest,
    TransferResult,
    WalletCode,
)
from paysdk.server import jobs
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow
from paysdk.server.errors import APIProblem
from paysdk.server.services.wallet_common import (
    MAX_UNITS,
    from_units,
    new_id,
    sha256_hex,
    to_units,
    valid_id,
    wallet_problem,
)
from paysdk.server.services.wallet_tokens import Principal
from paysdk.server.services.wallet_users import hash_secret, load_user, permission_view
from paysdk.server.wallet_tables import (
    WalletCardRow,
    WalletChargeRow,
    WalletCvvTokenRow,
    WalletLinkingTokenRow,
    WalletMovementRow,
    WalletPermissionRow,
    WalletRefundRow,
)

__all__ = [
    "AUTHORIZATION_TTL",
    "CVV_TOKEN_TTL",
    "EXPIRE_JOB",
    "activate",
    "authorize",
    "capture",
    "card_view",
    "clear_refund",
    "create_linking_token",
    "create_refund",
    "create_stock_card",
    "cvv_view_token",
    "expire_authorization",
    "funds",
    "get_card",
    "grant_permissions",
    "issue_virtual",
    "link_external",
    "link_stock",
    "list_card_permissions",
    "list_cards",
    "list_movements",
    "list_one_permissions",
    "list_user_permissions",
    "read_cvv",
    "set_alias",
    "set_pin",
    "set_status",
    "summary",
    "transfer",
    "update_permissions",
]

AUTHORIZATION_TTL = timedelta(days=7)
CVV_TOKEN_TTL = 60
LINKING_TOKEN_TTL = timedelta(minutes=10)
EXPIRE_JOB = "wallet_auth_exp"  # jobs.kind holds 16 characters
_C = WalletCardRow
_P = CardPermissionType
_EARLIEST = date(1900, 1, 1)
_LATEST = date(9000, 12, 31)


# ---------------------------------------------------------------------------------------- views


def card_view(card: WalletCardRow) -> Card:
    """The wire form of a card."""
    return Card(
        card_id=card.id,
        masked_pan=card.masked_pan,
        type=card.type,
        status=card.status,
        currency=card.currency,
        balance=from_units(card.balance),
        available_balance=from_units(card.balance - card.pending_debits),
        pending_debits=from_units(card.pending_debits),
        pending_credits=from_units(card.pending_credits),
        holder_id=card.holder_id,
        merchant=card.merchant,
        alias=card.alias,
        created_at=card.created_at,
    )


def _movement_view(row: WalletMovementRow) -> Movement:
    return Movement(
        movement_id=row.id,
        card_id=row.card_id,
        type=row.type,
        direction=row.direction,
        amount=from_units(row.amount),
        balance_after=from_units(row.balance_after),
        currency=row.currency,
        reference=row.reference,
        counterpart_card_id=row.counterpart_card_id,
        created_at=row.created_at,
    )


def _charge_view(row: WalletChargeRow) -> SandboxCharge:
    return SandboxCharge(
        charge_id=row.id,
        card_id=row.card_id,
        amount=from_units(row.amount),
        captured_amount=from_units(row.captured_amount),
        refunded_amount=from_units(row.refunded_amount),
        status=row.status,
        created_at=row.created_at,
        expires_at=row.expires_at,
    )


def _refund_view(row: WalletRefundRow) -> SandboxRefund:
    return SandboxRefund(
        refund_id=row.id,
        charge_id=row.charge_id,
        card_id=row.card_id,
        amount=from_units(row.amount),
        status=row.status,
        created_at=row.created_at,
    )


# -------------------------------------------------------------------------------------- helpers


def _not_found(field: str = "cardId") -> APIProblem:
    return wallet_problem(WalletCode.CARD_NOT_FOUND, "Card not found.", field, "not found")


def _not_active(card: WalletCardRow) -> APIProblem:
    return wallet_problem(
        WalletCode.CARD_NOT_ACTIVE, f"The card is {card.status}.", "cardId", f"card is {card.status}"
    )


def _not_fundable(field: str = "cardId") -> APIProblem:
    return wallet_problem(
        WalletCode.CARD_NOT_FUNDABLE, "A linked third-party card holds no funds in the wallet.", field
    )


def _application_only(principal: Principal) -> None:
    if not principal.is_application:
        raise wallet_problem(
            WalletCode.WRONG_TOKEN_TYPE,
            "This endpoint needs the application token.",
            "Authorization",
            "wrong token type",
        )


def _denied(permission: str) -> APIProblem:
    return wallet_problem(
        WalletCode.PERMISSION_DENIED,
        f"Permission {permission} is required for this operation.",
        "Authorization",
        f"lacks {permission}",
    )


def _find_card(session: Session, principal: Principal, card_id: str, field: str = "cardId") -> WalletCardRow:
    card = session.get(WalletCardRow, card_id) if valid_id(card_id) else None
    if card is None or card.client_id != principal.client_id:
        raise _not_found(field)
    return card


def _granted(session: Session, card_id: str, user_id: str) -> list[str]:
    permissions = session.scalar(
        select(WalletPermissionRow.permissions).where(
            WalletPermissionRow.card_id == card_id, WalletPermissionRow.user_id == user_id
        )
    )
    return [str(p) for p in permissions] if permissions else []


def _allowed(
    session: Session, principal: Principal, card: WalletCardRow, permission: CardPermissionType
) -> bool:
    if principal.is_application:
        return permission is not _P.CHECK_CVV
    if card.holder_id is not None and card.holder_id == principal.user_id:
        return True
    assert principal.user_id is not None
    return permission.value in _granted(session, card.id, principal.user_id)


def _card_for(
    session: Session, principal: Principal, card_id: str, permission: CardPermissionType
) -> WalletCardRow:
    card = _find_card(session, principal, card_id)
    if permission is _P.CHECK_CVV and principal.is_application:
        raise wallet_problem(
            WalletCode.CVV_NEEDS_USER_SESSION,
            "The CVV is shown only to a user session, never to application credentials.",
            "Authorization",
            "application token",
        )
    if not _allowed(session, principal, card, permission):
        raise _denied(permission.value)
    return card


def _owner_or_app(principal: Principal, card: WalletCardRow) -> None:
    if principal.is_application or (card.holder_id is not None and card.holder_id == principal.user_id):
        return
    raise wallet_problem(
        WalletCode.PERMISSION_DENIED,
        "Only the application or the card's holder may do this.",
        "Authorization",
        "not the card's holder",
    )


def _client(session: Session, client_id: int) -> ClientRow:
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


def _new_card(
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


#: A new card row (the bulk cardholder upload issues virtual cards with it, D186).
new_card = _new_card


def _movement(
    session: Session,
    card: WalletCardRow,
    now: datetime,
    *,
    type_: str,
    direction: str,
    amount: int,
    balance_after: int,
    reference: str | None = None,
    counterpart: str | None = None,
    transfer_id: str | None = None,
) -> WalletMovementRow:
    row = WalletMovementRow(
        id=new_id("mov"),
        card_id=card.id,
        type=type_,
        direction=direction,
        amount=amount,
        balance_after=balance_after,
        currency=card.currency,
        reference=reference,
        counterpart_card_id=counterpart,
        transfer_id=transfer_id,
        created_at=now,
    )
    session.add(row)
    return row


def _returned(result: Any) -> int | None:
    row = result.first()
    return int(row[0]) if row is not None else None


def _debit(session: Session, card_id: str, units: int, *, also_pending: bool = False) -> int | None:
    """The guarded debit of the module docstring; the new balance, or ``None`` when refused."""
    statement = update(_C).where(_C.id == card_id)
    if also_pending:  # a capture: the held amount leaves both the hold and the balance
        statement = statement.where(_C.pending_debits >= units, _C.balance >= units).values(
            balance=_C.balance - units, pending_debits=_C.pending_debits - units
        )
    else:
        statement = statement.where(_C.status == "active", _C.balance - _C.pending_debits >= units).values(
            balance=_C.balance - units
        )
    return _returned(
        session.execute(statement.returning(_C.balance).execution_options(synchronize_session=False))
    )


def _credit(session: Session, card_id: str, units: int, *, require_active: bool) -> int | None:
    statement = update(_C).where(_C.id == card_id, _C.balance + units <= MAX_UNITS)
    if require_active:
        statement = statement.where(_C.status == "active")
    return _returned(
        session.execute(
            statement.values(balance=_C.balance + units)
            .returning(_C.balance)
            .execution_options(synchronize_session=False)
        )
    )


def _too_large(field: str = "amount") -> APIProblem:
    return wallet_problem(
        WalletCode.INVALID_AMOUNT, "The amount would take the balance beyond the maximum.", field, "too large"
    )


def _reload(session: Session, card: WalletCardRow) -> WalletCardRow:
    session.refresh(card)
    return card


# ---------------------------------------------------------------------------- users' card lists


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
    visible = [card for card in cards if _allowed(session, principal, card, permission)]
    if not visible:
        raise _denied(permission.value)
    return visible


def list_cards(session: Session, principal: Principal, user_id: str) -> list[Card]:
    """``GET /users/{userId}/cards`` (``getCards``)."""
    return [card_view(card) for card in _cards_of(session, principal, user_id, _P.GET_CARDS)]


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
    zone = ZoneInfo(_client(session, principal.client_id).timezone)
    low = datetime.combine(start, time(), zone).astimezone(UTC) if start is not None else None
    high = (
        datetime.combine(end + timedelta(days=1), time(), zone).astimezone(UTC) if end is not None else None
    )
    return low, high


def summary(session: Session, principal: Principal, user_id: str, start: date, end: date) -> CardSummary:
    """``GET /users/{userId}/cards/summary`` (``getAllTransfersByDate``); inclusive dates, client timezone."""
    cards = _cards_of(session, principal, user_id, _P.GET_ALL_TRANSFERS_BY_DATE)
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


# ------------------------------------------------------------------------------ creating cards


def link_stock(
    session: Session,
    now: datetime,
    principal: Principal,
    user_id: str,
    client_slug: str | None,
    body: LinkCardRequest,
) -> Card:
    """``POST /users/{userId}/cards?clientId=``: give a stock physical card a holder (``inactive``, D42)."""
    _application_only(principal)
    if client_slug is None or client_slug == "":
        raise wallet_problem(WalletCode.VALIDATION_ERROR, "clientId is required.", "clientId", "is required")
    if client_slug != principal.merchant:
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR, "clientId does not name your client.", "clientId", "not your client"
        )
    user = load_user(session, principal.client_id, user_id)
    card = _find_card(session, principal, body.card_id, "cardId")
    locked = session.execute(
        update(_C)
        .where(_C.id == card.id, _C.holder_id.is_(None), _C.type == "physical")
        .values(holder_id=user.id)
        .execution_options(synchronize_session=False)
    )
    if getattr(locked, "rowcount", 0) != 1:
        if card.type != "physical":
            raise _not_found("cardId")
        raise wallet_problem(WalletCode.CARD_ALREADY_LINKED, "The card already has a holder.", "cardId")
    return card_view(_reload(session, card))


def issue_virtual(
    session: Session, now: datetime, principal: Principal, user_id: str, body: IssueVirtualCardRequest
) -> Card:
    """``POST /users/{userId}/cards/virtuals``: a new ``active`` virtual card, balance 0."""
    _application_only(principal)
    user = load_user(session, principal.client_id, user_id)
    client = _client(session, principal.client_id)
    currency = body.currency.value if body.currency is not None else str(client.currencies[0])
    if currency not in client.currencies:
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR, "currency is not enabled for this client.", "currency", "not enabled"
        )
    card = _new_card(
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
    client = _client(session, principal.client_id)
    card = _new_card(
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


# ----------------------------------------------------------------------------- card operations


def get_card(session: Session, principal: Principal, card_id: str) -> Card:
    """``GET /cards/{cardId}`` (``checkCard``)."""
    return card_view(_card_for(session, principal, card_id, _P.CHECK_CARD))


def set_alias(session: Session, principal: Principal, card_id: str, body: AliasUpdate) -> Card:
    """``PATCH /cards/{cardId}`` (``updateAlias``)."""
    card = _card_for(session, principal, card_id, _P.UPDATE_ALIAS)
    card.alias = body.alias
    session.flush()
    return card_view(card)


def set_status(session: Session, principal: Principal, card_id: str, blocked: bool) -> Card:
    """``POST /cards/{cardId}/block`` and ``/unblock`` (``updateStatus``, D42)."""
    card = _card_for(session, principal, card_id, _P.UPDATE_STATUS)
    session.refresh(card, with_for_update=True)
    if card.status == "inactive":
        raise _not_active(card)
    card.status = "blocked" if blocked else "active"
    session.flush()
    return card_view(card)


def activate(session: Session, principal: Principal, card_id: str) -> Card:
    """``POST /cards/{cardId}/activation`` (``activation``, D42)."""
    card = _card_for(session, principal, card_id, _P.ACTIVATION)
    session.refresh(card, with_for_update=True)
    if card.status == "blocked":
        raise _not_active(card)
    card.status = "active"
    session.flush()
    return card_view(card)


def set_pin(session: Session, principal: Principal, card_id: str, body: PinRequest) -> Card:
    """``PUT /cards/{cardId}/pin`` (``assignPIN``): only a scrypt hash of the PIN is kept."""
    card = _card_for(session, principal, card_id, _P.ASSIGN_PIN)
    if card.type == "linked":
        raise _not_fundable()
    card.pin_hash = hash_secret(body.pin)
    session.flush()
    return card_view(card)


def list_movements(
    session: Session, principal: Principal, card_id: str, start: date | None, end: date | None
) -> list[Movement]:
    """``GET /cards/{cardId}/movements`` (``getAllTransfersByDate``), oldest first."""
    card = _card_for(session, principal, card_id, _P.GET_ALL_TRANSFERS_BY_DATE)
    low, high = _window(session, principal, start, end)
    statement = select(WalletMovementRow).where(WalletMovementRow.card_id == card.id)
    if low is not None:
        statement = statement.where(WalletMovementRow.created_at >= low)
    if high is not None:
        statement = statement.where(WalletMovementRow.created_at < high)
    return [_movement_view(row) for row in session.scalars(statement.order_by(WalletMovementRow.seq))]


# ------------------------------------------------------------------------------ funds, transfers


def funds(
    session: Session, now: datetime, principal: Principal, card_id: str, body: FundsRequest
) -> FundsResult:
    """``POST /cards/{cardId}/funds`` (application token): atomic add or guarded withdrawal."""
    _application_only(principal)
    card = _find_card(session, principal, card_id)
    if card.type == "linked":
        raise _not_fundable()
    units = to_units(body.amount)
    if body.operation == "add":
        balance = _credit(session, card.id, units, require_active=False)
        if balance is None:
            raise _too_large()
        movement = _movement(
            session,
            card,
            now,
            type_="fund",
            direction="credit",
            amount=units,
            balance_after=balance,
            reference=body.reference,
        )
    else:
        balance = _debit(session, card.id, units)
        if balance is None:
            _reload(session, card)
            if card.status != "active":
                raise _not_active(card)
            raise wallet_problem(
                WalletCode.INSUFFICIENT_FUNDS,
                "Insufficient funds: nothing was withdrawn.",
                "amount",
                "exceeds the available balance",
            )
        movement = _movement(
            session,
            card,
            now,
            type_="withdrawal",
            direction="debit",
            amount=units,
            balance_after=balance,
            reference=body.reference,
        )
    session.flush()
    return FundsResult(card=card_view(_reload(session, card)), movement=_movement_view(movement))


def _lock_cards(session: Session, ids: Sequence[str]) -> dict[str, WalletCardRow]:
    rows = session.scalars(
        select(WalletCardRow)
        .where(WalletCardRow.id.in_(sorted(set(ids))))
        .order_by(WalletCardRow.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return {row.id: row for row in rows}


def transfer(
    session: Session, now: datetime, principal: Principal, card_id: str, body: TransferRequest
) -> TransferResult:
    """``POST /cards/{cardId}/transfers`` (``transferBetweenCards`` on the source): both legs or none."""
    if body.to_card_id == card_id:
        raise wallet_problem(
            WalletCode.SAME_CARD, "A transfer needs two different cards.", "toCardId", "same card"
        )
    source = _card_for(session, principal, card_id, _P.TRANSFER_BETWEEN_CARDS)
    target_id = body.to_card_id
    if not valid_id(target_id):
        raise _not_found("toCardId")
    locked = _lock_cards(session, [source.id, target_id])
    target = locked.get(target_id)
    if target is None or target.client_id != principal.client_id:
        raise _not_found("toCardId")
    source = locked[source.id]
    if source.type == "linked":
        raise _not_fundable("cardId")
    if target.type == "linked":
        raise _not_fundable("toCardId")
    if source.status != "active":
        raise _not_active(source)
    if target.status != "active":
        raise wallet_problem(
            WalletCode.CARD_NOT_ACTIVE, f"The destination card is {target.status}.", "toCardId", target.status
        )
    if source.currency != target.currency:
        raise wallet_problem(
            WalletCode.CURRENCY_MISMATCH,
            "Both cards must have the same currency.",
            "toCardId",
            "other currency",
        )
    units = to_units(body.amount)
    debited = _debit(session, source.id, units)
    if debited is None:
        raise wallet_problem(
            WalletCode.INSUFFICIENT_FUNDS,
            "Insufficient funds: nothing was transferred.",
            "amount",
            "exceeds the available balance",
        )
    credited = _credit(session, target.id, units, require_active=True)
    if credited is None:  # the transaction rolls back: the debit above is undone too
        raise _too_large()
    transfer_id = new_id("trf")
    debit = _movement(
        session,
        source,
        now,
        type_="transfer_out",
        direction="debit",
        amount=units,
        balance_after=debited,
        reference=body.description,
        counterpart=target.id,
        transfer_id=transfer_id,
    )
    credit = _movement(
        session,
        target,
        now,
        type_="transfer_in",
        direction="credit",
        amount=units,
        balance_after=credited,
        reference=body.description,
        counterpart=source.id,
        transfer_id=transfer_id,
    )
    session.flush()
    return TransferResult(transfer_id=transfer_id, debit=_movement_view(debit), credit=_movement_view(credit))


# ---------------------------------------------------------------------------------------- CVV


def cvv_view_token(session: Session, now: datetime, principal: Principal, card_id: str) -> CvvViewToken:
    """``POST /cards/{cardId}/cvv/view-token`` (user token with ``checkCvv``, D44)."""
    card = _card_for(session, principal, card_id, _P.CHECK_CVV)
    if card.type == "linked" or card.cvv is None:
        raise _not_fundable()
    if card.status != "active":
        raise _not_active(card)
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
    card = _card_for(session, principal, card_id, _P.CHECK_CVV)
    invalid = wallet_problem(
        WalletCode.CVV_TOKEN_INVALID, "The view token is wrong, used, expired or not yours.", "X-View-Token"
    )
    if not view_token or len(view_token) > 200:
        raise invalid
    if card.status != "active" or card.cvv is None:
        raise _not_active(card)
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


# -------------------------------------------------------------------------------- permissions


def _normalized(permissions: Sequence[CardPermissionType]) -> list[str]:
    chosen = {p.value for p in permissions}
    return [p.value for p in CardPermissionType if p.value in chosen]


def grant_permissions(
    session: Session,
    now: datetime,
    principal: Principal,
    card_id: str,
    user_id: str,
    body: PermissionGrant,
) -> tuple[PermissionRecord, bool]:
    """``POST /cards/{cardId}/users/{authUserId}/permissions``; ``(record, created)``."""
    card = _find_card(session, principal, card_id)
    _owner_or_app(principal, card)
    user = load_user(session, principal.client_id, user_id)
    if card.holder_id == user.id:
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR, "The card's holder already has every permission.", "authUserId"
        )
    row = session.scalars(
        select(WalletPermissionRow)
        .where(WalletPermissionRow.card_id == card.id, WalletPermissionRow.user_id == user.id)
        .with_for_update()
    ).first()
    created = row is None
    if row is None:
        row = WalletPermissionRow(
            id=new_id("prm"),
            card_id=card.id,
            user_id=user.id,
            permissions=_normalized(body.permissions),
            created_at=now,
            updated_at=now,
        )
        session.add(row)
    else:
        row.permissions = _normalized(body.permissions)
        row.updated_at = now
    session.flush()
    return permission_view(row), created


def update_permissions(
    session: Session, now: datetime, principal: Principal, permission_id: str, body: PermissionGrant
) -> PermissionRecord:
    """``PATCH /cards/users/permissions/{id}``: replace the permission set."""
    row = (
        session.get(WalletPermissionRow, permission_id, with_for_update=True)
        if valid_id(permission_id)
        else None
    )
    card = session.get(WalletCardRow, row.card_id) if row is not None else None
    if row is None or card is None or card.client_id != principal.client_id:
        raise wallet_problem(
            WalletCode.PERMISSION_NOT_FOUND, "Permission record not found.", "id", "not found"
        )
    _owner_or_app(principal, card)
    row.permissions = _normalized(body.permissions)
    row.updated_at = now
    session.flush()
    return permission_view(row)


def _records(session: Session, *conditions: Any) -> list[PermissionRecord]:
    rows = session.scalars(
        select(WalletPermissionRow)
        .where(*conditions)
        .order_by(WalletPermissionRow.created_at, WalletPermissionRow.id)
    )
    return [permission_view(row) for row in rows]


def list_user_permissions(session: Session, principal: Principal, user_id: str) -> list[PermissionRecord]:
    """``GET /cards/users/{authUserId}/permissions``: application or that user."""
    if not principal.is_application and principal.user_id != user_id:
        raise _denied("the user's own session")
    user = load_user(session, principal.client_id, user_id)
    return _records(session, WalletPermissionRow.user_id == user.id)


def list_card_permissions(session: Session, principal: Principal, card_id: str) -> list[PermissionRecord]:
    """``GET /cards/{cardId}/users/permissions``: application or the card's holder."""
    card = _find_card(session, principal, card_id)
    _owner_or_app(principal, card)
    return _records(session, WalletPermissionRow.card_id == card.id)


def list_one_permissions(
    session: Session, principal: Principal, card_id: str, user_id: str
) -> list[PermissionRecord]:
    """``GET /cards/{cardId}/users/{authUserId}/permissions``: application, the holder or that user."""
    card = _find_card(session, principal, card_id)
    if principal.user_id != user_id:
        _owner_or_app(principal, card)
    user = load_user(session, principal.client_id, user_id)
    return _records(session, WalletPermissionRow.card_id == card.id, WalletPermissionRow.user_id == user.id)


# ----------------------------------------------------------------------- control plane (/_sandbox)


def create_stock_card(session: Session, now: datetime, spec: SandboxStockCardCreate) -> Card:
    """``POST /_sandbox/cards``: an issued physical card with no holder (``inactive``)."""
    client = session.scalars(select(ClientRow).where(ClientRow.slug == spec.merchant)).first()
    if client is None:
        raise APIProblem.not_found("Client", "merchant")
    units = 0
    if spec.balance is not None:
        balance = spec.balance
        if (
            not balance.is_finite()
            or balance < 0
            or balance.adjusted() >= 14
            or balance != balance.quantize(Decimal("0.0001"))
        ):
            raise APIProblem.invalid_field("balance", "must be a number >= 0 with at most 4 decimal places")
        units = to_units(balance)
    card = _new_card(
        client, now, type_="physical", status="inactive", currency=spec.currency.value, holder=None
    )
    card.balance = units
    session.add(card)
    if units:
        _movement(
            session,
            card,
            now,
            type_="fund",
            direction="credit",
            amount=units,
            balance_after=units,
            reference="initial balance",
        )
    session.flush()
    return card_view(card)


def create_linking_token(
    session: Session, now: datetime, spec: SandboxLinkingTokenCreate
) -> SandboxLinkingToken:
    """``POST /_sandbox/linking-tokens``: a single-use token (10 minutes) for a third-party card."""
    token = "ltk_" + secrets.token_urlsafe(24)
    expires = now + LINKING_TOKEN_TTL
    session.add(
        WalletLinkingTokenRow(
            token_sha256=sha256_hex(token),
            pan_last4=spec.pan[-4:],
            expiry=spec.expiry,
            expires_at=expires,
            created_at=now,
        )
    )
    return SandboxLinkingToken(token=token, expires_at=expires)


def _card_by_id(session: Session, card_id: str) -> WalletCardRow:
    card = session.get(WalletCardRow, card_id) if valid_id(card_id) else None
    if card is None:
        raise _not_found()
    return card


def _charge(session: Session, charge_id: str) -> WalletChargeRow:
    row = session.get(WalletChargeRow, charge_id, with_for_update=True) if valid_id(charge_id) else None
    if row is None:
        raise APIProblem.not_found("Charge", "chargeId")
    return row


def authorize(session: Session, now: datetime, card_id: str, spec: SandboxChargeCreate) -> SandboxCharge:
    """``POST /_sandbox/cards/{cardId}/charges``: hold a pending debit (and capture it when asked)."""
    card = _card_by_id(session, card_id)
    if card.type == "linked":
        raise _not_fundable()
    units = to_units(spec.amount)
    held = session.execute(
        update(_C)
        .where(
            _C.id == card.id,
            _C.status == "active",
            _C.balance - _C.pending_debits >= units,
        )
        .values(pending_debits=_C.pending_debits + units)
        .execution_options(synchronize_session=False)
    )
    if getattr(held, "rowcount", 0) != 1:
        _reload(session, card)
        if card.status != "active":
            raise _not_active(card)
        raise wallet_problem(
            WalletCode.INSUFFICIENT_FUNDS,
            "Insufficient funds: the authorization was declined.",
            "amount",
            "exceeds the available balance",
        )
    charge = WalletChargeRow(
        id=new_id("chg"),
        card_id=card.id,
        amount=units,
        captured_amount=0,
        refunded_amount=0,
        status="authorized",
        merchant_name=(spec.merchant_name or "")[:255] or None,
        captured=False,
        created_at=now,
        expires_at=now + AUTHORIZATION_TTL,
    )
    session.add(charge)
    session.flush()
    if spec.capture:
        _capture(session, now, charge, card)
    else:
        jobs.add(session, EXPIRE_JOB, charge.id, charge.expires_at, now)
    session.flush()
    return _charge_view(charge)


def _release(session: Session, charge: WalletChargeRow) -> None:
    expired = session.execute(
        update(WalletChargeRow)
        .where(WalletChargeRow.id == charge.id, WalletChargeRow.status == "authorized")
        .values(status="expired")
        .execution_options(synchronize_session=False)
    )
    if getattr(expired, "rowcount", 0) == 1:
        session.execute(
            update(_C)
            .where(_C.id == charge.card_id)
            .values(pending_debits=_C.pending_debits - charge.amount)
            .execution_options(synchronize_session=False)
        )
    session.refresh(charge)


def _capture(session: Session, now: datetime, charge: WalletChargeRow, card: WalletCardRow) -> None:
    balance = _debit(session, card.id, charge.amount, also_pending=True)
    if balance is None:  # pragma: no cover - the hold guarantees it (available >= 0 always)
        raise APIProblem.conflict("The held amount is no longer there.")
    charge.status = "captured"
    charge.captured = True
    charge.captured_amount = charge.amount
    _movement(
        session,
        card,
        now,
        type_="capture",
        direction="debit",
        amount=charge.amount,
        balance_after=balance,
        reference=charge.merchant_name or charge.id,
    )


def capture(session: Session, now: datetime, charge_id: str) -> SandboxCharge:
    """``POST /_sandbox/charges/{chargeId}/capture``: the hold becomes a debit of the balance."""
    charge = _charge(session, charge_id)
    if charge.status == "authorized" and charge.expires_at <= now:
        _release(session, charge)
    if charge.status != "authorized":
        raise APIProblem.conflict(
            f"The charge is {charge.status}; only an authorized charge can be captured."
        )
    card = _card_by_id(session, charge.card_id)
    _capture(session, now, charge, card)
    session.flush()
    return _charge_view(charge)


def expire_authorization(session: Session, clock: Clock, charge_id: str) -> None:
    """The scheduler job (kind :data:`EXPIRE_JOB`, registered by the wallet's family in
    :mod:`paysdk.server.families`): an authorization still held after 7 days releases its pending debit."""
    row = session.get(WalletChargeRow, charge_id, with_for_update=True) if valid_id(charge_id) else None
    if row is not None and row.status == "authorized":
        _release(session, row)


def create_refund(
    session: Session, now: datetime, charge_id: str, spec: SandboxRefundCreate
) -> SandboxRefund:
    """``POST /_sandbox/charges/{chargeId}/refunds``: a pending credit of (part of) a captured charge."""
    charge = _charge(session, charge_id)
    if charge.status not in ("captured", "partially_refunded"):
        raise APIProblem.conflict(f"The charge is {charge.status}; only a captured charge can be refunded.")
    remaining = charge.captured_amount - charge.refunded_amount
    units = to_units(spec.amount) if spec.amount is not None else remaining
    if units > remaining:
        raise wallet_problem(
            WalletCode.INVALID_AMOUNT,
            f"At most {from_units(remaining)} can be refunded.",
            "amount",
            "too large",
        )
    session.execute(
        update(_C)
        .where(_C.id == charge.card_id)
        .values(pending_credits=_C.pending_credits + units)
        .execution_options(synchronize_session=False)
    )
    charge.refunded_amount += units
    charge.status = "refunded" if charge.refunded_amount == charge.captured_amount else "partially_refunded"
    refund = WalletRefundRow(
        id=new_id("rfd"),
        charge_id=charge.id,
        card_id=charge.card_id,
        amount=units,
        status="pending",
        created_at=now,
    )
    session.add(refund)
    session.flush()
    return _refund_view(refund)


def clear_refund(session: Session, now: datetime, refund_id: str) -> SandboxRefund:
    """``POST /_sandbox/refunds/{refundId}/clear``: the pending credit reaches the balance."""
    refund = session.get(WalletRefundRow, refund_id, with_for_update=True) if valid_id(refund_id) else None
    if refund is None:
        raise APIProblem.not_found("Refund", "refundId")
    if refund.status != "pending":
        raise APIProblem.conflict("The refund has already cleared.")
    card = _card_by_id(session, refund.card_id)
    balance = _returned(
        session.execute(
            update(_C)
            .where(_C.id == card.id, _C.pending_credits >= refund.amount)
            .values(balance=_C.balance + refund.amount, pending_credits=_C.pending_credits - refund.amount)
            .returning(_C.balance)
            .execution_options(synchronize_session=False)
        )
    )
    if balance is None:  # pragma: no cover - the pending credit was recorded with the refund
        raise APIProblem.conflict("The pending credit is no longer there.")
    refund.status = "cleared"
    _movement(
        session,
        card,
        now,
        type_="refund",
        direction="credit",
        amount=refund.amount,
        balance_after=balance,
        reference=refund.charge_id,
    )
    session.flush()
    return _refund_view(refund)
