"""Live conformance of the reference server to its own ``/openapi.json`` (D133), with openapi-core.

:class:`Recorder` is an ASGI middleware added (outermost) to the app of a test: it keeps every
request/answer pair of the public API, as the server received and sent it (the control plane
``/_sandbox``, ``/openapi.json`` and ``/docs`` are not in the document and are not kept).
:meth:`Recorder.check` validates each pair against the document of that same running app:

* every answer: its status must be documented for the operation, with its media type, body schema and
  documented headers (a required header present; a present one matching its schema);
* the request of every answer below 400: its path, query, headers, security and body. A request the
  server refused may be malformed on purpose (the tests of refusals send strings as amounts, no token,
  broken JSON), so only the answer is checked for those.

The e2e and CLI suites, and the server's checkout tests, override ``server_recorder`` (tests/conftest.py)
with :func:`checked_server_recorder`: one recorder per test, checked at teardown,
so a test that drives the server through the SDK, the CLI or a browser fails when the document drifts
from what the server does. ``tests/server/test_openapi_conformance.py`` proves the check catches drifts.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import pytest
from fastapi import FastAPI
from openapi_core import OpenAPI
from openapi_core.datatypes import RequestParameters
from werkzeug.datastructures import Headers, ImmutableMultiDict

from paysdk.server.openapi import openapi_text

__all__ = ["Exchange", "Recorder", "checked_server_recorder", "conformance_errors", "openapi_of"]

#: Paths outside the document: the control plane, FastAPI's own pages and the icon a browser asks for.
_UNDOCUMENTED = ("/_sandbox", "/openapi.json", "/docs", "/redoc", "/favicon.ico")


@dataclass
class Exchange:
    """One request and its answer as they crossed the server's outermost layer."""

    method: str
    path: str
    query: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int = 0
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    response_body: bytes = b""

    def __str__(self) -> str:
        return f"{self.method} {self.path}{'?' + self.query if self.query else ''} -> {self.status}"


class _Request:
    """An :class:`Exchange`'s request as openapi-core reads one (``openapi_core.protocols.Request``)."""

    def __init__(self, exchange: Exchange) -> None:
        self._exchange = exchange
        headers = Headers(exchange.request_headers)
        self.parameters = RequestParameters(
            query=ImmutableMultiDict(
                [(k, v) for k, vs in parse_qs(exchange.query, keep_blank_values=True).items() for v in vs]
            ),
            header=headers,
            cookie=ImmutableMultiDict(),
        )
        # The public routes read their body as JSON whatever its Content-Type says (only the control plane
        # demands application/json, D92): a body sent without one is read as JSON here too.
        default = "application/json" if exchange.request_body else ""
        self.content_type = headers.get("content-type", default).lower()

    host_url = "http://testserver"  # the document's server is "/": any host

    @property
    def path(self) -> str:
        return self._exchange.path

    @property
    def method(self) -> str:
        return self._exchange.method.lower()

    @property
    def body(self) -> bytes | None:
        return self._exchange.request_body or None


class _Response:
    """An :class:`Exchange`'s answer as openapi-core reads one (``openapi_core.protocols.Response``)."""

    def __init__(self, exchange: Exchange) -> None:
        self.status_code = exchange.status
        self.headers = Headers(exchange.response_headers)
        self.content_type = self.headers.get("content-type", "").lower()
        self.data: Any = exchange.response_body or None  # bytes; the text of an event stream
        if self.content_type.startswith("text/event-stream") and exchange.response_body:
            self.data = exchange.response_body.decode(
                "utf-8"
            )  # an event stream is text (its schema: a string)


@functools.lru_cache(maxsize=32)
def _openapi(document_json: str) -> OpenAPI:
    return OpenAPI.from_dict(json.loads(document_json))


def openapi_of(document: Mapping[str, Any] | str) -> OpenAPI:
    """The openapi-core validator of ``document`` (a mapping, or its JSON text as
    :func:`paysdk.server.openapi.openapi_text` keeps it: no copy to key the cache on), checked as OpenAPI
    3.1 once, then cached."""
    return _openapi(document if isinstance(document, str) else json.dumps(document, sort_keys=True))


def _describe(error: BaseException) -> str:
    """The error and its causes, each with the header or parameter it names and the schema errors."""
    parts: list[str] = []
    cause: BaseException | None = error
    while cause is not None and len(parts) < 5:
        named = getattr(cause, "name", None)
        parts.append(f"{type(cause).__name__}{f' ({named})' if isinstance(named, str) else ''}: {cause}")
        for inner in getattr(cause, "schema_errors", ()) or ():
            parts.append(f"  - {getattr(inner, 'message', inner)} at {list(getattr(inner, 'path', []))}")
        cause = cause.__cause__ or cause.__context__
    return "\n    ".join(parts)


def conformance_errors(document: Mapping[str, Any] | str, exchanges: Iterable[Exchange]) -> list[str]:
    """One message per exchange that does not conform to ``document`` (module docstring): the
    operation, the status and what does not match."""
    validator = openapi_of(document)
    errors: list[str] = []
    for exchange in exchanges:
        request, response = _Request(exchange), _Response(exchange)
        try:
            validator.validate_response(request, response)
        except Exception as exc:
            errors.append(f"{exchange}: the answer does not match /openapi.json:\n    {_describe(exc)}")
        if exchange.status < 400:
            try:
                validator.validate_request(request)
            except Exception as exc:
                errors.append(f"{exchange}: the request does not match /openapi.json:\n    {_describe(exc)}")
    return errors


class Recorder:
    """Keeps the public exchanges of the apps it is installed on (module docstring). Thread-safe: the
    live server answers on its own thread."""

    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []
        self.apps: list[FastAPI] = []
        self._lock = threading.Lock()

    def install(self, app: FastAPI) -> None:
        """Add the recording layer to ``app`` (before it serves anything), outside every other layer."""
        app.add_middleware(_RecordingMiddleware, recorder=self)
        self.apps.append(app)

    def keep(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    def check(self) -> None:
        """Fail naming every exchange that does not conform to the document of the app it reached."""
        if not self.apps:
            return
        with self._lock:
            exchanges = list(self.exchanges)
        if not exchanges:
            return
        errors = conformance_errors(openapi_text(self.apps[0]), exchanges)
        assert not errors, f"{len(errors)} exchange(s) differ from /openapi.json:\n" + "\n".join(errors)


class _RecordingMiddleware:
    def __init__(self, app: Any, recorder: Recorder) -> None:
        self.app = app
        self.recorder = recorder

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        recorder = self.recorder
        if scope["type"] != "http" or path.startswith(_UNDOCUMENTED):
            await self.app(scope, receive, send)
            return
        exchange = Exchange(
            method=scope["method"],
            path=path,
            query=scope.get("query_string", b"").decode("latin-1"),
            request_headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]],
            request_body=b"",
        )
        body = bytearray()
        answer = bytearray()

        async def receiving() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
            return message

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
                exchange.response_headers = [
                    (bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in message["headers"]
                ]
            elif message["type"] == "http.response.body":
                answer.extend(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receiving, sending)
        finally:
            if exchange.status:
                exchange.request_body, exchange.response_body = bytes(body), bytes(answer)
                recorder.keep(exchange)


@pytest.fixture
def checked_server_recorder() -> Iterator[Recorder]:
    """``server_recorder`` of the suites that check their traffic (import it under that name): every
    public request/answer of the test's servers (``app``, ``live_server``), checked against the running
    app's ``/openapi.json`` when the test ends (D133)."""
    recorder = Recorder()
    yield recorder
    recorder.check()
