"""Outbound events: the merchant generic callback and the subscription ``subsCallback``; delivery and
retries (spec 2.4, 5.4, 6; decisions D5-D8, D15, D16, D128, D340).

* :func:`enqueue_event` queues any event: one ``eventId``, its exact payload bytes, the target URL and
  the client's registered header, and its first delivery job (kind :data:`JOB_KIND`, due at once). One
  queue (the ``jobs`` table, :mod:`paysdk.server.jobs`) and one schedule serve every event type.
  A delivery round is claimed by lease, so several server processes never send one round twice; a round
  whose process died before recording it is sent again by the runner that takes it over, with the same
  ``eventId`` (spec 6.4: receivers deduplicate on it).
* Every kind of callback has its model in :mod:`paysdk.contracts.callbacks`, the receivers' models too
  (D340): a payload is built from that model only (:func:`enqueue_callback`), never as a loose dict.
* The payment-link callback (:func:`enqueue`): one event per terminal status (D8). Its payload is
  :class:`paysdk.contracts.callbacks.PaymentCallback` written once with :func:`paysdk._json.dumps`
  (``amount`` an exact JSON number, ``createdAt`` ``DD/MM/YYYY HH:MM:SS`` in the client's timezone,
  ``channel`` the display name, ``eventId`` top level) and stored; every attempt sends the same bytes.
* Each attempt is a POST with the client's registered static header (D15) and ``X-Event-Id`` (D5),
  via ``httpx.AsyncClient`` (10 s timeout) over the injectable transport of the app.
* Schedule (D16): the first attempt at once, then after 1, 2, 4, 8 ... minutes, each wait capped at
  12 hours, while the next attempt falls within 7 days (virtual time) of the first. A 2xx ends delivery,
  410 ends it for good, anything else (other status, connection error, timeout) schedules the next.
  The next due time is computed from the scheduled time, not the wall time, so the virtual clock
  predicts every attempt exactly.
* A ``duplicate_callback`` fault makes the next N events' attempts POST twice (same ``eventId``).
* Targets (D97): a callback URL whose host is a link-local or cloud-metadata address
  (:data:`FORBIDDEN_NETWORKS`, IPv4-mapped and legacy IPv4 forms included) or a metadata service name
  (:data:`METADATA_NAMES`) is refused where it is registered (:func:`callback_host_problem`); loopback
  and private networks stay allowed (local receivers). At delivery the host is checked again, and a
  name is resolved first: an attempt whose name resolves to such an address is recorded as failed,
  without a connection. No opt-in: a sandbox receiver has no reason to live there.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import secrets
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from paysdk import _json
from paysdk.contracts.callbacks import KnownCallback, PaymentCallback, format_created_at
from paysdk.contracts.common import CHANNEL_DISPLAY_NAMES
from paysdk.contracts.sandbox import CallbackAttempt
from paysdk.server import faults, jobs
from paysdk.server.clock import Clock
from paysdk.server.context import ServerContext
from paysdk.server.core_tables import CallbackAttemptRow, CallbackEventRow, ClientRow, TransactionRow
from paysdk.server.db import from_cents
from paysdk.server.errors import APIProblem
from paysdk.server.events import publish_callback_attempts
from paysdk.server.jobs import ClaimedJob

if TYPE_CHECKING:
    import httpx

__all__ = [
    "FIRST_RETRY",
    "FORBIDDEN_NETWORKS",
    "JOB_KIND",
    "MAX_WAIT",
    "METADATA_NAMES",
    "RETRY_WINDOW",
    "CallbackEventView",
    "attempts",
    "callback_host_problem",
    "deliver_job",
    "enqueue",
    "enqueue_callback",
    "enqueue_event",
    "event_by_id",
    "events_of",
    "resend",
    "wait_after",
]

log = logging.getLogger("paysdk.server.callbacks")

FIRST_RETRY = timedelta(minutes=1)
MAX_WAIT = timedelta(hours=12)
RETRY_WINDOW = timedelta(days=7)
USER_AGENT = "paysdk-reference-server/0.1"
#: The job kind of a delivery round (``ref``: the event id).
JOB_KIND = "callback"

#: Callback targets refused (D97): link-local (where the cloud metadata services answer, at
#: 169.254.169.254 and 169.254.170.2), AWS's IPv6 metadata address and Alibaba Cloud's.
FORBIDDEN_NETWORKS = tuple(
    ipaddress.ip_network(network)
    for network in ("169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128", "100.100.100.200/32")
)
#: Host names of cloud metadata services, refused like their addresses (D97).
METADATA_NAMES = frozenset(
    {"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"}
)
_IPV4_FORMS = frozenset("0123456789abcdefxABCDEFX.")
_REFUSED = "points at a link-local or cloud metadata address (D97)"


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``host`` spells, legacy IPv4 forms included (``2852039166``, ``0xa9.0xfe.0xa9.0xfe``,
    which resolvers accept); IPv4-mapped IPv6 addresses as their IPv4 address."""
    text = host.strip("[]").split("%", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        if not text or not set(text) <= _IPV4_FORMS:
            return None
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _forbidden(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return any(address in network for network in FORBIDDEN_NETWORKS)


def callback_host_problem(host: str) -> str | None:
    """What is wrong with a callback URL's host (D97), or ``None``: no DNS lookup here."""
    name = host.lower().rstrip(".")
    if name in METADATA_NAMES:
        return "names a cloud metadata service (D97)"
    address = _address(name)
    return _REFUSED if address is not None and _forbidden(address) else None


async def _target_problem(url: str, resolve_within: float) -> str | None:
    """:func:`callback_host_problem`, and for a host name each address it resolves to (within
    ``resolve_within`` seconds). A name that does not resolve is left to the HTTP client, which reports
    it. The HTTP client resolves the name again: a name that changes its answer in between (DNS
    rebinding) is not caught, see D97."""
    import httpx  # imported when first used: the server's start does without it (D303)

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError):
        return None  # the POST reports it
    host = parsed.host
    problem = callback_host_problem(host)
    if problem is not None or _address(host) is not None:
        return problem
    try:
        lookup = asyncio.get_running_loop().getaddrinfo(host, parsed.port or 80, type=socket.SOCK_STREAM)
        infos = await asyncio.wait_for(lookup, resolve_within)
    except TimeoutError:
        return f"could not be resolved within {resolve_within:g} s"
    except (OSError, UnicodeError):
        return None
    for *_, sockaddr in infos:
        address = _address(str(sockaddr[0]))
        if address is not None and _forbidden(address):
            return f"resolves to {address}, a link-local or cloud metadata address (D97)"
    return None


def wait_after(round_number: int) -> timedelta:
    """The wait after delivery round ``round_number`` (1-based): 1, 2, 4 ... minutes, capped at 12 h."""
    if round_number >= 12:  # 2**11 minutes already exceeds the cap
        return MAX_WAIT
    wait: timedelta = FIRST_RETRY * (2 ** (round_number - 1))
    return min(wait, MAX_WAIT)


def enqueue_event(
    session: Session,
    client: ClientRow,
    event_type: str,
    payload: Mapping[str, Any] | Callable[[str], Mapping[str, Any]],
    *,
    ref: str,
    now: datetime,
    url: str | None = None,
) -> str | None:
    """Queue one outbound event to ``url`` (default: the client's ``callbackUrl``) with the client's
    registered header (D15), delivered on the schedule of D16; returns its ``eventId``, or ``None`` when
    there is no URL to send it to.

    ``event_type``: what happened (``transaction.approved``; later ``subscription.<...>``), kept with the
    event. ``payload``: the JSON body, exact (Decimal kept): a mapping, to which ``eventId`` is added as
    its first key, or ``payload(event_id)`` building the whole body. ``ref``: what the event is about (a
    transaction or subscription uid; ``GET /_sandbox/callbacks?uid=`` filters by it). Written in the
    caller's transaction: the event exists exactly when what caused it committed.
    """
    target = url if url is not None else client.callback_url
    if not target:
        return None
    event_id = "evt_" + secrets.token_hex(12)
    body = payload(event_id) if callable(payload) else {"eventId": event_id, **payload}
    session.add(
        CallbackEventRow(
            event_id=event_id,
            event_type=event_type[:64],
            uid=ref,
            client_id=client.id,
            url=target,
            header_name=client.callback_header_name,
            header_value=client.callback_header_value,
            payload=_json.dumps(body).decode("utf-8"),
            state="pending",
            attempts=0,
            created_at=now,
        )
    )
    session.flush()
    jobs.add(session, JOB_KIND, event_id, now, now)
    return event_id


def enqueue_callback(
    session: Session,
    client: ClientRow,
    build: Callable[[str], KnownCallback],
    *,
    event_type: str,
    ref: str,
    now: datetime,
) -> str | None:
    """Queue a callback built from its contract model (D340): ``build(event_id)`` returns the
    :data:`~paysdk.contracts.callbacks.KnownCallback` whose wire form is the body; ``event_type`` must be
    the model's own (checked). See :func:`enqueue_event` for the rest."""

    def body(event_id: str) -> Mapping[str, Any]:
        callback = build(event_id)
        if callback.event_type != event_type:
            raise ValueError(f"event type {event_type!r} is not the callback's ({callback.event_type!r})")
        return callback.to_body()

    return enqueue_event(session, client, event_type, body, ref=ref, now=now)


def enqueue(session: Session, tx: TransactionRow, client: ClientRow, *, now: datetime) -> str | None:
    """Queue the payment-link callback of ``tx``'s terminal status (spec 2.4, D8): event type
    ``transaction.<status>``. Returns the event id, or ``None`` when the client registered no callback URL.
    """
    assert tx.transaction_id is not None
    transaction_id = tx.transaction_id

    def build(event_id: str) -> PaymentCallback:
        return PaymentCallback(
            event_id=event_id,
            reference=tx.reference,
            uid=tx.uid,
            country=client.country,
            currency=tx.currency,
            channel=CHANNEL_DISPLAY_NAMES.get(tx.channel, tx.channel),
            status=tx.status,
            amount=from_cents(tx.amount_cents),
            external_id=tx.external_id,
            created_at=format_created_at(tx.created_at, client.timezone),
            transaction_id=transaction_id,
            payment_method_type=tx.payment_method_type,
        )

    event_type = PaymentCallback.EVENT_TYPE_PREFIX + tx.status
    return enqueue_callback(session, client, build, event_type=event_type, ref=tx.uid, now=now)


@dataclass(frozen=True, slots=True)
class _Delivery:
    event_id: str
    uid: str
    url: str
    header_name: str
    header_value: str
    payload: bytes
    duplicate: bool


@dataclass(frozen=True, slots=True)
class _Result:
    status_code: int | None
    error: str | None


def _prepare(session: Session, event_id: str) -> _Delivery | None:
    event = session.get(CallbackEventRow, event_id)
    if event is None or event.state != "pending":
        return None
    return _Delivery(
        event_id=event.event_id,
        uid=event.uid,
        url=event.url,
        header_name=event.header_name,
        header_value=event.header_value,
        payload=event.payload.encode("utf-8"),
        duplicate=faults.consume_duplicate_callback(session),
    )


async def _post(client: httpx.AsyncClient, delivery: _Delivery) -> _Result:
    import httpx

    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Event-Id": delivery.event_id,
        delivery.header_name: delivery.header_value,
    }
    try:
        response = await client.post(delivery.url, content=delivery.payload, headers=headers)
        await response.aclose()
    except httpx.TimeoutException as exc:
        return _Result(None, f"timeout: {type(exc).__name__}")
    except (httpx.HTTPError, OSError, ValueError, UnicodeError) as exc:
        from paysdk._describe import exception_text

        return _Result(None, exception_text(exc, limit=200))
    return _Result(response.status_code, None)


def _record(
    session: Session,
    clock: Clock,
    delivery: _Delivery,
    results: list[_Result],
    now_due: datetime,
) -> None:
    """Record one delivery round and queue the next (in the transaction that completes the round's job)."""
    event = session.get(CallbackEventRow, delivery.event_id, with_for_update=True)
    if event is None:
        return
    now = clock.now(session)
    if event.first_attempt_at is None:
        event.first_attempt_at = now
    event.attempts += 1
    round_number = event.attempts
    codes = [result.status_code for result in results]
    next_at: datetime | None = None
    if any(code is not None and 200 <= code < 300 for code in codes):
        event.state = "delivered"
    elif 410 in codes:
        event.state = "gone"
    else:
        candidate = now_due + wait_after(round_number)
        if candidate <= event.first_attempt_at + RETRY_WINDOW:
            next_at = candidate
            jobs.add(session, JOB_KIND, event.event_id, candidate, now)
        else:
            event.state = "exhausted"
    final = event.state != "pending"
    for index, result in enumerate(results):
        session.add(
            CallbackAttemptRow(
                event_id=event.event_id,
                uid=event.uid,
                attempt=round_number,
                url=event.url,
                status_code=result.status_code,
                error=result.error[:500] if result.error else None,
                at=now,
                next_attempt_at=next_at if index == len(results) - 1 else None,
                final=final and index == len(results) - 1,
            )
        )


async def deliver_job(
    context: ServerContext, job: ClaimedJob, clock: Clock
) -> Callable[[Session], None] | None:
    """The job handler of :data:`JOB_KIND`: one delivery round of the event ``job.ref`` (one or two
    POSTs), at ``clock``'s time (the scheduler's advance passes it frozen at the job's due time). Returns
    the recording of the round, which the scheduler runs in the transaction that completes the job (a
    runner that lost the job's lease records nothing)."""
    delivery = await context.run(_prepare, job.ref)
    if delivery is None:
        return None
    client, close = context.http_client()
    try:
        # An injected transport reaches no network: only the host itself is checked then, not its DNS.
        refused = (
            await _target_problem(delivery.url, context.callback_timeout)
            if context.http_transport is None
            else callback_host_problem(_host(delivery.url))
        )
        if refused is not None:
            results = [_Result(None, f"refused: callbackUrl {refused}")]
        else:
            results = [await _post(client, delivery)]
            if delivery.duplicate:
                results.append(await _post(client, delivery))
    finally:
        if close:
            await client.aclose()
    for result in results:
        log.info(
            "callback %s to %s: %s",
            delivery.event_id,
            _host(delivery.url),
            result.status_code or result.error,
        )

    def record(session: Session) -> None:
        _record(session, clock, delivery, results, job.due_at)
        publish_callback_attempts(context, session, delivery.event_id, len(results))  # the live feed

    return record


def _host(url: str) -> str:
    import httpx

    try:
        return httpx.URL(url).host or "?"
    except (httpx.InvalidURL, ValueError, TypeError):
        return "?"


def attempts(session: Session, uid: str | None = None) -> list[CallbackAttempt]:
    """Every recorded attempt (oldest first), optionally of one transaction."""
    statement = select(CallbackAttemptRow).order_by(CallbackAttemptRow.id)
    if uid is not None:
        statement = statement.where(CallbackAttemptRow.uid == uid)
    return [
        CallbackAttempt(
            event_id=row.event_id,
            uid=row.uid,
            attempt=row.attempt,
            url=row.url,
            status_code=row.status_code,
            error=row.error,
            at=row.at,
            next_attempt_at=row.next_attempt_at,
            final=row.final,
        )
        for row in session.scalars(statement)
    ]


@dataclass(frozen=True, slots=True)
class CallbackEventView:
    """One outbound event as the browser console shows it (D723): what was sent (``payload``, the exact
    body; the registered header's name, its value never), where, its state and rounds so far."""

    event_id: str
    event_type: str | None
    uid: str
    url: str
    header_name: str
    payload: str
    state: str
    attempts: int
    created_at: datetime


def events_of(session: Session, uid: str) -> list[CallbackEventView]:
    """The outbound events about ``uid`` (a transaction or subscription), oldest first."""
    statement = (
        select(CallbackEventRow)
        .where(CallbackEventRow.uid == uid)
        .order_by(CallbackEventRow.created_at, CallbackEventRow.event_id)
    )
    return [_event_view(row) for row in session.scalars(statement)]


def resend(session: Session, event_id: str, now: datetime) -> CallbackEventView:
    """Queue one more delivery of the existing event ``event_id`` (D724): the same body and ``eventId``
    (the receiver's dedup key), through the normal delivery path (a ``callback`` job due now), recorded
    as the event's next attempt; when it fails, the usual retries follow while the event's retry window
    (from its first attempt) lasts. ``404`` for an unknown event; ``409`` while the event is still
    being delivered (its next attempt is already queued)."""
    event = session.get(CallbackEventRow, event_id, with_for_update=True) if event_id else None
    if event is None:
        raise APIProblem.not_found("Callback event", "eventId")
    if event.state == "pending":
        raise APIProblem.conflict(
            "The event is still being delivered: its next attempt is already queued.", "eventId"
        )
    event.state = "pending"
    jobs.add(session, JOB_KIND, event.event_id, now, now)
    session.flush()
    return event_by_id(session, event.event_id)


def event_by_id(session: Session, event_id: str) -> CallbackEventView:
    """One outbound event; ``404`` when unknown."""
    row = session.get(CallbackEventRow, event_id)
    if row is None:
        raise APIProblem.not_found("Callback event", "eventId")
    return _event_view(row)


def _event_view(row: CallbackEventRow) -> CallbackEventView:
    return CallbackEventView(
        event_id=row.event_id,
        event_type=row.event_type,
        uid=row.uid,
        url=row.url,
        header_name=row.header_name,
        payload=row.payload,
        state=row.state,
        attempts=row.attempts,
        created_at=row.created_at,
    )
