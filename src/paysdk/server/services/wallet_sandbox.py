"""The wallet on the control plane (``/_sandbox``): stock cards, linking tokens, and card payments on
wallet cards (authorize, capture, refund, clear a refund), with the expiry job of authorizations (D43).

An authorization holds a pending debit (:func:`.wallet_balance.hold`) and expires after 7 days on the
virtual clock (a scheduler job releases the hold, or a capture that comes too late does). A capture
moves the hold to the balance; a refund is a pending credit until cleared.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from paysdk.contracts.wallet import (
    Card,
    Movement,
    SandboxCharge,
    SandboxChargeCreate,
    SandboxLinkingToken,
    SandboxLinkingTokenCreate,
    SandboxRefund,
    SandboxRefundCreate,
    SandboxStockCardCreate,
    WalletCode,
)
from paysdk.server import jobs
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow
from paysdk.server.errors import APIProblem
from paysdk.server.services.wallet_balance import (
    add_pending_credit,
    card_view,
    clear_pending_credit,
    debit,
    hold,
    movement_view,
    record_movement,
    release_hold,
    reload,
)
from paysdk.server.services.wallet_card_access import card_not_active, card_not_found, card_not_fundable
from paysdk.server.services.wallet_cards import new_card
from paysdk.server.services.wallet_common import (
    from_units,
    new_id,
    sha256_hex,
    to_units,
    valid_id,
    wallet_problem,
)
from paysdk.server.wallet_tables import (
    WalletCardRow,
    WalletChargeRow,
    WalletLinkingTokenRow,
    WalletMovementRow,
    WalletRefundRow,
)

__all__ = [
    "AUTHORIZATION_TTL",
    "EXPIRE_JOB",
    "CardActivity",
    "authorize",
    "capture",
    "card_activity",
    "clear_refund",
    "create_linking_token",
    "create_refund",
    "create_stock_card",
    "expire_authorization",
    "recent_cards",
]

AUTHORIZATION_TTL = timedelta(days=7)
LINKING_TOKEN_TTL = timedelta(minutes=10)
EXPIRE_JOB = "wallet_auth_exp"  # jobs.kind holds 16 characters


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
    card = new_card(
        client, now, type_="physical", status="inactive", currency=spec.currency.value, holder=None
    )
    card.balance = units
    session.add(card)
    if units:
        record_movement(
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
        raise card_not_found()
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
        raise card_not_fundable()
    units = to_units(spec.amount)
    if not hold(session, card.id, units):
        reload(session, card)
        if card.status != "active":
            raise card_not_active(card)
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
        release_hold(session, charge.card_id, charge.amount)
    session.refresh(charge)


def _capture(session: Session, now: datetime, charge: WalletChargeRow, card: WalletCardRow) -> None:
    balance = debit(session, card.id, charge.amount, also_pending=True)
    if balance is None:  # pragma: no cover - the hold guarantees it (available >= 0 always)
        raise APIProblem.conflict("The held amount is no longer there.")
    charge.status = "captured"
    charge.captured = True
    charge.captured_amount = charge.amount
    record_movement(
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
    add_pending_credit(session, charge.card_id, units)
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
    balance = clear_pending_credit(session, card.id, refund.amount)
    if balance is None:  # pragma: no cover - the pending credit was recorded with the refund
        raise APIProblem.conflict("The pending credit is no longer there.")
    refund.status = "cleared"
    record_movement(
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


def recent_cards(session: Session, limit: int = 200) -> list[Card]:
    """The newest wallet cards of every client first (at most ``limit``), as the wallet API shows each
    (the browser console's wallet page, D723)."""
    rows = session.scalars(
        select(WalletCardRow).order_by(WalletCardRow.created_at.desc(), WalletCardRow.id).limit(limit)
    )
    return [card_view(row) for row in rows]


@dataclass(frozen=True, slots=True)
class CardActivity:
    """One card with its movements (oldest first) and what is pending on it: authorized charges (held as
    pending debits) and refunds not yet cleared (pending credits)."""

    card: Card
    movements: list[Movement]
    charges: list[SandboxCharge]
    refunds: list[SandboxRefund]


def card_activity(session: Session, card_id: str) -> CardActivity:
    """:class:`CardActivity` of ``card_id`` (any client's); the wallet's ``404`` when unknown."""
    card = _card_by_id(session, card_id)
    movements = session.scalars(
        select(WalletMovementRow).where(WalletMovementRow.card_id == card.id).order_by(WalletMovementRow.seq)
    )
    charges = session.scalars(
        select(WalletChargeRow).where(WalletChargeRow.card_id == card.id).order_by(WalletChargeRow.created_at)
    )
    refunds = session.scalars(
        select(WalletRefundRow).where(WalletRefundRow.card_id == card.id).order_by(WalletRefundRow.created_at)
    )
    return CardActivity(
        card_view(card),
        [movement_view(row) for row in movements],
        [_charge_view(row) for row in charges],
        [_refund_view(row) for row in refunds],
    )
