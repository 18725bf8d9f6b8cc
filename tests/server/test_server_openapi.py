"""``/openapi.json`` says what the server-wide layer sends on every operation (D17, D65, D85, D91): the
``X-Request-Id`` header, ``421``, ``413``/``408`` where a body is taken, and on the idempotent POSTs the
``Idempotency-Key`` header, ``Idempotent-Replayed``, ``409`` and ``422``. The document is checked
structurally, and real answers of the server are checked against it."""

from __future__ import annotations

import asyncio
import gc
import json
import re
import weakref
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from openapi_spec_validator import validate as validate_spec
from server_helpers import auth, dumps, link_body
from starlette.types import Message, Scope

import paysdk.server.openapi as server_openapi
from paysdk.contracts.common import ErrorBody
from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app
from paysdk.server.errors import new_request_id
from paysdk.server.openapi import REQUEST_ID_PATTERN

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
ERROR_BODY = "#/components/schemas/ErrorBody"
#: Operations that honour Idempotency-Key (the middleware decides; checked live below), and some not.
IDEMPOTENT = {
    ("post", "/transactions"),
    ("post", "/transactions-hook"),
    ("post", "/api/v1/integrations/transactions"),
    ("post", "/api/v1/integrations/transactions/{uid}/dismiss"),
    ("post", "/rest/auth/login"),
    ("post", "/rest/users/logout"),
    ("post", "/rest/cards/{cardId}/funds"),
    ("post", "/rest/cards/{cardId}/block"),
}
NOT_IDEMPOTENT = {
    ("post", "/checkout/pay"),
    ("post", "/checkout/rails/{processor}"),
    ("put", "/rest/users/auth/otp"),
    ("patch", "/rest/cards/{cardId}"),
    ("get", "/rest/cards/{cardId}"),
}

#: The bounds of the upload routes (D110, D156, D195): their 413 and 408 say these, not the 1 MiB and
#: 30 s of the other routes (D391).
UPLOAD_BOUNDS = {
    ("post", "/v1/subscriptions/charges/upload-csv"): ("16777216 bytes (16 MiB)", "600 seconds"),
    ("post", "/cms/rest/app/partners/{partnerId}/cardholders/upload"): (
        "268435456 bytes (256 MiB)",
        "600 seconds",
    ),
    ("post", "/reports/payfac/conciliation/upload/{affiliation}"): ("16777216 bytes (16 MiB)", "600 seconds"),
    ("post", "/leads/files/upload/{fileName}"): ("10485760 bytes (10 MiB)", "600 seconds"),
}


async def document(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    spec: dict[str, Any] = response.json()
    return spec


def resolve(spec: dict[str, Any], node: Any) -> Any:
    """``node`` with its ``$ref`` (a local JSON pointer) followed, repeatedly."""
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert isinstance(ref, str), ref
        assert ref.startswith("#/"), ref
        node = spec
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            assert isinstance(node, dict), ref
            assert part in node, f"unresolved $ref {ref}"
            node = node[part]
    return node


def operations(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                yield method, path, item[method]


def headers_of(spec: dict[str, Any], response: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name.lower(): resolve(spec, header) for name, header in response.get("headers", {}).items()}


def is_error_body(spec: dict[str, Any], response: dict[str, Any]) -> bool:
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return bool(schema.get("$ref") == ERROR_BODY)


# ---------------------------------------------------------------------------------- the document


async def test_every_operation_documents_the_server_wide_answers(asgi_client: httpx.AsyncClient) -> None:
    spec = await document(asgi_client)
    assert not any(path.startswith("/_sandbox") for path in spec["paths"])
    seen = 0
    idempotent_seen = set()
    for method, path, operation in operations(spec):
        seen += 1
        where = f"{method.upper()} {path}"
        responses = operation["responses"]
        for response in responses.values():
            request_id = headers_of(spec, response)["x-request-id"]
            assert request_id["required"] is True, where
            assert request_id["schema"] == {"type": "string", "pattern": REQUEST_ID_PATTERN}, where
        assert is_error_body(spec, responses["421"]), where
        assert "`Host`" in responses["421"]["description"], where
        takes_body = "requestBody" in operation or method in ("post", "put", "patch")
        for status in ("413", "408"):
            assert (status in responses) is takes_body, (where, status)
            if takes_body:
                assert is_error_body(spec, responses[status]), where
                assert "`body`" in responses[status]["description"], where
        if takes_body:
            size, seconds = UPLOAD_BOUNDS.get((method, path), ("1048576 bytes (1 MiB)", "30 seconds"))
            assert f"larger than {size}:" in responses["413"]["description"], where
            assert f"within {seconds} of" in responses["408"]["description"], where
        parameters = [resolve(spec, parameter) for parameter in operation.get("parameters", [])]
        keys = [p for p in parameters if p["name"] == "Idempotency-Key" and p["in"] == "header"]
        if not keys:
            assert (method, path) not in IDEMPOTENT, where
            for response in responses.values():
                assert "idempotent-replayed" not in headers_of(spec, response), where
            continue
        idempotent_seen.add((method, path))
        assert method == "post", where
        assert (method, path) not in NOT_IDEMPOTENT, where
        (key,) = keys
        assert key["required"] is False
        assert key["schema"] == {"type": "string", "minLength": 1, "maxLength": 255}
        for status in ("400", "409", "422"):
            assert is_error_body(spec, responses[status]), (where, status)
            assert "Idempotency-Key" in responses[status]["description"], (where, status)
        assert "still being processed" in responses["409"]["description"]
        assert "another request body" in responses["422"]["description"]
        for status, response in responses.items():
            replayed = headers_of(spec, response).get("idempotent-replayed")
            if status.startswith("2"):
                assert replayed is not None, (where, status)
            if replayed is not None:
                assert replayed["required"] is False
                assert replayed["schema"] == {"type": "string", "enum": ["true"]}
        for status in ("408", "413", "421"):  # answered before the idempotency layer: never replays
            assert "idempotent-replayed" not in headers_of(spec, responses[status]), (where, status)
    assert seen >= 40
    assert all(re.search(REQUEST_ID_PATTERN, new_request_id()) for _ in range(100))  # what is minted
    assert idempotent_seen >= IDEMPOTENT
    assert len(idempotent_seen) >= 20


async def test_every_success_answer_declares_its_body(asgi_client: httpx.AsyncClient) -> None:
    """A 2xx the server answers with a body says so (D391: the repeat card association's 200 said
    nothing, though it answers the card)."""
    spec = await document(asgi_client)
    for method, path, operation in operations(spec):
        for status, response in operation["responses"].items():
            if status.startswith("2") and status != "204":
                assert response.get("content"), (method, path, status)


async def _declared(app: FastAPI, method: str, path: str, length: int) -> int:
    """The status of ``method path`` declaring a ``Content-Length`` of ``length`` and sending no byte
    (the ASGI app called directly: a client would send the bytes it declares)."""
    statuses: list[int] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/octet-stream"),
            (b"content-length", str(length).encode()),
        ],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
    }
    await app(scope, receive, send)
    return statuses[0]


#: The upload routes' bounds with the default options: 16, 256, 16 and 10 MiB.
_DEFAULT_UPLOADS = {op: int(size.split()[0]) for op, (size, _seconds) in UPLOAD_BOUNDS.items()}


@pytest.mark.parametrize(
    ("limits", "uploads"),
    [
        ({}, _DEFAULT_UPLOADS),
        ({"body_limit": 1000, "upload_limit": 3000}, dict.fromkeys(UPLOAD_BOUNDS, 3000)),
    ],
    ids=["defaults", "smaller"],
)
async def test_each_413_states_the_limit_the_server_enforces(
    db_url: str, limits: dict[str, Any], uploads: dict[tuple[str, str], int]
) -> None:
    """The size a 413's description states is the body the operation takes: a declared
    ``Content-Length`` one byte over it is 413, one of exactly it is not (D391: the upload routes said
    1 MiB where they take 256, 10 and 16 MiB). The lengths are only declared: no byte is sent."""
    application = create_app(db_url, start_ticker=False, **limits)
    try:
        spec = application.openapi()
        stated = {}
        for method, path, operation in operations(spec):
            if "413" not in operation["responses"]:
                continue
            found = re.search(r"larger than (\d+) bytes", operation["responses"]["413"]["description"])
            assert found, (method, path)
            limit = int(found.group(1))
            if limit != limits.get("body_limit", 1 << 20):
                stated[(method, path)] = limit
            concrete = re.sub(r"\{[^/]+\}", "x1", path)
            assert await _declared(application, method.upper(), concrete, limit + 1) == 413, (method, path)
            assert await _declared(application, method.upper(), concrete, limit) != 413, (method, path)
        assert stated == uploads  # the upload routes, each with its own bound; the others the body limit
    finally:
        application.state.paysdk.db.dispose()


async def test_existing_409_and_422_descriptions_are_extended_not_replaced(
    asgi_client: httpx.AsyncClient,
) -> None:
    spec = await document(asgi_client)
    create = spec["paths"]["/transactions"]["post"]["responses"]
    assert "Invalid field (5000)" in create["409"]["description"]
    assert "Idempotency-Key is still being processed" in create["409"]["description"]
    assert "Malformed JSON body" in create["400"]["description"]
    funds = spec["paths"]["/rest/cards/{cardId}/funds"]["post"]["responses"]
    assert "Insufficient funds (7303)" in funds["422"]["description"]
    assert "used with another request body" in funds["422"]["description"]
    # FastAPI's generic 422 shape (never sent: validation errors are D1 bodies) gives way to the D1 body.
    dismiss = spec["paths"]["/api/v1/integrations/transactions/{uid}/dismiss"]["post"]["responses"]
    assert is_error_body(spec, dismiss["422"])
    assert "422" not in spec["paths"]["/rest/cards/{cardId}"]["get"]["responses"]  # never sent there
    assert "HTTPValidationError" not in str(spec)


async def test_checkout_pages_keep_their_html_answers(asgi_client: httpx.AsyncClient) -> None:
    spec = await document(asgi_client)
    page = spec["paths"]["/checkout/"]["get"]["responses"]
    assert "text/html" in page["200"]["content"]
    assert "x-request-id" in headers_of(spec, page["200"])
    assert "413" not in page
    assert "421" in page
    form = spec["paths"]["/checkout/pay"]["post"]["responses"]
    assert "text/html" in form["403"]["content"]
    assert {"408", "413", "421"} <= set(form)


async def test_checkout_form_posts_are_documented(asgi_client: httpx.AsyncClient) -> None:
    spec = await document(asgi_client)
    fields = {
        "/checkout/pay": {"orderId", "formToken", "cardNumber", "expiry", "cvc", "name"},
        "/checkout/3ds": {"orderId", "formToken", "challengeId", "result"},
        "/checkout/rails/{processor}": {"orderId", "formToken", "outcome"},
    }
    for path, names in fields.items():
        operation = spec["paths"][path]["post"]
        body = operation["requestBody"]["content"]
        assert list(body) == ["application/x-www-form-urlencoded"], path
        assert set(body["application/x-www-form-urlencoded"]["schema"]["properties"]) == names, path
        responses = operation["responses"]
        redirect = responses["303"]
        assert "content" not in redirect, path  # a redirect has no body
        assert redirect["headers"]["Location"]["required"] is True, path
        for status in ("403", "404"):
            assert "text/html" in responses[status]["content"], (path, status)
        assert ("200" in responses) is (path == "/checkout/pay"), path  # the 3-D Secure challenge page
        assert ("400" in responses) is (path == "/checkout/pay"), path  # the form again, with its error
    assert "text/html" in spec["paths"]["/checkout/pay"]["post"]["responses"]["400"]["content"]
    assert "text/html" in spec["paths"]["/checkout"]["get"]["responses"]["200"]["content"]


async def test_operations_name_their_credentials(asgi_client: httpx.AsyncClient) -> None:
    spec = await document(asgi_client)
    schemes = spec["components"]["securitySchemes"]
    assert schemes["merchantToken"] == {**schemes["merchantToken"], "type": "apiKey", "name": "Authorization"}
    assert schemes["walletApplication"]["scheme"] == schemes["walletUser"]["scheme"] == "bearer"
    security = {(method, path): op.get("security") for method, path, op in operations(spec)}
    assert security[("post", "/transactions")] == [{"merchantToken": []}]
    assert security[("post", "/transactions-hook")] == []  # the key pair is in the body (D14)
    assert security[("post", "/api/v1/integrations/transactions/{uid}/dismiss")] == [{"merchantToken": []}]
    assert security[("post", "/rest/auth/login")] == []  # a signature in the body (D36)
    assert security[("post", "/rest/users/login")] == [{"walletApplication": []}]
    assert security[("get", "/rest/cards/{cardId}")] == [{"walletApplication": []}, {"walletUser": []}]
    for (method, path), required in security.items():
        # Every operation but the hosted checkout's pages and forms is declared with routers._common.route,
        # which always states its credentials (D131).
        assert (required is None) is path.startswith("/checkout"), (method, path)
        if required:
            assert "401" in spec["paths"][path][method]["responses"], (method, path)


async def test_the_document_is_structurally_valid_openapi_3_1(asgi_client: httpx.AsyncClient) -> None:
    # A kept validator first (openapi-spec-validator, which openapi-core brings), then the rules that
    # clients rely on beyond the schema of OpenAPI itself.
    spec = await document(asgi_client)
    validate_spec(spec)
    assert spec["openapi"].startswith("3.1.")
    assert isinstance(spec["info"]["title"], str)
    assert isinstance(spec["info"]["version"], str)
    name = re.compile(r"^[a-zA-Z0-9.\-_]+$")
    for kind, entries in spec["components"].items():
        assert all(name.match(key) for key in entries), kind

    def walk(node: Any) -> None:  # every $ref resolves
        if isinstance(node, dict):
            if "$ref" in node:
                resolve(spec, node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    operation_ids = [operation["operationId"] for _, _, operation in operations(spec)]
    assert len(operation_ids) == len(set(operation_ids))
    status = re.compile(r"^([1-5]XX|[1-5][0-9]{2}|default)$")
    for method, path, operation in operations(spec):
        where = f"{method.upper()} {path}"
        assert path.startswith("/"), path
        parameters = [resolve(spec, p) for p in operation.get("parameters", [])]
        parameters += [resolve(spec, p) for p in spec["paths"][path].get("parameters", [])]
        assert all(p["in"] in ("query", "header", "path", "cookie") and "schema" in p for p in parameters)
        pairs = [(p["name"].lower() if p["in"] == "header" else p["name"], p["in"]) for p in parameters]
        assert len(pairs) == len(set(pairs)), where
        placeholders = set(re.findall(r"\{([^}]+)\}", path))
        in_path = {p["name"] for p in parameters if p["in"] == "path"}
        assert in_path == placeholders, where
        assert all(p.get("required") is True for p in parameters if p["in"] == "path"), where
        assert operation["responses"], where
        for code, response in operation["responses"].items():
            assert status.match(code), (where, code)
            response = resolve(spec, response)
            assert isinstance(response["description"], str), (where, code)
            assert response["description"], (where, code)
            for header_name, header in response.get("headers", {}).items():
                assert header_name.lower() != "content-type", where
                header = resolve(spec, header)
                assert "schema" in header or "content" in header, (where, code, header_name)
            for media in response.get("content", {}).values():
                assert isinstance(media, dict), where


@pytest.fixture
def completions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One item per document generated and completed from here on, as in a process that made no app
    before (the process's documents of D760 forgotten)."""
    calls: list[int] = []
    original = server_openapi.complete_openapi

    def counted(*args: Any) -> None:
        calls.append(1)
        original(*args)

    monkeypatch.setattr(server_openapi, "complete_openapi", counted)
    monkeypatch.setattr(server_openapi, "_DOCUMENTS", {})
    return calls


async def test_the_document_is_built_once_and_cached(
    app: FastAPI, asgi_client: httpx.AsyncClient, completions: list[int]
) -> None:
    calls = completions
    answers = [(await asgi_client.get("/openapi.json")).content for _ in range(3)]
    assert answers[0] == answers[1] == answers[2]
    assert len(calls) == 1
    assert app.openapi() is app.openapi_schema


def _statuses(document: dict[str, Any]) -> set[str]:
    return {
        status for path in document["paths"].values() for op in path.values() for status in op["responses"]
    }


def test_apps_of_one_shape_share_one_generation_and_each_has_its_own_copy(
    db_url: str, tmp_path: Path, completions: list[int]
) -> None:
    """D760: a second app of the same families, routes, bounds and host rule parses the first one's
    document instead of generating it; another shape, or a route added, gets its own."""
    calls = completions
    apps = [
        create_app(db_url, start_ticker=False),
        create_app(f"sqlite:///{tmp_path / 'b.db'}", start_ticker=False),
    ]
    wider = create_app(f"sqlite:///{tmp_path / 'c.db'}", start_ticker=False, allowed_hosts=["*"])
    try:
        first, second = apps[0].openapi(), apps[1].openapi()
        assert len(calls) == 1
        assert first == second
        assert first is not second
        second["info"]["title"] = "changed"  # one app's copy is its own
        assert apps[0].openapi()["info"]["title"] == "paysdk reference server"
        assert _statuses(first) > _statuses(wider.openapi())  # any host: no 421 (D91)
        assert "421" in _statuses(first)
        assert len(calls) == 2

        async def extra() -> dict[str, str]:
            return {}

        apps[0].add_api_route("/extra-for-the-test", extra, methods=["GET"])
        assert "/extra-for-the-test" in apps[0].openapi()["paths"]
        assert len(calls) == 3
        assert "/extra-for-the-test" not in apps[1].openapi()["paths"]
    finally:
        for application in (*apps, wider):
            application.state.paysdk.db.dispose()


def test_the_text_of_one_shape_is_one_object_and_is_the_document(
    db_url: str, tmp_path: Path, completions: list[int]
) -> None:
    """openapi_text (what the conformance recorder keys its validators on): the kept JSON text, the same
    object for two apps of one shape, parsed nowhere; it is what ``app.openapi()`` answers, and follows a
    route added as the document does."""
    calls = completions
    apps = [
        create_app(db_url, start_ticker=False),
        create_app(f"sqlite:///{tmp_path / 'b.db'}", start_ticker=False),
    ]
    try:
        first, second = server_openapi.openapi_text(apps[0]), server_openapi.openapi_text(apps[1])
        assert first is second
        assert len(calls) == 1
        assert json.loads(first) == apps[1].openapi()

        async def extra() -> dict[str, str]:
            return {}

        apps[0].add_api_route("/extra-for-the-text", extra, methods=["GET"])
        assert "/extra-for-the-text" in json.loads(server_openapi.openapi_text(apps[0]))["paths"]
        assert server_openapi.openapi_text(apps[1]) is second
        assert len(calls) == 2
    finally:
        for application in apps:
            application.state.paysdk.db.dispose()
    # Nothing global holds an app for its text: a suite's apps are freed one by one.
    gone = weakref.ref(apps.pop(0))  # (the loop above still names the last one)
    gc.collect()
    assert gone() is None


async def test_the_document_follows_the_servers_options(db_url: str) -> None:
    application = create_app(
        db_url, start_ticker=False, allowed_hosts=["*"], body_limit=1000, body_timeout=2.5
    )
    try:
        spec = application.openapi()
    finally:
        application.state.paysdk.db.dispose()
    create = spec["paths"]["/transactions"]["post"]["responses"]
    assert "421" not in create  # a server answering any host never sends it
    assert "larger than 1000 bytes:" in create["413"]["description"]
    assert "within 2.5 seconds" in create["408"]["description"]


# ------------------------------------------------------------------------- real answers match it


def assert_documented(spec: dict[str, Any], method: str, path: str, response: httpx.Response) -> None:
    """The answer's status is documented for the operation, with every header it carries (of those the
    document describes) and every required one, and an error answer has the documented D1 body."""
    documented = spec["paths"][path][method]["responses"].get(str(response.status_code))
    assert documented is not None, (method, path, response.status_code)
    headers = headers_of(spec, documented)
    for header_name, header in headers.items():
        if header.get("required"):
            assert header_name in response.headers, header_name
    for header_name in ("x-request-id", "idempotent-replayed"):
        if header_name in response.headers:
            assert header_name in headers, (method, path, response.status_code, header_name)
            schema = headers[header_name]["schema"]
            value = response.headers[header_name]
            assert re.search(schema["pattern"], value) if "pattern" in schema else value in schema["enum"]
    if is_error_body(spec, documented):
        ErrorBody.model_validate_json(response.content)


async def test_real_413_421_and_replays_match_the_document(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    spec = await document(asgi_client)
    too_large = await asgi_client.post(
        "/transactions", content=b" " * (1 << 20) + b"{}", headers=auth(merchant)
    )
    assert too_large.status_code == 413
    assert_documented(spec, "post", "/transactions", too_large)

    misdirected = await asgi_client.get("/checkout/?orderId=x", headers={"Host": "rebinding.example"})
    assert misdirected.status_code == 421
    assert_documented(spec, "get", "/checkout/", misdirected)

    headers = {**auth(merchant), "Idempotency-Key": "openapi-1"}
    first = await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=headers)
    replay = await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=headers)
    other = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant, amount=Decimal("11.00"))), headers=headers
    )
    assert (first.status_code, replay.status_code, other.status_code) == (200, 200, 422)
    assert "idempotent-replayed" not in first.headers
    assert replay.headers["idempotent-replayed"] == "true"
    for answer in (first, replay, other):
        assert_documented(spec, "post", "/transactions", answer)

    # A wallet POST honours the key too, and a replayed error answer is documented as such.
    key = {"Idempotency-Key": "openapi-2"}
    refused = [await asgi_client.post("/rest/auth/login", content=b"{}", headers=key) for _ in range(2)]
    assert refused[0].status_code == refused[1].status_code >= 400
    assert refused[1].headers["idempotent-replayed"] == "true"
    for answer in refused:
        assert_documented(spec, "post", "/rest/auth/login", answer)

    # What the document lists without the key is not replayed.
    for method, path, url in [("put", "/rest/users/auth/otp", "/rest/users/auth/otp")]:
        answers = [await asgi_client.request(method, url, content=b"{}", headers=key) for _ in range(2)]
        assert "idempotent-replayed" not in answers[1].headers
        assert_documented(spec, method, path, answers[1])


async def test_a_key_still_in_progress_matches_the_document(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, hold_first_request: Any
) -> None:
    spec = await document(asgi_client)
    held = hold_first_request("/transactions")
    headers = {**auth(merchant), "Idempotency-Key": "openapi-3"}
    raw = dumps(link_body(merchant))
    first = asyncio.create_task(asgi_client.post("/transactions", content=raw, headers=headers))
    assert await asyncio.to_thread(held.entered.wait, 20)
    running = await asgi_client.post("/transactions", content=raw, headers=headers)
    held.release.set()
    assert (await first).status_code == 200
    assert running.status_code == 409
    assert_documented(spec, "post", "/transactions", running)


class _Stalled:
    """A body that sends one chunk and then stalls."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"cardNumber="
        await asyncio.sleep(60)
        yield b"4242424242424242"


async def test_a_real_408_on_a_checkout_form_matches_the_document(db_url: str) -> None:
    application = create_app(db_url, start_ticker=False, body_timeout=0.3)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application), base_url="http://testserver"
        ) as client:
            spec = await document(client)
            response = await client.post(
                "/checkout/pay",
                content=_Stalled(),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
    finally:
        application.state.paysdk.db.dispose()
    assert response.status_code == 408
    assert_documented(spec, "post", "/checkout/pay", response)
