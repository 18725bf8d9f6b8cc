"""Subscriptions: plans, creation, lookup, the one charge function and the views (spec 2.6, 3.1, 4.2).

The one place a subscription is created (:func:`create_subscription`: by a verified card, D140, or in bulk
by the control plane, D142) and the one place a subscription's default method is charged
(:func:`charge_many`, :func:`charge` for one: by the scheduled charge process,
:mod:`paysdk.server.services.renewals`, and by batch CSV rows, :mod:`paysdk.server.services.batch_charges`).
Outcomes come from the test card (:func:`paysdk.server.services.test_cards.decide_saved_charge`): never
3-D Secure off-session (D149). A subscription keeps its card as a processor keeps a saved card (brand,
last four, a random token and what the test card does off-session, derived at enrolment), never the
number (D351).

Errors of the subscription family (D139): an invalid field is ``400`` with ``ownCode`` null naming it
(spec 7 gives that answer for the payment history without ``subscriptionId``; the family uses it for
every field); an unknown subscription (or another client's) ``404``; a state conflict ``409``.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import cast

from sqlalchemy import Table, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.contracts.subscriptions import (
    PaymentMethod,
    Plan,
    PlanCreate,
    SandboxSubscription,
    SandboxSubscriptionsCreate,
    SandboxSubscriptionsCreated,
    Subscription,
    SubscriptionCharge,
)
from paysdk.contracts.wallet import email_key
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow
from paysdk.server.db import from_cents, to_cents
from paysdk.server.errors import APIProblem
from paysdk.server.hotpath import STATEMENTS, Statement
from paysdk.server.hotpath.driver import copy_rows
from paysdk.server.renewal_dates import local_date, local_midnight, renewal_date
from paysdk.server.services.renewal_schedule import ensure_schedule
from paysdk.server.services.test_cards import (
    Renewal,
    SavedCard,
    decide_saved_charge,
    luhn_valid,
    normalize_number,
    saved_card,
)
from paysdk.server.subscription_tables import PlanRow, SubscriptionChargeRow, SubscriptionRow

__all__ = [
    "STATUSES",
    "ChargeRequest",
    "ChargeResult",
    "bad_field",
    "charge",
    "charge_many",
    "charge_view",
    "charges_of",
    "create_plan",
    "create_subscription",
    "create_subscriptions",
    "load",
    "load_plan",
    "new_card_token",
    "new_charge_id",
    "new_sub_uid",
    "plan_view",
    "public_view",
    "recent_subscriptions",
    "sandbox_view",
    "saved_card_of",
    "subscription_emails",
]

#: Spec 3.1: exactly four.
STATUSES = ("active", "cancelled", "expired", "inactive")


def bad_field(field: str, message: str) -> APIProblem:
    """``400``, ``ownCode`` null, naming ``field`` (D139)."""
    return APIProblem(400, None, f"Invalid request: {field} {message}.", [(field, message)])


def new_sub_uid() -> str:
    """``sub_`` + 24 hex digits."""
    return "sub_" + secrets.token_hex(12)


def new_card_token() -> str:
    """``pm_`` + 24 hex digits: a saved card's payment-method token (random: it says nothing of the
    number, D351)."""
    return "pm_" + secrets.token_hex(12)


def new_charge_id() -> str:
    """``sch_`` + 24 hex digits: 12 of the wall clock's microseconds (modulo 2**48), 12 random (D171).
    Ids minted one after another sort together, so a batch's thousand charges land on a few pages of the
    unique index of ``charge_id`` rather than on a thousand random ones."""
    return f"sch_{time.time_ns() // 1000 % (1 << 48):012x}{secrets.token_hex(6)}"


# ------------------------------------------------------------------------------------ plans


def create_plan(session: Session, spec: PlanCreate, now: datetime) -> Plan:
    """``POST /_sandbox/plans`` (D141): the client must exist, the currency be one of its currencies
    (default: its first); a taken ``planId`` is ``409``."""
    client = session.scalars(select(ClientRow).where(ClientRow.slug == spec.client)).first()
    if client is None:
        raise APIProblem.invalid_field("client", "does not name a client")
    currency = (spec.currency or client.currencies[0]).upper()
    if currency not in client.currencies:
        raise APIProblem.invalid_field(
            "currency", f"must be one of the client's currencies {client.currencies}"
        )
    if spec.amount <= 0:
        raise APIProblem.invalid_field("amount", "must be greater than zero")
    plan_id = spec.plan_id or "plan_" + secrets.token_hex(8)
    if session.scalars(select(PlanRow.id).where(PlanRow.plan_id == plan_id)).first() is not None:
        raise APIProblem.conflict(f"A plan {plan_id} exists already.", "planId")
    row = PlanRow(
        plan_id=plan_id,
        client_id=client.id,
        name=spec.name or plan_id,
        amount_cents=to_cents(spec.amount),
        currency=currency,
        interval=spec.interval,
        interval_count=spec.interval_count,
        term=spec.term,
        daily_attempts=spec.daily_attempts,
        interval_attempt_hours=spec.interval_attempt,
        grace_days=spec.grace_days,
        created_at=now,
    )
    session.add(row)
    session.flush()
    return plan_view(row, client.slug)


def load_plan(session: Session, plan_id: str, client_id: int | None = None) -> PlanRow:
    """The plan ``plan_id`` (of ``client_id`` when given); ``404`` naming ``planId`` otherwise."""
    row = session.scalars(select(PlanRow).where(PlanRow.plan_id == plan_id)).first()
    if row is None or (client_id is not None and row.client_id != client_id):
        raise APIProblem.not_found("Plan", "planId")
    return row


def plan_view(row: PlanRow, client_slug: str) -> Plan:
    """The control plane's view of a plan."""
    return Plan(
        plan_id=row.plan_id,
        client=client_slug,
        name=row.name,
        amount=from_cents(row.amount_cents),
        currency=row.currency,
        interval=row.interval,
        interval_count=row.interval_count,
        term=row.term,
        daily_attempts=row.daily_attempts,
        interval_attempt=row.interval_attempt_hours,
        grace_days=row.grace_days,
        created_at=row.created_at,
    )


# ------------------------------------------------------------------------------------ creation

#: The bulk insert of :func:`create_subscriptions`: compiled once, run through the DBAPI on SQLite
#: (:class:`paysdk.server.hotpath.Statement`), a multi-row ``INSERT`` per chunk.
_INSERT_SUBSCRIPTION_COLUMNS = (
    "sub_uid",
    "client_id",
    "plan_id",
    "status",
    "email",
    "card_token",
    "card_brand",
    "card_last4",
    "card_renewal",
    "card_decline_reason",
    "anchor_date",
    "period",
    "next_renewal_date",
    "due_at",
    "attempts",
    "ends_on",
    "verification_uid",
    "created_at",
    "updated_at",
)
_INSERT_SUBSCRIPTION = Statement(insert(cast(Table, SubscriptionRow.__table__)), _INSERT_SUBSCRIPTION_COLUMNS)


def _card(card: str | SavedCard, field: str) -> SavedCard:
    """What is kept of ``card`` (a number, Luhn-checked, or a card saved already)."""
    if isinstance(card, SavedCard):
        return card
    digits = normalize_number(card)
    if not luhn_valid(digits):
        raise APIProblem.invalid_field(field, "is not a valid card number (Luhn check failed)")
    return saved_card(digits)


def saved_card_of(sub: SubscriptionRow) -> SavedCard:
    """The default method of ``sub`` as kept (D351)."""
    return SavedCard(sub.card_brand, sub.card_last4, cast(Renewal, sub.card_renewal), sub.card_decline_reason)


def _values(
    client: ClientRow,
    plan: PlanRow,
    *,
    sub_uid: str,
    email: str,
    card: SavedCard,
    anchor: date,
    now: datetime,
    verification_uid: str | None,
) -> dict[str, object]:
    ends_on = (
        renewal_date(anchor, plan.interval, plan.interval_count, plan.term) if plan.term is not None else None
    )
    return {
        "sub_uid": sub_uid,
        "client_id": client.id,
        "plan_id": plan.id,
        "status": "active",
        "email": email,
        "card_token": new_card_token(),
        "card_brand": card.brand,
        "card_last4": card.last4,
        "card_renewal": card.renewal,
        "card_decline_reason": card.decline_reason,
        "anchor_date": anchor,
        "period": 0,
        "next_renewal_date": anchor,
        "due_at": local_midnight(anchor, client.timezone),
        "attempts": 0,
        "ends_on": ends_on,
        "verification_uid": verification_uid,
        "created_at": now,
        "updated_at": now,
    }


def _bulk_insert(connection: Connection, rows: list[dict[str, object]]) -> None:
    """Insert subscription rows fast: ``COPY`` on PostgreSQL (psycopg's executemany sends one statement
    per row), the compiled multi-row ``INSERT`` of :class:`Statement` elsewhere (SQLite; Core's
    ``executemany`` on the plain path, the hot path switched off)."""
    if connection.dialect.name == "postgresql" and not STATEMENTS.switched_off(connection.dialect):
        columns = _INSERT_SUBSCRIPTION_COLUMNS
        copy_rows(
            connection,
            SubscriptionRow.__tablename__,
            columns,
            ([_copy_value(row[column]) for column in columns] for row in rows),
        )
        return
    for start in range(0, len(rows), 5000):
        _INSERT_SUBSCRIPTION.run_many(connection, rows[start : start + 5000])


def _copy_value(value: object) -> object:
    """A value as :class:`paysdk.server.db.UTCDateTime` stores it (aware datetimes as naive UTC)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def create_subscription(
    session: Session,
    client: ClientRow,
    plan: PlanRow,
    *,
    email: str,
    card: str | SavedCard,
    now: datetime,
    sub_uid: str | None = None,
    verification_uid: str | None = None,
) -> SubscriptionRow:
    """A new ``active`` subscription of ``plan`` charging ``card`` (a card number, of which only what
    :class:`SavedCard` holds is kept, or a card saved already): its first renewal date (the anchor) is
    today in the client's timezone (D143: no start date on the public API), so the next run of the
    charge process charges the first period."""
    row = SubscriptionRow(
        **_values(
            client,
            plan,
            sub_uid=sub_uid or new_sub_uid(),
            email=email,
            card=_card(card, "cardNumber"),
            anchor=local_date(now, client.timezone),
            now=now,
            verification_uid=verification_uid,
        )
    )
    session.add(row)
    session.flush()
    ensure_schedule(session, now)  # the scheduled charge process, with the subscription (D145)
    return row


def create_subscriptions(
    session: Session, clock: Clock, spec: SandboxSubscriptionsCreate
) -> SandboxSubscriptionsCreated:
    """``POST /_sandbox/subscriptions`` (D142): ``count`` active subscriptions of a plan in one
    transaction (a bulk insert), anchored on ``startDate`` (default: today in the client's timezone)."""
    now = clock.now(session)
    plan = load_plan(session, spec.plan_id)
    client = session.get(ClientRow, plan.client_id)
    assert client is not None
    card = _card(spec.card_number, "cardNumber")
    anchor = spec.start_date or local_date(now, client.timezone)
    # A given email in the one form of D380 (the router checked it); the default is plain ASCII.
    email = email_key(spec.email) if spec.email else f"subscriber@{client.slug.lower()}.example"
    uids = [new_sub_uid() for _ in range(spec.count)]
    # Every row is the same but for its sub_uid and card token: the values are computed once.
    template = _values(
        client, plan, sub_uid="", email=email, card=card, anchor=anchor, now=now, verification_uid=None
    )
    rows = [{**template, "sub_uid": uid, "card_token": new_card_token()} for uid in uids]
    _bulk_insert(session.connection(), rows)
    ensure_schedule(session, now)  # the scheduled charge process, with the subscription (D145)
    return SandboxSubscriptionsCreated(count=len(uids), sub_uids=uids)


# ------------------------------------------------------------------------------------ lookup


def load(
    session: Session, sub_uid: str, client_id: int | None = None, *, lock: bool = False
) -> SubscriptionRow:
    """The subscription ``sub_uid`` (of ``client_id`` when given: another client's is not found);
    ``404`` naming ``field`` otherwise. ``lock``: ``SELECT ... FOR UPDATE`` (PostgreSQL)."""
    statement = select(SubscriptionRow).where(SubscriptionRow.sub_uid == sub_uid)
    if lock:
        statement = statement.with_for_update()
    row = session.scalars(statement).first()
    if row is None or (client_id is not None and row.client_id != client_id):
        raise APIProblem.not_found("Subscription", "subscriptionId")
    return row


# ------------------------------------------------------------------------------------ charging


@dataclass(frozen=True, slots=True)
class ChargeRequest:
    """One charge of a subscription's default method (the saved ``card``) for :func:`charge_many`: a
    renewal attempt (``period``, ``renewal_date``) or a batch CSV row (``reference``)."""

    subscription_id: int
    client_id: int
    card: SavedCard
    source: str
    amount_cents: int
    currency: str
    attempt: int
    period: int | None = None
    renewal_date: date | None = None
    reference: str | None = None


@dataclass(frozen=True, slots=True)
class ChargeResult:
    """What a charge of :func:`charge_many` wrote: its id and outcome (``approved``/``declined``)."""

    charge_id: str
    status: str
    reason: str


#: The charge insert, compiled once; on SQLite one multi-row ``INSERT`` per chunk through the DBAPI
#: (:class:`paysdk.server.hotpath.Statement`), elsewhere a Core ``executemany``.
_INSERT_CHARGES = Statement(
    insert(cast(Table, SubscriptionChargeRow.__table__)),
    (
        "charge_id",
        "subscription_id",
        "client_id",
        "source",
        "period",
        "attempt",
        "status",
        "reason",
        "amount_cents",
        "currency",
        "renewal_date",
        "reference",
        "created_at",
    ),
)


def charge_many(session: Session, requests: Sequence[ChargeRequest], now: datetime) -> list[ChargeResult]:
    """Charge each request's card off-session (``modKeys['3ds']`` false: never a challenge, D149) and
    record every charge in the caller's transaction with one bulk ``INSERT`` (no ORM objects); the
    results in the requests' order. The caller guards the period (renewals) or the reference (batch
    rows); the unique indexes of :mod:`paysdk.server.subscription_tables` refuse a second attempt row or
    a second approved renewal charge of one period whatever happens (an ``IntegrityError``: the caller's
    transaction or savepoint rolls back)."""
    results: list[ChargeResult] = []
    rows: list[dict[str, object]] = []
    for request in requests:
        renewal = request.source == "renewal"
        decision = decide_saved_charge(
            request.card, period=request.period if renewal else None, attempt=request.attempt
        )
        result = ChargeResult(new_charge_id(), decision.outcome, decision.reason)
        results.append(result)
        rows.append(
            {
                "charge_id": result.charge_id,
                "subscription_id": request.subscription_id,
                "client_id": request.client_id,
                "source": request.source,
                "period": request.period,
                "attempt": request.attempt,
                "status": result.status,
                "reason": result.reason,
                "amount_cents": request.amount_cents,
                "currency": request.currency,
                "renewal_date": request.renewal_date,
                "reference": request.reference,
                "created_at": now,
            }
        )
    if rows:
        try:
            _INSERT_CHARGES.run_many(session.connection(), rows)
        except sqlite3.IntegrityError as exc:  # the DBAPI's own error on SQLite: raised as SQLAlchemy's
            raise IntegrityError(str(_INSERT_CHARGES.statement), None, exc) from exc
    return results


def charge(
    session: Session,
    sub: SubscriptionRow,
    *,
    now: datetime,
    source: str,
    amount_cents: int,
    currency: str,
    attempt: int,
    period: int | None = None,
    renewal_date: date | None = None,
    reference: str | None = None,
) -> SubscriptionChargeRow:
    """One charge of ``sub``'s default method: :func:`charge_many` of one request, the stored row
    returned."""
    request = ChargeRequest(
        subscription_id=sub.id,
        client_id=sub.client_id,
        card=saved_card_of(sub),
        source=source,
        amount_cents=amount_cents,
        currency=currency,
        attempt=attempt,
        period=period,
        renewal_date=renewal_date,
        reference=reference,
    )
    (result,) = charge_many(session, [request], now)
    row = session.scalars(
        select(SubscriptionChargeRow).where(SubscriptionChargeRow.charge_id == result.charge_id)
    ).one()
    return row


# ------------------------------------------------------------------------------------ views


def _method(sub: SubscriptionRow) -> PaymentMethod:
    return PaymentMethod(brand=sub.card_brand, last4=sub.card_last4)


def public_view(sub: SubscriptionRow, plan: PlanRow) -> Subscription:
    """The subscription as the public API answers it (D153)."""
    return Subscription(
        sub_uid=sub.sub_uid,
        status=sub.status,
        plan_id=plan.plan_id,
        email=sub.email,
        next_renewal_date=sub.next_renewal_date if sub.status == "active" else None,
        default_payment_method=_method(sub),
        created_at=sub.created_at,
        cancelled_at=sub.cancelled_at,
        ended_at=sub.ended_at,
    )


def charge_view(row: SubscriptionChargeRow, sub: SubscriptionRow) -> SubscriptionCharge:
    """One charge as the payment history shows it (D150)."""
    return SubscriptionCharge(
        charge_id=row.charge_id,
        subscription_id=sub.sub_uid,
        source=row.source,
        status=row.status,
        reason=row.reason,
        amount=from_cents(row.amount_cents),
        currency=row.currency,
        attempt=row.attempt,
        period=row.period,
        renewal_date=row.renewal_date,
        reference=row.reference,
        payment_method=_method(sub),
        created_at=row.created_at,
    )


def charges_of(session: Session, sub: SubscriptionRow) -> list[SubscriptionCharge]:
    """Every charge of ``sub``, oldest first (the payment history: a flat array, no paging)."""
    rows: Sequence[SubscriptionChargeRow] = session.scalars(
        select(SubscriptionChargeRow)
        .where(SubscriptionChargeRow.subscription_id == sub.id)
        .order_by(SubscriptionChargeRow.id)
    ).all()
    return [charge_view(row, sub) for row in rows]


def sandbox_view(session: Session, sub: SubscriptionRow) -> SandboxSubscription:
    """``GET /_sandbox/subscriptions/{subUid}`` (D142)."""
    plan = session.get(PlanRow, sub.plan_id)
    client = session.get(ClientRow, sub.client_id)
    assert plan is not None
    assert client is not None
    public = public_view(sub, plan)
    return SandboxSubscription(
        **public.model_dump(),
        client=client.slug,
        timezone=client.timezone,
        anchor_date=sub.anchor_date,
        period=sub.period,
        attempts=sub.attempts,
        next_attempt_at=sub.due_at if sub.status == "active" else None,
        ends_on=sub.ends_on,
        plan=plan_view(plan, client.slug),
        charges=charges_of(session, sub),
    )


def recent_subscriptions(session: Session, limit: int = 200) -> list[SandboxSubscription]:
    """The newest subscriptions of every client first (at most ``limit``), as
    ``GET /_sandbox/subscriptions/{subUid}`` answers each (the browser console, D723)."""
    rows = session.scalars(
        select(SubscriptionRow)
        .order_by(SubscriptionRow.created_at.desc(), SubscriptionRow.id.desc())
        .limit(limit)
    ).all()
    return [sandbox_view(session, row) for row in rows]


def subscription_emails(session: Session, sub_uid: str) -> list[tuple[datetime, str, str, str]]:
    """The emails the sandbox sent about subscription ``sub_uid`` (payment problems, suspension; D147):
    ``(at, notify event, to, subject)``, oldest first."""
    from paysdk.server.wallet_tables import WalletOutboxRow

    sub = load(session, sub_uid)
    rows = session.scalars(
        select(WalletOutboxRow).where(WalletOutboxRow.client_id == sub.client_id).order_by(WalletOutboxRow.id)
    )
    return [
        (row.at, str((row.data or {}).get("notifyEvent", "")), row.to, row.subject)
        for row in rows
        if (row.data or {}).get("subUid") == sub_uid
    ]
