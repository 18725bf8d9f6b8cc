"""Inbound processor webhooks (spec 4.4, D193, D240): the signature scheme and the wire models.

The processor (the acquirer that settles terminal payments) calls the reference server; merchants never
do, so the SDK has no method for these routes (``Left.PROCESSOR_WEBHOOK``) and only the control plane's
helpers (``client.sandbox.processor``, ``paysdk sandbox processor``) play the processor.

Signature (D193): ``X-Processor-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``
keyed with the server's processor secret. :func:`sign` makes the header, :func:`parse_signature` reads
it (``None`` when malformed) and :func:`verify` checks it against the raw bytes and a clock, so the
server and the sandbox helpers share one definition. Pure: no I/O, no server imports.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import datetime
from typing import Annotated, Final, Literal, TypeAlias

from pydantic import AfterValidator, Field

from paysdk.contracts.common import WireModel

__all__ = [
    "MAX_FEED_EVENTS",
    "SIGNATURE_HEADER",
    "TOLERANCE_SECONDS",
    "FeedEvent",
    "FeedEventType",
    "FeedResult",
    "IgnoredEvent",
    "ProcessorFeed",
    "ProcessorInfo",
    "SandboxFeed",
    "SandboxFeedDelivery",
    "SandboxFeedEvent",
    "SandboxSettlement",
    "SandboxSettlementDelivery",
    "SettlementNotification",
    "SettlementResult",
    "SettlementType",
    "parse_signature",
    "sign",
    "verify",
]

#: The header carrying the processor's signature (D193).
SIGNATURE_HEADER: Final = "X-Processor-Signature"
#: Largest distance between ``t`` and the server's (virtual) clock, in seconds (D193).
TOLERANCE_SECONDS: Final = 300
#: Events of one feed batch at most (D193).
MAX_FEED_EVENTS: Final = 1000

#: What a settlement notification says happened (D193).
SettlementType: TypeAlias = Literal["settled", "paid_out"]
#: What a feed event says happened (D193).
FeedEventType: TypeAlias = Literal["settled", "paid_out", "voided"]

_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_V1_SIGNATURE = re.compile(r"[0-9a-fA-F]{64}")
#: Notification, feed and event ids (D240): 1 to 100 of these characters.
_ID = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$"


def _mac(secret: str, t: int, body: bytes) -> str:
    return hmac.new(secret.encode("utf-8"), str(t).encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, t: int) -> str:
    """The ``X-Processor-Signature`` value of ``body`` sent at unix time ``t``."""
    return f"t={t},v1={_mac(secret, t, body)}"


def parse_signature(value: str | None) -> tuple[int, tuple[str, ...]] | None:
    """``(t, v1 signatures)`` of a header value; ``None`` when absent or malformed (no ``t``, a ``t`` that
    is not digits, no ``v1`` of 64 hex digits, an element without ``=``). Other schemes (``v0=``...) are
    skipped, so a processor may send a new scheme next to ``v1``."""
    if not value:
        return None
    t: int | None = None
    found: list[str] = []
    for element in value.split(","):
        key, sep, item = element.strip().partition("=")
        if not sep:
            return None
        if key == "t":
            if t is not None or not _TIMESTAMP.fullmatch(item):
                return None
            t = int(item)
        elif key == "v1":
            if not _V1_SIGNATURE.fullmatch(item):
                return None
            found.append(item.lower())
    if t is None or not found:
        return None
    return t, tuple(found)


def verify(
    secret: str, body: bytes, value: str | None, now: float, tolerance: int = TOLERANCE_SECONDS
) -> str | None:
    """Why the header ``value`` does not sign ``body`` at unix time ``now`` (``None``: it does)."""
    parsed = parse_signature(value)
    if parsed is None:
        if not value:
            return "is missing: the processor signs every call (t=<unix seconds>,v1=<hex HMAC-SHA256>)"
        return "is malformed: expected t=<unix seconds>,v1=<64 hex digits>"
    t, signatures = parsed
    if abs(now - t) > tolerance:
        return f"is stale: t is more than {tolerance} seconds from the server's clock"
    expected = _mac(secret, t, body)
    if not any(hmac.compare_digest(expected, candidate) for candidate in signatures):
        return "does not match the body signed with the processor secret"
    return None


# ------------------------------------------------------------------------------------ bodies


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("must carry a UTC offset (e.g. 2026-01-05T00:00:00Z)")
    return value


#: An instant with its UTC offset (a naive time is refused, naming the field).
Instant = Annotated[datetime, AfterValidator(_aware)]


class SettlementNotification(WireModel):
    """``POST /webhooks/settlements`` (D193): one payment settled or paid out at ``at``."""

    notification_id: str = Field(pattern=_ID)
    type: SettlementType
    payment_id: str = Field(min_length=1, max_length=32)
    at: Instant


class FeedEvent(WireModel):
    """One event of a processor feed batch (D193)."""

    event_id: str = Field(pattern=_ID)
    type: FeedEventType
    payment_id: str = Field(min_length=1, max_length=32)
    at: Instant


class ProcessorFeed(WireModel):
    """``POST /webhooks/processor-feed`` (D193): a batch of 1 to 1,000 events, applied in order."""

    feed_id: str = Field(pattern=_ID)
    events: list[FeedEvent] = Field(min_length=1, max_length=MAX_FEED_EVENTS)


# ------------------------------------------------------------------------------------ answers


class IgnoredEvent(WireModel):
    """A notification or event that changed nothing (D240): ``code`` ``duplicate`` (its id was seen
    before), ``not_allowed`` (the payment's state does not allow it; recorded with ``reason``) or
    ``unknown_payment`` (feed events only: no such payment)."""

    id: str
    payment_id: str
    type: str
    code: str
    reason: str


class SettlementResult(WireModel):
    """The answer of ``POST /webhooks/settlements`` (D193, D240): ``applied`` whether it moved the
    payment, ``status`` the payment's status now."""

    notification_id: str
    applied: bool
    status: str | None = None
    ignored: list[IgnoredEvent] = Field(default_factory=list)


class FeedResult(WireModel):
    """The answer of ``POST /webhooks/processor-feed`` (D193, D240): the ids of the events ``applied``
    now, in order, and those ``ignored``."""

    feed_id: str
    applied: list[str]
    ignored: list[IgnoredEvent] = Field(default_factory=list)


# ------------------------------------------------------------------------------------ control plane


class ProcessorInfo(WireModel):
    """``GET /_sandbox/processor`` (D193): the secret the processor signs with, and how."""

    secret: str = Field(repr=False)
    header: str = SIGNATURE_HEADER
    scheme: str = 't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">'
    tolerance_seconds: int = TOLERANCE_SECONDS


class SandboxSettlement(WireModel):
    """``POST /_sandbox/processor/settlements`` (D240): the control plane signs and delivers a settlement
    notification; ``notificationId`` (default generated) and ``at`` (default the virtual clock's now)."""

    payment_id: str = Field(min_length=1, max_length=32)
    type: SettlementType
    notification_id: str | None = Field(default=None, pattern=_ID)
    at: datetime | None = None


class SandboxSettlementDelivery(WireModel):
    """What the control plane delivered and the receiver's answer (D240)."""

    notification: SettlementNotification
    result: SettlementResult


class SandboxFeedEvent(WireModel):
    """One event of ``POST /_sandbox/processor/feed`` (D240): ``eventId`` (default generated) and ``at``
    (default the virtual clock's now) may be left out."""

    type: FeedEventType
    payment_id: str = Field(min_length=1, max_length=32)
    event_id: str | None = Field(default=None, pattern=_ID)
    at: datetime | None = None


class SandboxFeed(WireModel):
    """``POST /_sandbox/processor/feed`` (D240): the control plane signs and delivers a feed batch."""

    feed_id: str | None = Field(default=None, pattern=_ID)
    events: list[SandboxFeedEvent] = Field(min_length=1, max_length=MAX_FEED_EVENTS)


class SandboxFeedDelivery(WireModel):
    """What the control plane delivered and the receiver's answer (D240)."""

    feed: ProcessorFeed
    result: FeedResult
