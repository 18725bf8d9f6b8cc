"""Deprecation marks on every public operation (D196, D253-D255, D392): each operation ``/openapi.json``
lists, once marked through the control plane, answers with ``Deprecation``, ``Sunset`` and ``Link``
whatever its status, called with minimal input (path parameters ``x1``, an empty JSON object as body, no
credentials). The wallet (``/rest``) and backoffice (``/cms/rest``) operations, a success of the JWKS and
of the cardholder progress stream, and a marked upload's ``413`` (declared, or streamed past the limit)
are checked too. On SQLite and PostgreSQL (the marks are a table)."""

from __future__ import annotations

import re
import tempfile
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from cardholder_kit import Backoffice, csv_file, person
from fastapi import FastAPI

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app

SUNSET = datetime(2027, 6, 1, tzinfo=UTC)
LINK = "https://docs.example.com/versioning"
_METHODS = ("get", "put", "post", "delete", "patch")


def _public_operations() -> list[tuple[str, str]]:
    """``(METHOD, path)`` of every operation of the generated ``/openapi.json``."""
    with tempfile.TemporaryDirectory() as folder:
        application = create_app(f"sqlite:///{Path(folder) / 'doc.db'}", start_ticker=False)
        try:
            paths: dict[str, Any] = application.openapi()["paths"]
        finally:
            application.state.paysdk.db.dispose()
    return [(method.upper(), path) for path, item in paths.items() for method in _METHODS if method in item]


OPERATIONS = _public_operations()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def marked_app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    """One server per database for the module (the operations are many): each test marks and clears."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('marks') / 'server.db'}"
    else:
        from conftest import _empty_postgres_tables

        url = request.getfixturevalue("_postgres_database")
        _empty_postgres_tables(url)
    application = create_app(url, start_ticker=False)
    try:
        yield application
    finally:
        application.state.paysdk.db.dispose()


@pytest.fixture
async def client(marked_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=marked_app), base_url="http://testserver"
    ) as http:
        yield http
        assert (await http.delete("/_sandbox/deprecations")).status_code == 200


async def _mark(http: httpx.AsyncClient, operation: str) -> None:
    answer = await http.put(
        "/_sandbox/deprecations", json={"operation": operation, "sunset": SUNSET.isoformat(), "link": LINK}
    )
    assert answer.status_code == 200, answer.text


def _assert_marked(answer: httpx.Response, operation: str) -> None:
    where = f"{operation} -> {answer.status_code}"
    assert re.fullmatch(r"@\d+", answer.headers.get("deprecation", "")), where
    assert answer.headers.get("sunset") == "Tue, 01 Jun 2027 00:00:00 GMT", where
    assert answer.headers.get("link") == f'<{LINK}>; rel="deprecation"', where
    assert answer.headers.get("paysdk-deprecated-operation") == operation, where


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
async def test_every_operation_once_marked_sends_the_deprecation_headers(
    client: httpx.AsyncClient, method: str, path: str
) -> None:
    operation = f"{method} {path}"
    await _mark(client, operation)
    concrete = re.sub(r"\{[^/]+\}", "x1", path)
    body: dict[str, Any] | None = {} if method in ("POST", "PUT", "PATCH") else None
    answer = await client.request(method, concrete, json=body)
    _assert_marked(answer, operation)
    # Another operation is not marked by it.
    health = await client.get("/_sandbox/health")
    assert "deprecation" not in health.headers


def test_the_document_lists_the_wallet_and_backoffice_operations() -> None:
    """The parametrization above covers them all (D392: none of them carried the headers)."""
    assert sum(path.startswith("/rest/") for _, path in OPERATIONS) == 30
    # The spec's 7, and the cardholder batch results and lookup of D450-D451.
    assert sum(path.startswith("/cms/rest/") for _, path in OPERATIONS) == 9


async def test_a_success_of_the_jwks_and_of_the_progress_stream_is_marked(client: httpx.AsyncClient) -> None:
    jwks = "GET /rest/.well-known/jwks.json"
    await _mark(client, jwks)
    answer = await client.get("/rest/.well-known/jwks.json")
    assert answer.status_code == 200
    _assert_marked(answer, jwks)

    created = await client.post("/_sandbox/clients", json={})
    assert created.status_code == 201
    backoffice = Backoffice(client, SandboxClient.model_validate(created.json()))
    partner = await backoffice.partner()
    upload = await backoffice.upload(partner, csv_file([person(1)]))
    assert upload.status_code == 202, upload.text
    progress = "GET /cms/rest/app/partners/{partnerId}/cardholders/batch/{batchId}/progress"
    await _mark(client, progress)
    stream = await backoffice.progress_raw(partner, upload.json()["data"]["batchId"])
    assert stream.status_code == 200
    assert stream.headers["content-type"].startswith("text/event-stream")
    _assert_marked(stream, progress)


async def test_a_marked_uploads_413_is_marked(client: httpx.AsyncClient) -> None:
    """Refused before a byte is read (a declared length over the bound, before routing) and while the
    body streams (no length declared)."""
    operation = "POST /leads/files/upload/{fileName}"
    created = await client.post("/_sandbox/clients", json={})
    token = {"Authorization": created.json()["sandboxToken"]}
    lead = await client.post(
        "/leads",
        json={
            "business": {"legalName": "Sol", "taxId": "1"},
            "contact": {"name": "Ana", "email": "ana@sol.gt"},
            "country": "GT",
            "channels": ["wa"],
            "currencies": ["GTQ"],
        },
        headers=token,
    )
    assert lead.status_code == 201, lead.text
    target = f"/leads/files/upload/a.pdf?leadId={lead.json()['leadId']}"
    await _mark(client, operation)
    too_large = b"%PDF-" + b"0" * (10 << 20)
    headers = {**token, "Content-Type": "application/pdf"}
    declared = await client.post(target, content=too_large, headers=headers)
    assert declared.status_code == 413
    _assert_marked(declared, operation)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(too_large), 1 << 20):
            yield too_large[start : start + (1 << 20)]

    streamed = await client.post(target, content=chunks(), headers=headers)
    assert streamed.status_code == 413, streamed.text
    _assert_marked(streamed, operation)


def test_two_marked_templates_taking_one_path_are_told_apart_by_the_route() -> None:
    """``/rest/cards/users/users/permissions`` is a path of both templates below; the route that answered
    (its path without the mount prefix) names the operation (D392)."""
    from paysdk.server.deprecations import marked

    one = ((b"deprecation", b"@1"),)
    other = ((b"deprecation", b"@2"),)
    marks = {
        "GET /rest/cards/users/{authUserId}/permissions": one,
        "GET /rest/cards/{cardId}/users/permissions": other,
    }
    path = "/rest/cards/users/users/permissions"
    assert marked(marks, "GET", path, "/cards/{cardId}/users/permissions") is other
    assert marked(marks, "GET", path, "/cards/users/{authUserId}/permissions") is one
    assert marked(marks, "GET", path) in (one, other)
    assert marked(marks, "POST", path) is None
    assert marked(marks, "GET", "/rest/cards/crd_1/users/permissions/x") is None
    assert marked(marks, "GET", "/rest/cards/crd_1/users/permissions") is other
