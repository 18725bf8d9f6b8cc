"""Permission records of wallet cards: what a card's holder lets another user of the merchant do (D40).

One record per (card, user). ``POST`` on a pair that has one replaces its permission set (``200``;
``201`` when created). The card's holder cannot be granted permissions (``400 / 7001``). Only the
application or the card's holder manages a card's records; a user may list its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from paysdk.contracts.wallet import CardPermissionType, PermissionGrant, PermissionRecord, WalletCode
from paysdk.server.services.wallet_card_access import find_card, owner_or_application, permission_denied
from paysdk.server.services.wallet_common import new_id, valid_id, wallet_problem
from paysdk.server.services.wallet_tokens import Principal
from paysdk.server.services.wallet_users import load_user, permission_view
from paysdk.server.wallet_tables import WalletCardRow, WalletPermissionRow

__all__ = [
    "grant_permissions",
    "list_card_permissions",
    "list_one_permissions",
    "list_user_permissions",
    "update_permissions",
]


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
    card = find_card(session, principal, card_id)
    owner_or_application(principal, card)
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
    owner_or_application(principal, card)
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
        raise permission_denied("the user's own session")
    user = load_user(session, principal.client_id, user_id)
    return _records(session, WalletPermissionRow.user_id == user.id)


def list_card_permissions(session: Session, principal: Principal, card_id: str) -> list[PermissionRecord]:
    """``GET /cards/{cardId}/users/permissions``: application or the card's holder."""
    card = find_card(session, principal, card_id)
    owner_or_application(principal, card)
    return _records(session, WalletPermissionRow.card_id == card.id)


def list_one_permissions(
    session: Session, principal: Principal, card_id: str, user_id: str
) -> list[PermissionRecord]:
    """``GET /cards/{cardId}/users/{authUserId}/permissions``: application, the holder or that user."""
    card = find_card(session, principal, card_id)
    if principal.user_id != user_id:
        owner_or_application(principal, card)
    user = load_user(session, principal.client_id, user_id)
    return _records(session, WalletPermissionRow.card_id == card.id, WalletPermissionRow.user_id == user.id)
