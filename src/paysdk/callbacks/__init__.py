"""Receiving the merchant callbacks: verify, parse by kind, deduplicate (spec 2.4, 5.4, 6; D340).

The service POSTs a JSON body to your callback URL when a payment-link transaction reaches a terminal
status (:class:`PaymentCallback`) and when the scheduled charge process suspends a subscription (the
``subsCallback``, :class:`SubscriptionCallback`). The request carries the static header you registered
(default name ``X-Callback-Token``, decision D15); there is no signature. Delivery is at-least-once and
retried for 7 days until you answer ``2xx`` (``410`` stops it), so the same ``eventId`` can arrive
several times.

Quick start (any framework; give it the raw body bytes and the request headers)::

    from paysdk.callbacks import CallbackReceiver, SQLiteDedupStore

    receiver = CallbackReceiver(
        "X-Callback-Token",
        [os.environ["CALLBACK_TOKEN"]],  # during a rotation list the new and the old value
        store=SQLiteDedupStore("/var/lib/myapp/callbacks.sqlite3"),
    )

    def on_payment(payload: PaymentCallback) -> None:
        # payload.amount is a Decimal; payload.status e.g. "approved"
        mark_order_paid(payload.reference, payload.amount)

    def on_suspended(callback: SubscriptionCallback) -> None:
        suspend_access(callback.sub_uid, callback.reason)

    result = receiver.handle(request.headers, raw_body, on_payment, on_subscription=on_suspended)
    return Response(status_code=result.status_code)

Dispatch by kind (D340): the body's own fields name its kind (``event`` when present, else the payment
callback), and ``handle`` runs the handler of that kind: ``handler`` (the third argument) for a payment,
``on_subscription`` for a ``subsCallback``, ``on_unknown`` for a kind this version does not know (an
:class:`UnknownCallback` holding the parsed body). A kind you give no handler is acknowledged with 200
and deduplicated, never refused: a ``400`` would make the service retry it for 7 days.

What ``handle`` guarantees:

* bad or missing header: the handler is not run, ``status_code`` 401 (``result.error`` says why
  without showing any header value); a body that is no JSON object, or a known kind with a missing or
  malformed field: 400. An unknown kind is never a 400.
* first delivery of an ``eventId``: the handler runs once; 200. If it raises, the claim is released
  and the exception propagates: answer 5xx and the service's retry is processed.
* later deliveries: 200 with ``result.duplicate`` set, the handler is not run. While the first
  delivery is still running, a duplicate gets 409 so the service retries later.

For asyncio frameworks use ``await receiver.ahandle(headers, body, handler)``: ``handler`` may be
``async def``; ``AsyncRedisDedupStore`` is awaited and sync stores run in a worker thread.

Read the body only after the header checked out, and with a cap (D88): with Starlette or FastAPI,
``body = await read_verified_body(request, receiver)`` returns the body, or the ``401``/``413``
:class:`CallbackResult` to answer at once (nothing of an unauthenticated body is read; a
``Content-Length`` over :data:`MAX_BODY_BYTES` is refused unread, a stream is cut at it). With any other
framework, ``receiver.verify(headers)`` first, then :func:`read_body` over its chunks (sync or async); on
a raw HTTP/1.1 connection (``http.server``), :func:`read_http1_body` (``Content-Length`` or chunked).

Stores (pick one shared by every process that receives callbacks):

* :class:`MemoryDedupStore`: one process only (tests, single-worker apps).
* :class:`SQLiteDedupStore`: one host, any number of threads and worker processes.
* :class:`RedisDedupStore` / :class:`AsyncRedisDedupStore`: several hosts (``pip install
  paysdk-toolkit[redis]``), keyed ``<prefix><eventId>`` with ``SET NX``.

Processed ids are kept for :data:`DEFAULT_RETENTION` (10 days; less than 7 is refused). A claim is a
:data:`DEFAULT_LEASE` (5 minutes) lease: if the process dies mid-handler the event is processed again
after the lease ends, so handlers must tolerate a rare second run after a crash (at-least-once). For
strict exactly-once side effects, also record ``payload.event_id`` under a unique constraint in the
same database transaction as the side effect.

Lower-level pieces: :func:`verify_header`, :func:`parse_callback` (any kind; :func:`parse_payload`
for the payment callback alone) and the :class:`DedupStore` protocol (``claim``, ``complete``,
``release``, ``state``) for your own store.
"""

from __future__ import annotations

from paysdk.callbacks._body import StreamingRequest, read_body, read_http1_body, read_verified_body
from paysdk.callbacks._dedup import (
    DEFAULT_LEASE,
    DEFAULT_RETENTION,
    MIN_RETENTION,
    AsyncDedupStore,
    DedupStore,
    DedupTiming,
    EventState,
    MemoryDedupStore,
    SQLiteDedupStore,
)
from paysdk.callbacks._headers import DEFAULT_HEADER_NAME, AcceptedValues, verify_header
from paysdk.callbacks._payload import MAX_BODY_BYTES, parse_callback, parse_payload
from paysdk.callbacks._receiver import (
    AsyncHandler,
    AsyncSubscriptionHandler,
    AsyncUnknownHandler,
    CallbackOutcome,
    CallbackReceiver,
    CallbackResult,
    Handler,
    SubscriptionHandler,
    UnknownHandler,
)
from paysdk.callbacks._redis import DEFAULT_REDIS_PREFIX, AsyncRedisDedupStore, RedisDedupStore
from paysdk.contracts.callbacks import (
    Callback,
    CallbackPayload,
    PaymentCallback,
    SubscriptionCallback,
    UnknownCallback,
    callback_kind,
)

__all__ = [
    "DEFAULT_HEADER_NAME",
    "DEFAULT_LEASE",
    "DEFAULT_REDIS_PREFIX",
    "DEFAULT_RETENTION",
    "MAX_BODY_BYTES",
    "MIN_RETENTION",
    "AcceptedValues",
    "AsyncDedupStore",
    "AsyncHandler",
    "AsyncRedisDedupStore",
    "AsyncSubscriptionHandler",
    "AsyncUnknownHandler",
    "Callback",
    "CallbackOutcome",
    "CallbackPayload",
    "CallbackReceiver",
    "CallbackResult",
    "DedupStore",
    "DedupTiming",
    "EventState",
    "Handler",
    "MemoryDedupStore",
    "PaymentCallback",
    "RedisDedupStore",
    "SQLiteDedupStore",
    "StreamingRequest",
    "SubscriptionCallback",
    "SubscriptionHandler",
    "UnknownCallback",
    "UnknownHandler",
    "callback_kind",
    "parse_callback",
    "parse_payload",
    "read_body",
    "read_http1_body",
    "read_verified_body",
    "verify_header",
]
