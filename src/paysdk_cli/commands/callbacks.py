"""``paysdk callbacks listen``: a local receiver for merchant callbacks (spec 2.4, 5.4, 6).

Built on :class:`paysdk.callbacks.CallbackReceiver`: each POST is verified (static header, constant time),
parsed by kind (a payment, a ``subsCallback``, or a kind this version does not know, accepted as it is;
D340), deduplicated on ``eventId`` and printed once; verified new events are optionally forwarded to
``--forward-to`` with the same headers. Standard library ``http.server`` only (no server extra needed).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import State, open_client, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import OutputFormat, emit_event, info, warn
from paysdk_cli._params import expand_path

if TYPE_CHECKING:
    from http.server import BaseHTTPRequestHandler

    from paysdk.callbacks import CallbackReceiver
    from paysdk.contracts.callbacks import Callback

__all__ = ["HEADER_VALUE_ENV", "app"]

HEADER_VALUE_ENV = "PAYSDK_CALLBACK_HEADER_VALUE"
DEFAULT_HEADER_NAME = "X-Callback-Token"
#: Callback bodies are a few hundred bytes (the receiver refuses more than 64 KiB anyway).
_MAX_BODY = 256 * 1024
#: Not copied when forwarding: they describe this hop, not the callback.
_HOP_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "upgrade",
        "proxy-connection",
        "proxy-authorization",
        "trailer",
    }
)

_log = logging.getLogger("paysdk_cli.callbacks")

app = new_app("Merchant callbacks: run a local receiver.")


def _read_header_values(
    value_file: Path | None, value_env: str | None, sandbox_value: str | None
) -> list[str]:
    """The accepted header values, from the safest source given. Never from a bare argument."""
    if value_file is not None:
        text = sys.stdin.read() if str(value_file) == "-" else value_file.read_text(encoding="utf-8")
        values = [line.strip() for line in text.splitlines() if line.strip()]
        if not values:
            raise CLIError(f"--header-value-file {value_file}: no header value in it", ExitCode.USAGE)
        return values
    if value_env is not None:
        value = os.environ.get(value_env, "").strip()
        if not value:
            raise CLIError(f"--header-value-env: environment variable {value_env} is not set", ExitCode.USAGE)
        return [value]
    if sandbox_value is not None:
        return [sandbox_value]
    value = os.environ.get(HEADER_VALUE_ENV, "").strip()
    if value:
        return [value]
    if sys.stdin.isatty():
        prompted = str(typer.prompt("Callback header value", hide_input=True, err=True)).strip()
        if prompted:
            return [prompted]
    raise CLIError(
        f"no callback header value: set {HEADER_VALUE_ENV}, or pass --header-value-env VAR, "
        "--header-value-file FILE or --sandbox-client SLUG (or run on a terminal to be prompted)",
        ExitCode.USAGE,
    )


def _event_line(payload: Callback) -> str:
    """One human line per event, by kind: a payment, a ``subsCallback``, or an unknown kind's keys."""
    from paysdk.contracts.callbacks import PaymentCallback, SubscriptionCallback

    if isinstance(payload, PaymentCallback):
        parts = [
            payload.event_id,
            payload.uid,
            payload.status,
            f"{format(payload.amount, 'f')} {payload.currency}",
            f"ref={payload.reference}",
            f"channel={payload.channel}",
        ]
        if payload.external_id:
            parts.append(f"externalId={payload.external_id}")
    elif isinstance(payload, SubscriptionCallback):
        parts = [
            payload.event_id,
            payload.sub_uid,
            payload.event,
            f"status={payload.status}",
            f"plan={payload.plan_id}",
            f"attempts={payload.attempts}",
            f"reason={payload.reason}",
        ]
    else:
        parts = [
            payload.event_id or "(no eventId)",
            f"unknown kind {payload.kind or '(no event)'}",
            f"keys={','.join(sorted(payload.data))}",
        ]
    return "  ".join(parts)


@contextmanager
def _forwarder(url: str | None) -> Iterator[Callable[[dict[str, str], bytes], None] | None]:
    """A function POSTing a verified callback to ``url`` with its headers (``None`` without a URL)."""
    if url is None:
        yield None
        return
    import httpx

    from paysdk._tls import verification_context

    client = httpx.Client(timeout=10.0, follow_redirects=False, verify=verification_context())

    def forward(headers: dict[str, str], body: bytes) -> None:
        copied = {k: v for k, v in headers.items() if k.lower() not in _HOP_HEADERS}
        try:
            response = client.post(url, content=body, headers=copied)
        except httpx.HTTPError as exc:
            from paysdk._describe import exception_text

            raise RuntimeError(f"forwarding to {url} failed: {exception_text(exc)}") from None
        if not response.is_success:
            raise RuntimeError(f"forwarding to {url} got HTTP {response.status_code}")
        _log.debug("forwarded to %s: HTTP %s", url, response.status_code)

    try:
        yield forward
    finally:
        client.close()


class _Listener:
    """The shared state of one ``listen`` run: receiver, counters, stop signal, output lock."""

    def __init__(
        self,
        receiver: CallbackReceiver,
        output: OutputFormat,
        forward: Callable[[dict[str, str], bytes], None] | None,
        max_events: int | None,
    ) -> None:
        self.receiver = receiver
        self.output = output
        self.forward = forward
        self.max_events = max_events
        self.events = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def refuse_header(self, headers: dict[str, str]) -> tuple[int, bytes] | None:
        """The header check before any of the body is read (D88): the ``401`` to answer, or ``None``."""
        from paysdk._json import dumps

        refused = self.receiver.verify(headers)
        if refused is None:
            return None
        warn(f"refused a callback with HTTP {refused.status_code}: {refused.error}")
        return refused.status_code, dumps(refused.response_body())

    def answered(self) -> None:
        """Called once an answer is written: stop when ``--max-events`` events are printed. Not before
        the answer is out: a listener that exited first would cut it, and the sender would retry."""
        with self.lock:
            if self.max_events is not None and self.events >= self.max_events:
                self.stop.set()

    def receive(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        """Handle one POST (its header already checked); returns the status and JSON body to answer."""
        from paysdk._json import dumps

        def on_event(payload: Callback) -> None:
            if self.forward is not None:
                self.forward(headers, body)
            with self.lock:
                emit_event(self.output, payload.to_body(), _event_line(payload))
                self.events += 1

        try:
            result = self.receiver.handle(
                headers, body, on_event, on_subscription=on_event, on_unknown=on_event
            )
        except Exception as exc:  # the forward failed: the claim was released, the sender will retry
            warn(f"{exc}; answered 502 so the sender retries")
            return 502, dumps({"outcome": "error", "message": "forwarding failed"})
        if result.duplicate and result.payload is not None and result.payload.event_id is not None:
            info(
                f"duplicate delivery of event {result.payload.event_id} acknowledged "
                f"({result.outcome.value}, HTTP {result.status_code}), not printed again"
            )
        elif result.error is not None:
            warn(f"refused a callback with HTTP {result.status_code}: {result.error}")
        return result.status_code, dumps(result.response_body())


def _handler_class(listener: _Listener) -> type[BaseHTTPRequestHandler]:
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        server_version = "paysdk-callbacks-listen"
        protocol_version = "HTTP/1.1"

        def _answer(self, status: int, body: bytes, extra: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            headers: dict[str, str] = {}
            for key, value in self.headers.items():
                # A header sent twice is combined as HTTP does; a doubled credential then never matches.
                name = key.lower()
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
            refused = listener.refuse_header(headers)  # before a byte of the body is read
            if refused is not None:
                self.close_connection = True
                self._answer(*refused)
                return
            from paysdk._errors import CallbackBodyTooLargeError, CallbackPayloadError
            from paysdk._json import dumps
            from paysdk.callbacks import read_http1_body

            try:  # Content-Length or chunked; both at once, or bad framing, refused (D341)
                body = read_http1_body(self.headers.items(), self.rfile, limit=_MAX_BODY)
            except CallbackPayloadError as exc:
                self.close_connection = True  # the framing is lost: the rest is no request
                status = 413 if isinstance(exc, CallbackBodyTooLargeError) else 400
                warn(f"refused a callback with HTTP {status}: {exc}")
                outcome = "too_large" if status == 413 else "invalid"
                self._answer(
                    status, dumps({"outcome": outcome, "message": str(exc)}), {"Connection": "close"}
                )
                return
            status, answer = listener.receive(headers, body)
            self._answer(status, answer)
            self.wfile.flush()
            listener.answered()

        def _not_allowed(self) -> None:
            self._answer(405, b'{"outcome":"invalid","message":"use POST"}', {"Allow": "POST"})

        do_GET = do_PUT = do_DELETE = do_PATCH = _not_allowed

        def log_message(self, format: str, *args: Any) -> None:
            _log.debug("%s - %s", self.address_string(), format % args)

    return Handler


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C while listening (main thread only), so `kill` also exits 0."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _sandbox_header(st: State, slug: str) -> tuple[str, str]:
    with open_client(st, token_required=False) as sdk:
        client = sdk.sandbox.reveal_client(slug)  # in full, even where re-reads are masked (D272)
    return client.callback_header_name, client.callback_header_value


@app.command("listen")
def listen(
    ctx: typer.Context,
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", help="TCP port (0 picks a free one).", min=0, max=65535)
    ] = 9000,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    header_name: Annotated[
        str | None,
        typer.Option(
            "--header-name",
            help=f"Callback header to verify. Default: {DEFAULT_HEADER_NAME}.",
            show_default=False,
        ),
    ] = None,
    header_value_env: Annotated[
        str | None,
        typer.Option(
            "--header-value-env",
            metavar="VAR",
            help=f"Read the header value from this environment variable (default {HEADER_VALUE_ENV}).",
            show_default=False,
        ),
    ] = None,
    header_value_file: Annotated[
        Path | None,
        typer.Option(
            "--header-value-file",
            metavar="FILE",
            dir_okay=False,
            callback=expand_path,
            help="Read accepted header values from FILE, one per line (- for stdin); "
            "several lines accept several values during a rotation.",
        ),
    ] = None,
    sandbox_client: Annotated[
        str | None,
        typer.Option(
            "--sandbox-client",
            metavar="SLUG",
            help="Take the header name and value from this reference-server client.",
        ),
    ] = None,
    forward_to: Annotated[
        str | None, typer.Option("--forward-to", metavar="URL", help="POST verified new events here too.")
    ] = None,
    dedup_db: Annotated[
        Path | None,
        typer.Option(
            "--dedup-db",
            metavar="FILE",
            dir_okay=False,
            callback=expand_path,
            help="SQLite file remembering event ids across restarts (default: memory).",
        ),
    ] = None,
    max_events: Annotated[
        int | None, typer.Option("--max-events", metavar="N", min=1, help="Exit 0 after printing N events.")
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="S",
            min=0.0,
            help="Stop after S seconds (exit 1 if --max-events was not reached).",
        ),
    ] = None,
) -> None:
    """Receive merchant callbacks locally: verify, deduplicate, print one line per event.

    Every kind is accepted: payments, the subsCallback, and kinds this version does not
    know (printed as they came). Answers 200 to a verified callback (also to a duplicate,
    which is not printed again), 401 when the header is missing or wrong, 400 for a body
    that is no JSON object or a known kind with a bad field, 502 when --forward-to fails
    (so the sender retries). The header value is a secret and is never a bare argument:
    it comes from PAYSDK_CALLBACK_HEADER_VALUE, --header-value-env VAR, --header-value-file
    FILE, --sandbox-client SLUG, or a hidden prompt. Events go to stdout (JSON lines with
    -o json); everything else to stderr. Ctrl-C exits 0.
    """
    st = state(ctx)
    from paysdk.callbacks import CallbackReceiver, MemoryDedupStore, SQLiteDedupStore

    _quiet_receiver_log()

    sandbox_value: str | None = None
    if sandbox_client is not None:
        sandbox_name, sandbox_value = _sandbox_header(st, sandbox_client)
        header_name = header_name or sandbox_name
    name = header_name or DEFAULT_HEADER_NAME
    values = _read_header_values(header_value_file, header_value_env, sandbox_value)
    try:
        store = SQLiteDedupStore(dedup_db) if dedup_db is not None else MemoryDedupStore()
    except Exception as exc:  # sqlite3.Error or OSError: a bad path
        raise CLIError(f"--dedup-db {dedup_db}: {exc}") from None
    try:
        receiver = CallbackReceiver(name, values, store)
    except ValueError as exc:
        raise CLIError(str(exc), ExitCode.USAGE) from None
    description = (
        f"header {name}, {len(values)} accepted value{'s' if len(values) > 1 else ''}, "
        f"dedup {'file ' + str(dedup_db) if dedup_db else 'in memory'}"
        + (f", forwarding to {forward_to}" if forward_to else "")
    )
    try:
        with _forwarder(forward_to) as forward:
            listener = _Listener(receiver, st.output, forward, max_events)
            timed_out = _serve(listener, host, port, timeout, description)
    finally:
        if isinstance(store, SQLiteDedupStore):
            store.close()
    info(f"{listener.events} event{'s' if listener.events != 1 else ''} received.")
    if timed_out and max_events is not None and listener.events < max_events:
        raise CLIError(f"timed out after {timeout:g} s with {listener.events} of {max_events} events")


def _quiet_receiver_log() -> None:
    """The listener reports each refused callback itself (one ``Warning:`` line). The receiver also
    logs it as a warning, which, with no handler configured, Python's last-resort handler would print
    on stderr a second time; a ``NullHandler`` on its logger stops that (with ``-v`` it still shows as
    a debug line)."""
    receiver_log = logging.getLogger("paysdk.callbacks")
    if not any(isinstance(handler, logging.NullHandler) for handler in receiver_log.handlers):
        receiver_log.addHandler(logging.NullHandler())


def _serve(listener: _Listener, host: str, port: int, timeout: float | None, description: str) -> bool:
    """Serve until ``--max-events``, ``--timeout``, Ctrl-C or SIGTERM. Returns whether it timed out."""
    import socket
    from http.server import ThreadingHTTPServer

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        daemon_threads = True

    try:
        server = Server((host, port), _handler_class(listener))
    except OSError as exc:
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    shown_host = f"[{host}]" if ":" in host else host
    info(f"Listening on http://{shown_host}:{server.server_address[1]}/ ({description}). Ctrl-C to stop.")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        with _sigterm_as_interrupt():
            while not listener.stop.is_set():
                wait = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
                if wait <= 0:
                    return True
                listener.stop.wait(wait)
    except KeyboardInterrupt:
        info("Stopped.")
    finally:
        server.shutdown()
        server.server_close()
    return False
