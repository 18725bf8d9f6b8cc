"""The public subscription calls (spec 4.2; D138-D140, D150-D153, D161) and the card verification's
outcome (D140, D160).

* :func:`verify_card`: a ``card_verification`` transaction (reference ``CV-...``, amount ``0.00``,
  channel ``web``, 24 h to complete, D140) paid on the hosted checkout like a payment link, and a
  :class:`~paysdk.server.subscription_tables.VerificationRow` holding the reserved ``subUid``, the plan
  and the email. :mod:`paysdk.server.services.payments` calls :func:`remember_card` when a card is given
  and :func:`on_verified` when the verification is approved (the hooks ``card_given`` and ``card_approved``
  the subscriptions register, D551), in the transaction that finishes it: the
  subscription is created there (flag true) or nothing else happens (flag false).
* :func:`cancel`, :func:`update_email`, :func:`payment_history`: the other three calls.

Errors (D139): a body that is not a JSON object names ``body``, an invalid field is ``400`` with
``ownCode`` null naming it; an unknown subscription or plan (or another client's) ``404``; a state
conflict ``409``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypeVar, cast

from pydantic import BaseModel, ValidationError
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from paysdk.contracts.payment_links import TransactionStatus
from paysdk.contracts.subscriptions import (
    Subscription,
    SubscriptionCharge,
    SubscriptionEmailUpdate,
    VerifyCard,
    VerifyCardRequest,
)
from paysdk.contracts.wallet import email_key, validate_email
from paysdk.server.bodies import parse_json_object
from paysdk.server.core_tables import ClientRow, TransactionRow
from paysdk.server.errors import APIProblem, problem_from_validation
from paysdk.server.services import subscriptions, transactions
from paysdk.server.services.test_cards import Renewal, SavedCard, saved_card
from paysdk.server.services.wallet_tokens import Principal
from paysdk.server.subscription_tables import PlanRow, SubscriptionRow, VerificationRow

__all__ = [
    "EMAIL_UPDATE_FIELDS",
    "VERIFICATION_LIFETIME",
    "cancel",
    "on_verified",
    "parse_body",
    "payment_history",
    "remember_card",
    "update_email",
    "verify_card",
]

M = TypeVar("M", bound=BaseModel)

#: D140: a verification has 24 hours to complete, like a payment link (D8, D19).
VERIFICATION_LIFETIME = timedelta(hours=24)
#: D151: the only fields ``PUT /v1/subscriptions`` takes.
EMAIL_UPDATE_FIELDS = ("subscriptionId", "email")


# ------------------------------------------------------------------------------------ bodies


def parse_body(model: type[M], raw: bytes, *, allowed: tuple[str, ...] | None = None) -> M:
    """Parse a subscription request body (D139): not JSON, not an object, NUL characters -> ``400``
    naming ``body`` (or the field); a field the contract refuses -> ``400`` naming it. ``allowed``: the
    only fields taken (D151), any other is ``400`` naming it."""
    try:
        data = parse_json_object(raw)
    except APIProblem as problem:
        if problem.status == 413:
            raise
        raise APIProblem(400, None, problem.message, problem.details) from None
    if allowed is not None:
        for key in data:
            if key not in allowed:
                raise subscriptions.bad_field(
                    key, "cannot be changed: only the notification email of a subscription can change"
                )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise problem_from_validation(list(exc.errors()), status=400, own_code=None) from None


def _email(value: str) -> str:
    """An email of the D96 form (the wallet's checker), stored as :func:`email_key` makes it (D380);
    ``400`` naming ``email``."""
    text = value.strip()
    try:
        validate_email(text)
    except ValueError as exc:
        raise subscriptions.bad_field("email", str(exc)) from None
    return email_key(text)


def _client(session: Session, principal: Principal) -> ClientRow:
    client = session.get(ClientRow, principal.client_id)
    if client is None:  # pragma: no cover - a token's client exists while its session does
        raise APIProblem.not_found("Client", "client")
    return client


# ------------------------------------------------------------------------------------ verify-card


def verify_card(
    session: Session,
    now: datetime,
    principal: Principal,
    body: VerifyCardRequest,
    webview_url: str,
) -> VerifyCard:
    """``POST /v1/subscriptions/verify-card`` (D140): the verification transaction and its checkout."""
    client = _client(session, principal)
    plan: PlanRow | None = None
    email: str | None = None
    sub_uid: str | None = None
    if body.should_create_subscription:
        if body.plan_id is None:
            raise subscriptions.bad_field("planId", "is required when shouldCreateSubscription is true")
        if body.email is None:
            raise subscriptions.bad_field("email", "is required when shouldCreateSubscription is true")
        email = _email(body.email)
        plan = subscriptions.load_plan(session, body.plan_id, client.id)
        sub_uid = subscriptions.new_sub_uid()
    currency = plan.currency if plan is not None else str(client.currencies[0])
    expire_at = now + VERIFICATION_LIFETIME
    uid, reference = transactions.insert_pending(
        session.connection(),
        transactions.PREFIX_VERIFICATION,
        {
            "kind": transactions.KIND_VERIFICATION,
            "client_id": client.id,
            "amount_cents": 0,
            "currency": currency,
            "channel": "web",
            "user_id": email or "",
            "external_id": body.external_id,
            "custom_keys_json": None,
            "created_at": now,
            "expire_at": expire_at,
            "updated_at": now,
        },
    )
    session.add(
        VerificationRow(
            transaction_uid=uid,
            client_id=client.id,
            sub_uid=sub_uid,
            plan_id=plan.id if plan is not None else None,
            email=email,
            created_at=now,
        )
    )
    session.flush()
    return VerifyCard(
        uid=uid,
        reference=reference,
        url=f"{webview_url}/?orderId={uid}",
        sub_uid=sub_uid,
        status=TransactionStatus.PENDING,
        expire_at=expire_at,
    )


def remember_card(session: Session, tx: TransactionRow, card_number: str) -> None:
    """Keep what a processor keeps of the (valid) card given for verification ``tx`` (never its number,
    D351) until its outcome (a 3-D Secure challenge is answered in a later request). The ``card_given``
    hook (D551): another kind of transaction is left alone."""
    if tx.kind != transactions.KIND_VERIFICATION:
        return
    card = saved_card(card_number)
    session.execute(
        update(VerificationRow)
        .where(VerificationRow.transaction_uid == tx.uid)
        .values(
            card_brand=card.brand,
            card_last4=card.last4,
            card_renewal=card.renewal,
            card_decline_reason=card.decline_reason,
        )
        .execution_options(synchronize_session=False)
    )


def on_verified(session: Session, tx: TransactionRow, client: ClientRow, now: datetime) -> None:
    """Verification ``tx`` was approved (in the transaction that finished it): create the reserved
    subscription, ``active``, with the card as its default method (flag true); nothing else otherwise.
    The ``card_approved`` hook (D551): another kind of transaction is left alone."""
    if tx.kind != transactions.KIND_VERIFICATION:
        return
    row = session.scalars(select(VerificationRow).where(VerificationRow.transaction_uid == tx.uid)).first()
    if row is None or row.sub_uid is None or row.plan_id is None:
        return
    if row.card_brand is None or row.card_last4 is None or row.card_renewal is None:
        return
    card = SavedCard(
        row.card_brand, row.card_last4, cast(Renewal, row.card_renewal), row.card_decline_reason or ""
    )
    plan = session.get(PlanRow, row.plan_id)
    if plan is None:  # pragma: no cover - plans are never deleted but by a reset
        return
    subscriptions.create_subscription(
        session,
        client,
        plan,
        email=row.email or "",
        card=card,
        now=now,
        sub_uid=row.sub_uid,
        verification_uid=tx.uid,
    )


# ------------------------------------------------------------------------------------ the others


def _view(session: Session, sub: SubscriptionRow) -> Subscription:
    plan = session.get(PlanRow, sub.plan_id)
    assert plan is not None
    return subscriptions.public_view(sub, plan)


def cancel(session: Session, now: datetime, principal: Principal, sub_uid: str) -> Subscription:
    """``DELETE /v1/subscriptions/{subUid}`` (D152): ``active`` -> ``cancelled`` at once; ``cancelled``
    again answers it unchanged; ``inactive`` or ``expired`` is ``409`` naming ``subUid``."""
    sub = subscriptions.load(session, sub_uid, principal.client_id, lock=True)
    if sub.status == "active":
        result = session.execute(
            update(SubscriptionRow)
            .where(SubscriptionRow.id == sub.id, SubscriptionRow.status == "active")
            .values(status="cancelled", cancelled_at=now, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        session.refresh(sub)
        if getattr(result, "rowcount", 0) == 1:
            return _view(session, sub)
    if sub.status == "cancelled":
        return _view(session, sub)
    raise APIProblem.conflict(
        f"The subscription is {sub.status}: only an active subscription can be cancelled.", "subUid"
    )


def update_email(
    session: Session, now: datetime, principal: Principal, body: SubscriptionEmailUpdate
) -> Subscription:
    """``PUT /v1/subscriptions`` (D151): the notification email changes, in any state; nothing else."""
    email = _email(body.email)
    sub = subscriptions.load(session, body.subscription_id, principal.client_id, lock=True)
    sub.email = email
    sub.updated_at = now
    session.flush()
    return _view(session, sub)


def payment_history(
    session: Session, principal: Principal, subscription_id: str | None
) -> list[SubscriptionCharge]:
    """``GET /v1/subscriptions/payment-history`` (D150): every charge, oldest first, no paging."""
    if subscription_id is None or not subscription_id.strip():
        raise subscriptions.bad_field("subscriptionId", "is required")
    sub = subscriptions.load(session, subscription_id.strip(), principal.client_id)
    return subscriptions.charges_of(session, sub)
