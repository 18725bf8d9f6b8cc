"""The upload sink ``POST /_sandbox/uploads`` and the upload route bounds (D110, D111), in process: size
and SHA-256 per part, clear 400s for malformed multipart (never a 500), the content types the control
plane lets through on upload routes, the larger per-route limit, and faults that name the sink.
SDK uploads over a socket: ``tests/e2e/test_uploads.py``."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from paysdk import _json
from paysdk.server import create_app
from paysdk.server.bodies import MAX_BODY_BYTES, MAX_UPLOAD_BYTES, UPLOAD_ROUTES, is_upload_route
from paysdk.server.faults import matches

sqlite_only = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
pytestmark = sqlite_only

SINK = "/_sandbox/uploads"
BOUNDARY = "b0undary"
MULTIPART = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
OCTETS = {"Content-Type": "application/octet-stream"}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def part(name: str, content: bytes, filename: str | None = None, content_type: str | None = None) -> bytes:
    disposition = f'Content-Disposition: form-data; name="{name}"'
    if filename is not None:
        disposition += f'; filename="{filename}"'
    head = disposition + (f"\r\nContent-Type: {content_type}" if content_type else "")
    return f"--{BOUNDARY}\r\n{head}\r\n\r\n".encode() + content + b"\r\n"


END = f"--{BOUNDARY}--\r\n".encode()


@pytest.fixture
def small_app(db_url: str) -> Iterator[FastAPI]:
    application = create_app(db_url, start_ticker=False, upload_limit=100_000)
    try:
        yield application
    finally:
        application.state.paysdk.db.dispose()


def problem(response: httpx.Response) -> tuple[int, Any, str, str]:
    body = _json.loads(response.content)
    detail = body["details"][0]
    return response.status_code, body["ownCode"], detail["field"], detail["message"]


async def test_parts_are_hashed_not_kept(asgi_client: httpx.AsyncClient) -> None:
    first = bytes(range(256)) * 1000
    body = part("note", b"hello") + part("data", first, "a.bin", "application/x-bin") + END
    response = await asgi_client.post(SINK, content=body, headers=MULTIPART)
    assert response.status_code == 200, response.text
    assert _json.loads(response.content) == {
        "parts": [
            {"name": "note", "filename": None, "contentType": None, "size": 5, "sha256": sha(b"hello")},
            {
                "name": "data",
                "filename": "a.bin",
                "contentType": "application/x-bin",
                "size": len(first),
                "sha256": sha(first),
            },
        ]
    }
    raw = await asgi_client.post(SINK, content=first, headers=OCTETS)
    assert _json.loads(raw.content)["parts"] == [
        {
            "name": None,
            "filename": None,
            "contentType": "application/octet-stream",
            "size": len(first),
            "sha256": sha(first),
        }
    ]


async def test_a_streamed_multipart_body_of_many_chunks(asgi_client: httpx.AsyncClient) -> None:
    payload = bytes(range(251)) * 4001  # the boundary may straddle chunk edges

    async def chunks() -> AsyncIterator[bytes]:
        whole = part("file", payload, "f.bin") + END
        for start in range(0, len(whole), 977):
            yield whole[start : start + 977]

    response = await asgi_client.post(SINK, content=chunks(), headers=MULTIPART)
    assert response.status_code == 200, response.text
    assert _json.loads(response.content)["parts"][0]["sha256"] == sha(payload)


@pytest.mark.parametrize(
    ("headers", "body", "field", "words"),
    [
        ({"Content-Type": "multipart/form-data"}, b"x", "Content-Type", "without a boundary"),
        (MULTIPART, part("file", b"abc"), "body", "ends before the closing boundary"),
        (MULTIPART, b"garbage that is no multipart at all", "body", ""),
        (
            MULTIPART,
            f"--{BOUNDARY}\r\nX-Other: 1\r\n\r\nabc\r\n".encode() + END,
            "body",
            "no Content-Disposition",
        ),
        (
            MULTIPART,
            f"--{BOUNDARY}\r\nContent-Disposition: form-data\r\n\r\nabc\r\n".encode() + END,
            "body",
            "has no name",
        ),
        (
            MULTIPART,
            f"--{BOUNDARY}\r\nContent-Disposition: attachment; name=x\r\n\r\nabc\r\n".encode() + END,
            "body",
            "not form-data",
        ),
        (MULTIPART, END, "body", "no part"),
        (
            MULTIPART,
            f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=x\r\nX-Big: {'a' * 20000}\r\n".encode(),
            "body",
            "",
        ),
    ],
)
async def test_malformed_multipart_is_a_clear_400(
    asgi_client: httpx.AsyncClient, headers: dict[str, str], body: bytes, field: str, words: str
) -> None:
    response = await asgi_client.post(SINK, content=body, headers=headers)
    status, own_code, named, message = problem(response)
    assert (status, own_code, named) == (400, None, field), response.text
    assert words in message


async def test_content_types_on_the_control_plane(asgi_client: httpx.AsyncClient) -> None:
    for content_type in ("application/json", "text/plain", "text/csv", "application/x-www-form-urlencoded"):
        response = await asgi_client.post(SINK, content=b"{}", headers={"Content-Type": content_type})
        assert problem(response)[:3] == (415, None, "Content-Type")
    # Other control-plane routes still take JSON only (D92).
    refused = await asgi_client.post("/_sandbox/clock/advance", content=b"x", headers=OCTETS)
    assert problem(refused)[:3] == (415, None, "Content-Type")
    # Web pages stay out (D92's Origin rule holds on upload routes too).
    foreign = await asgi_client.post(SINK, content=b"x", headers={**OCTETS, "Origin": "https://evil.example"})
    assert problem(foreign)[:3] == (403, None, "Origin")
    # An empty POST is an empty raw body.
    empty = await asgi_client.post(SINK)
    assert _json.loads(empty.content)["parts"][0]["size"] == 0


async def test_upload_routes_have_their_own_larger_bound(asgi_client: httpx.AsyncClient) -> None:
    assert MAX_UPLOAD_BYTES == 256 * 1024 * 1024
    big = b"z" * (MAX_BODY_BYTES + 10)
    accepted = await asgi_client.post(SINK, content=big, headers=OCTETS)
    assert _json.loads(accepted.content)["parts"][0]["size"] == len(big)
    elsewhere = await asgi_client.post(
        "/_sandbox/clients", content=big, headers={"Content-Type": "application/json"}
    )
    assert problem(elsewhere)[:3] == (413, None, "body")


async def test_the_upload_limit_is_configurable_and_enforced_while_streaming(small_app: FastAPI) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=small_app), base_url="http://testserver"
    ) as client:
        declared = await client.post(SINK, content=b"a" * 100_001, headers=OCTETS)
        assert problem(declared)[:3] == (413, None, "body")
        assert "100000 bytes" in problem(declared)[3]

        async def endless() -> AsyncIterator[bytes]:  # a valid part that never ends
            yield f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="f"; filename="f"\r\n\r\n'.encode()
            for _ in range(100):
                yield b"b" * 10_000

        streamed = await client.post(SINK, content=endless(), headers=MULTIPART)
        assert problem(streamed)[:3] == (413, None, "body")
        fits = await client.post(SINK, content=b"a" * 100_000, headers=OCTETS)
        assert fits.status_code == 200
    with pytest.raises(ValueError, match="upload_limit"):
        create_app("sqlite://", start_ticker=False, upload_limit=-1)
    with pytest.raises(ValueError, match="upload_timeout"):
        create_app("sqlite://", start_ticker=False, upload_timeout=0)


async def test_the_sink_takes_only_faults_that_name_it(asgi_client: httpx.AsyncClient) -> None:
    for route in ("*", "POST *", "/_sandbox/uploads"):
        fault = await asgi_client.post(
            "/_sandbox/faults",
            content=_json.dumps({"kind": "error", "route": route, "status": 503}),
            headers={"Content-Type": "application/json"},
        )
        assert fault.status_code == 201, fault.text
    answer = await asgi_client.post(SINK, content=b"x", headers=OCTETS)
    assert answer.status_code == 503  # the third fault; "*" and "POST *" are left for the public API
    again = await asgi_client.post(SINK, content=b"x", headers=OCTETS)
    assert again.status_code == 200
    remaining = _json.loads((await asgi_client.get("/_sandbox/faults")).content)
    assert [f["remaining"] for f in remaining] == [1, 1, 0]
    assert not matches("*", "POST", SINK)
    assert matches("POST /_sandbox/uploads", "POST", SINK)
    assert matches("/_sandbox/*", "POST", SINK)
    assert not matches("POST /_sandbox/uploads", "GET", SINK)


def test_upload_routes(db_url: str) -> None:
    del db_url  # (the module's parametrization)
    assert ("POST", SINK) in UPLOAD_ROUTES
    assert is_upload_route("POST", SINK)
    assert is_upload_route("POST", SINK + "/")
    assert not is_upload_route("GET", SINK)
    assert not is_upload_route("POST", "/_sandbox/clients")


async def test_the_sink_is_not_documented(asgi_client: httpx.AsyncClient) -> None:
    document = _json.loads((await asgi_client.get("/openapi.json")).content)
    assert not [path for path in document["paths"] if path.startswith("/_sandbox")]
    assert SINK not in document["paths"]
