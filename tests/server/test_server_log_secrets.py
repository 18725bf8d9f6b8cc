"""Secrets stay out of the server's logs (issue 8.9, D95): the request log keeps an allow-list of
headers and masks credential-like query parameters, and so does uvicorn's access log."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from server_helpers import auth, body, dumps, link_body
from uvicorn.logging import AccessFormatter

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app
from paysdk.server.asgi.request_log import mask_query
from paysdk.testing._ready import serve_in_thread

QUERY = (
    "token=abc-query-secret&amount=1&Access_Token=at-secret&%74oken=encoded-secret&currencyCode=GTQ&code=c0de"
)


def test_mask_query_matches_names_case_insensitively_by_word_or_exact_name() -> None:
    assert mask_query("/x") == "/x"
    assert mask_query("/x?") == "/x?"
    assert mask_query("/x?" + QUERY) == (
        "/x?token=****&amount=1&Access_Token=****&%74oken=****&currencyCode=GTQ&code=****"
    )
    masked = mask_query("/x?api_key=1&refresh_token=2&client_secret=3&X-Signature=4&passwd=5&otp=6&pin=7")
    assert masked.split("&") == [
        "/x?api_key=****",
        "refresh_token=****",
        "client_secret=****",
        "X-Signature=****",
        "passwd=****",
        "otp=****",
        "pin=****",
    ]
    # A bare name (no value) and unrelated names stay; "code" is matched whole, not inside "zipcode".
    assert mask_query("/x?debug&zipcode=01001&limit=5") == "/x?debug&zipcode=01001&limit=5"
    long_name = "x" * 100 + "_token"  # not cached (names over 64 characters), masked all the same
    assert mask_query(f"/x?{long_name}=v") == mask_query(f"/x?{long_name}=v") == f"/x?{long_name}=****"


async def test_request_log_keeps_only_allowed_headers_and_masks_query_secrets(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    answer = await asgi_client.post(
        "/transactions?" + QUERY,
        content=dumps(link_body(merchant)),
        headers={
            **auth(merchant),
            "X-Custom": merchant.sandbox_token,
            "X-Trace": "trace-value-9",
            "User-Agent": "agent/1.0",
            "Content-Type": "application/json",
        },
    )
    assert answer.status_code == 200, answer.text
    raw = (await asgi_client.get("/_sandbox/requests")).text
    for secret in (merchant.sandbox_token, "abc-query-secret", "at-secret", "encoded-secret", "c0de"):
        assert secret not in raw
    (entry,) = body(await asgi_client.get("/_sandbox/requests"))
    assert entry["path"] == (
        "/transactions?token=****&amount=1&Access_Token=****&%74oken=****&currencyCode=GTQ&code=****"
    )
    headers = entry["headers"]
    # Unknown headers are listed with their values masked, whatever their names.
    assert headers["x-custom"] == "****"
    assert headers["x-trace"] == "****"
    assert headers["authorization"] == "****"
    assert headers["user-agent"] == "agent/1.0"
    assert headers["content-type"] == "application/json"


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(
            AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=False)
        )
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def access_logged_server(db_url: str) -> Iterator[tuple[str, _Capture]]:
    """The server under uvicorn with its access log on (as ``paysdk serve`` runs it), lines captured."""
    application = create_app(db_url, start_ticker=False)
    capture = _Capture()
    access = logging.getLogger("uvicorn.access")
    with serve_in_thread(application, log_level="info", lifespan="on", access_log=True) as served:
        access.addHandler(capture)  # after uvicorn configured its loggers (and before any request)
        try:
            yield served.url, capture
        finally:
            access.removeHandler(capture)


def test_access_log_masks_query_secrets(access_logged_server: tuple[str, _Capture]) -> None:
    base, capture = access_logged_server
    with httpx.Client(base_url=base, timeout=60) as client:
        slug = client.post("/_sandbox/clients", json={}).json()["slug"]
        token = client.get(f"/_sandbox/clients/{slug}").json()["sandboxToken"]
        answer = client.post(
            "/transactions?" + QUERY,
            json={"amount": 1, "userId": "+50212345678", "channel": "wa", "client": slug, "ads": []},
            headers={"Authorization": token, "X-Custom": token},
        )
        assert answer.status_code == 200, answer.text
    deadline = time.monotonic() + 10
    while not any("/transactions?" in line for line in capture.lines) and time.monotonic() < deadline:
        time.sleep(0.02)
    output = "\n".join(capture.lines)
    assert (
        "/transactions?token=****&amount=1&Access_Token=****&%74oken=****&currencyCode=GTQ&code=****"
        in output
    )
    for secret in (token, "abc-query-secret", "at-secret", "encoded-secret", "c0de"):
        assert secret not in output
