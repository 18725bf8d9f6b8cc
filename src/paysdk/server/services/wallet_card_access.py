"""Who may act on a wallet card, and the refusals every card service shares (D37, D40).

The application token reaches every card of its merchant (CVV excepted, ``7502``); a user token reaches
the cards it holds (every permission) and the cards it was granted permissions on (only those); a card of
another merchant is ``404 / 7301``; a missing permission ``403 / 7401``. Endpoints only the issuer's
backend may call (funds, linking a stock card, issuing a virtual card) refuse user tokens with
``401 / 7106``. A card not in the state an operation needs is ``409 / 7302``; a linked third-party card,
which holds no money here, is ``409 / 7307`` for funds, transfers, charges, PIN and CVV.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from paysdk.contracts.wallet import CardPermissionType, WalletCode
from paysdk.server.errors import APIProblem
from paysdk.server.services.wallet_common import valid_id, wallet_problem
from paysdk.server.services.wallet_tokens import Principal
from paysdk.server.wallet_tables import WalletCardRow, WalletPermissionRow

__all__ = [
    "application_only",
    "card_for",
    "card_not_active",
    "card_not_found",
    "card_not_fundable",
    "find_card",
    "may_use",
    "owner_or_application",
    "permission_denied",
]


def card_not_found(field: str = "cardId") -> APIProblem:
    """``404 / 7301``: no such card for this merchant."""
    return wallet_problem(WalletCode.CARD_NOT_FOUND, "Card not found.", field, "not found")


def card_not_active(card: WalletCardRow) -> APIProblem:
    """``409 / 7302``: the card is not in the state the operation needs."""
    return wallet_problem(
        WalletCode.CARD_NOT_ACTIVE, f"The card is {card.status}.", "cardId", f"card is {card.status}"
    )


def card_not_fundable(field: str = "cardId") -> APIProblem:
    """``409 / 7307``: a linked third-party card holds no funds in the wallet."""
    return wallet_problem(
        WalletCode.CARD_NOT_FUNDABLE, "A linked third-party card holds no funds in the wallet.", field
    )


def application_only(principal: Principal) -> None:
    """Refuse a user token (``401 / 7106``): the endpoint is the issuer backend's."""
    if not principal.is_application:
        raise wallet_problem(
            WalletCode.WRONG_TOKEN_TYPE,
            "This endpoint needs the application token.",
            "Authorization",
            "wrong token type",
        )


def permission_denied(permission: str) -> APIProblem:
    """``403 / 7401``: the token lacks ``permission``."""
    return wallet_problem(
        WalletCode.PERMISSION_DENIED,
        f"Permission {permission} is required for this operation.",
        "Authorization",
        f"lacks {permission}",
    )


def find_card(session: Session, principal: Principal, card_id: str, field: str = "cardId") -> WalletCardRow:
    """The merchant's card ``card_id``, whoever asks (``7301`` otherwise, naming ``field``)."""
    card = session.get(WalletCardRow, card_id) if valid_id(card_id) else None
    if card is None or card.client_id != principal.client_id:
        raise card_not_found(field)
    return card


def _granted(session: Session, card_id: str, user_id: str) -> list[str]:
    permissions = session.scalar(
        select(WalletPermissionRow.permissions).where(
            WalletPermissionRow.card_id == card_id, WalletPermissionRow.user_id == user_id
        )
    )
    return [str(p) for p in permissions] if permissions else []


def may_use(
    session: Session, principal: Principal, card: WalletCardRow, permission: CardPermissionType
) -> bool:
    """Whether ``principal`` holds ``permission`` on ``card``: the application every one but CVV, the
    holder every one, another user those granted to it."""
    if principal.is_application:
        return permission is not CardPermissionType.CHECK_CVV
    if card.holder_id is not None and card.holder_id == principal.user_id:
        return True
    assert principal.user_id is not None
    return permission.value in _granted(session, card.id, principal.user_id)


def card_for(
    session: Session, principal: Principal, card_id: str, permission: CardPermissionType
) -> WalletCardRow:
    """The card, when ``principal`` may use ``permission`` on it (CVV needs a user session, ``7502``)."""
    card = find_card(session, principal, card_id)
    if permission is CardPermissionType.CHECK_CVV and principal.is_application:
        raise wallet_problem(
            WalletCode.CVV_NEEDS_USER_SESSION,
            "The CVV is shown only to a user session, never to application credentials.",
            "Authorization",
            "application token",
        )
    if not may_use(session, principal, card, permission):
        raise permission_denied(permission.value)
    return card


def owner_or_application(principal: Principal, card: WalletCardRow) -> None:
    """Only the application or the card's holder may go on (permission records)."""
    if principal.is_application or (card.holder_id is not None and card.holder_id == principal.user_id):
        return
    raise wallet_problem(
        WalletCode.PERMISSION_DENIED,
        "Only the application or the card's holder may do this.",
        "Authorization",
        "not the card's holder",
    )
