"""Subscriptions through the SDK against the REAL reference server: async in process (ASGITransport) and
sync over a uvicorn socket, on SQLite and PostgreSQL (the ``kind``/``make`` fixtures of ``conftest.py``).

The public calls take the wallet application token (D138); plans and bulk subscriptions come from the
control plane (D141, D142).
"""

from __future__ import annotations

import secrets
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest

import paysdk
from paysdk.contracts.subscriptions import (
    Plan,
    SandboxSubscription,
    Subscription,
    SubscriptionCharge,
    VerifyCard,
)

from .conftest import Maker, call


async def _merchant_and_plan(make: Maker, **plan: object) -> tuple[Any, Any, Plan]:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client())
    created = await call(sandbox.sandbox.plans.create(merchant.slug, "9.99", name="Monthly", **plan))
    client = make(wallet=paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key))
    return sandbox, client, created


@pytest.mark.covers(
    "sandbox.plans.create",
    "sandbox.plans.get",
    "subscriptions.verify_card",
    "sandbox.pay",
    "sandbox.subscriptions.get",
    "subscriptions.update_email",
    "subscriptions.payment_history",
    "subscriptions.cancel",
)
async def test_verify_card_pay_update_history_cancel(make: Maker) -> None:
    sandbox, client, plan = await _merchant_and_plan(make)
    assert plan.amount == Decimal("9.99")
    assert plan.interval == "month"
    assert plan.interval_count == 1
    assert plan.daily_attempts == 3
    assert plan.interval_attempt == 24
    assert plan.term is None
    assert await call(sandbox.sandbox.plans.get(plan.plan_id)) == plan

    tag = secrets.token_hex(3)
    verification = await call(
        client.subscriptions.verify_card(
            should_create_subscription=True,
            plan_id=plan.plan_id,
            email=f"ana-{tag}@x.io",
            external_id="ord-1",
        )
    )
    assert isinstance(verification, VerifyCard)
    assert verification.status == "pending"
    assert verification.reference.startswith("CV-")
    assert verification.uid in verification.url
    assert verification.sub_uid
    # The reserved subUid is unknown until the card verifies (D140).
    with pytest.raises(paysdk.NotFoundError):
        await call(client.subscriptions.payment_history(verification.sub_uid))

    paid = await call(sandbox.sandbox.pay(verification.uid, "4242424242424242"))
    assert paid.status == "approved"

    held = await call(sandbox.sandbox.subscriptions.get(verification.sub_uid))
    assert isinstance(held, SandboxSubscription)
    assert held.status == "active"
    assert held.plan_id == plan.plan_id
    assert held.plan == plan
    assert held.default_payment_method.last4 == "4242"
    assert held.next_renewal_date == held.anchor_date
    assert held.attempts == 0
    assert held.charges == []

    updated = await call(client.subscriptions.update_email(verification.sub_uid, f"new-{tag}@x.io"))
    assert isinstance(updated, Subscription)
    assert updated.email == f"new-{tag}@x.io"
    assert updated.status == "active"

    # Verification charges nothing: the first period is charged by the next run of the charge process
    # (every 12 hours of virtual time, D143, D145).
    assert await call(client.subscriptions.payment_history(verification.sub_uid)) == []
    await call(sandbox.sandbox.advance_clock(13 * 3600))
    history = await call(client.subscriptions.payment_history(verification.sub_uid))
    assert len(history) == 1
    first = history[0]
    assert isinstance(first, SubscriptionCharge)
    assert (first.subscription_id, first.source, first.status) == (
        verification.sub_uid,
        "renewal",
        "approved",
    )
    assert first.amount == Decimal("9.99")
    assert isinstance(first.amount, Decimal)
    assert first.currency == plan.currency
    assert first.renewal_date == held.anchor_date
    assert first.payment_method.last4 == "4242"
    renewed = await call(sandbox.sandbox.subscriptions.get(verification.sub_uid))
    assert renewed.charges == history
    assert renewed.next_renewal_date is not None
    assert renewed.next_renewal_date > held.anchor_date
    raw = await call(client.with_raw_response.subscriptions.payment_history(verification.sub_uid))
    assert raw.status_code == 200
    assert raw.parse() == history

    cancelled = await call(client.subscriptions.cancel(verification.sub_uid))
    assert cancelled.status == "cancelled"
    assert cancelled.cancelled_at is not None
    assert cancelled.next_renewal_date is None
    again = await call(client.subscriptions.cancel(verification.sub_uid))  # a retried DELETE is harmless
    assert again.status == "cancelled"
    assert again.cancelled_at == cancelled.cancelled_at
    # Still readable, still cancelled; the email may still change (D151) and never moves the status.
    changed = await call(client.subscriptions.update_email(verification.sub_uid, f"last-{tag}@x.io"))
    assert changed.status == "cancelled"
    assert (await call(sandbox.sandbox.subscriptions.get(verification.sub_uid))).status == "cancelled"


@pytest.mark.covers("subscriptions.verify_card", "subscriptions.cancel", "subscriptions.payment_history")
async def test_verify_only_and_errors_answered_by_the_server(make: Maker) -> None:
    sandbox, client, plan = await _merchant_and_plan(make)
    only = await call(client.subscriptions.verify_card(should_create_subscription=False))
    assert only.sub_uid is None
    assert only.status == "pending"
    paid = await call(sandbox.sandbox.pay(only.uid, "4242424242424242"))
    assert paid.status == "approved"

    with pytest.raises(paysdk.NotFoundError) as unknown_plan:
        await call(
            client.subscriptions.verify_card(should_create_subscription=True, plan_id="nope", email="a@x.io")
        )
    assert unknown_plan.value.status_code == 404
    with pytest.raises(paysdk.NotFoundError):
        await call(client.subscriptions.cancel("sub_nothing"))
    with pytest.raises(paysdk.NotFoundError):
        await call(client.subscriptions.payment_history("sub_nothing"))

    # A card that declines every renewal, one attempt per period: inactive after the first run, and
    # then neither cancellable (409) nor ever active again; its declined attempt is in the history.
    strict = await call(sandbox.sandbox.plans.create(plan.client, "5.00", daily_attempts=1))
    declining = await call(
        sandbox.sandbox.subscriptions.create(strict.plan_id, card_number="4000000000000341")
    )
    await call(sandbox.sandbox.advance_clock(13 * 3600))
    suspended = declining.sub_uids[0]
    assert (await call(sandbox.sandbox.subscriptions.get(suspended))).status == "inactive"
    with pytest.raises(paysdk.ConflictError) as conflict:
        await call(client.subscriptions.cancel(suspended))
    assert conflict.value.status_code == 409
    declined = await call(client.subscriptions.payment_history(suspended))
    assert [(c.status, c.attempt) for c in declined] == [("declined", 1)]
    assert (await call(client.subscriptions.update_email(suspended, "still@x.io"))).status == "inactive"

    # Another client's subscription is unknown to this one.
    other = await call(sandbox.sandbox.create_client())
    stranger = make(wallet=paysdk.WalletCredentials(other.slug, other.signing_private_key))
    created = await call(sandbox.sandbox.subscriptions.create(plan.plan_id))
    with pytest.raises(paysdk.NotFoundError):
        await call(stranger.subscriptions.cancel(created.sub_uids[0]))


@pytest.mark.covers("sandbox.subscriptions.create", "sandbox.subscriptions.get", "sandbox.plans.create")
async def test_control_plane_bulk_subscriptions_and_fixed_term_plans(make: Maker) -> None:
    sandbox, _client, plan = await _merchant_and_plan(
        make, interval="week", interval_count=2, term=6, daily_attempts=2, interval_attempt=12, grace_days=3
    )
    assert (plan.interval, plan.interval_count, plan.term) == ("week", 2, 6)
    assert (plan.daily_attempts, plan.interval_attempt, plan.grace_days) == (2, 12, 3)
    start = date.today() + timedelta(days=40)
    created = await call(
        sandbox.sandbox.subscriptions.create(
            plan.plan_id, count=3, email="bulk@x.io", card_number="4000000000000341", start_date=start
        )
    )
    assert created.count == 3
    assert len(set(created.sub_uids)) == 3
    one = await call(sandbox.sandbox.subscriptions.get(created.sub_uids[1]))
    assert one.status == "active"
    assert one.anchor_date == start
    assert one.next_renewal_date == start
    assert one.ends_on is not None
    assert one.ends_on > start
    assert one.email == "bulk@x.io"
    assert one.default_payment_method.last4 == "0341"
    with pytest.raises(paysdk.NotFoundError):
        await call(sandbox.sandbox.subscriptions.get("sub_nothing"))
    with pytest.raises(paysdk.NotFoundError):
        await call(sandbox.sandbox.plans.get("plan_nothing"))
    with pytest.raises(paysdk.NotFoundError):
        await call(sandbox.sandbox.subscriptions.create("plan_nothing"))
