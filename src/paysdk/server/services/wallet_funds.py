"""Moving a wallet card's money: the issuer's funds (add, withdraw) and card-to-card transfers (D40, D41).

Both go through the funds rule of :mod:`.wallet_balance`. Transfers first lock both rows ``FOR UPDATE``
in card-id order (no deadlock), then debit and credit: both legs or neither. The fast path of
``POST /cards/{cardId}/funds`` is :mod:`.wallet_ledger` (D256); :func:`funds` serves what it hands back.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from paysdk.contracts.wallet import (
    CardPermissionType,
    FundsRequest,
    FundsResult,
    TransferRequest,
    TransferResult,
    WalletCode,
)
from paysdk.server.services.wallet_balance import (
    balance_too_large,
    card_view,
    credit,
    debit,
    funds_refused,
    movement_view,
    record_movement,
    reload,
)
from paysdk.server.services.wallet_card_access import (
    application_only,
    card_for,
    card_not_active,
    card_not_found,
    card_not_fundable,
    find_card,
)
from paysdk.server.services.wallet_common import new_id, to_units, valid_id, wallet_problem
from paysdk.server.services.wallet_tokens import Principal
from paysdk.server.wallet_tables import WalletCardRow

__all__ = ["funds", "transfer"]


def funds(
    session: Session, now: datetime, principal: Principal, card_id: str, body: FundsRequest
) -> FundsResult:
    """``POST /cards/{cardId}/funds`` (application token): atomic add or guarded withdrawal."""
    application_only(principal)
    card = find_card(session, principal, card_id)
    if card.type == "linked":
        raise card_not_fundable()
    units = to_units(body.amount)
    if body.operation == "add":
        balance = credit(session, card.id, units, require_active=False)
        if balance is None:
            raise funds_refused(body.operation, card.status)
        movement = record_movement(
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
        balance = debit(session, card.id, units)
        if balance is None:
            raise funds_refused(body.operation, reload(session, card).status)
        movement = record_movement(
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
    return FundsResult(card=card_view(reload(session, card)), movement=movement_view(movement))


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
    source = card_for(session, principal, card_id, CardPermissionType.TRANSFER_BETWEEN_CARDS)
    target_id = body.to_card_id
    if not valid_id(target_id):
        raise card_not_found("toCardId")
    locked = _lock_cards(session, [source.id, target_id])
    target = locked.get(target_id)
    if target is None or target.client_id != principal.client_id:
        raise card_not_found("toCardId")
    source = locked[source.id]
    if source.type == "linked":
        raise card_not_fundable("cardId")
    if target.type == "linked":
        raise card_not_fundable("toCardId")
    if source.status != "active":
        raise card_not_active(source)
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
    debited = debit(session, source.id, units)
    if debited is None:
        raise wallet_problem(
            WalletCode.INSUFFICIENT_FUNDS,
            "Insufficient funds: nothing was transferred.",
            "amount",
            "exceeds the available balance",
        )
    credited = credit(session, target.id, units, require_active=True)
    if credited is None:  # the transaction rolls back: the debit above is undone too
        raise balance_too_large()
    transfer_id = new_id("trf")
    debit_movement = record_movement(
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
    credit_movement = record_movement(
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
    return TransferResult(
        transfer_id=transfer_id, debit=movement_view(debit_movement), credit=movement_view(credit_movement)
    )
