"""A callback receiver for tests: a small HTTP server on a free loopback port that collects deliveries.

Every POST is checked and parsed with :class:`paysdk.callbacks.CallbackReceiver` (the header, the body
into its kind's model, duplicates by ``eventId``; every kind accepted, D340), answered as that receiver
says (or with the statuses you script), and kept in :attr:`CallbackInbox.deliveries`. Standard library
and SDK only.
"""

from __future__ import annotations

import secrets
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar, overload

from paysdk import _json
from paysdk._errors import CallbackBodyTooLargeError, CallbackPayloadError
from paysdk.callbacks import DEFAULT_HEADER_NAME, CallbackReceiver, MemoryDedupStore, read_http1_body
from paysdk.contracts.callbacks import Callback, PaymentCallback, SubscriptionCallback, UnknownCallback

__all__ = ["CallbackInbox", "Delivery"]

#: Largest delivery body the inbox reads (the callback is a small JSON object).
_MAX_BODY = 1 << 20

C = TypeVar("C", PaymentCallback, SubscriptionCallback, UnknownCallback)


@dataclass(frozen=True)
class Delivery:
    """One request the inbox received, and what it answered.

    ``payload`` is the verified callback parsed into its kind's model (``PaymentCallback``,
    ``SubscriptionCallback`` or the raw ``UnknownCallback``; ``None`` when the header or body was
    refused: see ``error``). ``duplicate``: an ``eventId`` already received. ``status_code``: the answer sent.
    """

    path: str
    headers: dict[str, str]
    body: bytes
    status_code: int
    payload: Callback | None
    duplicate: bool
    error: str | None
    at: float = field(default_factory=time.monotonic)

    @property
    def accepted(self) -> bool:
        """A first delivery of its event, verified and answered ``2xx``."""
        return self.payload is not None and not self.duplicate and 200 <= self.status_code < 300

    def json(self) -> Any:
        """The body, parsed Decimal-exact."""
        return _json.loads(self.body)

    def __repr__(self) -> str:  # the header value (a shared secret) never shows
        return (
            f"Delivery(path={self.path!r}, status_code={self.status_code}, "
            f"event_id={self.payload.event_id if self.payload else None!r}, duplicate={self.duplicate})"
        )


class _Refused(Exception):
    def __init__(self, payload: Callback) -> None:
        super().__init__("refused by a scripted status")
        self.payload = payload


class _InboxServer(ThreadingHTTPServer):
    """A threading HTTP server that stops at once when asked: its loop waits on the listening socket and
    a wake-up socket together, so :meth:`stop` returns without the poll interval ``serve_forever``
    needs to notice a ``shutdown()`` (D402)."""

    daemon_threads = True
    timeout = 0  # handle_request() accepts only what the loop's selector saw ready; it never waits

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._wake_read, self._wake_write = socket.socketpair()
        self._stopping = threading.Event()

    def serve_until_stopped(self) -> None:
        """Accept connections (each served on its own thread) until :meth:`stop`."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.socket, selectors.EVENT_READ)
            selector.register(self._wake_read, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is self.socket and not self._stopping.is_set():
                        self.handle_request()

    def stop(self) -> None:
        """Wake the loop and make it return (call it from another thread)."""
        self._stopping.set()
        self._wake_write.send(b"\0")

    def server_close(self) -> None:
        super().server_close()
        self._wake_read.close()
        self._wake_write.close()


class CallbackInbox:
    """A running callback receiver on ``127.0.0.1`` (a free port) that checks ``header_name: header_value``.

    Give a merchant ``callback_url=inbox.url``, ``callback_header_name=inbox.header_name`` and
    ``callback_header_value=inbox.header_value`` (the ``paysdk_callbacks`` fixture does). Then
    ``inbox.wait_for(1)`` returns the verified payment callbacks once that many distinct ones arrived;
    ``wait_for(1, kind=SubscriptionCallback)`` waits for another kind (``UnknownCallback``: a kind this
    version does not know, accepted all the same).
    ``respond_with([500, 200])`` scripts the next answers (the delivery is still recorded);
    :meth:`down`/:meth:`up` stop and restart listening on the same port.
    """

    def __init__(self, header_name: str = DEFAULT_HEADER_NAME, header_value: str | None = None) -> None:
        self.header_name = header_name
        self.header_value = header_value or secrets.token_hex(16)
        self._receiver = CallbackReceiver(header_name, [self.header_value], store=MemoryDedupStore())
        self._deliveries: list[Delivery] = []
        self._statuses: list[int] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._server: _InboxServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.up()

    def __enter__(self) -> CallbackInbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.down()

    def __repr__(self) -> str:
        return f"CallbackInbox(url={self.url!r}, deliveries={len(self._deliveries)})"

    @property
    def url(self) -> str:
        """Where to send callbacks."""
        return f"http://127.0.0.1:{self.port}/callbacks"

    @property
    def deliveries(self) -> list[Delivery]:
        """Every request received so far (a copy), oldest first."""
        with self._lock:
            return list(self._deliveries)

    @property
    def payloads(self) -> list[PaymentCallback]:
        """The verified payment callbacks answered ``2xx``, one per ``eventId``, oldest first."""
        return [d.payload for d in self.deliveries if d.accepted and isinstance(d.payload, PaymentCallback)]

    @property
    def callbacks(self) -> list[Callback]:
        """The verified callbacks of every kind answered ``2xx``, one per ``eventId``, oldest first."""
        return [d.payload for d in self.deliveries if d.accepted and d.payload is not None]

    def respond_with(self, statuses: list[int]) -> None:
        """Answer the next deliveries with these statuses, in order (then as the receiver says)."""
        with self._lock:
            self._statuses = list(statuses)

    def clear(self) -> None:
        """Forget the deliveries received and the events seen (a fresh inbox on the same port)."""
        with self._lock:
            self._deliveries.clear()
            self._statuses.clear()
            self._receiver = CallbackReceiver(self.header_name, [self.header_value], store=MemoryDedupStore())

    @overload
    def wait_for(
        self,
        count: int = ...,
        timeout: float = ...,
        where: Callable[[PaymentCallback], bool] | None = ...,
    ) -> list[PaymentCallback]: ...
    @overload
    def wait_for(
        self,
        count: int = ...,
        timeout: float = ...,
        where: Callable[[C], bool] | None = ...,
        *,
        kind: type[C],
    ) -> list[C]: ...
    def wait_for(
        self,
        count: int = 1,
        timeout: float = 10.0,
        where: Callable[[Any], bool] | None = None,
        *,
        kind: type[Any] = PaymentCallback,
    ) -> list[Any]:
        """Block until ``count`` distinct verified callbacks of ``kind`` (default: payment callbacks;
        ``SubscriptionCallback``, ``UnknownCallback``) matching ``where`` arrived; return them.

        Raises ``AssertionError`` after ``timeout`` seconds, saying how many arrived.
        """
        deadline = time.monotonic() + timeout

        def matching() -> list[Any]:
            return [
                d.payload
                for d in self._deliveries
                if d.accepted and isinstance(d.payload, kind) and (where is None or where(d.payload))
            ]

        with self._changed:
            while len(found := matching()) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"expected {count} callback(s), got {len(found)} of kind {kind.__name__} "
                        f"({len(self._deliveries)} deliveries in all)"
                    )
                self._changed.wait(left)
            return found

    def wait_for_uid(self, uid: str, timeout: float = 10.0) -> PaymentCallback:
        """The first verified callback of transaction ``uid`` (waits up to ``timeout`` seconds)."""
        return self.wait_for(1, timeout, where=lambda payload: payload.uid == uid)[0]

    def _take(self, path: str, headers: dict[str, str], body: bytes) -> int:
        with self._lock:
            receiver = self._receiver
            scripted = self._statuses.pop(0) if self._statuses else None
        refuse = scripted is not None and not 200 <= scripted < 300

        def handler(payload: Callback) -> None:
            if refuse:  # the claim is released: the service's retry is processed again
                raise _Refused(payload)

        payload: Callback | None
        try:
            result = receiver.handle(headers, body, handler, on_subscription=handler, on_unknown=handler)
        except _Refused as refused:
            payload, duplicate, error, status = refused.payload, False, None, scripted or 500
        else:
            payload, duplicate = result.payload, result.duplicate
            error = None if result.error is None else str(result.error)
            status = scripted if scripted is not None else result.status_code
        self._record(Delivery(path, headers, body, status, payload, duplicate, error))
        return status

    def _refused(self, path: str, headers: dict[str, str], status: int, error: str) -> None:
        """A request whose body could not be framed (answered ``status``, its connection closed)."""
        self._record(Delivery(path, headers, b"", status, None, False, error))

    def _record(self, delivery: Delivery) -> None:
        with self._changed:
            self._deliveries.append(delivery)
            self._changed.notify_all()

    def up(self) -> None:
        """Start listening (again, on the same port once one was picked)."""
        if self._server is not None:
            return
        inbox = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                headers = {key.lower(): value for key, value in self.headers.items()}
                try:  # Content-Length or chunked (D341)
                    body = read_http1_body(self.headers.items(), self.rfile, limit=_MAX_BODY)
                except CallbackPayloadError as exc:
                    self.close_connection = True  # the framing is lost: the rest is no request
                    status = 413 if isinstance(exc, CallbackBodyTooLargeError) else 400
                    inbox._refused(self.path, headers, status, str(exc))
                else:
                    status = inbox._take(self.path, headers, body)
                answer = b'{"ok":true}' if 200 <= status < 300 else b'{"ok":false}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                return

        server = _InboxServer(("127.0.0.1", self.port), Handler)
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_until_stopped, daemon=True, name="paysdk-inbox")
        self._thread.start()

    def down(self) -> None:
        """Stop listening: deliveries get "connection refused" until :meth:`up`."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.stop()
        if thread is not None:
            thread.join(timeout=5)
        server.server_close()
        self._server = None
        self._thread = None
