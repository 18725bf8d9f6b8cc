"""The merchant-token authorizer (spec 5.2, decisions D9, D14, D20).

* The ``Authorization`` header holds the 64-hex merchant token, raw or with a ``Bearer `` prefix
  (stripped, D9) on every endpoint family.
* The token is looked up by its SHA-256 and then compared in constant time
  (:func:`paysdk._secret.constant_time_equals`) with the stored value.
* The token of the server's own environment authenticates. The client's token of the *other* environment
  is ``401 / 2007``. No token, an unknown token, or a header that is not ASCII is ``401`` with
  ``ownCode: null`` (D20: undecodable header values count as absent credentials).
* ``/transactions-hook`` is authenticated by its body key pair, looked up by
  ``sha256(privateKey + ":" + publicKey)`` (D14).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, cast

from sqlalchemy import Table, bindparam, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from paysdk._secret import constant_time_equals
from paysdk.contracts.common import OwnCode
from paysdk.server.core_tables import ClientRow
from paysdk.server.errors import APIProblem
from paysdk.server.hotpath import Statement, batch_cached

__all__ = [
    "Credentials",
    "authenticate_hook_keys",
    "authenticate_hook_keys_core",
    "authenticate_token",
    "authenticate_token_core",
    "hook_keys_digest",
    "sha256_hex",
]

EnvironmentName = Literal["sandbox", "production"]
_WWW = {"WWW-Authenticate": 'Bearer realm="paysdk"'}


def sha256_hex(text: str) -> str:
    """Hex SHA-256 of UTF-8 ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hook_keys_digest(private_key: str, public_key: str) -> str:
    """The stored digest of a hook key pair (D14)."""
    return sha256_hex(f"{private_key}:{public_key}")


class Credentials:
    """The raw ``Authorization`` header of a request, as bytes (``None`` when absent)."""

    def __init__(self, raw: bytes | None) -> None:
        self.raw = raw

    def token(self) -> str | None:
        """The token with an optional ``Bearer `` prefix removed; ``None`` when absent or not ASCII."""
        if self.raw is None:
            return None
        try:
            text = self.raw.decode("ascii").strip()
        except UnicodeDecodeError:
            return None
        if text[:7].lower() == "bearer ":
            text = text[7:].strip()
        return text or None


def _unauthorized(message: str) -> APIProblem:
    return APIProblem(401, None, message, [("Authorization", message)], headers=_WWW)


def authenticate_token(session: Session, credentials: Credentials, environment: EnvironmentName) -> ClientRow:
    """The client owning the token, or raise the 401 of the module docstring."""
    token = _token(credentials)
    digest = sha256_hex(token)
    client = session.scalars(
        select(ClientRow).where(
            or_(ClientRow.sandbox_token_sha256 == digest, ClientRow.production_token_sha256 == digest)
        )
    ).first()
    if client is None:
        raise _unauthorized("Unknown merchant token.")
    _check_environment(token, client.sandbox_token, client.production_token, environment)
    return client


def _token(credentials: Credentials) -> str:
    token = credentials.token()
    if token is None:
        raise _unauthorized("Missing merchant token.")
    return token


def _check_environment(
    token: str, sandbox_token: str, production_token: str, environment: EnvironmentName
) -> None:
    own, other = (
        (sandbox_token, production_token) if environment == "sandbox" else (production_token, sandbox_token)
    )
    if constant_time_equals(token, own):
        return
    if constant_time_equals(token, other):
        raise APIProblem(
            401,
            OwnCode.WRONG_ENVIRONMENT,
            f"This token belongs to the other environment; this server is {environment}.",
            [("Authorization", "token of the wrong environment")],
            headers=_WWW,
        )
    raise _unauthorized("Unknown merchant token.")  # pragma: no cover - digest matched but value did not


# The Core lookups of the hot path: the columns transaction creation needs, as a read-only stand-in for
# a ClientRow (not an ORM object: it must not be used to load or change anything).
_CLIENTS = cast(Table, ClientRow.__table__)
_COLUMNS = (
    _CLIENTS.c.id,
    _CLIENTS.c.slug,
    _CLIENTS.c.amount_min_cents,
    _CLIENTS.c.amount_max_cents,
    _CLIENTS.c.channels,
    _CLIENTS.c.currencies,
    _CLIENTS.c.payment_methods,
    _CLIENTS.c.sandbox_token,
    _CLIENTS.c.production_token,
    _CLIENTS.c.hook_keys_sha256,
)
_NAMES = tuple(column.key for column in _COLUMNS)
_BY_TOKEN = Statement(
    select(*_COLUMNS).where(
        or_(
            _CLIENTS.c.sandbox_token_sha256 == bindparam("digest"),
            _CLIENTS.c.production_token_sha256 == bindparam("digest"),
        )
    )
)
_BY_HOOK_KEYS = Statement(select(*_COLUMNS).where(_CLIENTS.c.hook_keys_sha256 == bindparam("digest")))


class _ClientColumns:
    """A read-only stand-in for a :class:`ClientRow` holding :data:`_COLUMNS` (no ORM instrumentation)."""

    __slots__ = _NAMES

    def __init__(self, row: tuple[Any, ...]) -> None:
        for name, value in zip(_NAMES, row, strict=True):
            object.__setattr__(self, name, value)


def _transient(row: tuple[Any, ...]) -> ClientRow:
    # The checks of transaction creation (services.common.check_against_client) only read these columns.
    return cast(ClientRow, _ClientColumns(row))


def authenticate_token_core(
    connection: Connection, credentials: Credentials, environment: EnvironmentName
) -> ClientRow:
    """:func:`authenticate_token` with one Core query; the client is a read-only stand-in holding the
    columns :data:`_COLUMNS` only (enough to check and create a transaction)."""
    token = _token(credentials)
    digest = sha256_hex(token)
    rows = batch_cached(
        connection, (_BY_TOKEN, digest), lambda: _BY_TOKEN.rows(connection, {"digest": digest})
    )
    if not rows:
        raise _unauthorized("Unknown merchant token.")
    client = _transient(rows[0])
    _check_environment(token, client.sandbox_token, client.production_token, environment)
    return client


def _hook_digest(private_key: object, public_key: object) -> str:
    if (
        not isinstance(private_key, str)
        or not private_key
        or not isinstance(public_key, str)
        or not public_key
    ):
        raise APIProblem(
            401, None, "Missing hook keys.", [("privateKey", "is required"), ("publicKey", "is required")]
        )
    return hook_keys_digest(private_key, public_key)


def authenticate_hook_keys_core(connection: Connection, private_key: object, public_key: object) -> ClientRow:
    """:func:`authenticate_hook_keys` with one Core query (a stand-in client, as
    :func:`authenticate_token_core`)."""
    digest = _hook_digest(private_key, public_key)
    rows = _BY_HOOK_KEYS.rows(connection, {"digest": digest})
    client = _transient(rows[0]) if rows else None
    if client is None or not constant_time_equals(digest, client.hook_keys_sha256):
        raise APIProblem(401, None, "Unknown hook keys.", [("privateKey", "unknown key pair")])
    return client


def authenticate_hook_keys(session: Session, private_key: object, public_key: object) -> ClientRow:
    """The client owning the hook key pair, or ``401`` with ``ownCode: null`` (D14)."""
    digest = _hook_digest(private_key, public_key)
    client = session.scalars(select(ClientRow).where(ClientRow.hook_keys_sha256 == digest)).first()
    if client is None or not constant_time_equals(digest, client.hook_keys_sha256):
        raise APIProblem(401, None, "Unknown hook keys.", [("privateKey", "unknown key pair")])
    return client
