"""``/openapi.json`` completed with what the server's ASGI layers add to every operation.

FastAPI documents each route from its declaration; the answers of
the layers of :mod:`paysdk.server.asgi` are added here, once, to every operation of the
generated document (the control plane is not in it):

* ``X-Request-Id`` on every response (D65), pattern :data:`REQUEST_ID_PATTERN`;
* ``421`` when the ``Host`` is not served (D91; not when the server answers any host);
* ``429`` (with ``Retry-After``) and ``5XX``: the faults the control plane injects (``rate_limit``,
  ``error``), and a server error (D133);
* ``413`` and ``408`` (the body bounds, with the limit and timeout this server enforces on the operation:
  an upload route's own, D85, D110, D391) on operations that take a body: a documented request body, or
  ``POST``/``PUT``/``PATCH`` (the checkout's forms, and the idempotency layer reads any body sent with a
  key);
* on the operations :func:`paysdk.server.families.honours_idempotency_key` accepts for the served
  families' registrations (D17): the optional
  ``Idempotency-Key`` header, ``Idempotent-Replayed`` on the answers a replay may repeat, the key's
  ``400`` (malformed key), ``409`` (still in progress) and ``422`` (another body), extending the
  descriptions of statuses the operation already documents.

Every error added has the D1 body (:class:`paysdk.contracts.common.ErrorBody`). FastAPI's generic
``422`` validation answer, which this server never sends (its validation errors are D1 bodies, with the
statuses each route documents), is taken out. Last, every description and summary is made plain
Markdown for an API user (:func:`paysdk.server.openapi_text.plain_descriptions`: no reST, no decision
ids; D483). :func:`install_openapi` wraps ``app.openapi``: the document is completed when FastAPI
generates it and cached with it.

Every app of one shape (the same families, routes, body bounds and host rule) serves the same document,
and FastAPI spends about half a second of CPU generating it (a pydantic schema per model of ~150
routes). A process that makes many apps (a test suite, a merchant's suite on the pytest plugin) so
generates it once per shape: the completed document is kept as JSON by :func:`install_openapi` and each
app parses its own copy (D760).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI

from paysdk.contracts.common import ErrorBody
from paysdk.server.addresses import ServerAddresses
from paysdk.server.bodies import BodyBounds
from paysdk.server.families import FAMILIES, Family, honours_idempotency_key, idempotent_prefixes

__all__ = ["REQUEST_ID_PATTERN", "complete_openapi", "install_openapi", "openapi_text"]

#: The core's security scheme: a client's (merchant's) token; the families register theirs
#: (:attr:`paysdk.server.families.Family.security_schemes`).
_MERCHANT_TOKEN: dict[str, dict[str, Any]] = {
    "merchantToken": {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": "The client's sandbox or production token, raw or with `Bearer ` (D9); the token "
        "of the other environment is 401 / 2007.",
    },
}

#: What every ``X-Request-Id`` value matches (:func:`paysdk.server.errors.new_request_id`, D65).
REQUEST_ID_PATTERN = r"^req_[0-9a-f]{32}$"

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_BODY_METHODS = frozenset({"post", "put", "patch"})
_ERROR_BODY = "#/components/schemas/ErrorBody"
#: FastAPI's own validation-error shape and its part, never sent by this server.
_FASTAPI_422 = "#/components/schemas/HTTPValidationError"
_FASTAPI_SCHEMAS = ("HTTPValidationError", "ValidationError")
_REQUEST_ID = "X-Request-Id"
_REPLAYED = "Idempotent-Replayed"
_KEY = "Idempotency-Key"
#: Statuses the ASGI layers answer themselves, never stored for a replay (nor is a 5xx).
_NEVER_REPLAYED = frozenset({"408", "413", "421", "429"})
_FAULT_429 = (
    "Too many requests: a `rate_limit` fault injected through the sandbox's control plane "
    "(POST /_sandbox/faults); ownCode null; `Retry-After` gives the seconds to wait."
)
_SERVER_5XX = (
    "A server error: an `error` fault injected through the sandbox's control plane (POST "
    "/_sandbox/faults, with the status it names), or a bug of the server (500); ownCode null, never replayed."
)

_HEADERS: dict[str, dict[str, Any]] = {
    _REQUEST_ID: {
        "description": "The id of this answer, minted by the server (a client's own X-Request-Id is "
        "never echoed) and shown in the request log (D65).",
        "required": True,
        "schema": {"type": "string", "pattern": REQUEST_ID_PATTERN},
    },
    _REPLAYED: {
        "description": "`true` when this answer is the stored answer of an earlier request with the same "
        "Idempotency-Key, replayed (D17); absent otherwise.",
        "required": False,
        "schema": {"type": "string", "enum": ["true"]},
    },
}
_RETRY_AFTER: dict[str, Any] = {
    "description": "Seconds to wait before retrying.",
    "required": True,
    "schema": {"type": "string", "pattern": "^[0-9]+$"},
}
_PARAMETER: dict[str, Any] = {
    "name": _KEY,
    "in": "header",
    "required": False,
    "description": "Makes the request safe to retry for 24 h (D17): the same key, method, path and "
    "credentials with the same body replays the stored answer (with `Idempotent-Replayed: true`); "
    "with another body it is 422; while the first request runs, 409. 5xx answers are not stored.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
}
_KEY_400 = (
    "An Idempotency-Key that is blank, longer than 255 characters or not ASCII (ownCode null, "
    "details names Idempotency-Key)."
)
_KEY_409 = (
    "A request with the same Idempotency-Key is still being processed (ownCode null, details names "
    "Idempotency-Key): retry with the same key later (D17)."
)
_KEY_422 = (
    "The Idempotency-Key was used with another request body (ownCode null, details names "
    "Idempotency-Key; D17)."
)


def _size(size: int) -> str:
    """``268435456 bytes (256 MiB)``; the bytes alone when not a whole number of MiB."""
    mib, rest = divmod(size, 1 << 20)
    return f"{size} bytes" + (f" ({mib} MiB)" if mib and not rest else "")


def _body_descriptions(limit: int, timeout: float) -> dict[str, str]:
    """The ``413`` and ``408`` of an operation whose body may hold ``limit`` bytes sent within ``timeout``
    seconds: the bounds the server enforces on it (:meth:`BodyBounds.bounds_of`, D391)."""
    closed = "ownCode null, details names `body`; the answer carries `Connection: close` (D85)."
    return {
        "413": f"Request body larger than {_size(limit)}: a declared Content-Length over it is refused "
        f"before a byte is read, a longer body when it crosses the limit; {closed}",
        "408": f"Request body not received completely within {timeout:g} seconds of its first read; {closed}",
    }


_421 = (
    "The Host header names a host this server does not answer (not a loopback name, its own address, the "
    "--public-url host or an --allowed-host), before routing; ownCode null, details names `Host` (D91)."
)


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": _ERROR_BODY}}}}


def _schema_ref(response: dict[str, Any]) -> Any:
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return schema.get("$ref") if isinstance(schema, dict) else None


def _is_error_body(response: dict[str, Any]) -> bool:
    return bool(_schema_ref(response) == _ERROR_BODY)


def _add_cause(responses: dict[str, Any], status: str, description: str) -> None:
    """Document ``status`` with the D1 body for one more cause: a new response, or the sentence added to
    the description of a D1 response already there."""
    response = responses.get(status)
    if response is None or not _is_error_body(response):
        responses[status] = _error(description)
    elif description not in response.get("description", ""):
        response["description"] = f"{response.get('description', '').rstrip()} Or: {description}".strip()


def complete_openapi(
    document: dict[str, Any],
    bounds: BodyBounds,
    addresses: ServerAddresses,
    families: Sequence[Family] = FAMILIES,
) -> None:
    """Add the answers of the server-wide layer (module docstring) to every operation of ``document``
    (``families``: the registrations served, which say where ``Idempotency-Key`` is honoured)."""
    prefixes = idempotent_prefixes(families)
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    if "ErrorBody" not in schemas:
        error_schema = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(error_schema.pop("$defs", {}))
        schemas["ErrorBody"] = error_schema
    schemes = components.setdefault("securitySchemes", {})  # the routes' ``auth`` (D131)
    schemes.update(_MERCHANT_TOKEN)
    for family in families:
        schemes.update(family.security_schemes)
    components.setdefault("headers", {}).update(_HEADERS)
    components.setdefault("parameters", {})[_KEY] = _PARAMETER
    for path, item in document.get("paths", {}).items():
        for method in _METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            responses: dict[str, Any] = operation.setdefault("responses", {})
            if "422" in responses and _schema_ref(responses["422"]) == _FASTAPI_422:
                del responses["422"]
            if not addresses.any_host:
                responses["421"] = _error(_421)
            own_429 = "429" in responses  # the route's own 429 (7204) carries no Retry-After
            _add_cause(responses, "429", _FAULT_429)
            retry_after = {**_RETRY_AFTER, "required": not own_429}
            responses["429"].setdefault("headers", {})["Retry-After"] = retry_after
            responses.setdefault("5XX", _error(_SERVER_5XX))
            if "requestBody" in operation or method in _BODY_METHODS:
                bounded = _body_descriptions(*bounds.bounds_of(method.upper(), path))
                responses["413"] = _error(bounded["413"])
                responses["408"] = _error(bounded["408"])
            idempotent = honours_idempotency_key(method.upper(), path, prefixes)
            if idempotent:
                parameters = operation.setdefault("parameters", [])
                if not any(p.get("$ref", "").endswith("/" + _KEY) for p in parameters):
                    parameters.append({"$ref": f"#/components/parameters/{_KEY}"})
                _add_cause(responses, "400", _KEY_400)
                _add_cause(responses, "409", _KEY_409)
                _add_cause(responses, "422", _KEY_422)
            for status, response in responses.items():
                headers = response.setdefault("headers", {})
                headers[_REQUEST_ID] = {"$ref": f"#/components/headers/{_REQUEST_ID}"}
                if idempotent and status[:1] in ("2", "4") and status not in _NEVER_REPLAYED:
                    headers[_REPLAYED] = {"$ref": f"#/components/headers/{_REPLAYED}"}
            operation["responses"] = dict(sorted(responses.items()))
    if _FASTAPI_422 not in json.dumps(document):
        for name in _FASTAPI_SCHEMAS:
            schemas.pop(name, None)
    # Imported with the first document: its patterns (~7 ms) are no part of a start (D614).
    from paysdk.server.openapi_text import plain_descriptions

    plain_descriptions(document)  # the docstrings' reST and decision ids are for engineers (D483)


#: Completed documents as JSON, by the shape of the apps that serve them (module docstring, D760), with
#: the families they were made for (held, so that the ids in the shape stay theirs).
_DOCUMENTS: dict[tuple[object, ...], tuple[tuple[Family, ...], str]] = {}
#: Where :func:`install_openapi` keeps :func:`openapi_text`'s function on the app (``app.state``: on the
#: app itself, so that nothing global holds an app).
_TEXT_ATTRIBUTE = "paysdk_openapi_text"


def openapi_text(app: FastAPI) -> str:
    """``app``'s ``/openapi.json`` document as JSON text: the one text kept for the app's shape (the
    same object for every app of that shape until its routes change), without the parse and copy of
    ``app.openapi()``. For checking many apps' traffic against their document (the test suite's
    conformance recorder keys its validators on it). ``LookupError``: no :func:`install_openapi` on
    ``app``."""
    text: Callable[[], str] | None = getattr(app.state, _TEXT_ATTRIBUTE, None)
    if text is None:
        raise LookupError("this app's document was not completed by install_openapi")
    return text()


def install_openapi(
    app: FastAPI, bounds: BodyBounds, addresses: ServerAddresses, families: Sequence[Family] = FAMILIES
) -> None:
    """Make ``app.openapi()`` (``/openapi.json``) answer FastAPI's document completed by
    :func:`complete_openapi`: generated and completed once per shape of app in the process (module
    docstring), then served from FastAPI's cache (``app.openapi_schema``) until routes are added."""
    generate: Callable[[], dict[str, Any]] = app.openapi
    made_for: list[tuple[object, ...]] = []  # the shape app.openapi_schema was made for

    def shape() -> tuple[object, ...]:
        routes = tuple((type(r).__name__, getattr(r, "path", ""), getattr(r, "name", "")) for r in app.routes)
        limits = (bounds.limit, bounds.timeout, bounds.upload_limit, bounds.upload_timeout)
        served = tuple((family.name, id(family)) for family in families)
        return (served, limits, addresses.any_host, app.title, app.version, routes)

    def openapi() -> dict[str, Any]:
        now = shape()
        if app.openapi_schema is None or made_for != [now]:
            made = _DOCUMENTS.get(now)
            if made is None:
                app.openapi_schema = None  # FastAPI generates afresh
                document = generate()
                complete_openapi(document, bounds, addresses, families)
                _DOCUMENTS[now] = (tuple(families), json.dumps(document))
            else:
                document = json.loads(made[1])
            app.openapi_schema = document
            made_for[:] = [now]
        return app.openapi_schema

    def text() -> str:
        made = _DOCUMENTS.get(shape())
        if made is None:  # made here, or (the cache emptied) this app's own document
            document = openapi()
            made = _DOCUMENTS.get(made_for[0]) or ((), json.dumps(document))
        return made[1]

    app.openapi = openapi  # type: ignore[method-assign]
    setattr(app.state, _TEXT_ATTRIBUTE, text)
