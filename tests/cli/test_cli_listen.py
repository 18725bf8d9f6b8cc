"""``paysdk callbacks listen`` as a real process: verify, deduplicate, print once, forward, stop cleanly."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from paysdk._json import dumps
from paysdk.testing._ready import READY_TIMEOUT, free_port, http_ok, wait_ready

from .conftest import run_cli, subprocess_env

HEADER_VALUE = "cb-3f1c9a7be2d84c06a5b1e9f0c2d7a4b8"


def callback_body(**overrides: Any) -> bytes:
    body: dict[str, Any] = {
        "eventId": f"evt_{uuid.uuid4().hex}",
        "reference": "PL-ABCDEFGHJK",
        "uid": "b4a2c7d0-1111-4222-8333-944455556666",
        "country": "GT",
        "currency": "GTQ",
        "channel": "WhatsApp",
        "status": "approved",
        "amount": Decimal("10.50"),
        "externalId": "order-42",
        "createdAt": "31/01/2025 23:59:58",
        "transactionId": "txn_0123456789abcdef01234567",
        "paymentMethodType": "visa",
    }
    body.update(overrides)
    return dumps(body)


class Listener:
    """A running ``paysdk callbacks listen`` subprocess."""

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url

    def post(
        self, body: bytes, value: str | None = HEADER_VALUE, name: str = "X-Callback-Token"
    ) -> httpx.Response:
        headers = {"Content-Type": "application/json"}
        if value is not None:
            headers[name] = value
        return httpx.post(self.url, content=body, headers=headers, timeout=60)

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=READY_TIMEOUT)
        return self.proc.returncode, out, err


def _wait_until_listening(proc: subprocess.Popen[str], url: str) -> None:
    wait_ready(http_ok(url, any_status=True), what="paysdk callbacks listen", process=proc)


@contextmanager
def start_listener(
    config_dir: Path,
    *args: str,
    env: dict[str, str] | None = None,
    port: int | None = None,
    base_url: str | None = None,
    global_args: tuple[str, ...] = (),
) -> Iterator[Listener]:
    port = port or free_port()
    extra = {"PAYSDK_CALLBACK_HEADER_VALUE": HEADER_VALUE} if env is None else env
    if base_url is not None:
        extra["PAYSDK_BASE_URL"] = base_url
    cmd = [
        sys.executable,
        "-m",
        "paysdk_cli",
        *global_args,
        "callbacks",
        "listen",
        "--port",
        str(port),
        *args,
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(config_dir, **extra),
    )
    url = f"http://127.0.0.1:{port}/callbacks"
    try:
        _wait_until_listening(proc, url)
        yield Listener(proc, url)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_verifies_deduplicates_and_prints_each_event_once(config_dir: Path) -> None:
    body = callback_body()
    other = callback_body(status="declined")
    with start_listener(config_dir, global_args=("-o", "json")) as listener:
        assert listener.post(body, value=None).status_code == 401
        assert listener.post(body, value="wrong").status_code == 401
        assert listener.post(b"not json").status_code == 400
        assert listener.post(callback_body(amount="10.50")).status_code == 400
        first = listener.post(body)
        duplicate = listener.post(body)
        assert listener.post(other).status_code == 200
        code, out, err = listener.stop()

    assert (first.status_code, first.json()["outcome"]) == (200, "processed")
    assert (duplicate.status_code, duplicate.json()["outcome"]) == (200, "duplicate")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    event = json.loads(lines[0])
    assert event["eventId"] == json.loads(body)["eventId"]
    assert '"amount":10.50' in lines[0]  # exact
    assert json.loads(lines[1])["status"] == "declined"
    assert "duplicate delivery" in err
    # each of the four refused deliveries (2 x 401, 2 x 400) is reported once, by the listener
    # (the receiver's own log warning must not reach Python's last-resort handler as a second line)
    refusals = [line for line in err.splitlines() if "refused" in line]
    assert len(refusals) == 4, err
    assert sum("refused a callback with HTTP 401" in line for line in refusals) == 2
    assert sum("refused a callback with HTTP 400" in line for line in refusals) == 2
    assert HEADER_VALUE not in out + err
    assert "Traceback" not in err


def test_the_header_is_checked_before_any_body_byte_is_read(config_dir: Path) -> None:
    # A body is declared but never sent: a listener that read it first would wait forever, so the
    # prompt 401 shows the header was checked first, and the refusal is reported once.
    with start_listener(config_dir) as listener:
        port = int(listener.url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(
                b"POST /callbacks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 200000\r\n\r\n"
            )
            answer = sock.makefile("rb").read()  # the 401, then the close
        code, _out, err = listener.stop()
    assert answer.startswith(b"HTTP/1.1 401"), answer[:100]
    assert code == 0, err
    assert sum("refused a callback with HTTP 401" in line for line in err.splitlines()) == 1, err


def test_table_output_is_one_human_line_per_event_and_get_is_405(config_dir: Path) -> None:
    with start_listener(config_dir, global_args=("-o", "table")) as listener:
        assert httpx.get(listener.url, timeout=60).status_code == 405
        assert listener.post(callback_body()).status_code == 200
        code, out, _ = listener.stop(signal.SIGTERM)
    assert code == 0
    (line,) = out.splitlines()
    assert "approved" in line
    assert "10.50 GTQ" in line
    assert "ref=PL-ABCDEFGHJK" in line


def test_max_events_exits_0_and_timeout_without_enough_events_exits_1(config_dir: Path) -> None:
    for _ in range(3):  # the last event's answer is written whole before the listener exits
        with start_listener(config_dir, "--max-events", "1") as listener:
            answer = listener.post(callback_body())
            assert answer.status_code == 200
            assert answer.json()["outcome"] == "processed"
            assert listener.proc.wait(timeout=READY_TIMEOUT) == 0
            out = listener.proc.communicate()[0]
        assert len(out.splitlines()) == 1

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "paysdk_cli",
            "callbacks",
            "listen",
            "--port",
            str(free_port()),
            "--max-events",
            "1",
            "--timeout",
            "0.5",
        ],
        capture_output=True,
        text=True,
        env=subprocess_env(config_dir, PAYSDK_CALLBACK_HEADER_VALUE=HEADER_VALUE),
        timeout=READY_TIMEOUT,
    )
    assert proc.returncode == 1
    assert "timed out after 0.5 s with 0 of 1 events" in proc.stderr


def test_header_value_file_accepts_several_values_and_env_var_option(
    config_dir: Path, tmp_path: Path
) -> None:
    values = tmp_path / "values.txt"
    values.write_text("old-value\nnew-value\n")
    with start_listener(
        config_dir, "--header-value-file", str(values), "--header-name", "X-Hook", env={}
    ) as lst:
        assert lst.post(callback_body(), value="old-value", name="X-Hook").status_code == 200
        assert lst.post(callback_body(), value="new-value", name="x-hook").status_code == 200
        assert lst.post(callback_body(), value=HEADER_VALUE, name="X-Hook").status_code == 401
        code, out, _ = lst.stop()
    assert code == 0
    assert len(out.splitlines()) == 2

    with start_listener(config_dir, "--header-value-env", "MY_VALUE", env={"MY_VALUE": "mine"}) as lst:
        assert lst.post(callback_body(), value="mine").status_code == 200
        assert lst.stop()[0] == 0


def test_no_header_value_is_a_usage_error_and_there_is_no_bare_value_option() -> None:
    result = run_cli("callbacks", "listen", "--port", "0", "--timeout", "0")
    assert result.exit_code == 2
    assert "PAYSDK_CALLBACK_HEADER_VALUE" in result.stderr
    assert run_cli("callbacks", "listen", "--header-value", "x").exit_code == 2
    unset = run_cli("callbacks", "listen", "--header-value-env", "NOPE_NOT_SET")
    assert unset.exit_code == 2


def test_dedup_db_survives_a_restart(config_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "dedup.sqlite"
    body = callback_body()
    with start_listener(config_dir, "--dedup-db", str(db)) as listener:
        assert listener.post(body).json()["outcome"] == "processed"
        listener.stop()
    with start_listener(config_dir, "--dedup-db", str(db)) as listener:
        assert listener.post(body).json()["outcome"] == "duplicate"
        code, out, _ = listener.stop()
    assert code == 0
    assert out == ""


class _Sink(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[dict[str, str], bytes]]] = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def sink() -> Iterator[tuple[str, type[_Sink]]]:
    handler = type("Sink", (_Sink,), {"received": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", handler
    server.shutdown()
    server.server_close()


def test_forward_to_sends_verified_new_events_with_same_headers(
    config_dir: Path, sink: tuple[str, type[_Sink]]
) -> None:
    url, handler = sink
    body = callback_body()
    with start_listener(config_dir, "--forward-to", url) as listener:
        assert listener.post(body).status_code == 200
        assert listener.post(body).status_code == 200  # duplicate: not forwarded
        assert listener.post(callback_body(), value="wrong").status_code == 401  # not forwarded
        handler.status = 500
        failing = callback_body()
        assert listener.post(failing).status_code == 502  # the sender will retry ...
        handler.status = 200
        assert listener.post(failing).json()["outcome"] == "processed"  # ... and the retry goes through
        code, out, err = listener.stop()

    assert code == 0
    assert [b for _, b in handler.received] == [body, failing, failing]
    headers = handler.received[0][0]
    assert headers["x-callback-token"] == HEADER_VALUE
    assert headers["content-type"] == "application/json"
    assert len(out.splitlines()) == 2
    assert "answered 502" in err


# ------------------------------------------------------------------ framing: chunked, CL+TE (D341)


def _raw(listener: Listener, data: bytes) -> bytes:
    """Send ``data`` on one connection and read every byte answered until the listener closes it."""
    port = int(listener.url.split(":")[2].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        return sock.makefile("rb").read()


def _head(body_headers: str, *, close: bool = False) -> bytes:
    connection = "Connection: close\r\n" if close else ""
    return (
        f"POST /callbacks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"X-Callback-Token: {HEADER_VALUE}\r\n{connection}{body_headers}\r\n"
    ).encode()


def _chunked(body: bytes, size: int = 7) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    framed = b"".join(f"{len(part):x};ext=1\r\n".encode() + part + b"\r\n" for part in parts)
    return framed + b"0\r\nX-Trailer: yes\r\n\r\n"


def test_a_chunked_delivery_is_received_and_the_next_request_on_the_connection_too(
    config_dir: Path,
) -> None:
    first, second = callback_body(), callback_body(status="declined")
    data = (
        _head("Transfer-Encoding: chunked\r\n")
        + _chunked(first)
        + _head(f"Content-Length: {len(second)}\r\n", close=True)
        + second
    )
    with start_listener(config_dir, global_args=("-o", "json")) as listener:
        answer = _raw(listener, data)
        code, out, err = listener.stop()
    assert answer.count(b"HTTP/1.1 ") == 2, answer
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert answer.split(b"HTTP/1.1 ")[2].startswith(b"200"), answer
    assert code == 0, err
    assert [json.loads(line)["status"] for line in out.splitlines()] == ["approved", "declined"]
    assert "Warning" not in err


def test_content_length_with_transfer_encoding_is_400_and_the_smuggled_request_is_not_answered(
    config_dir: Path,
) -> None:
    smuggled = callback_body(status="declined")
    hidden = _head(f"Content-Length: {len(smuggled)}\r\n") + smuggled
    body = b"0\r\n\r\n" + hidden
    data = _head(f"Content-Length: {len(body)}\r\nTransfer-Encoding: chunked\r\n") + body
    with start_listener(config_dir, global_args=("-o", "json")) as listener:
        answer = _raw(listener, data)  # the listener closes the connection after its 400
        code, out, err = listener.stop()
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert answer.count(b"HTTP/1.1 ") == 1, answer
    assert b"Transfer-Encoding" in answer
    assert out == ""  # neither request printed an event
    assert code == 0, err
    assert "refused a callback with HTTP 400" in err


@pytest.mark.parametrize(
    ("framing", "status"),
    [
        (b"40001\r\n", b"413"),  # one chunk over the 256 KiB cap: refused before it is read
        (b"zz\r\n{}\r\n0\r\n\r\n", b"400"),  # not a hexadecimal size
        (b"2\r\n{}XX0\r\n\r\n", b"400"),  # a chunk not followed by CRLF
    ],
)
def test_a_bad_or_oversized_chunked_body_is_refused(config_dir: Path, framing: bytes, status: bytes) -> None:
    with start_listener(config_dir) as listener:
        answer = _raw(listener, _head("Transfer-Encoding: chunked\r\n") + framing)
        code, out, err = listener.stop()
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
    assert out == ""
    assert code == 0, err


# ------------------------------------------------------------------ a 3xx answer exits 7 (D342)


class _Redirect(BaseHTTPRequestHandler):
    def _redirect(self) -> None:
        self.send_response(302)
        self.send_header("Location", "https://api.example.test/secret-path?token=abc")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _redirect

    def log_message(self, format: str, *args: Any) -> None:
        return


def test_a_redirect_from_the_control_plane_exits_7_with_a_hint(config_dir: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "paysdk_cli", "callbacks", "listen", "--sandbox-client", "acme"],
            capture_output=True,
            text=True,
            env=subprocess_env(config_dir, PAYSDK_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}"),
            timeout=READY_TIMEOUT,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 7, proc.stderr
    assert "HTTP 302" in proc.stderr
    assert "redirect to https://api.example.test" in proc.stderr
    assert "secret-path" not in proc.stderr
    assert "token=abc" not in proc.stderr
    assert "Traceback" not in proc.stderr
