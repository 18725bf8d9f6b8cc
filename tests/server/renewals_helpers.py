"""Helpers of the scheduled charge process tests: plans and subscriptions written straight to the server's
database with the service functions (``create_plan``, ``create_subscriptions``), and what they read back."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy
from fastapi import FastAPI

from paysdk.contracts.subscriptions import PlanCreate, SandboxSubscriptionsCreate
from paysdk.server.clock import Clock
from paysdk.server.db import Database
from paysdk.server.services.subscriptions import create_plan, create_subscriptions
from paysdk.server.subscription_tables import SubscriptionChargeRow, SubscriptionRow


def database(app: FastAPI) -> Database:
    """The app's database."""
    db: Database = app.state.paysdk.db
    return db


def now(db: Database, clock: Clock | None = None) -> datetime:
    """The virtual time (of ``clock``: the app's, ``app.state.paysdk.clock``, when its wall is pinned)."""
    with db.session() as session:
        return (clock or Clock()).now(session)


def make_plan(db: Database, client: str, **fields: Any) -> str:
    """A plan of ``client`` (``PlanCreate`` fields); its ``planId``."""
    fields.setdefault("amount", Decimal("9.99"))
    with db.session() as session:
        plan = create_plan(session, PlanCreate(client=client, **fields), Clock().now(session))
    return plan.plan_id


def make_subscriptions(
    db: Database,
    plan_id: str,
    count: int = 1,
    *,
    card: str = "4242424242424242",
    start: date | None = None,
    email: str | None = None,
    clock: Clock | None = None,
) -> list[str]:
    """``count`` active subscriptions of ``plan_id``; their uids (created at ``clock``'s time)."""
    with db.session() as session:
        created = create_subscriptions(
            session,
            clock or Clock(),
            SandboxSubscriptionsCreate(
                plan_id=plan_id, count=count, card_number=card, start_date=start, email=email
            ),
        )
    return created.sub_uids


def subscription(db: Database, sub_uid: str) -> SubscriptionRow:
    """The row of ``sub_uid`` (detached)."""
    with db.session() as session:
        row = session.scalars(
            sqlalchemy.select(SubscriptionRow).where(SubscriptionRow.sub_uid == sub_uid)
        ).one()
        session.expunge(row)
        return row


def charges(db: Database, sub_uid: str) -> list[SubscriptionChargeRow]:
    """Every charge of ``sub_uid``, oldest first (detached)."""
    with db.session() as session:
        rows = list(
            session.scalars(
                sqlalchemy.select(SubscriptionChargeRow)
                .join(SubscriptionRow, SubscriptionRow.id == SubscriptionChargeRow.subscription_id)
                .where(SubscriptionRow.sub_uid == sub_uid)
                .order_by(SubscriptionChargeRow.id)
            )
        )
        for row in rows:
            session.expunge(row)
        return rows


def set_status(db: Database, sub_uid: str, status: str) -> None:
    """Move a subscription to ``status`` (as the cancel route would)."""
    with db.session() as session:
        session.execute(
            sqlalchemy.update(SubscriptionRow).where(SubscriptionRow.sub_uid == sub_uid).values(status=status)
        )


def aware(value: datetime) -> datetime:
    """``value`` as an aware UTC instant (SQLite answers naive ones)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
