"""Raw request bodies: read bytes, parse with :func:`paysdk._json.loads`, validate with a contract model.

Decisions: a body that is not UTF-8 JSON, holds ``NaN``/``Infinity``/``1e400``-like numbers or lone
surrogate escapes is ``400``, ``ownCode: null``, ``details[0].field = "body"`` (D20). A JSON value that is
not an object is ``409 / 5000`` (D20, D3). Contract violations are ``409 / 5000`` naming each field by
its camelCase wire name (D3). Strings holding NUL characters and values nested more than
:data:`MAX_DEPTH` deep are refused as ``409 / 5000`` too, so no input can reach the database in a form
it would reject (which would otherwise be a 500).

Bounds while the body streams (D85), on every route: :class:`BoundedReceive` wraps the ASGI ``receive``
of each request (:class:`paysdk.server.asgi.body_bounds.BodyBoundsLayer` installs it, from its
:class:`BodyBounds`). A declared ``Content-Length`` above :data:`MAX_BODY_BYTES` is ``413`` before any
byte is read (:func:`declared_too_large`); a body that grows past it is cut off with ``413``; a body
not complete within :data:`BODY_TIMEOUT` seconds of its first read is ``408`` (within a second more).
Both answers are the D1 body naming ``body`` and carry ``Connection: close``, so the rest of the body
is never read. A request that declares both ``Content-Length`` and ``Transfer-Encoding`` is ``400``
naming ``Transfer-Encoding``, with ``Connection: close``, before any read (:func:`framing_refusal`,
RFC 9112 section 6.1, D390): what follows its head on the connection is never answered.

Upload routes (D110): the routes of :data:`UPLOAD_ROUTES` take files (``multipart/form-data`` or
``application/octet-stream``) and have their own, larger bounds: :data:`MAX_UPLOAD_BYTES` (256 MiB,
``create_app(upload_limit=)``) within :data:`UPLOAD_TIMEOUT` seconds (``upload_timeout=``), enforced the
same way. Their handlers read the body as a stream (``request.stream()``), never whole. A family that adds
an upload route lists it in :data:`UPLOAD_ROUTES`; the control plane's JSON-only rule (D92) lets these
two content types through on them (D111).

A client that disconnects before the end of its body is one ``INFO`` log line and
:class:`starlette.requests.ClientDisconnect` (the body bounds layer, :mod:`paysdk.server.asgi.body_bounds`,
ends the request quietly).
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Receive, Scope

from paysdk import _json
from paysdk.server.errors import APIProblem, problem_from_validation

__all__ = [
    "BODY_TIMEOUT",
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "MAX_UPLOAD_BYTES",
    "UPLOAD_CONTENT_TYPES",
    "UPLOAD_ROUTES",
    "UPLOAD_ROUTE_LIMITS",
    "UPLOAD_TIMEOUT",
    "BodyBounds",
    "BodyRefused",
    "BoundedReceive",
    "declared_framing",
    "declared_too_large",
    "framing_refusal",
    "is_upload_route",
    "length_above",
    "parse_json_object",
    "read_json_object",
    "template_regex",
    "validate",
]

log = logging.getLogger("paysdk.server")

M = TypeVar("M", bound=BaseModel)

#: Largest accepted request body.
MAX_BODY_BYTES = 1 << 20
#: Deepest accepted nesting of arrays/objects inside a body.
MAX_DEPTH = 16
#: Seconds a request body may take from its first read to its last byte (D85): at most 1 MiB, so any
#: client faster than ~35 KB/s is never cut off.
BODY_TIMEOUT = 30.0
#: Largest accepted body on an upload route (D110).
MAX_UPLOAD_BYTES = 256 << 20
#: Seconds an upload route's body may take from its first read to its last byte (D110): 256 MiB within
#: it needs about 450 KB/s.
UPLOAD_TIMEOUT = 600.0
#: The routes that take uploads, as ``(method, path)``; a ``{name}`` segment matches any one segment.
UPLOAD_ROUTES: tuple[tuple[str, str], ...] = (
    ("POST", "/_sandbox/uploads"),
    ("POST", "/v1/subscriptions/charges/upload-csv"),
    ("POST", "/cms/rest/app/partners/{partnerId}/cardholders/upload"),
    ("POST", "/reports/payfac/conciliation/upload/{affiliation}"),
    ("POST", "/leads/files/upload/{fileName}"),
)
#: Upload routes with a smaller bound than the server's ``upload_limit`` (exact paths): the batch charge
#: CSV takes at most 16 MiB (D156: 5,000 rows never need more).
UPLOAD_ROUTE_LIMITS: dict[tuple[str, str], int] = {("POST", "/v1/subscriptions/charges/upload-csv"): 16 << 20}
#: An onboarding document takes at most 10 MiB (D195); a route with a ``{name}`` segment is matched as
#: :data:`UPLOAD_ROUTES` are.
UPLOAD_ROUTE_LIMITS[("POST", "/leads/files/upload/{fileName}")] = 10 << 20
#: A settlement file for reconciliation takes at most 16 MiB (D194).
UPLOAD_ROUTE_LIMITS[("POST", "/reports/payfac/conciliation/upload/{affiliation}")] = 16 << 20
#: These bounds are the contracts' (``MAX_CSV_BYTES``, ``MAX_DOCUMENT_BYTES``, ``MAX_FILE_BYTES``; a test
#: holds them equal, importing the contracts here would cost the start ~0.2 s), and ``/openapi.json``
#: states each route's from here (D391).
#: The body types an upload route takes (media types, lower case).
UPLOAD_CONTENT_TYPES = (b"multipart/form-data", b"application/octet-stream")


def template_regex(template: str) -> str:
    """The regular expression of the paths a route template names: ``/leads/files/upload/{fileName}``
    matches ``/leads/files/upload/a.pdf`` (a ``{name}`` segment matches any one segment, and itself)."""
    return re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))


_UPLOAD_EXACT = frozenset((method, path) for method, path in UPLOAD_ROUTES if "{" not in path)
_UPLOAD_PATTERNS = tuple(
    (method, re.compile(template_regex(path) + "/?")) for method, path in UPLOAD_ROUTES if "{" in path
)
#: What every path :data:`_UPLOAD_PATTERNS` match starts with (their templates up to the first ``{``):
#: a path starting with none of them is no such route, without a regex (D501).
_UPLOAD_PREFIXES = tuple(path.partition("{")[0] for _method, path in UPLOAD_ROUTES if "{" in path)

#: The bounds of :data:`UPLOAD_ROUTE_LIMITS` whose paths have a ``{name}`` segment, as patterns.
_LIMIT_PATTERNS = tuple(
    (method, re.compile(template_regex(path) + "/?"), limit)
    for (method, path), limit in UPLOAD_ROUTE_LIMITS.items()
    if "{" in path
)


def is_upload_route(method: str, path: str) -> bool:
    """Whether ``method path`` is an upload route (:data:`UPLOAD_ROUTES`): one set lookup per request,
    and the patterns of the routes with a ``{name}`` segment only for a path starting as one (D501)."""
    if (method, path) in _UPLOAD_EXACT:
        return True
    if path.endswith("/") and (method, path.rstrip("/")) in _UPLOAD_EXACT:
        return True
    return path.startswith(_UPLOAD_PREFIXES) and any(
        want == method and pattern.fullmatch(path) for want, pattern in _UPLOAD_PATTERNS
    )


class BodyRefused(APIProblem):
    """``413`` (too large) or ``408`` (too slow) for a request body, raised while it streams (D85), or
    ``400`` for a body framed two ways (:func:`framing_refusal`, D390).

    The answer closes the connection (``Connection: close``): the rest of the body is never read.
    """

    @classmethod
    def too_large(cls, limit: int) -> BodyRefused:
        """The body is (or declares to be) larger than ``limit`` bytes."""
        return cls(
            413,
            None,
            "Request body too large.",
            [("body", f"exceeds {limit} bytes")],
            headers={"Connection": "close"},
        )

    @classmethod
    def too_slow(cls, timeout: float) -> BodyRefused:
        """The body did not arrive completely within ``timeout`` seconds."""
        return cls(
            408,
            None,
            "Request body timed out.",
            [("body", f"was not received completely within {timeout:g} seconds")],
            headers={"Connection": "close"},
        )

    @classmethod
    def framed_twice(cls) -> BodyRefused:
        """The request declares both ``Content-Length`` and ``Transfer-Encoding`` (RFC 9112 section 6.1)."""
        return cls(
            400,
            None,
            "A request may not declare both Content-Length and Transfer-Encoding.",
            [("Transfer-Encoding", "must not be sent with Content-Length (RFC 9112 section 6.1)")],
            headers={"Connection": "close"},
        )


def framing_refusal(scope: Scope) -> BodyRefused | None:
    """``400`` closing the connection for a request that declares both ``Content-Length`` and
    ``Transfer-Encoding`` (RFC 9112 section 6.1), else ``None``; checked before any read.

    h11 frames such a body by ``Transfer-Encoding`` and would keep the connection, so a second request
    hidden in the body (by a proxy in front that frames by ``Content-Length``) would be answered: request
    smuggling. The answer carries ``Connection: close``, so nothing after this request's head is read.
    """
    length, coded = declared_framing(scope)
    return BodyRefused.framed_twice() if length is not None and coded else None


def declared_framing(scope: Scope) -> tuple[bytes | None, bool]:
    """The request's ``Content-Length`` (its first value; ``None`` without one) and whether it declares
    ``Transfer-Encoding``: what :func:`framing_refusal` and :func:`declared_too_large` look at, found in
    one pass over the headers (the body bounds layer makes that one pass per request, D501)."""
    length: bytes | None = None
    coded = False
    for key, value in scope["headers"]:
        if key == b"content-length":  # ASGI servers give header names in lower case
            if length is None:
                length = value
        elif key == b"transfer-encoding":
            coded = True
    return length, coded


def length_above(length: bytes | None, limit: int) -> bool:
    """Whether a declared ``Content-Length`` value (:func:`declared_framing`) is above ``limit``."""
    if length is None:
        return False
    try:
        return int(length) > limit
    except ValueError:
        return False  # the server (h11) refuses a malformed length before the app runs


def declared_too_large(scope: Scope, limit: int) -> bool:
    """Whether the request declares a ``Content-Length`` above ``limit`` (checked before any read)."""
    return length_above(declared_framing(scope)[0], limit)


_DISCONNECT: Message = {"type": "http.disconnect"}


class BodyBounds:
    """The body bounds of one server: ``limit`` bytes, ``timeout`` seconds per body (D85), and
    ``upload_limit``/``upload_timeout`` on upload routes (D110, :func:`is_upload_route`).

    :meth:`wrap` gives each request its :class:`BoundedReceive`. Slow bodies are found by one watchdog
    timer per server rather than a timer per read (the hot path pays a dict insert, not a timer): while
    any read is waiting, it looks every ``timeout / 4`` seconds (at most 1 s) and cancels the reads past
    their deadline, which then answer ``408``. A body is so refused between ``timeout`` and
    ``timeout`` plus that period after its first read.
    """

    __slots__ = (
        "_handle",
        "_loop",
        "_period",
        "_waiting",
        "limit",
        "timeout",
        "upload_limit",
        "upload_timeout",
    )

    def __init__(
        self,
        limit: int = MAX_BODY_BYTES,
        timeout: float = BODY_TIMEOUT,
        *,
        upload_limit: int = MAX_UPLOAD_BYTES,
        upload_timeout: float = UPLOAD_TIMEOUT,
    ) -> None:
        for name, value in (("body_limit", limit), ("upload_limit", upload_limit)):
            if not value >= 0:
                raise ValueError(f"{name}: must be a number of bytes, 0 or more, not {value!r}")
        for name, seconds in (("body_timeout", timeout), ("upload_timeout", upload_timeout)):
            if not seconds > 0:
                raise ValueError(f"{name}: must be a number of seconds above 0, not {seconds!r}")
        self.limit = limit
        self.timeout = timeout
        self.upload_limit = upload_limit
        self.upload_timeout = upload_timeout
        self._period = min(1.0, timeout / 4)
        self._waiting: dict[BoundedReceive, asyncio.Task[Any]] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def wrap(self, scope: Scope, receive: Receive, bounds: tuple[int, float] | None = None) -> BoundedReceive:
        """The bounded ``receive`` of one request; ``bounds``: its :meth:`bounds_of`, when known."""
        return BoundedReceive(self, scope, receive, bounds)

    def limit_for(self, scope: Scope) -> int:
        """The largest body of this request (:meth:`bounds_of` its method and path)."""
        return self.bounds_of(scope["method"], scope["path"])[0]

    def bounds_of(self, method: str, path: str) -> tuple[int, float]:
        """The largest body (bytes) and the time to send it (seconds) of a request ``method path``:
        :attr:`upload_limit` (or the upload route's own smaller bound, :data:`UPLOAD_ROUTE_LIMITS`) and
        :attr:`upload_timeout` on an upload route, else :attr:`limit` and :attr:`timeout`. ``path`` may
        be a route's template (``/leads/files/upload/{fileName}``): the bounds ``/openapi.json`` states
        for the operation are these, the ones enforced (D391)."""
        if not is_upload_route(method, path):
            return self.limit, self.timeout
        own = UPLOAD_ROUTE_LIMITS.get((method, path.rstrip("/") or "/"))
        if own is None and _LIMIT_PATTERNS:
            own = next(
                (n for m, pattern, n in _LIMIT_PATTERNS if m == method and pattern.fullmatch(path)), None
            )
        return (self.upload_limit if own is None else min(own, self.upload_limit)), self.upload_timeout

    def _enter(self, reader: BoundedReceive, loop: asyncio.AbstractEventLoop) -> None:
        if loop is not self._loop:  # first use, or another event loop (tests): start afresh
            self._loop, self._handle = loop, None
            self._waiting.clear()
        task = asyncio.current_task(loop)
        if task is None:  # pragma: no cover - ASGI servers always run the app in a task
            return
        self._waiting[reader] = task
        if self._handle is None:
            self._handle = loop.call_later(self._period, self._check)

    def _leave(self, reader: BoundedReceive) -> None:
        self._waiting.pop(reader, None)

    def _check(self) -> None:
        self._handle = None
        if self._loop is None:  # pragma: no cover - set before the first timer
            return
        now = self._loop.time()
        for reader, task in list(self._waiting.items()):
            if reader.deadline <= now:
                del self._waiting[reader]
                reader.expired = True
                task.cancel()
        if self._waiting:
            self._handle = self._loop.call_later(self._period, self._check)


class BoundedReceive:
    """An ASGI ``receive`` that enforces the body bounds while the body streams (module docstring).

    Counts the bytes of ``http.request`` messages and raises :class:`BodyRefused` past the limit or
    when the body is not complete ``timeout`` seconds after the first read (see :class:`BodyBounds`).
    Once the body is complete, calls pass straight through (a streaming answer may wait for
    ``http.disconnect`` as long as it likes); once the body was refused, every call answers
    ``http.disconnect`` (nothing more is read).
    """

    __slots__ = (
        "_bounds",
        "_limit",
        "_receive",
        "_received",
        "_scope",
        "_state",
        "_timeout",
        "deadline",
        "expired",
    )

    def __init__(
        self,
        bounds: BodyBounds,
        scope: Scope,
        receive: Receive,
        limits: tuple[int, float] | None = None,
    ) -> None:
        self._bounds = bounds
        self._scope = scope
        self._receive = receive
        self._limit, self._timeout = (
            limits if limits is not None else bounds.bounds_of(scope["method"], scope["path"])
        )
        self._received = 0
        self._state = 0  # 0 reading, 1 complete, 2 refused or disconnected
        self.deadline = 0.0
        self.expired = False

    async def __call__(self) -> Message:
        if self._state:
            return await self._receive() if self._state == 1 else _DISCONNECT
        bounds = self._bounds
        loop = asyncio.get_running_loop()
        if not self.deadline:
            self.deadline = loop.time() + self._timeout
        bounds._enter(self, loop)
        try:
            message = await self._receive()
        except asyncio.CancelledError:
            if not self.expired:
                raise
            task = asyncio.current_task(loop)
            if task is not None:
                task.uncancel()
            self._state = 2
            raise BodyRefused.too_slow(self._timeout) from None
        finally:
            bounds._leave(self)
        kind = message["type"]
        if kind == "http.request":
            self._received += len(message.get("body", b""))
            if self._received > self._limit:
                self._state = 2
                raise BodyRefused.too_large(self._limit)
            if not message.get("more_body", False):
                self._state = 1
        elif kind == "http.disconnect":
            self._state = 2
            log.info(
                "client disconnected before the end of its request body: %s %s (%d bytes received)",
                self._scope["method"],
                self._scope["path"],
                self._received,
            )
            raise ClientDisconnect()
        return message


def _malformed(message: str) -> APIProblem:
    return APIProblem(400, None, f"Malformed request body: {message}.", [("body", message)])


def _scan(value: Any, path: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise APIProblem.invalid_field(path or "body", "is nested too deeply")
    if isinstance(value, str):
        _check_text(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key, path or "body")
            _scan(item, f"{path}.{key}" if path else key, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _scan(item, f"{path}.{index}" if path else str(index), depth + 1)


def _check_text(text: str, field: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _malformed("holds an invalid unicode escape (lone surrogate)") from None
    if "\x00" in text:
        raise APIProblem.invalid_field(field or "body", "must not contain NUL characters")


def parse_json_object(raw: bytes, *, allow_empty: bool = False) -> dict[str, Any]:
    """Parse ``raw`` as a JSON object (see the module docstring for the errors)."""
    if len(raw) > MAX_BODY_BYTES:
        raise APIProblem(413, None, "Request body too large.", [("body", f"exceeds {MAX_BODY_BYTES} bytes")])
    if not raw.strip():
        if allow_empty:
            return {}
        raise _malformed("is empty; a JSON object is required")
    try:
        value = _json.loads(raw)
    except _json.JSONDecodeError as exc:
        raise _malformed(str(exc)) from None
    if not isinstance(value, dict):
        raise APIProblem(
            409, 5000, "Invalid request: the body must be a JSON object.", [("body", "must be a JSON object")]
        )
    # Only a `\u` escape can put a NUL or a lone surrogate into a string (the text is strict UTF-8 JSON),
    # and nesting deeper than MAX_DEPTH needs more brackets than that: a body with neither needs no walk.
    if b"\\u" in raw or raw.count(b"{") + raw.count(b"[") > MAX_DEPTH:
        _scan(value, "", 0)
    return value


async def read_json_object(request: Request, *, allow_empty: bool = False) -> dict[str, Any]:
    """Read and parse the request body (never ``request.json()``)."""
    return parse_json_object(await request.body(), allow_empty=allow_empty)


def validate(model: type[M], data: dict[str, Any]) -> M:
    """Validate ``data`` with a contract model; field errors become ``409 / 5000``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise problem_from_validation(list(exc.errors())) from None
