"""A callback receiver for tests: a small HTTP server on a free loopback port that collects deliveries.

Every POST is checked and parsed with :class:`paysdk.callbacks.CallbackReceiver` (the header, the body
into its kind's model, duplicates by ``eventId``; every kind accepted, D340), answered as that receiver
says (or with the statuses you script), and kept in :attr:`CallbackInbox.deliveries`. Standard library
and SDK only.
"""

from __future__ import annotations

import contextlib
import secrets
import selectors
import socket
import socketserver
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
    """A threading HTTP server whose connections :class:`_Acceptor` accepts (each then served on its
    own thread, as ``ThreadingHTTPServer`` does); it runs no loop of its own."""

    daemon_threads = True

    def server_bind(self) -> None:
        """Bind without ``HTTPServer``'s reverse lookup of the address (``socket.getfqdn``: a DNS
        query on some systems; the name is never used here)."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def accept_one(self) -> None:
        """Accept a waiting connection, if one still waits, and hand it to its thread."""
        try:
            request, client_address = self.get_request()
        except OSError:  # none waiting any more (the listening socket does not block), or closed
            return
        try:
            # Blocking, as the handler expects: where accepted sockets inherit the listening socket's
            # non-blocking flag (macOS, the BSDs, Windows), Python leaves them so after a timeout of 0.
            request.setblocking(True)
            self.process_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
            self.shutdown_request(request)


class _Acceptor:
    """One thread, ``paysdk-inbox``, that accepts the connections of every listening inbox of the
    process: an inbox that starts registers its socket (no thread started per inbox), one that stops
    unregisters it and returns as soon as this thread has let it go (no poll interval, D402, D490)."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        self._lock = threading.Lock()
        self._orders: list[tuple[_InboxServer, threading.Event | None]] = []
        self._listening: set[_InboxServer] = set()  # this thread's own
        self._thread = threading.Thread(target=self._run, daemon=True, name="paysdk-inbox")
        self._thread.start()

    @property
    def alive(self) -> bool:
        """Its thread runs (not so in a child process forked after it started)."""
        return self._thread.is_alive()

    def add(self, server: _InboxServer) -> None:
        """Accept ``server``'s connections from now on (connections made before wait in its backlog)."""
        server.socket.setblocking(False)
        self._order(server, None)

    def remove(self, server: _InboxServer) -> None:
        """Stop accepting ``server``'s connections; returns once no accept of it runs or will."""
        if threading.current_thread() is self._thread:  # pragma: no cover - never from a handler's thread
            raise RuntimeError("an inbox cannot be stopped from its accepting thread")
        released = threading.Event()
        self._order(server, released)
        released.wait()

    def _order(self, server: _InboxServer, released: threading.Event | None) -> None:
        with self._lock:
            self._orders.append((server, released))
        self._wake_write.send(b"\0")

    def _run(self) -> None:
        while True:
            for key, _ in self._selector.select():
                if key.fileobj is self._wake_read:
                    self._take_orders()
                elif key.data in self._listening:  # not one let go earlier in this round
                    key.data.accept_one()

    def _take_orders(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wake_read.recv(4096):
                pass
        with self._lock:
            orders, self._orders = self._orders, []
        for server, released in orders:
            if released is None:
                self._selector.register(server.socket, selectors.EVENT_READ, server)
                self._listening.add(server)
            else:
                if server in self._listening:
                    self._listening.discard(server)
                    self._selector.unregister(server.socket)
                released.set()


_acceptor: _Acceptor | None = None
_acceptor_lock = threading.Lock()


def _the_acceptor() -> _Acceptor:
    """The process's :class:`_Acceptor`, started by the first inbox (again after a fork)."""
    global _acceptor
    with _acceptor_lock:
        if _acceptor is None or not _acceptor.alive:
            _acceptor = _Acceptor()
        return _acceptor


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
        self._acceptor: _Acceptor | None = None
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
        acceptor = _the_acceptor()
        acceptor.add(server)
        self._server, self._acceptor = server, acceptor

    def down(self) -> None:
        """Stop listening: deliveries get "connection refused" until :meth:`up`."""
        server, acceptor = self._server, self._acceptor
        if server is None:
            return
        if acceptor is not None:
            acceptor.remove(server)
        server.server_close()
        self._server = None
        self._acceptor = None
