"""What several layers of :mod:`paysdk.server.asgi` read from a request's scope: a header, whether its
path is on the control plane, and a way to add headers to an answer's start."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import Message, Scope

#: The API documentation: never logged, faulted or idempotent, as the control plane.
DOC_PATHS = ("/openapi.json", "/docs", "/redoc", "/favicon.ico")


def header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of the header ``name`` (lower case), or ``None``."""
    size = len(name)
    for key, value in scope.get("headers", ()):
        if len(key) == size and key.lower() == name:
            return bytes(value)
    return None


def control_forms(prefixes: Iterable[str]) -> tuple[str, ...]:
    """Control-plane prefixes as ``prefix`` and ``prefix/``, the form :func:`is_control_path` reads."""
    return tuple(form for prefix in prefixes for form in (prefix, prefix + "/"))


def is_control_path(path: str, control: tuple[str, ...]) -> bool:
    """The control plane (``control``: :func:`control_forms` of the prefixes of the non-public families)
    and the API docs: never logged, faulted or idempotent."""
    return path in control or path.startswith(control[1::2]) or path in DOC_PATHS or path.startswith("/docs/")


def with_headers(message: Message, pairs: Iterable[tuple[bytes, bytes]]) -> Message:
    """An ``http.response.start`` message with ``pairs`` appended to its headers."""
    return {**message, "headers": [*message.get("headers", ()), *pairs]}
