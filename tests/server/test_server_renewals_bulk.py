"""The bulk charge path (``charge_many``) and the one-charge form (``charge``) on SQLite and PostgreSQL:
outcomes from the test cards, one row per request in order, and the unique indexes refusing a second
attempt row or a second approved charge of one period, whichever form wrote the first."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy
from sqlalchemy.exc import IntegrityError

from paysdk.contracts.sandbox import SandboxClientCreate
from paysdk.contracts.subscriptions import PlanCreate
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow
from paysdk.server.db import Database
from paysdk.server.services import renewals, sandbox
from paysdk.server.services.subscriptions import (
    ChargeRequest,
    charge,
    charge_many,
    create_plan,
    create_subscription,
    load_plan,
    saved_card_of,
)
from paysdk.server.subscription_tables import SubscriptionChargeRow, SubscriptionRow

APPROVES = "4242424242424242"
DECLINES = "4000000000000002"


@pytest.fixture
def db(db_url: str) -> Any:
    database = Database(db_url)
    database.create_schema()
    yield database
    database.dispose()


def _subscriptions(db: Database, *cards: str) -> list[int]:
    """One subscription per card of a daily plan; their ids."""
    with db.session() as session:
        now = Clock().now(session)
        client = sandbox.create_client(session, SandboxClientCreate(slug="bulk"), now)
        plan = create_plan(
            session, PlanCreate(client=client.slug, amount=Decimal("4.99"), interval="day"), now
        )
        client_row = session.scalars(sqlalchemy.select(ClientRow).where(ClientRow.slug == "bulk")).one()
        plan_row = load_plan(session, plan.plan_id)
        return [
            create_subscription(session, client_row, plan_row, email="a@example.com", card=card, now=now).id
            for card in cards
        ]


def _request(session: Any, sub_id: int, *, period: int, attempt: int) -> ChargeRequest:
    sub = session.get(SubscriptionRow, sub_id)
    return ChargeRequest(
        subscription_id=sub.id,
        client_id=sub.client_id,
        card=saved_card_of(sub),
        source="renewal",
        amount_cents=499,
        currency="CLP",
        attempt=attempt,
        period=period,
        renewal_date=sub.next_renewal_date,
    )


def test_charge_many_writes_one_row_per_request_in_order(db: Database) -> None:
    approving, declining = _subscriptions(db, APPROVES, DECLINES)
    with db.session() as session:
        now = Clock().now(session)
        requests = [
            _request(session, approving, period=0, attempt=1),
            _request(session, declining, period=0, attempt=1),
            _request(session, approving, period=1, attempt=1),
        ]
        results = charge_many(session, requests, now)
    assert [(r.status, r.reason) for r in results] == [
        ("approved", "approved"),
        ("declined", "generic_decline"),
        ("approved", "approved"),
    ]
    assert len({r.charge_id for r in results}) == 3
    assert all(r.charge_id.startswith("sch_") and len(r.charge_id) == 28 for r in results)
    with db.session() as session:
        rows = session.scalars(
            sqlalchemy.select(SubscriptionChargeRow).order_by(SubscriptionChargeRow.id)
        ).all()
        assert [(row.charge_id, row.subscription_id, row.period, row.status) for row in rows] == [
            (results[0].charge_id, approving, 0, "approved"),
            (results[1].charge_id, declining, 0, "declined"),
            (results[2].charge_id, approving, 1, "approved"),
        ]
        assert rows[0].created_at == now
        assert rows[0].amount_cents == 499
    with db.session() as session:
        assert charge_many(session, [], now) == []


def test_charge_returns_the_stored_row(db: Database) -> None:
    (sub_id,) = _subscriptions(db, DECLINES)
    with db.session() as session:
        now = Clock().now(session)
        sub = session.get(SubscriptionRow, sub_id)
        assert sub is not None
        row = charge(
            session,
            sub,
            now=now,
            source="batch",
            amount_cents=1200,
            currency="CLP",
            attempt=1,
            reference="r-1",
        )
        assert isinstance(row, SubscriptionChargeRow)
        assert row.id is not None
        assert (row.status, row.reason, row.reference, row.period) == (
            "declined",
            "generic_decline",
            "r-1",
            None,
        )
        assert row.charge_id.startswith("sch_")


def test_a_second_approved_charge_of_a_period_is_refused(db: Database) -> None:
    (sub_id,) = _subscriptions(db, APPROVES)
    with db.session() as session:
        now = Clock().now(session)
        charge_many(session, [_request(session, sub_id, period=0, attempt=1)], now)
    for attempt in (1, 2):  # the same attempt row, then another approved attempt of the period
        with pytest.raises(IntegrityError), db.session() as session:
            charge_many(session, [_request(session, sub_id, period=0, attempt=attempt)], now)
    with pytest.raises(IntegrityError), db.session() as session:  # a batch holding both: all or nothing
        charge_many(
            session,
            [_request(session, sub_id, period=1, attempt=1), _request(session, sub_id, period=1, attempt=2)],
            now,
        )
    with db.session() as session:
        count = session.scalar(sqlalchemy.select(sqlalchemy.func.count()).select_from(SubscriptionChargeRow))
    assert count == 1


def test_a_batch_colliding_with_a_charge_rolls_back_whole(db: Database) -> None:
    """A batch whose charge insert collides (here: a charge of the period written before) reports nothing
    claimed and leaves every subscription of it as it was: the caller claims again."""
    first, second = _subscriptions(db, APPROVES, APPROVES)
    with db.session() as session:
        now = Clock().now(session)
        charge_many(session, [_request(session, second, period=0, attempt=1)], now)
        due = session.get(SubscriptionRow, first)
        assert due is not None
        at = max(due.due_at, now) + timedelta(hours=1)  # both due, neither touched at ``at``
    with db.session() as session:
        assert renewals._batch_or_retry(session, at, 10).claimed == -1
    with db.session() as session:
        periods = session.scalars(
            sqlalchemy.select(SubscriptionRow.period).order_by(SubscriptionRow.id)
        ).all()
        count = session.scalar(sqlalchemy.select(sqlalchemy.func.count()).select_from(SubscriptionChargeRow))
    assert list(periods) == [0, 0]
    assert count == 1
