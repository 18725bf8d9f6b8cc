"""Terminal (POS) payments: creation, capture, void, refund, lapse, settlement and payout (spec 1, 4.4;
D190-D194).

* :func:`create` (``POST /terminal-payment``) and :func:`update` (``PATCH /terminal-payment/{id}``) run in
  one session transaction each, the merchant token checked first (D183: ``401``, wrong environment
  ``2007``), then the body (``400`` malformed JSON, ``409 / 5000`` naming a field, ``installments``
  refused, D190), then the client's rules (currency ``409 / 5000``, amount range ``400 / 2003``).
* **One transition function** (:func:`apply_processor_event`) moves a payment to ``settled``,
  ``paid_out`` or ``voided`` for the daily settlement job (:func:`run_settlement`, kind
  :data:`SETTLEMENT_JOB`) and for the processor's inbound webhooks (D193): each event id is applied at
  most once (a :class:`~paysdk.server.terminal_tables.ProcessorEventRow`), a transition the state does
  not allow is recorded as ignored with its reason. It never raises for a known payment.
* An authorization not captured lapses 7 days after it was made (a job of kind :data:`LAPSE_JOB` per
  manual payment, :func:`lapse_authorization`).

Dates follow :mod:`paysdk.server.business_days`; every time is the virtual clock's.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Literal

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.contracts.codes import OwnCode
from paysdk.contracts.terminal import (
    AFFILIATION_LENGTH,
    TerminalAffiliation,
    TerminalPayment,
    TerminalPaymentCreate,
    TerminalPaymentUpdate,
)
from paysdk.server import business_days as bd
from paysdk.server import jobs
from paysdk.server.auth import Credentials, EnvironmentName, authenticate_token
from paysdk.server.bodies import parse_json_object, validate
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow
from paysdk.server.db import from_cents, to_cents
from paysdk.server.errors import APIProblem
from paysdk.server.services.test_cards import decide_charge, luhn_valid, normalize_number
from paysdk.server.terminal_tables import (
    ProcessorEventRow,
    TerminalAffiliationRow,
    TerminalPaymentRow,
    TerminalRefundRow,
)

__all__ = [
    "LAPSE_JOB",
    "SETTLEMENT_JOB",
    "Applied",
    "EventType",
    "Ignored",
    "affiliation_for",
    "apply_processor_event",
    "create",
    "ensure_affiliation",
    "get_payment",
    "lapse_authorization",
    "recent_payments",
    "run_settlement",
    "sandbox_affiliation",
    "shown",
    "update",
]

#: The job kind of the daily settlement and payout run (D192), every day at 00:00 UTC.
SETTLEMENT_JOB = "settlement"
SETTLEMENT_REF = "daily"
#: The job kind of one manual payment's lapse, 7 days after its authorization (D191).
LAPSE_JOB = "terminal_lapse"

#: The transitions :func:`apply_processor_event` makes (``lapsed`` only for the lapse job).
EventType = Literal["settled", "paid_out", "voided", "lapsed"]
#: Rows one settlement run moves per query.
_BATCH = 500


@dataclass(frozen=True, slots=True)
class Applied:
    """The event moved the payment: ``status`` is its status now."""

    payment_id: str
    type: str
    status: str


@dataclass(frozen=True, slots=True)
class Ignored:
    """The event changed nothing. ``code``: ``duplicate`` (its id was applied or ignored before: nothing
    recorded again), ``unknown_payment`` (no such payment: nothing recorded), ``not_allowed`` (the
    payment's state does not allow it: recorded with ``reason``)."""

    payment_id: str
    type: str
    code: Literal["duplicate", "unknown_payment", "not_allowed"]
    reason: str


# ------------------------------------------------------------------------------------ affiliation


def affiliation_for(session: Session, client_id: int) -> str | None:
    """The client's affiliation number, ``None`` before it has one."""
    return session.scalars(
        select(TerminalAffiliationRow.affiliation).where(TerminalAffiliationRow.client_id == client_id)
    ).first()


def ensure_affiliation(session: Session, client_id: int, now: datetime) -> str:
    """The client's affiliation number (D194), assigned now if it has none: 10 digits, unique."""
    existing = affiliation_for(session, client_id)
    if existing is not None:
        return existing
    while True:
        number = str(secrets.randbelow(9 * 10 ** (AFFILIATION_LENGTH - 1)) + 10 ** (AFFILIATION_LENGTH - 1))
        taken = session.scalars(
            select(TerminalAffiliationRow.id).where(TerminalAffiliationRow.affiliation == number)
        ).first()
        if taken is None:
            break
    try:
        with session.begin_nested():  # two first payments at once: one insert wins, the other reads it
            session.add(TerminalAffiliationRow(client_id=client_id, affiliation=number, created_at=now))
    except IntegrityError:
        won = affiliation_for(session, client_id)
        if won is None:  # pragma: no cover - the number itself collided (1 in 9e9): try another
            return ensure_affiliation(session, client_id, now)
        return won
    return number


# ------------------------------------------------------------------------------------ shown


def shown(row: TerminalPaymentRow) -> TerminalPayment:
    """A payment as answered (D190)."""
    return TerminalPayment(
        id=row.payment_id,
        status=row.status,
        capture_mode=row.capture_mode,
        amount=from_cents(row.amount_cents),
        currency=row.currency,
        captured_amount=from_cents(row.captured_cents),
        refunded_amount=from_cents(row.refunded_cents),
        terminal_id=row.terminal_id,
        reference=row.reference,
        external_id=row.external_id,
        card_last4=row.card_last4,
        affiliation=row.affiliation,
        decline_reason=row.decline_reason,
        authorized_at=row.authorized_at,
        capture_before=row.capture_before,
        captured_at=row.captured_at,
        settlement_date=row.settlement_date,
        settled_at=row.settled_at,
        payout_date=row.payout_date,
        paid_out_at=row.paid_out_at,
        voided_at=row.voided_at,
        lapsed_at=row.lapsed_at,
        created_at=row.created_at,
    )


def get_payment(session: Session, payment_id: str) -> TerminalPayment:
    """One payment by id, any client's (the control plane's read): ``404`` naming ``id``."""
    row = _find(session, payment_id)
    if row is None:
        raise APIProblem.not_found("Terminal payment", "id")
    return shown(row)


def _find(session: Session, payment_id: str, *, lock: bool = False) -> TerminalPaymentRow | None:
    if not isinstance(payment_id, str) or len(payment_id) > 32:
        return None
    query = select(TerminalPaymentRow).where(TerminalPaymentRow.payment_id == payment_id)
    if lock:
        query = query.with_for_update()
    return session.scalars(query).first()


# ------------------------------------------------------------------------------------ create


def _amount_in_range(client: ClientRow, amount: Decimal) -> int:
    cents = to_cents(amount)
    if not client.amount_min_cents <= cents <= client.amount_max_cents:
        low, high = from_cents(client.amount_min_cents), from_cents(client.amount_max_cents)
        message = f"must be between {low} and {high}"
        raise APIProblem(
            400, OwnCode.AMOUNT_OUT_OF_RANGE, f"Amount out of range: {message}.", [("amount", message)]
        )
    return cents


def _parse_create(raw: bytes) -> TerminalPaymentCreate:
    data = parse_json_object(raw)
    for name in TerminalPaymentCreate.REFUSED_FIELDS:
        if name in data:
            raise APIProblem.invalid_field(name, "is not accepted: terminal payments take no installments")
    return validate(TerminalPaymentCreate, data)


def _new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


def _captured(row: TerminalPaymentRow, cents: int, now: datetime) -> None:
    row.status = "captured"
    row.captured_cents = cents
    row.captured_at = now
    row.settlement_date = bd.settlement_date(now)
    row.payout_date = bd.payout_date(row.settlement_date, row.card_first_digit)
    row.updated_at = now


def _ensure_settlement_job(session: Session, now: datetime) -> None:
    first = bd.start_of(now.astimezone(UTC).date() + timedelta(days=1))
    jobs.ensure_recurring(session, SETTLEMENT_JOB, SETTLEMENT_REF, first, timedelta(days=1), now)


def create(
    session: Session, clock: Clock, environment: EnvironmentName, credentials: Credentials, raw: bytes
) -> TerminalPayment:
    """``POST /terminal-payment`` (D190): authenticate, parse, check against the client, decide."""
    client = authenticate_token(session, credentials, environment)
    body = _parse_create(raw)
    if body.currency not in client.currencies:
        raise APIProblem.invalid_field("currency", f"{body.currency!r} is not enabled for this client")
    cents = _amount_in_range(client, body.amount)
    number = normalize_number(body.card.number)
    if not luhn_valid(number):
        raise APIProblem.invalid_field("card.number", "is not a valid card number")
    now = clock.now(session)
    affiliation = ensure_affiliation(session, client.id, now)
    decision = decide_charge(number, period=None, attempt=1)
    row = TerminalPaymentRow(
        payment_id=_new_id("tpm_"),
        client_id=client.id,
        affiliation=affiliation,
        status="declined",
        capture_mode=body.capture_mode,
        amount_cents=cents,
        captured_cents=0,
        refunded_cents=0,
        currency=body.currency,
        terminal_id=body.terminal_id,
        reference=body.reference,
        external_id=body.external_id,
        card_last4=number[-4:],
        card_first_digit=number[0],
        created_at=now,
        updated_at=now,
    )
    if decision.outcome != "approved":
        row.decline_reason = decision.reason
    else:
        row.authorized_at = now
        if body.capture_mode == "automatic":
            _captured(row, cents, now)
        else:
            row.status = "authorized"
            row.capture_before = bd.lapse_at(now)
        _ensure_settlement_job(session, now)
    session.add(row)
    session.flush()
    if row.status == "authorized":
        assert row.capture_before is not None
        jobs.add(session, LAPSE_JOB, row.payment_id, row.capture_before, now)
    return shown(row)


# ------------------------------------------------------------------------------------ update


def _refused(field: str, message: str) -> APIProblem:
    """``409`` with ``ownCode`` null naming ``field`` (D191): a state conflict."""
    return APIProblem(409, None, f"Cannot do that: {message}.", [(field, message)])


def _positive(amount: Decimal | None) -> int | None:
    if amount is None:
        return None
    if amount <= 0:
        raise APIProblem.invalid_field("amount", "must be greater than zero")
    return to_cents(amount)


def update(
    session: Session,
    clock: Clock,
    environment: EnvironmentName,
    credentials: Credentials,
    payment_id: str,
    raw: bytes,
) -> TerminalPayment:
    """``PATCH /terminal-payment/{id}`` (D191): capture, void or refund; anything else ``409``."""
    client = authenticate_token(session, credentials, environment)
    body = validate(TerminalPaymentUpdate, parse_json_object(raw))
    row = _find(session, payment_id, lock=True)
    if row is None or row.client_id != client.id:
        raise APIProblem.not_found("Terminal payment", "id")
    if body.action not in ("capture", "void", "refund"):
        raise _refused("action", f"unknown action {body.action!r}: capture, void or refund")
    cents = _positive(body.amount)
    now = clock.now(session)
    if body.action == "capture":
        _capture(row, cents, now)
    elif body.action == "void":
        if cents is not None:
            raise APIProblem.invalid_field("amount", "is not taken by a void (it voids the whole payment)")
        reason = _void_refusal(row, now)
        if reason is not None:
            raise _refused("action", reason)
        _void(row, now)
        row.updated_at = now
    else:
        _refund(session, row, cents, now)
    session.flush()
    return shown(row)


def _void(row: TerminalPaymentRow, at: datetime) -> None:
    """Void ``row`` at ``at``: it will never settle nor be paid out, so the dates its capture set
    (D192) are cleared; a voided payment shows neither (D436)."""
    row.status = "voided"
    row.voided_at = at
    row.settlement_date = None
    row.payout_date = None


def _capture(row: TerminalPaymentRow, cents: int | None, now: datetime) -> None:
    if row.status != "authorized":
        if row.captured_at is not None:
            raise _refused("action", "the payment was captured already (a payment is captured once)")
        raise _refused("action", f"a {row.status} payment cannot be captured")
    assert row.capture_before is not None
    if now >= row.capture_before:
        raise _refused("action", "the authorization lapsed: capture within 7 days of it")
    if cents is not None and cents > row.amount_cents:
        raise _refused("amount", f"at most the authorized {from_cents(row.amount_cents)} can be captured")
    _captured(row, row.amount_cents if cents is None else cents, now)


def _void_refusal(row: TerminalPaymentRow, at: datetime) -> str | None:
    """Why the payment cannot be voided at ``at`` (``None``: it can)."""
    if row.status == "authorized":
        return None
    if row.status == "captured":
        assert row.captured_at is not None
        if at < bd.void_deadline(row.captured_at):
            return None
        return "the business day's cutoff (23:30 UTC) closed its batch: refund it after settlement"
    return f"a {row.status} payment cannot be voided"


def _refund(session: Session, row: TerminalPaymentRow, cents: int | None, now: datetime) -> None:
    if row.status == "captured":
        raise _refused(
            "action",
            "the payment is not settled yet: void it the same business day, or refund it once settled",
        )
    if row.status not in ("settled", "paid_out"):
        if row.status == "refunded":
            raise _refused("action", "the payment is refunded in full already")
        raise _refused("action", f"a {row.status} payment cannot be refunded")
    remaining = row.captured_cents - row.refunded_cents
    amount = remaining if cents is None else cents
    if amount > remaining:
        raise _refused("amount", f"at most {from_cents(remaining)} (captured less refunded) can be refunded")
    session.add(
        TerminalRefundRow(refund_id=_new_id("tpr_"), payment_id=row.id, amount_cents=amount, created_at=now)
    )
    row.refunded_cents += amount
    if row.refunded_cents == row.captured_cents:
        row.status = "refunded"
    row.updated_at = now


# ------------------------------------------------------------------------------------ transitions


def _transition(row: TerminalPaymentRow, type: str, at: datetime) -> str | None:
    """Move ``row`` by ``type`` at ``at``; the reason it cannot (``None``: moved)."""
    if type == "settled":
        if row.status != "captured":
            return f"a {row.status} payment cannot be settled"
        assert row.captured_at is not None
        if at < bd.void_deadline(row.captured_at):
            return "its batch's cutoff has not passed yet"
        row.status = "settled"
        row.settled_at = at
    elif type == "paid_out":
        settled = row.status == "settled" or (row.status == "refunded" and row.settled_at is not None)
        if not settled or row.paid_out_at is not None:
            return f"a {row.status} payment cannot be paid out"
        assert row.settled_at is not None
        if at < row.settled_at:
            return "it cannot be paid out before it settled"
        if row.status == "settled":
            row.status = "paid_out"
        row.paid_out_at = at
    elif type == "voided":
        reason = _void_refusal(row, at)
        if reason is not None:
            return reason
        _void(row, at)
    elif type == "lapsed":
        if row.status != "authorized":
            return f"a {row.status} payment does not lapse"
        row.status = "lapsed"
        row.lapsed_at = at
    else:
        return f"unknown event type {type!r}"
    row.updated_at = at
    return None


def apply_processor_event(
    session: Session, payment_id: str, type: str, at: datetime, event_id: str, *, now: datetime | None = None
) -> Applied | Ignored:
    """Apply the event ``event_id`` (``type`` at ``at``) to the payment ``payment_id``, at most once.

    The one idempotent transition the settlement job and the inbound webhooks (D193) share. The payment
    row is locked first (so the same event delivered twice at once is applied once), then the id looked
    up: seen before -> :class:`Ignored` ``duplicate``, nothing changes. Otherwise the transition is made or
    refused (:class:`Ignored` ``not_allowed``) and the id recorded with the outcome, in the caller's
    transaction. An unknown payment records nothing (:class:`Ignored` ``unknown_payment``). ``now``: the
    virtual time of recording (default ``at``).
    """
    row = _find(session, payment_id, lock=True)
    if row is None:
        return Ignored(payment_id, type, "unknown_payment", "no such terminal payment")
    seen = session.scalars(
        select(ProcessorEventRow.outcome).where(ProcessorEventRow.event_id == event_id)
    ).first()
    if seen is not None:
        return Ignored(payment_id, type, "duplicate", f"event {event_id} was {seen} before")
    reason = _transition(row, type, at)
    session.add(
        ProcessorEventRow(
            event_id=event_id,
            payment_id=payment_id,
            type=type[:16],
            at=at,
            outcome="ignored" if reason else "applied",
            reason=reason,
            created_at=now or at,
        )
    )
    session.flush()
    if reason is not None:
        return Ignored(payment_id, type, "not_allowed", reason)
    return Applied(payment_id, type, row.status)


# ------------------------------------------------------------------------------------ jobs


def lapse_authorization(session: Session, clock: Clock, payment_id: str) -> None:
    """The job of kind :data:`LAPSE_JOB`: the payment, still ``authorized`` 7 days on, lapses."""
    now = clock.now(session)
    apply_processor_event(session, payment_id, "lapsed", now, f"job:lapsed:{payment_id}")


def run_settlement(session: Session, clock: Clock, ref: str) -> None:
    """The daily job of kind :data:`SETTLEMENT_JOB` (D192): every captured payment whose settlement date
    has come settles, then every settled one whose payout date has come is paid out, each through
    :func:`apply_processor_event` (event ids ``job:settled:<id>``, ``job:paid_out:<id>``)."""
    now = clock.now(session)
    today = now.astimezone(UTC).date()
    for status, column, type in (
        ("captured", TerminalPaymentRow.settlement_date, "settled"),
        ("settled", TerminalPaymentRow.payout_date, "paid_out"),
        ("refunded", TerminalPaymentRow.payout_date, "paid_out"),
    ):
        after = 0
        while True:
            query = (
                select(TerminalPaymentRow.id, TerminalPaymentRow.payment_id)
                .where(TerminalPaymentRow.status == status, column <= today, TerminalPaymentRow.id > after)
                .order_by(TerminalPaymentRow.id)
                .limit(_BATCH)
            )
            if type == "paid_out":
                query = query.where(TerminalPaymentRow.paid_out_at.is_(None))
            batch = session.execute(query).all()
            if not batch:
                break
            for row_id, payment_id in batch:
                apply_processor_event(session, payment_id, type, now, f"job:{type}:{payment_id}")
                after = row_id


def sandbox_affiliation(session: Session, slug: str, now: datetime) -> TerminalAffiliation:
    """``GET /_sandbox/terminal/affiliation?client=``: the client's number, assigned now if it has none."""
    client = session.scalars(select(ClientRow).where(ClientRow.slug == slug)).first()
    if client is None:
        raise APIProblem.not_found("Client", "client")
    return TerminalAffiliation(client=client.slug, affiliation=ensure_affiliation(session, client.id, now))


def recent_payments(session: Session, limit: int = 200) -> list[TerminalPayment]:
    """The newest terminal payments of every client first (at most ``limit``), as answered (the browser
    console's terminal page, D723)."""
    rows = session.scalars(
        select(TerminalPaymentRow)
        .order_by(TerminalPaymentRow.created_at.desc(), TerminalPaymentRow.id.desc())
        .limit(limit)
    )
    return [shown(row) for row in rows]
