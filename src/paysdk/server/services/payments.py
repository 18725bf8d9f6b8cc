"""Completing a transaction: card payments (checkout page and ``/_sandbox/.../pay``), 3-D Secure, rail
outcomes (rail page and ``/_sandbox/.../simulate``) and expiry. One code path for page and control plane.

Card outcomes come from :mod:`paysdk.server.services.test_cards` (never from a request field, spec 1).
A Luhn-invalid number is a form error: ``409 / 5000`` naming ``cardNumber`` on the control plane, a form
message on the page; the transaction stays ``pending``. The 3-D Secure card on a client with ``threeDS``
enabled leaves the transaction ``pending`` with a challenge id until the challenge is approved
(``approved``) or failed (``declined``). Paying a transaction that is no longer pending is ``409``.

On the hosted checkout page (``retry_declined=True``, D414) a declined card or a failed challenge is an
attempt, not the end: the transaction stays ``pending`` with the decline's ``outcome`` and message kept,
no callback is sent, and the customer may try another card until the link expires; the merchant's one
callback reports the status the link ends in (``approved``, or ``expired``). The control plane's
``/_sandbox/.../pay`` keeps a decline terminal (``declined`` and its callback), so merchants can test it.

A card verification (``POST /v1/subscriptions/verify-card``, D140) is paid like a payment link: its card
is kept and, when it is approved (directly or after the challenge), the reserved subscription is created
in the same database transaction as the transaction's finish. The subscriptions do both through the hooks
they register (``card_given``, ``card_approved``: :data:`paysdk.server.families.HOOKS`, D551), so the
payments import nothing of theirs.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy.orm import Session

from paysdk._secret import constant_time_equals
from paysdk.contracts.payment_links import TransactionStatus
from paysdk.contracts.sandbox import PayResult
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow, TransactionRow
from paysdk.server.errors import APIProblem
from paysdk.server.families import hook
from paysdk.server.services import transactions
from paysdk.server.services.test_cards import decide
from paysdk.server.services.transactions import CARD_KINDS, KIND_ALTERNATIVE

__all__ = ["CardPayment", "complete_challenge", "expire_job", "pay_with_card", "simulate_rail"]


@dataclass(frozen=True, slots=True)
class CardPayment:
    """The result of a card payment, with the challenge id when 3-D Secure is pending."""

    result: PayResult
    challenge_id: str | None = None


def _pending(
    session: Session, clock: Clock, uid: str, kind: str | tuple[str, ...] | None
) -> tuple[TransactionRow, ClientRow]:
    tx, client = transactions.load(session, uid, kind=kind, lock=True)
    transactions.expire_if_due(session, tx, client, clock.now(session))
    if tx.status != TransactionStatus.PENDING:
        raise APIProblem.conflict(f"The transaction is {tx.status}, no longer pending.", "uid")
    return tx, client


def _result(tx: TransactionRow, outcome: str, message: str) -> PayResult:
    return PayResult(uid=tx.uid, status=tx.status, outcome=outcome, message=message)


def _finish_card(
    session: Session,
    tx: TransactionRow,
    client: ClientRow,
    status: str,
    *,
    now: datetime,
    outcome: str,
    message: str,
    brand: str | None,
    retry_declined: bool = False,
) -> None:
    """Finish a card payment; an approved card verification creates its subscription in the same
    database transaction (D140). ``retry_declined``: a decline only records the attempt (D414)."""
    if retry_declined and status == TransactionStatus.DECLINED:
        tx.outcome, tx.outcome_message = outcome, message[:255]
        tx.challenge_id = None
        tx.updated_at = now
        return
    finished = transactions.finish(
        session, tx, client, status, now=now, outcome=outcome, message=message, payment_method_type=brand
    )
    if finished and status == TransactionStatus.APPROVED:
        for approved in hook("card_approved"):  # a card verification's subscription (D140, D551)
            approved(session, tx, client, now)


def pay_with_card(
    session: Session,
    clock: Clock,
    uid: str,
    card_number: str,
    three_ds_result: Literal["approve", "fail"] | None = None,
    *,
    retry_declined: bool = False,
) -> CardPayment:
    """Pay a payment link (or a card verification) with a test card (see the module docstring;
    ``retry_declined``: the hosted page's decline that leaves the link payable, D414)."""
    tx, client = _pending(session, clock, uid, CARD_KINDS)
    decision = decide(card_number, three_ds_enabled=client.three_ds)
    if not decision.valid:
        raise APIProblem.invalid_field("cardNumber", "is not a valid card number (Luhn check failed)")
    for given in hook("card_given"):  # a card verification keeps its card (D140, D551)
        given(session, tx, card_number)
    now = clock.now(session)
    if decision.outcome == "three_ds_challenge":
        if three_ds_result is None:
            tx.challenge_id = "3ds_" + secrets.token_hex(12)
            tx.payment_method_type = decision.brand
            tx.updated_at = now
            return CardPayment(_result(tx, "three_ds_required", decision.message), tx.challenge_id)
        return CardPayment(
            _finish_challenge(
                session, tx, client, clock, three_ds_result, decision.brand, retry_declined=retry_declined
            )
        )
    status = TransactionStatus.APPROVED if decision.outcome == "approved" else TransactionStatus.DECLINED
    _finish_card(
        session,
        tx,
        client,
        status,
        now=now,
        outcome=decision.reason,
        message=decision.message,
        brand=decision.brand,
        retry_declined=retry_declined,
    )
    return CardPayment(_result(tx, decision.reason, decision.message))


def _finish_challenge(
    session: Session,
    tx: TransactionRow,
    client: ClientRow,
    clock: Clock,
    result: Literal["approve", "fail"],
    brand: str | None,
    *,
    retry_declined: bool = False,
) -> PayResult:
    approved = result == "approve"
    outcome = "three_ds_approved" if approved else "three_ds_failed"
    message = "Approved after 3-D Secure." if approved else "3-D Secure authentication failed."
    _finish_card(
        session,
        tx,
        client,
        TransactionStatus.APPROVED if approved else TransactionStatus.DECLINED,
        now=clock.now(session),
        outcome=outcome,
        message=message,
        brand=brand,
        retry_declined=retry_declined,
    )
    return _result(tx, outcome, message)


def complete_challenge(
    session: Session,
    clock: Clock,
    uid: str,
    challenge_id: str,
    result: Literal["approve", "fail"],
    *,
    retry_declined: bool = False,
) -> PayResult:
    """The checkout's 3-D Secure page answered ``result`` for challenge ``challenge_id``
    (``retry_declined``: a failed challenge leaves the link payable, D414)."""
    tx, client = _pending(session, clock, uid, CARD_KINDS)
    if tx.challenge_id is None or not constant_time_equals(tx.challenge_id, challenge_id):
        raise APIProblem.conflict("No such 3-D Secure challenge for this transaction.", "challengeId")
    return _finish_challenge(
        session, tx, client, clock, result, tx.payment_method_type, retry_declined=retry_declined
    )


def simulate_rail(
    session: Session,
    clock: Clock,
    uid: str,
    outcome: Literal["paid", "expired"],
    processor: str | None = None,
) -> PayResult:
    """A rail reports ``paid`` (alternative payments with a chosen rail) or the transaction ``expired``."""
    tx, client = _pending(session, clock, uid, None)
    now = clock.now(session)
    if outcome == "expired":
        transactions.finish(
            session, tx, client, TransactionStatus.EXPIRED, now=now, outcome="expired", message="Expired."
        )
        return _result(tx, "expired", "The transaction expired.")
    if tx.kind != KIND_ALTERNATIVE:
        raise APIProblem.conflict(
            "Only alternative payments are paid on a rail; pay links with a card.", "uid"
        )
    if tx.processor is None or (processor is not None and processor != tx.processor):
        raise APIProblem.conflict("No rail was chosen for this transaction (process it first).", "processor")
    transactions.finish(
        session,
        tx,
        client,
        TransactionStatus.APPROVED,
        now=now,
        outcome="rail_paid",
        message=f"Paid on {tx.processor}.",
        payment_method_type=tx.processor,
    )
    return _result(tx, "rail_paid", f"Paid on {tx.processor}.")


def expire_job(session: Session, clock: Clock, uid: str) -> None:
    """The ``expire`` job: a still-pending transaction becomes ``expired`` (D8, D10, D19)."""
    if not transactions.valid_uid(uid):
        return
    try:
        tx, client = transactions.load(session, uid, lock=True)
    except APIProblem:
        return
    if tx.status == TransactionStatus.PENDING:
        transactions.finish(
            session,
            tx,
            client,
            TransactionStatus.EXPIRED,
            now=clock.now(session),
            outcome="expired",
            message="Expired.",
        )
