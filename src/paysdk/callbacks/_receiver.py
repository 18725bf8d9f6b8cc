"""The receiver: verify, parse, deduplicate, run the handler of the callback's kind once (D340)."""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias, cast
from zoneinfo import ZoneInfo

from paysdk._errors import CallbackAuthenticationError, CallbackError, CallbackPayloadError
from paysdk._secret import Secret
from paysdk.callbacks._dedup import AsyncDedupStore, DedupStore, EventState, MemoryDedupStore
from paysdk.callbacks._headers import AcceptedValues, normalize_accepted_values, verify_header
from paysdk.callbacks._payload import parse_callback
from paysdk.contracts.callbacks import (
    DEFAULT_TIMEZONE,
    Callback,
    PaymentCallback,
    SubscriptionCallback,
    UnknownCallback,
)

__all__ = [
    "AsyncHandler",
    "AsyncSubscriptionHandler",
    "AsyncUnknownHandler",
    "CallbackOutcome",
    "CallbackReceiver",
    "CallbackResult",
    "Handler",
    "SubscriptionHandler",
    "UnknownHandler",
]

logger = logging.getLogger("paysdk.callbacks")

#: The payment callback's handler (spec 2.4).
Handler: TypeAlias = Callable[[PaymentCallback], None]
AsyncHandler: TypeAlias = Callable[[PaymentCallback], Awaitable[None] | None]
#: The ``subsCallback``'s handler (D148).
SubscriptionHandler: TypeAlias = Callable[[SubscriptionCallback], None]
AsyncSubscriptionHandler: TypeAlias = Callable[[SubscriptionCallback], Awaitable[None] | None]
#: The handler of a kind this version does not know, given the raw body (D340).
UnknownHandler: TypeAlias = Callable[[UnknownCallback], None]
AsyncUnknownHandler: TypeAlias = Callable[[UnknownCallback], Awaitable[None] | None]

#: A failed claim is re-checked this often when the other claim vanishes in between (released/expired).
_CLAIM_ATTEMPTS = 3


class CallbackOutcome(enum.Enum):
    """What the receiver did with one delivery, and the HTTP status to answer with."""

    PROCESSED = "processed"
    """The handler ran and succeeded: 200."""
    DUPLICATE = "duplicate"
    """Already processed: acknowledged with 200, handler not run."""
    IN_PROGRESS = "in_progress"
    """Another delivery of the same event is still being processed: 409, so the sender retries later
    (acknowledging now would lose the event if that processing then fails)."""
    UNAUTHORIZED = "unauthorized"
    """The callback header is missing or wrong: 401."""
    INVALID = "invalid"
    """The body is not a valid callback payload: 400."""
    TOO_LARGE = "too_large"
    """The body is larger than the cap of :func:`~paysdk.callbacks.read_verified_body`: 413."""

    @property
    def status_code(self) -> int:
        """The HTTP status the web framework should answer with."""
        return _STATUS_CODES[self]


_STATUS_CODES = {
    CallbackOutcome.PROCESSED: 200,
    CallbackOutcome.DUPLICATE: 200,
    CallbackOutcome.IN_PROGRESS: 409,
    CallbackOutcome.UNAUTHORIZED: 401,
    CallbackOutcome.INVALID: 400,
    CallbackOutcome.TOO_LARGE: 413,
}


@dataclass(frozen=True)
class CallbackResult:
    """The outcome of :meth:`CallbackReceiver.handle`.

    ``payload`` is the callback of its kind (:class:`~paysdk.contracts.callbacks.PaymentCallback`,
    :class:`~paysdk.contracts.callbacks.SubscriptionCallback` or the raw
    :class:`~paysdk.contracts.callbacks.UnknownCallback`), ``None`` when the header or body was refused;
    ``error`` then holds the :class:`~paysdk.CallbackError` (its message is safe to log and to return:
    it never holds a header value). ``created_at`` is when it happened (a payment's ``createdAt``, a
    subscription's ``occurredAt``; ``None`` for an unknown kind) as an aware datetime in the receiver's
    timezone.
    """

    outcome: CallbackOutcome
    payload: Callback | None = None
    error: CallbackError | None = None
    created_at: datetime | None = None

    @property
    def status_code(self) -> int:
        """HTTP status to answer: 200 processed or duplicate, 409 in progress, 401, 400, 413."""
        return self.outcome.status_code

    @property
    def duplicate(self) -> bool:
        """``True`` when the event had already been claimed (done or still in progress)."""
        return self.outcome in (CallbackOutcome.DUPLICATE, CallbackOutcome.IN_PROGRESS)

    @property
    def processed(self) -> bool:
        """``True`` when this delivery ran the handler successfully."""
        return self.outcome is CallbackOutcome.PROCESSED

    def response_body(self) -> dict[str, Any]:
        """A small JSON-ready body to answer with (``{"outcome": ..., "message"?: ...}``)."""
        body: dict[str, Any] = {"outcome": self.outcome.value}
        if self.payload is not None and self.payload.event_id is not None:
            body["eventId"] = self.payload.event_id
        if self.error is not None:
            body["message"] = str(self.error)
        return body


class CallbackReceiver:
    """Receives merchant callbacks: one object per callback URL, shared by all requests.

    :meth:`handle` (sync) or :meth:`ahandle` (asyncio) verifies the static header, parses the body into
    its kind's model, claims the ``eventId`` in ``store`` and, for the first delivery only, runs the
    handler of that kind (D340): ``handler`` for a payment callback, ``on_subscription`` for a
    ``subsCallback``, ``on_unknown`` for a kind this version does not know (the raw
    :class:`~paysdk.contracts.callbacks.UnknownCallback`; one without a usable ``eventId`` is not
    deduplicated). A kind without a handler is acknowledged (200) and remembered, never refused, so the
    service does not retry it for 7 days. If the handler raises, the claim is released and the
    exception propagates (answer 5xx: the service retries, and the redelivery is processed). Bad header
    and bad body are returned as results (401/400), not raised. :meth:`ahandle` is the source,
    :meth:`handle` is generated from it by ``scripts/unasync.py``; ``ahandle`` also takes ``async def``
    handlers and a blocking store (SQLite, memory), whose calls then run in a worker thread so the event
    loop is not blocked.

    ``store`` defaults to a fresh :class:`~paysdk.callbacks.MemoryDedupStore`, which only
    deduplicates within one process; production receivers pass a shared store. ``timezone`` is the
    client's timezone, used for :attr:`CallbackResult.created_at` (decision D6).
    """

    def __init__(
        self,
        header_name: str,
        accepted_values: AcceptedValues,
        store: DedupStore | AsyncDedupStore | None = None,
        timezone: str = DEFAULT_TIMEZONE,
    ) -> None:
        if not isinstance(header_name, str) or not header_name.strip():
            raise ValueError("header_name: must be a non-empty header name")
        self.header_name = header_name.strip()
        self._accepted: tuple[Secret, ...] = normalize_accepted_values(accepted_values)
        self.store: DedupStore | AsyncDedupStore = MemoryDedupStore() if store is None else store
        self.timezone = timezone
        self._zone = ZoneInfo(timezone)

    def __repr__(self) -> str:
        return (
            f"CallbackReceiver(header_name={self.header_name!r}, accepted_values=<{len(self._accepted)}"
            f" secret(s)>, store={self.store!r}, timezone={self.timezone!r})"
        )

    def verify(self, headers: Mapping[str, str]) -> CallbackResult | None:
        """The header check alone, before any of the body is read: ``None`` when the header is right,
        else the ``401`` result to answer (see :func:`~paysdk.callbacks.read_verified_body`)."""
        try:
            verify_header(headers, header_name=self.header_name, accepted_values=self._accepted)
        except CallbackAuthenticationError as exc:
            logger.warning("callback refused: %s", exc)
            return CallbackResult(CallbackOutcome.UNAUTHORIZED, error=exc)
        return None

    def _check(self, headers: Mapping[str, str], body: bytes) -> CallbackResult | Callback:
        refused = self.verify(headers)
        if refused is not None:
            return refused
        try:
            return parse_callback(body)
        except CallbackPayloadError as exc:
            logger.warning("callback refused: %s", exc)
            return CallbackResult(CallbackOutcome.INVALID, error=exc)

    def _result(self, outcome: CallbackOutcome, payload: Callback) -> CallbackResult:
        if outcome is not CallbackOutcome.PROCESSED:
            logger.info("callback %s: event %s", outcome.value, payload.event_id)
        return CallbackResult(outcome, payload, created_at=payload.occurred_at_datetime(self.timezone))

    @staticmethod
    def _not_claimed(state: EventState) -> CallbackOutcome | None:
        if state is EventState.DONE:
            return CallbackOutcome.DUPLICATE
        if state is EventState.PROCESSING:
            return CallbackOutcome.IN_PROGRESS
        return None  # vanished in between: try to claim again

    def _store(self) -> DedupStore:
        if _is_async(self.store):
            raise TypeError("this receiver has an asyncio store: use 'await receiver.ahandle(...)'")
        return cast(DedupStore, self.store)

    def _async_store(self) -> AsyncDedupStore:
        if _is_async(self.store):
            return cast(AsyncDedupStore, self.store)
        return _ThreadedStore(cast(DedupStore, self.store))

    # unasync: begin
    async def ahandle(
        self,
        headers: Mapping[str, str],
        body: bytes,
        handler: AsyncHandler | None = None,
        *,
        on_subscription: AsyncSubscriptionHandler | None = None,
        on_unknown: AsyncUnknownHandler | None = None,
    ) -> CallbackResult:
        """Process one delivery, for ``asyncio`` code; see the class docstring."""
        store = self._async_store()
        checked = self._check(headers, body)
        if isinstance(checked, CallbackResult):
            return checked
        payload, event_id = checked, checked.event_id
        chosen = _pick(payload, handler, on_subscription, on_unknown)
        if event_id is None:  # an unknown kind without a usable eventId: nothing to deduplicate on
            await _async_run_handler(chosen, payload)
            return self._result(CallbackOutcome.PROCESSED, payload)
        for _ in range(_CLAIM_ATTEMPTS):
            if await store.claim(event_id):
                break
            outcome = self._not_claimed(await store.state(event_id))
            if outcome is not None:
                return self._result(outcome, payload)
        else:
            return self._result(CallbackOutcome.IN_PROGRESS, payload)
        try:
            await _async_run_handler(chosen, payload)
        except BaseException:
            # The handler's exception matters more; an unreleased claim still expires with its lease.
            try:
                await store.release(event_id)
            except Exception:
                logger.exception("could not release the claim on event %s", event_id)
            raise
        await store.complete(event_id)
        return self._result(CallbackOutcome.PROCESSED, payload)

    # unasync: end

    # unasync: generated begin
    # Generated by scripts/unasync.py from the async code above. Do not edit by hand.
    def handle(
        self,
        headers: Mapping[str, str],
        body: bytes,
        handler: Handler | None = None,
        *,
        on_subscription: SubscriptionHandler | None = None,
        on_unknown: UnknownHandler | None = None,
    ) -> CallbackResult:
        """Process one delivery, for blocking code; see the class docstring."""
        store = self._store()
        checked = self._check(headers, body)
        if isinstance(checked, CallbackResult):
            return checked
        payload, event_id = checked, checked.event_id
        chosen = _pick(payload, handler, on_subscription, on_unknown)
        if event_id is None:  # an unknown kind without a usable eventId: nothing to deduplicate on
            _run_handler(chosen, payload)
            return self._result(CallbackOutcome.PROCESSED, payload)
        for _ in range(_CLAIM_ATTEMPTS):
            if store.claim(event_id):
                break
            outcome = self._not_claimed(store.state(event_id))
            if outcome is not None:
                return self._result(outcome, payload)
        else:
            return self._result(CallbackOutcome.IN_PROGRESS, payload)
        try:
            _run_handler(chosen, payload)
        except BaseException:
            # The handler's exception matters more; an unreleased claim still expires with its lease.
            try:
                store.release(event_id)
            except Exception:
                logger.exception("could not release the claim on event %s", event_id)
            raise
        store.complete(event_id)
        return self._result(CallbackOutcome.PROCESSED, payload)

    # unasync: generated end


def _pick(
    payload: Callback, on_payment: object, on_subscription: object, on_unknown: object
) -> Callable[[Any], object] | None:
    """The handler of ``payload``'s kind (``None``: acknowledged without one)."""
    if isinstance(payload, PaymentCallback):
        chosen = on_payment
    elif isinstance(payload, SubscriptionCallback):
        chosen = on_subscription
    else:
        chosen = on_unknown
    if chosen is None:
        logger.debug("callback of kind %s acknowledged: no handler for it", payload.kind)
    return cast(Callable[[Any], object] | None, chosen)


def _run_handler(handler: Callable[[Any], object] | None, payload: Callback) -> None:
    if handler is None:
        return
    # Typed as returning None, but an ``async def`` passed by mistake returns a coroutine.
    returned = handler(payload)
    if inspect.isawaitable(returned):
        if inspect.iscoroutine(returned):
            returned.close()
        raise TypeError("the handler is async: use 'await receiver.ahandle(...)'")


async def _async_run_handler(handler: Callable[[Any], object] | None, payload: Callback) -> None:
    if handler is None:
        return
    returned = handler(payload)
    if inspect.isawaitable(returned):
        await returned


def _is_async(store: DedupStore | AsyncDedupStore) -> bool:
    # Both protocols have the same method names, so isinstance() cannot tell them apart.
    return inspect.iscoroutinefunction(store.claim)


class _ThreadedStore:
    """A blocking store (SQLite, memory) seen as an :class:`AsyncDedupStore`: each call runs in a worker
    thread, so the event loop is not blocked."""

    def __init__(self, store: DedupStore) -> None:
        self._store = store

    async def claim(self, event_id: str) -> bool:
        return await asyncio.to_thread(self._store.claim, event_id)

    async def state(self, event_id: str) -> EventState:
        return await asyncio.to_thread(self._store.state, event_id)

    async def complete(self, event_id: str) -> None:
        await asyncio.to_thread(self._store.complete, event_id)

    async def release(self, event_id: str) -> None:
        await asyncio.to_thread(self._store.release, event_id)
