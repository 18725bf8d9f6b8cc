"""Inbound processor webhooks (``POST /webhooks/settlements``, ``POST /webhooks/processor-feed``; D193, D240).

The processor is the caller: no merchant credential is read. Each call is checked in this order, in one
transaction, and nothing changes unless all of it passes:

1. the ``X-Processor-Signature`` over the raw body, with the environment's processor secret
   (:func:`processor_secret`, kept across resets) and ``t`` within 5 minutes of the virtual clock:
   ``401`` naming the header otherwise (:func:`paysdk.contracts.processor_webhooks.verify`);
2. the body: malformed JSON ``400`` naming ``body`` (D20), a contract error ``409 / 5000`` naming the
   field (``events.3.at``), an ``at`` more than 5 minutes after the virtual clock likewise (D240);
3. each notification or event through the terminal family's one idempotent transition,
   :func:`paysdk.server.services.terminal.apply_processor_event`, under the event id
   ``settlement:<notificationId>`` or ``feed:<eventId>`` (D240): a second delivery is ``duplicate``, a
   transition the payment's state refuses is ``not_allowed`` (recorded with its reason), never a 500.

A settlement notification for an unknown payment is ``404`` naming ``paymentId`` (nothing recorded, so
it may be delivered again once the payment exists); in a feed such an event is ``ignored``
(``unknown_payment``) and the others apply.

The control plane plays the processor through :func:`deliver_settlement`: it signs a notification with
the same secret and hands it to :func:`receive_settlement`, the receiver's own code path.
"""

from __future__ import annotations

import secrets
import weakref
from datetime import UTC, datetime, timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk import _json
from paysdk.contracts.processor_webhooks import (
    SIGNATURE_HEADER,
    TOLERANCE_SECONDS,
    FeedEvent,
    FeedResult,
    IgnoredEvent,
    ProcessorFeed,
    ProcessorInfo,
    SandboxFeed,
    SandboxFeedDelivery,
    SandboxSettlement,
    SandboxSettlementDelivery,
    SettlementNotification,
    SettlementResult,
    sign,
    verify,
)
from paysdk.server.bodies import parse_json_object, validate
from paysdk.server.context import ServerContext
from paysdk.server.db import Database
from paysdk.server.errors import APIProblem
from paysdk.server.services import terminal
from paysdk.server.webhooks_tables import ProcessorSecretRow

__all__ = [
    "deliver_feed",
    "deliver_settlement",
    "processor_info",
    "processor_secret",
    "receive_feed",
    "receive_settlement",
]

_SECRETS: weakref.WeakKeyDictionary[Database, dict[str, str]] = weakref.WeakKeyDictionary()
_SKEW = timedelta(seconds=TOLERANCE_SECONDS)


def processor_secret(session: Session, context: ServerContext) -> str:
    """The environment's processor secret (``psec_`` + 64 hex digits), generated on first use (D193)."""
    env = context.environment
    cache = _SECRETS.setdefault(context.db, {})
    cached = cache.get(env)
    if cached is not None:
        return cached
    row = session.get(ProcessorSecretRow, env)
    if row is None:
        candidate = ProcessorSecretRow(
            environment=env, secret="psec_" + secrets.token_hex(32), created_at=context.clock.now(session)
        )
        try:
            with session.begin_nested():
                session.add(candidate)
            row = candidate
        except IntegrityError:  # another instance over this database created it first
            session.expire_all()
            row = session.get(ProcessorSecretRow, env)
            assert row is not None
    cache[env] = row.secret
    return row.secret


def processor_info(session: Session, context: ServerContext) -> ProcessorInfo:
    """``GET /_sandbox/processor``: the secret and how to sign with it."""
    return ProcessorInfo(secret=processor_secret(session, context))


def _authenticate(
    session: Session, context: ServerContext, now: datetime, raw: bytes, signature: str | None
) -> None:
    why = verify(processor_secret(session, context), raw, signature, now.timestamp())
    if why is not None:
        raise APIProblem(401, None, f"{SIGNATURE_HEADER} {why}.", [(SIGNATURE_HEADER, why)])


def _check_at(at: datetime, now: datetime, field: str) -> datetime:
    if at - now > _SKEW:
        raise APIProblem.invalid_field(field, "is in the future: the processor reports what has happened")
    return at.astimezone(UTC)


def _ignored(outcome: terminal.Ignored, event_id: str) -> IgnoredEvent:
    return IgnoredEvent(
        id=event_id,
        payment_id=outcome.payment_id,
        type=outcome.type,
        code=outcome.code,
        reason=outcome.reason,
    )


def receive_settlement(
    session: Session, context: ServerContext, now: datetime, raw: bytes, signature: str | None
) -> SettlementResult:
    """``POST /webhooks/settlements``: see the module docstring."""
    _authenticate(session, context, now, raw, signature)
    notification = validate(SettlementNotification, parse_json_object(raw))
    at = _check_at(notification.at, now, "at")
    outcome = terminal.apply_processor_event(
        session,
        notification.payment_id,
        notification.type,
        at,
        "settlement:" + notification.notification_id,
        now=now,
    )
    if isinstance(outcome, terminal.Applied):
        return SettlementResult(
            notification_id=notification.notification_id, applied=True, status=outcome.status
        )
    if outcome.code == "unknown_payment":
        raise APIProblem.not_found("Terminal payment", "paymentId")
    current = terminal.get_payment(session, notification.payment_id)
    return SettlementResult(
        notification_id=notification.notification_id,
        applied=False,
        status=str(current.status),
        ignored=[_ignored(outcome, notification.notification_id)],
    )


def receive_feed(
    session: Session, context: ServerContext, now: datetime, raw: bytes, signature: str | None
) -> FeedResult:
    """``POST /webhooks/processor-feed``: the events in order, each at most once (module docstring)."""
    _authenticate(session, context, now, raw, signature)
    feed = validate(ProcessorFeed, parse_json_object(raw))
    moments = [_check_at(event.at, now, f"events.{index}.at") for index, event in enumerate(feed.events)]
    applied: list[str] = []
    ignored: list[IgnoredEvent] = []
    for event, at in zip(feed.events, moments, strict=True):
        outcome = terminal.apply_processor_event(
            session, event.payment_id, event.type, at, "feed:" + event.event_id, now=now
        )
        if isinstance(outcome, terminal.Applied):
            applied.append(event.event_id)
        else:
            ignored.append(_ignored(outcome, event.event_id))
    return FeedResult(feed_id=feed.feed_id, applied=applied, ignored=ignored)


def deliver_settlement(
    session: Session, context: ServerContext, now: datetime, spec: SandboxSettlement
) -> SandboxSettlementDelivery:
    """``POST /_sandbox/processor/settlements``: sign a notification as the processor would and run the
    receiver on it (its errors are the control plane's answer)."""
    notification = SettlementNotification(
        notification_id=spec.notification_id or "ntf_" + secrets.token_hex(12),
        type=spec.type,
        payment_id=spec.payment_id,
        at=spec.at or now,
    )
    raw = _json.dumps(notification.to_wire())
    signature = sign(processor_secret(session, context), raw, int(now.timestamp()))
    result = receive_settlement(session, context, now, raw, signature)
    return SandboxSettlementDelivery(notification=notification, result=result)


def deliver_feed(
    session: Session, context: ServerContext, now: datetime, spec: SandboxFeed
) -> SandboxFeedDelivery:
    """``POST /_sandbox/processor/feed``: sign a feed batch as the processor would and run the receiver."""
    feed = ProcessorFeed(
        feed_id=spec.feed_id or "feed_" + secrets.token_hex(12),
        events=[
            FeedEvent(
                event_id=event.event_id or "evt_" + secrets.token_hex(12),
                type=event.type,
                payment_id=event.payment_id,
                at=event.at or now,
            )
            for event in spec.events
        ],
    )
    raw = _json.dumps(feed.to_wire())
    signature = sign(processor_secret(session, context), raw, int(now.timestamp()))
    result = receive_feed(session, context, now, raw, signature)
    return SandboxFeedDelivery(feed=feed, result=result)
