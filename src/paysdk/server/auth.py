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
from typing import Literal

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from paysdk._secret import constant_time_equals
from paysdk.contracts.common import OwnCode
from paysdk.server.db import ClientRow
from paysdk.server.errors import APIProblem

__all__ = ["Credentials", "authenticate_hook_keys", "authenticate_token", "hook_keys_digest", "sha256_hex"]

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
    token = credentials.token()
    if token is None:
        raise _unauthorized("Missing merchant token.")
    digest = sha256_hex(token)
    client = session.scalars(
        select(ClientRow).where(
            or_(ClientRow.sandbox_token_sha256 == digest, ClientRow.production_token_sha256 == digest)
        )
    ).first()
    if client is None:
        raise _unauthorized("Unknown merchant token.")
    own, other = (
        (client.sandbox_token, client.production_token)
        if environment == "sandbox"
        else (client.production_token, client.sandbox_token)
    )
    if constant_time_equals(token, own):
        return client
    if constant_time_equals(token, other):
        raise APIProblem(
            401,
            OwnCode.WRONG_ENVIRONMENT,
            f"This token belongs to the other environment; this server is {environment}.",
            [("Authorization", "token of the wrong environment")],
            headers=_WWW,
        )
    raise _unauthorized("Unknown merchant token.")  # pragma: no cover - digest matched but value did not


def authenticate_hook_keys(session: Session, private_key: object, public_key: object) -> ClientRow:
    """The client owning the hook key pair, or ``401`` with ``ownCode: null`` (D14)."""
    if (
        not isinstance(private_key, str)
        or not private_key
        or not isinstance(public_key, str)
        or not public_key
    ):
        raise APIProblem(
            401, None, "Missing hook keys.", [("privateKey", "is required"), ("publicKey", "is required")]
        )
    digest = hook_keys_digest(private_key, public_key)
    client = session.scalars(select(ClientRow).where(ClientRow.hook_keys_sha256 == digest)).first()
    if client is None or not constant_time_equals(digest, client.hook_keys_sha256):
        raise APIProblem(401, None, "Unknown hook keys.", [("privateKey", "unknown key pair")])
    return client
