"""Idempotency keys (D17): a ``POST`` with ``Idempotency-Key`` under the prefixes of a family registered
with ``idempotent_posts`` is remembered for 24 h (virtual clock), scoped by key, method, path and the
``Authorization`` header. The same key and body replays the stored answer (header
``Idempotent-Replayed: true``); another body is ``422``, ``ownCode: null``; a request still running with
that key is ``409`` (the IETF ``Idempotency-Key`` draft's statuses), both with ``details`` naming
``Idempotency-Key``. 5xx answers are not stored, so a retry runs again; nor are event streams
(``text/event-stream``: passed through as they come, never kept in memory). The key's claim and the
stored answer are written in the group commit (D259); the answer is stored before its last byte leaves,
so a retry after it always replays it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, select, update
from sqlalchemy.engine import Connection
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from paysdk.server.asgi._scope import header
from paysdk.server.bodies import BodyRefused
from paysdk.server.context import ServerContext, Statement, virtual_now
from paysdk.server.core_tables import IdempotencyRow
from paysdk.server.errors import APIProblem

__all__ = ["IDEMPOTENCY_TTL", "Idempotency", "honours_idempotency_key", "idempotent_paths"]

IDEMPOTENCY_TTL = timedelta(hours=24)

#: The exact paths and the path starts (``prefix/``) under which a ``POST`` honours ``Idempotency-Key``.
IdempotentPaths = tuple[frozenset[str], tuple[str, ...]]


def idempotent_paths(prefixes: tuple[str, ...] | list[str]) -> IdempotentPaths:
    """The :data:`IdempotentPaths` of the prefixes of the families whose ``POST`` routes honour the key."""
    return frozenset(prefixes), tuple(p.rstrip("/") + "/" for p in prefixes)


def honours_idempotency_key(method: str, path: str, paths: IdempotentPaths) -> bool:
    """Whether a request ``method path`` with ``Idempotency-Key`` is made idempotent: a ``POST`` under
    ``paths`` (:func:`idempotent_paths`)."""
    if method != "POST":
        return False
    exact, starts = paths
    return path in exact or path.startswith(starts)


@dataclass(frozen=True, slots=True)
class _Stored:
    verdict: str  # proceed | replay | mismatch | in_progress
    status: int = 0
    content_type: str | None = None
    body: bytes = b""


_IDEMPOTENCY = cast(Table, IdempotencyRow.__table__)
_STORED = Statement(
    select(
        _IDEMPOTENCY.c.body_sha256,
        _IDEMPOTENCY.c.state,
        _IDEMPOTENCY.c.status_code,
        _IDEMPOTENCY.c.content_type,
        _IDEMPOTENCY.c.response_body,
        _IDEMPOTENCY.c.expires_at,
    )
    .where(_IDEMPOTENCY.c.scope == bindparam("key"))
    .with_for_update()
)
_FORGET = delete(_IDEMPOTENCY).where(_IDEMPOTENCY.c.scope == bindparam("key"))  # rare: plain Core
_NEW_KEY_COLUMNS = ("scope", "body_sha256", "state", "created_at", "expires_at")
#: The first request of a key: ``INSERT ... ON CONFLICT DO NOTHING`` (a concurrent first request of the
#: same key, committed meanwhile, makes the row count 0: "in progress"), per dialect.
_CLAIM: dict[str, Statement] = {}


def _claim_statement(dialect_name: str) -> Statement | None:
    """The claim's statement for a dialect, built on first use: importing a dialect's ``insert`` imports
    the dialect, and a server runs on one (PostgreSQL's costs ~20 ms of CPU at start, issue 12, D307)."""
    claim = _CLAIM.get(dialect_name)
    if claim is None:
        if dialect_name == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            claim = Statement(sqlite_insert(_IDEMPOTENCY).on_conflict_do_nothing(), _NEW_KEY_COLUMNS)
        elif dialect_name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as postgresql_insert

            claim = Statement(
                postgresql_insert(_IDEMPOTENCY).on_conflict_do_nothing().returning(_IDEMPOTENCY.c.scope),
                _NEW_KEY_COLUMNS,
            )
        else:
            return None
        claim = _CLAIM.setdefault(dialect_name, claim)  # two first requests at once keep one
    return claim


_DONE = Statement(
    update(_IDEMPOTENCY)
    .where(_IDEMPOTENCY.c.scope == bindparam("key"))
    .values(
        state="done",
        status_code=bindparam("code"),
        content_type=bindparam("ctype"),
        response_body=bindparam("answer"),
    )
)


def _claimed(connection: Connection, params: dict[str, Any]) -> bool:
    """``INSERT ... ON CONFLICT DO NOTHING`` of a new key: whether this request inserted it. SQLite's row
    count; PostgreSQL's ``RETURNING`` (psycopg's row count of an upsert is not reliable), run on psycopg's
    cursor with the statement compiled once (:meth:`Statement.first`)."""
    dialect = connection.dialect
    claim = _claim_statement(dialect.name)
    if claim is None:  # pragma: no cover - the server runs on SQLite or PostgreSQL
        raise RuntimeError(f"no idempotency claim for {dialect.name}")
    if dialect.name == "sqlite":
        return claim.run(connection, params) == 1
    return claim.first(connection, params) is not None


def _begin(connection: Connection, context: ServerContext, scope_hash: str, body_hash: str) -> _Stored:
    """Claim an ``Idempotency-Key`` (Core, in the group commit, D259): proceed, replay, mismatch or in
    progress. A new key (the common case) is one statement; a known one is then read (and locked)."""
    now = virtual_now(connection, context.clock)
    params = {
        "scope": scope_hash,
        "body_sha256": body_hash,
        "state": "in_progress",
        "created_at": now,
        "expires_at": now + IDEMPOTENCY_TTL,
    }
    if _claimed(connection, params):
        return _Stored("proceed")
    rows = _STORED.rows(connection, {"key": scope_hash})
    if not rows or rows[0][5] <= now:  # expired (or just forgotten): this request is a first one again
        connection.execute(_FORGET, {"key": scope_hash})
        return _Stored("proceed" if _claimed(connection, params) else "in_progress")
    stored_hash, state, status, content_type, body, _expires = rows[0]
    if stored_hash != body_hash:
        return _Stored("mismatch")
    if state != "done" or status is None:
        return _Stored("in_progress")
    return _Stored("replay", status, content_type, (body or "").encode("latin-1"))


def _finish(
    connection: Connection, scope_hash: str, status: int | None, content_type: str | None, body: bytes
) -> None:
    """Store the answer of a key's request (a ``5xx`` or no answer forgets the key instead)."""
    if status is None or status >= 500:
        connection.execute(_FORGET, {"key": scope_hash})
        return
    # In a group-commit batch the update is collected and written with the batch's others (one
    # ``executemany``) before its commit, which the answer awaits.
    _DONE.insert(
        connection,
        {
            "key": scope_hash,
            "code": status,
            "ctype": content_type,
            "answer": body.decode("latin-1"),
        },
    )


async def _read_body(receive: Receive) -> bytes:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        parts.append(bytes(message.get("body", b"")))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


class Idempotency:
    """Makes the ``POST`` requests under ``paths`` (:func:`idempotent_paths`) that carry
    ``Idempotency-Key`` idempotent (see the module docstring). Every request goes on through
    :meth:`forward`, the seam tests hold a request in (after its key was claimed)."""

    def __init__(self, app: ASGIApp, context: ServerContext, paths: IdempotentPaths) -> None:
        self.app = app
        self.context = context
        self.paths = paths

    async def forward(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand the request to the app inside this layer."""
        await self.app(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self._idempotency(scope, receive, send)

    async def _idempotency(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = header(scope, b"idempotency-key")
        if key is None or not honours_idempotency_key(scope["method"], scope["path"], self.paths):
            await self.forward(scope, receive, send)
            return
        if not key.strip() or len(key) > 255 or not key.isascii():
            problem = APIProblem(
                400,
                None,
                "Invalid Idempotency-Key.",
                [("Idempotency-Key", "must be 1..255 ASCII characters")],
            )
            await problem.response()(scope, receive, send)
            return
        try:
            body = await _read_body(receive)
        except BodyRefused as refused:
            await refused.response()(scope, receive, send)
            return
        authorization = header(scope, b"authorization") or b""
        scope_hash = hashlib.sha256(
            b"\0".join(
                [
                    scope["method"].encode(),
                    scope["path"].encode("utf-8", "replace"),
                    key,
                    hashlib.sha256(authorization).digest(),
                ]
            )
        ).hexdigest()
        body_hash = hashlib.sha256(body).hexdigest()
        stored = await self.context.group_commit.call(_begin, self.context, scope_hash, body_hash)
        if stored.verdict == "mismatch":  # the IETF Idempotency-Key draft: 422, not 409 (D17)
            problem = APIProblem(
                422,
                None,
                "This Idempotency-Key was used with another body.",
                [("Idempotency-Key", "was used with another request body")],
            )
            await problem.response()(scope, receive, send)
            return
        if stored.verdict == "in_progress":
            problem = APIProblem.conflict(
                "A request with this Idempotency-Key is in progress.", "Idempotency-Key"
            )
            await problem.response()(scope, receive, send)
            return
        if stored.verdict == "replay":
            response = Response(
                stored.body,
                status_code=stored.status,
                headers={"Idempotent-Replayed": "true"},
                media_type=stored.content_type,
            )
            await response(scope, receive, send)
            return
        await self._proceed(scope, receive, body, send, scope_hash)

    async def _proceed(
        self, scope: Scope, receive: Receive, body: bytes, send: Send, scope_hash: str
    ) -> None:
        status: int | None = None
        content_type: str | None = None
        chunks: list[bytes] = []
        delivered = False
        stored = False

        async def replay_receive() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # the body was read already: only a disconnect can come now

        async def capture(message: Message) -> None:
            nonlocal status, content_type, stored
            if message["type"] == "http.response.start":
                status = int(message["status"])
                for name, value in message.get("headers", []):
                    if bytes(name).lower() == b"content-type":
                        content_type = bytes(value).decode("latin-1")
                if content_type is not None and content_type.startswith("text/event-stream"):
                    status = None  # an event stream is neither kept in memory nor replayed: forgotten
            elif message["type"] == "http.response.body":
                if status is not None:
                    chunks.append(bytes(message.get("body", b"")))
                if not message.get("more_body", False) and not stored:
                    # Stored before the last byte leaves: a retry after this answer always replays it.
                    stored = True
                    await self.context.group_commit.call(
                        _finish, scope_hash, status, content_type, b"".join(chunks)
                    )
            await send(message)

        try:
            await self.forward(scope, replay_receive, capture)
        except BaseException:
            if not stored:
                await self.context.group_commit.call(_finish, scope_hash, None, None, b"")
            raise
        if not stored:
            await self.context.group_commit.call(_finish, scope_hash, status, content_type, b"".join(chunks))
