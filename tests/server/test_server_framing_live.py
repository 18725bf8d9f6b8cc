"""Request framing over a real socket (RFC 9112 section 6.1, D390): a request that declares both
``Content-Length`` and ``Transfer-Encoding`` is refused with ``400`` and its connection closed, so a
second request hidden in its body (request smuggling behind a proxy that frames by ``Content-Length``)
is never answered. The suite's ``live_server`` is uvicorn with ``paysdk serve``'s connection settings."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from paysdk.server.db import Database
from paysdk.testing._ready import free_port, wait_ready

#: What a proxy that frames by Content-Length forwards as one body, and h11 (by Transfer-Encoding) reads
#: as an empty chunked body followed by a second request.
SMUGGLED = b"0\r\n\r\nGET /_sandbox/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _accepts(port: int) -> bool:
    """The port accepts a connection (closed at once, with nothing sent)."""
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        return True


def _exchange(url: str, request: bytes) -> bytes:
    """Send ``request`` on a new connection and read until the server closes it (or 10 s pass)."""
    address = urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while True:
            try:
                data = sock.recv(65536)
            except TimeoutError:  # the connection stayed open: what this test exists to catch
                break
            if not data:
                break
            received += data
    return received


def _head(method: str, path: str, headers: list[str], body: bytes) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/transactions"),  # the fast lane
        ("POST", "/rest/cards/card_1/funds"),  # a route with a path parameter
        ("POST", "/_sandbox/clients"),  # the control plane
        ("GET", "/_sandbox/health"),
    ],
)
@pytest.mark.parametrize("length_first", [True, False], ids=["length-first", "encoding-first"])
def test_content_length_with_transfer_encoding_is_400_and_the_connection_closes(
    live_server: str, method: str, path: str, length_first: bool
) -> None:
    framing = [f"Content-Length: {len(SMUGGLED)}", "Transfer-Encoding: chunked"]
    headers = ["Content-Type: application/json", *(framing if length_first else framing[::-1])]
    answer = _exchange(live_server, _head(method, path, headers, SMUGGLED))

    assert answer.count(b"HTTP/1.1 ") == 1, answer  # the hidden GET /_sandbox/health is never answered
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 400 Bad Request"
    fields = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    assert fields["connection"] == "close"
    assert fields["x-request-id"].startswith("req_")
    problem = json.loads(body)
    assert problem["ownCode"] is None
    assert [detail["field"] for detail in problem["details"]] == ["Transfer-Encoding"]


def test_a_body_framed_one_way_keeps_the_connection(live_server: str) -> None:
    """The same two requests framed by Content-Length alone, then by Transfer-Encoding alone, are two
    requests on one kept connection: both answered (the refusal is about the two framings together)."""
    first = _head("GET", "/_sandbox/health", ["Content-Length: 0"], b"")
    second = _head("GET", "/_sandbox/health", ["Connection: close"], b"")
    assert _exchange(live_server, first + second).count(b"HTTP/1.1 200 OK") == 2
    chunked = _head("POST", "/_sandbox/reset", ["Transfer-Encoding: chunked"], b"0\r\n\r\n")
    answer = _exchange(live_server, chunked + second)
    assert answer.count(b"HTTP/1.1 ") == 2, answer
    assert b"HTTP/1.1 400" not in answer


def test_paysdk_serve_refuses_it_from_its_first_request(tmp_path: Path) -> None:
    """``paysdk serve`` on a database that holds the schema starts with its boot stage (D310), which
    answers a plain readiness probe itself: a probe framed two ways is the full server's, refused."""
    url = f"sqlite:///{tmp_path / 'server.db'}"
    database = Database(url)
    database.create_schema()
    database.dispose()
    port = free_port()
    paysdk = str(Path(sys.executable).with_name("paysdk"))
    process = subprocess.Popen(
        [paysdk, "serve", "--port", str(port), "--db", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        # Listening (the first answer must be the smuggling one's: no HTTP probe before it).
        wait_ready(lambda: _accepts(port), what="paysdk serve", process=process)
        framing = [f"Content-Length: {len(SMUGGLED)}", "Transfer-Encoding: chunked"]
        answer = _exchange(base, _head("GET", "/_sandbox/health", framing, SMUGGLED))
        assert answer.count(b"HTTP/1.1 ") == 1, answer
        assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
        assert b"\r\nconnection: close\r\n" in answer.partition(b"\r\n\r\n")[0].lower() + b"\r\n"
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert "Traceback" not in err
