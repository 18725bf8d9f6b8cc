"""Helpers every router uses: raw credentials, derived addresses, OpenAPI fragments."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request

from paysdk.contracts.common import ErrorBody
from paysdk.server.auth import Credentials
from paysdk.server.context import get_context

__all__ = ["credentials", "error_responses", "json_body", "webview_url"]


def credentials(request: Request) -> Credentials:
    """The raw ``Authorization`` header (bytes, so non-ASCII values can be refused as absent, D20)."""
    for key, value in request.scope.get("headers", ()):
        if key.lower() == b"authorization":
            return Credentials(bytes(value))
    return Credentials(None)


def base_url(request: Request) -> str:
    """The server's public base address (no trailing slash; D90): never the request's ``Host``."""
    return get_context(request).addresses.base_url(request.scope)


def webview_url(request: Request) -> str:
    """``{webview_url}``: the public base address + ``/checkout`` (D90)."""
    return get_context(request).addresses.webview_url(request.scope)


def inline_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$defs`` references replaced by the definitions (OpenAPI fragments)."""
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(copy.deepcopy(definitions[ref.removeprefix("#/$defs/")]))
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    result = resolve(schema)
    assert isinstance(result, dict)
    return result


def json_body(model: type[BaseModel], *, required: bool = True, description: str = "") -> dict[str, Any]:
    """``openapi_extra`` documenting a raw-parsed JSON body with the contract model's schema."""
    schema = inline_schema(model.model_json_schema(by_alias=True, mode="validation"))
    return {
        "requestBody": {
            "required": required,
            "description": description or model.__doc__ or "",
            "content": {"application/json": {"schema": schema}},
        }
    }


_DESCRIPTIONS = {
    400: "Malformed JSON body (ownCode null, D20) or amount out of range (ownCode 2003).",
    401: "No, unknown or non-ASCII credentials (ownCode null), or a token of the other environment (2007).",
    404: "Unknown transaction uid (ownCode null, D21).",
    409: "Invalid field (5000), wrong client slug (5004), or a state conflict (ownCode null).",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the given error statuses, all with the D1 error body. The answers of the
    server-wide layer (``413``, ``408``, ``421``, the idempotency key's) are added to every operation by
    :mod:`paysdk.server.openapi`."""
    return {status: {"model": ErrorBody, "description": _DESCRIPTIONS[status]} for status in statuses}
