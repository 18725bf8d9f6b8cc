"""The funds rule: every statement that changes a wallet card's money, and the views that show it
(D40-D43, D18 for storage).

* Money is ``x 10000`` integers (:mod:`.wallet_common`). ``available = balance - pending_debits``.
* Every debit is guarded in the database, inside the request's transaction:
  ``UPDATE wallet_cards SET balance = balance - :a WHERE id = :id AND status = 'active' AND
  balance - pending_debits >= :a RETURNING balance``; no row means nothing changed (``422 / 7303``, or
  ``409 / 7302`` when the card is not active). SQLite transactions start with ``BEGIN IMMEDIATE`` (one
  writer); on PostgreSQL the conditional update takes the row lock and re-checks its condition after a
  concurrent writer commits. A credit is guarded by the maximum balance (``MAX_UNITS``). Every balance
  change writes one movement whose ``balance_after`` is the value the ``UPDATE`` returned, so a card's
  balance is always the sum of its movements.
* An authorization holds a pending debit under the same guard; releasing it or capturing it (the hold
  leaves both ``pending_debits`` and the balance) is one statement each. A refund is a pending credit
  until cleared.

The rule is written once, as SQL conditions (:func:`debit_rule`, :func:`credit_rule`) and one answer to
"why did the guarded update change nothing" (:func:`funds_refused`): the statements here and the fast
path of ``POST /cards/{cardId}/funds`` (:mod:`.wallet_ledger`, D256) are built from them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, update
from sqlalchemy.orm import Session

from paysdk.contracts.wallet import Card, Movement, WalletCode
from paysdk.server.errors import APIProblem
from paysdk.server.services.wallet_common import MAX_UNITS, from_units, new_id, wallet_problem
from paysdk.server.wallet_tables import WalletCardRow, WalletMovementRow

__all__ = [
    "add_pending_credit",
    "balance_too_large",
    "card_view",
    "clear_pending_credit",
    "credit",
    "credit_rule",
    "debit",
    "debit_rule",
    "funds_refused",
    "hold",
    "movement_view",
    "record_movement",
    "release_hold",
    "reload",
]


_CARDS = cast(Table, WalletCardRow.__table__)


def debit_rule(units: ColumnElement[int] | int) -> tuple[ColumnElement[bool], ...]:
    """The funds rule of a debit or a hold, as the ``WHERE`` conditions of the guarded ``UPDATE``: the
    card is active and its available balance (``balance - pending_debits``) covers ``units``."""
    return (_CARDS.c.status == "active", _CARDS.c.balance - _CARDS.c.pending_debits >= units)


def credit_rule(units: ColumnElement[int] | int) -> ColumnElement[bool]:
    """The funds rule of a credit, as a ``WHERE`` condition: the balance stays within :data:`MAX_UNITS`."""
    return _CARDS.c.balance + units <= MAX_UNITS


def funds_refused(operation: str, status: str) -> APIProblem:
    """Why a fund operation's guarded update on a card that holds money here changed nothing:
    ``400 / 7304`` for an add (beyond the maximum balance), else ``409 / 7302`` (the card is not active)
    or ``422 / 7303`` (insufficient funds)."""
    if operation == "add":
        return balance_too_large()
    if status != "active":
        return wallet_problem(
            WalletCode.CARD_NOT_ACTIVE, f"The card is {status}.", "cardId", f"card is {status}"
        )
    return wallet_problem(
        WalletCode.INSUFFICIENT_FUNDS,
        "Insufficient funds: nothing was withdrawn.",
        "amount",
        "exceeds the available balance",
    )


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


def movement_view(row: WalletMovementRow) -> Movement:
    """The wire form of a movement."""
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


def record_movement(
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
    """Add the movement of one balance change (``balance_after``: what the ``UPDATE`` returned)."""
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


def debit(session: Session, card_id: str, units: int, *, also_pending: bool = False) -> int | None:
    """The guarded debit (the module docstring); the new balance, or ``None`` when refused."""
    statement = update(WalletCardRow).where(WalletCardRow.id == card_id)
    if also_pending:  # a capture: the held amount leaves both the hold and the balance
        statement = statement.where(
            WalletCardRow.pending_debits >= units, WalletCardRow.balance >= units
        ).values(balance=WalletCardRow.balance - units, pending_debits=WalletCardRow.pending_debits - units)
    else:
        statement = statement.where(*debit_rule(units)).values(balance=WalletCardRow.balance - units)
    return _returned(
        session.execute(
            statement.returning(WalletCardRow.balance).execution_options(synchronize_session=False)
        )
    )


def credit(session: Session, card_id: str, units: int, *, require_active: bool) -> int | None:
    """A credit within the maximum balance (and on an active card when asked); the new balance, or
    ``None`` when refused."""
    statement = update(WalletCardRow).where(WalletCardRow.id == card_id, credit_rule(units))
    if require_active:
        statement = statement.where(WalletCardRow.status == "active")
    return _returned(
        session.execute(
            statement.values(balance=WalletCardRow.balance + units)
            .returning(WalletCardRow.balance)
            .execution_options(synchronize_session=False)
        )
    )


def hold(session: Session, card_id: str, units: int) -> bool:
    """Hold a pending debit on an active card whose available balance covers it; whether it held."""
    held = session.execute(
        update(WalletCardRow)
        .where(WalletCardRow.id == card_id, *debit_rule(units))
        .values(pending_debits=WalletCardRow.pending_debits + units)
        .execution_options(synchronize_session=False)
    )
    return getattr(held, "rowcount", 0) == 1


def release_hold(session: Session, card_id: str, units: int) -> None:
    """Release a held pending debit (an authorization that expired)."""
    session.execute(
        update(WalletCardRow)
        .where(WalletCardRow.id == card_id)
        .values(pending_debits=WalletCardRow.pending_debits - units)
        .execution_options(synchronize_session=False)
    )


def add_pending_credit(session: Session, card_id: str, units: int) -> None:
    """Record a refund's pending credit (it reaches the balance when cleared)."""
    session.execute(
        update(WalletCardRow)
        .where(WalletCardRow.id == card_id)
        .values(pending_credits=WalletCardRow.pending_credits + units)
        .execution_options(synchronize_session=False)
    )


def clear_pending_credit(session: Session, card_id: str, units: int) -> int | None:
    """Move a pending credit to the balance; the new balance, or ``None`` when it is not there."""
    return _returned(
        session.execute(
            update(WalletCardRow)
            .where(WalletCardRow.id == card_id, WalletCardRow.pending_credits >= units)
            .values(
                balance=WalletCardRow.balance + units, pending_credits=WalletCardRow.pending_credits - units
            )
            .returning(WalletCardRow.balance)
            .execution_options(synchronize_session=False)
        )
    )


def balance_too_large(field: str = "amount") -> APIProblem:
    """``400 / 7304``: the amount would take the balance beyond the maximum."""
    return wallet_problem(
        WalletCode.INVALID_AMOUNT, "The amount would take the balance beyond the maximum.", field, "too large"
    )


def reload(session: Session, card: WalletCardRow) -> WalletCardRow:
    """The card as the database holds it now (after a statement that bypassed the session)."""
    session.refresh(card)
    return card
