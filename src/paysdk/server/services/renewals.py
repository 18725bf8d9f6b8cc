"""The scheduled charge process of subscriptions (spec 3.3; decisions D143-D149).

* **One recurring job** of kind :data:`JOB_KIND` every 12 hours of virtual time, first due at the next
  00:00 or 12:00 UTC after the first subscription was created (:func:`ensure_schedule`, called in the
  transaction that creates a subscription).
* **A run at virtual time T** (the clock frozen at the job's due time, :mod:`paysdk.server.scheduler`)
  first expires the fixed-term subscriptions whose term ended (the local midnight of ``ends_on`` at or
  before T), then charges, batch after batch, every ``active`` subscription due at or before T, oldest due
  first. Each batch is one database transaction (``await context.run(...)``): it claims its rows
  (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; plain rows, no ORM objects), charges each once through the
  one charge path, one bulk insert per batch (:func:`paysdk.server.services.subscriptions.charge_many`),
  and writes the advances, the dunning moves, the emails and the callbacks with it, with bulk statements.
* **One attempt per subscription and pass**: a subscription the run touched carries ``updated_at = T``
  and is not taken again by that run (a success whose next renewal date is already due waits for the
  next run); a run killed half-way and run again at the same T goes on where the last committed batch
  ended.
* **At most one charge per period**: every update is conditional on the ``(id, period, attempts,
  status)`` the batch read, and the unique indexes of :mod:`paysdk.server.subscription_tables` refuse a
  second attempt row or a second approved charge of one period: a batch that collides with another
  runner rolls back whole and is claimed again.
* **Dunning** (D146), per plan: a declined attempt *n* emails ``subPayProblem``; it is retried by the
  first run at or after ``intervalAttempt`` hours later (the email's ``nextAttemptAt``, D350) while
  *n* < ``dailyAttempts`` and that run falls before the end of the local day ``nextRenewalDate +
  graceDays``; otherwise the subscription becomes ``inactive``, ``subscriptionSuspended`` is emailed
  (D147) and the ``subsCallback`` queued (D148).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, NamedTuple, cast

from sqlalchemy import Table, and_, bindparam, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.contracts.callbacks import SubscriptionCallback
from paysdk.server.clock import Clock
from paysdk.server.context import ServerContext
from paysdk.server.core_tables import ClientRow
from paysdk.server.hotpath import Statement
from paysdk.server.jobs import ClaimedJob
from paysdk.server.renewal_dates import local_midnight, renewal_date
from paysdk.server.services import callbacks
from paysdk.server.services.renewal_schedule import EVERY, JOB_KIND, JOB_REF, ensure_schedule, first_run_at
from paysdk.server.services.subscriptions import ChargeRequest, charge_many
from paysdk.server.services.test_cards import Renewal, SavedCard
from paysdk.server.subscription_tables import PlanRow, SubscriptionRow
from paysdk.server.wallet_tables import WalletOutboxRow

__all__ = [
    "BATCH_SIZE",
    "EVENT_TYPE",
    "EVERY",
    "JOB_KIND",
    "JOB_REF",
    "RunSummary",
    "charge_batch",
    "ensure_schedule",
    "expire_ended",
    "first_run_at",
    "run_renewals",
]

log = logging.getLogger("paysdk.server.renewals")

#: Subscriptions charged per database transaction.
BATCH_SIZE = 1000
#: The event type of the ``subsCallback`` (D148).
EVENT_TYPE = SubscriptionCallback.EVENT_TYPES["subscriptionSuspended"]

_SUBS: Table = SubscriptionRow.__table__  # type: ignore[assignment]
_OUTBOX: Table = WalletOutboxRow.__table__  # type: ignore[assignment]
_CLIENTS: Table = ClientRow.__table__  # type: ignore[assignment]


# ------------------------------------------------------------------------------------ expiry


def expire_ended(session: Session, now: datetime) -> int:
    """``active`` fixed-term subscriptions whose ``ends_on`` began (its local midnight) at or before
    ``now`` and whose every period was charged become ``expired`` (``ended_at``: that midnight); one
    still owing a period (retries of an earlier one delayed it) is charged first. Returns how many."""
    horizon = now.astimezone(UTC).date() + timedelta(days=1)  # every zone's today is at most this
    rows = session.execute(
        select(SubscriptionRow.id, SubscriptionRow.ends_on, ClientRow.timezone)
        .join(ClientRow, ClientRow.id == SubscriptionRow.client_id)
        .join(PlanRow, PlanRow.id == SubscriptionRow.plan_id)
        .where(
            SubscriptionRow.status == "active",
            SubscriptionRow.ends_on.is_not(None),
            SubscriptionRow.ends_on <= horizon,
            # A period of the term still owed (its retries delayed the next) is charged first.
            SubscriptionRow.period >= PlanRow.term,
        )
    ).all()
    params: list[dict[str, Any]] = []
    for row in rows:
        assert row.ends_on is not None
        ended = local_midnight(row.ends_on, row.timezone)
        if ended <= now:
            params.append({"b_id": row.id, "ended_at": ended, "updated_at": now})
    if params:
        session.connection().execute(
            update(_SUBS)
            .where(and_(_SUBS.c.id == bindparam("b_id"), _SUBS.c.status == "active"))
            .values(status="expired", ended_at=bindparam("ended_at"), updated_at=bindparam("updated_at")),
            params,
        )
    return len(params)


# ------------------------------------------------------------------------------------ charging


@dataclass(slots=True)
class RunSummary:
    """What one batch (or a whole run) did."""

    claimed: int = 0
    approved: int = 0
    declined: int = 0
    retried: int = 0
    suspended: int = 0
    expired: int = 0

    def add(self, other: RunSummary) -> None:
        """Add ``other``'s counts to these."""
        self.claimed += other.claimed
        self.approved += other.approved
        self.declined += other.declined
        self.retried += other.retried
        self.suspended += other.suspended
        self.expired += other.expired


def _email(
    client_id: int,
    to: str,
    now: datetime,
    event: str,
    sub: _Due,
    plan: PlanRow,
    *,
    attempt: int,
    charge_id: str,
    reason: str,
    next_attempt_at: datetime | None,
) -> dict[str, Any]:
    """One outbox row (D147)."""
    data: dict[str, Any] = {
        "notifyEvent": event,
        "subUid": sub.sub_uid,
        "planId": plan.plan_id,
        "renewalDate": sub.next_renewal_date.isoformat(),
        "attempt": attempt,
        "chargeId": charge_id,
        "reason": reason,
    }
    if event == "subPayProblem":
        subject = f"Payment problem with your {plan.name} subscription"
        body = f"We could not charge your card for the {plan.name} subscription ({reason})."
        if next_attempt_at is not None:
            data["nextAttemptAt"] = next_attempt_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
            body += " We will try again."
    else:
        subject = f"Your {plan.name} subscription is suspended"
        body = f"Every attempt to charge your card for the {plan.name} subscription failed; it is suspended."
    return {"client_id": client_id, "to": to, "subject": subject, "body": body, "data": data, "at": now}


def _retry_at(sub: _Due, plan: PlanRow, timezone: str, now: datetime, attempt: int) -> datetime | None:
    """When the declined ``attempt`` of ``sub``'s period is tried again, or ``None``: every attempt spent
    (D146). That is the run that makes the retry (the first run of the 12-hour grid, D170, at or after
    ``intervalAttempt`` hours after the decline), not the decline time + ``intervalAttempt``: the
    ``subPayProblem`` email's ``nextAttemptAt`` and the subscription's ``due_at`` both say it (D350)."""
    if attempt >= plan.daily_attempts:
        return None
    run = first_run_at(now + timedelta(hours=plan.interval_attempt_hours) - timedelta(microseconds=1))
    if plan.grace_days is not None:
        end = local_midnight(sub.next_renewal_date + timedelta(days=plan.grace_days + 1), timezone)
        # That run, not the retry time, must fall inside the grace window.
        if run >= end:
            return None
    return run


class _Due(NamedTuple):
    """A claimed subscription as the batch reads it (plain columns, no ORM object)."""

    id: int
    sub_uid: str
    client_id: int
    plan_id: int
    email: str
    card_brand: str
    card_last4: str
    card_renewal: str
    card_decline_reason: str
    anchor_date: date
    period: int
    next_renewal_date: date
    attempts: int
    ends_on: date | None
    timezone: str


#: The claim of a batch: the oldest due ``active`` subscriptions the run has not touched, locked
#: (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), as plain rows; compiled once
#: (:class:`paysdk.server.hotpath.Statement`).
_CLAIM = Statement(
    select(
        _SUBS.c.id,
        _SUBS.c.sub_uid,
        _SUBS.c.client_id,
        _SUBS.c.plan_id,
        _SUBS.c.email,
        _SUBS.c.card_brand,
        _SUBS.c.card_last4,
        _SUBS.c.card_renewal,
        _SUBS.c.card_decline_reason,
        _SUBS.c.anchor_date,
        _SUBS.c.period,
        _SUBS.c.next_renewal_date,
        _SUBS.c.attempts,
        _SUBS.c.ends_on,
        _CLIENTS.c.timezone,
    )
    .join(_CLIENTS, _CLIENTS.c.id == _SUBS.c.client_id)
    .where(
        _SUBS.c.status == "active",
        _SUBS.c.due_at <= bindparam("now"),
        _SUBS.c.updated_at < bindparam("now"),
    )
    .order_by(_SUBS.c.due_at, _SUBS.c.id)
    .limit(bindparam("limit"))
    .with_for_update(skip_locked=True, of=_SUBS)
)

#: The batch's conditional updates (``executemany``), each guarded by the ``(id, period, attempts)`` the
#: batch read and ``status = 'active'``; compiled once (:class:`paysdk.server.hotpath.Statement`).
_READ = and_(
    _SUBS.c.id == bindparam("b_id"),
    _SUBS.c.period == bindparam("b_period"),
    _SUBS.c.attempts == bindparam("b_attempts"),
    _SUBS.c.status == "active",
)
_ADVANCE = Statement(
    update(_SUBS)
    .where(_READ)
    .values(
        period=bindparam("period"),
        next_renewal_date=bindparam("next_renewal_date"),
        due_at=bindparam("due_at"),
        attempts=bindparam("attempts"),
        updated_at=bindparam("updated_at"),
    )
)
_RETRY = Statement(
    update(_SUBS)
    .where(_READ)
    .values(attempts=bindparam("attempts"), due_at=bindparam("due_at"), updated_at=bindparam("updated_at"))
)
_EXPIRE = Statement(
    update(_SUBS)
    .where(_READ)
    .values(status="expired", ended_at=bindparam("ended_at"), updated_at=bindparam("updated_at"))
)
_SUSPEND = Statement(
    update(_SUBS)
    .where(_READ)
    .values(status="inactive", attempts=bindparam("attempts"), updated_at=bindparam("updated_at"))
)


def _guard(sub: _Due, now: datetime) -> dict[str, Any]:
    """The ``(id, period, attempts)`` a batch read, which its conditional update of ``sub`` requires."""
    return {"b_id": sub.id, "b_period": sub.period, "b_attempts": sub.attempts, "updated_at": now}


def charge_batch(session: Session, now: datetime, limit: int = BATCH_SIZE) -> RunSummary:
    """Claim up to ``limit`` ``active`` subscriptions due at or before ``now`` that this run has not
    touched yet, charge each once and write the outcome, all in the caller's transaction."""
    claimed = [_Due._make(row) for row in _CLAIM.rows(session.connection(), {"now": now, "limit": limit})]
    summary = RunSummary(claimed=len(claimed))
    if not claimed:
        return summary
    plan_ids = {sub.plan_id for sub in claimed}
    plans = {plan.id: plan for plan in session.scalars(select(PlanRow).where(PlanRow.id.in_(plan_ids)))}
    advances: list[dict[str, Any]] = []
    retries: list[dict[str, Any]] = []
    ends: list[dict[str, Any]] = []
    emails: list[dict[str, Any]] = []
    suspended: list[tuple[_Due, PlanRow, int, str, str]] = []
    requests: list[ChargeRequest] = []
    charged: list[tuple[_Due, PlanRow]] = []
    for sub in claimed:
        plan = plans[sub.plan_id]
        if plan.term is not None and sub.period >= plan.term:
            # Every period of the term was charged: it ends on ``ends_on``, never charged again.
            assert sub.ends_on is not None
            ends.append(
                {
                    **_guard(sub, now),
                    "status": "expired",
                    "ended_at": local_midnight(sub.ends_on, sub.timezone),
                }
            )
            summary.expired += 1
            continue
        requests.append(
            ChargeRequest(
                subscription_id=sub.id,
                client_id=sub.client_id,
                card=SavedCard(
                    sub.card_brand, sub.card_last4, cast(Renewal, sub.card_renewal), sub.card_decline_reason
                ),
                source="renewal",
                amount_cents=plan.amount_cents,
                currency=plan.currency,
                attempt=sub.attempts + 1,
                period=sub.period,
                renewal_date=sub.next_renewal_date,
            )
        )
        charged.append((sub, plan))
    results = charge_many(session, requests, now)
    for (sub, plan), result in zip(charged, results, strict=True):
        timezone: str = sub.timezone
        guard = _guard(sub, now)
        attempt = sub.attempts + 1
        if result.status == "approved":
            summary.approved += 1
            period = sub.period + 1
            if plan.term is not None and period >= plan.term:
                assert sub.ends_on is not None
                next_date = sub.ends_on
            else:
                next_date = renewal_date(sub.anchor_date, plan.interval, plan.interval_count, period)
            advances.append(
                {
                    **guard,
                    "period": period,
                    "next_renewal_date": next_date,
                    "due_at": local_midnight(next_date, timezone),
                    "attempts": 0,
                }
            )
            continue
        summary.declined += 1
        retry = _retry_at(sub, plan, timezone, now, attempt)
        emails.append(
            _email(
                sub.client_id,
                sub.email,
                now,
                "subPayProblem",
                sub,
                plan,
                attempt=attempt,
                charge_id=result.charge_id,
                reason=result.reason,
                next_attempt_at=retry,
            )
        )
        if retry is not None:
            summary.retried += 1
            retries.append({**guard, "attempts": attempt, "due_at": retry})
            continue
        summary.suspended += 1
        emails.append(
            _email(
                sub.client_id,
                sub.email,
                now,
                "subscriptionSuspended",
                sub,
                plan,
                attempt=attempt,
                charge_id=result.charge_id,
                reason=result.reason,
                next_attempt_at=None,
            )
        )
        ends.append({**guard, "status": "inactive", "attempts": attempt})
        suspended.append((sub, plan, attempt, result.charge_id, result.reason))
    connection = session.connection()
    if advances:
        _ADVANCE.run_many(connection, advances)
    if retries:
        _RETRY.run_many(connection, retries)
    expiring = [item for item in ends if item["status"] == "expired"]
    if expiring:
        _EXPIRE.run_many(connection, expiring)
    suspending = [item for item in ends if item["status"] == "inactive"]
    if suspending:
        _SUSPEND.run_many(connection, suspending)
    if emails:
        connection.execute(_OUTBOX.insert(), emails)
    for sub, plan, attempt, charge_id, reason in suspended:
        _queue_callback(session, sub, plan, attempt, charge_id, reason, now)
    return summary


def _queue_callback(
    session: Session,
    sub: _Due,
    plan: PlanRow,
    attempt: int,
    charge_id: str,
    reason: str,
    now: datetime,
) -> None:
    """The ``subsCallback`` of a subscription just suspended (D148)."""
    client = session.get(ClientRow, sub.client_id)
    assert client is not None

    def build(event_id: str) -> SubscriptionCallback:
        return SubscriptionCallback(
            event_id=event_id,
            event="subscriptionSuspended",
            sub_uid=sub.sub_uid,
            status="inactive",
            plan_id=plan.plan_id,
            client=client.slug,
            attempts=attempt,
            renewal_date=sub.next_renewal_date,
            last_charge_id=charge_id,
            reason=reason,
            occurred_at=now,
        )

    callbacks.enqueue_callback(session, client, build, event_type=EVENT_TYPE, ref=sub.sub_uid, now=now)


# ------------------------------------------------------------------------------------ the job


def _now(session: Session, clock: Clock) -> datetime:
    return clock.now(session)


def _batch_or_retry(session: Session, now: datetime, limit: int) -> RunSummary:
    """:func:`charge_batch` in a savepoint: a collision with another runner (a unique index) rolls the
    batch back and reports nothing claimed, so the caller claims again."""
    try:
        with session.begin_nested():
            return charge_batch(session, now, limit)
    except IntegrityError:
        log.warning("renewal batch collided with another runner: claimed again")
        session.expunge_all()
        return RunSummary(claimed=-1)


async def run_renewals(context: ServerContext, job: ClaimedJob, clock: Clock) -> None:
    """The handler of :data:`JOB_KIND` (async form: each batch is its own transaction)."""
    now = await context.run(_now, clock)
    summary = RunSummary()
    summary.expired = await context.run(expire_ended, now)
    collisions = 0
    while True:
        batch = await context.run(_batch_or_retry, now, BATCH_SIZE)
        if batch.claimed < 0:
            collisions += 1
            if collisions > 20:
                raise RuntimeError("renewal batches keep colliding with another runner")
            continue
        summary.add(batch)
        if batch.claimed < BATCH_SIZE:
            break
    log.info(
        "renewals at %s: %d charged, %d declined (%d to retry, %d suspended), %d expired",
        now.isoformat(),
        summary.approved,
        summary.declined,
        summary.retried,
        summary.suspended,
        summary.expired,
    )
