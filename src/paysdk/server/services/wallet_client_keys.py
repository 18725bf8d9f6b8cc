"""A new client's wallet keys (D34, D36), what ``POST /_sandbox/clients`` needs of the wallet family.

Every client gets an Ed25519 signing key pair (the private key, a base64 32-byte seed, is answered once
and never stored) unless it registers ``signingPublicKey``, and the user-token lifetimes; the row is
``wallet_client_keys`` (:class:`paysdk.server.wallet_tables.WalletClientKeyRow`). The rest of the wallet's
tokens live in :mod:`paysdk.server.services.wallet_tokens`.

The first real request after a start is usually a client's creation (D620): so this module imports
neither the wallet's mapped tables nor its contracts (~50 ms of a start's first answer, most of it the
declarative mapping of the wallet's 17 tables). The row is written with a Core ``INSERT`` on
:data:`WALLET_CLIENT_KEYS`, a table clause of the mapped table's columns and types
(``tests/server/test_server_start.py`` holds them equal).
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, String, column, insert, table
from sqlalchemy.orm import Session

from paysdk import _jwt
from paysdk.contracts.sandbox import SandboxClientCreate
from paysdk.server.errors import APIProblem
from paysdk.server.sqltypes import UTCDateTime

__all__ = [
    "DEFAULT_USER_ACCESS_TTL",
    "DEFAULT_USER_REFRESH_TTL",
    "WALLET_CLIENT_KEYS",
    "create_client_keys",
    "register_or_generate",
]

DEFAULT_USER_ACCESS_TTL = 900
DEFAULT_USER_REFRESH_TTL = 30 * 86400

#: ``wallet_client_keys`` as a Core table clause (the columns of ``WalletClientKeyRow``, same types).
WALLET_CLIENT_KEYS = table(
    "wallet_client_keys",
    column("client_id", Integer),
    column("public_key_b64", String(64)),
    column("key_id", String(64)),
    column("keys_expire_at", UTCDateTime),
    column("user_access_ttl", Integer),
    column("user_refresh_ttl", Integer),
    column("updated_at", UTCDateTime),
)


def register_or_generate(public_key: str | None, field: str) -> tuple[str, str | None, str]:
    """``(public key base64, private seed base64 or None, key id)``: ``public_key`` registered (``400``
    naming ``field`` when it is no base64 Ed25519 public key), or a new pair generated."""
    if public_key is not None:
        try:
            verify = _jwt.verify_key_from_b64(public_key)
        except _jwt.JWTError:
            raise APIProblem.invalid_field(field, "must be a base64 Ed25519 public key (32 bytes)") from None
        return _jwt.public_key_b64(verify), None, _jwt.public_jwk(verify)["kid"]
    import nacl.signing  # with the first key generated

    signing = nacl.signing.SigningKey.generate()
    return (
        _jwt.public_key_b64(signing),
        base64.b64encode(bytes(signing)).decode("ascii"),
        _jwt.public_jwk(signing)["kid"],
    )


def create_client_keys(
    session: Session, client_id: int, spec: SandboxClientCreate, now: datetime
) -> dict[str, Any]:
    """The wallet settings of the new client ``client_id`` (its row already flushed), written in the
    session's transaction; the answer's wallet fields (the private key, once)."""
    access = spec.user_access_token_ttl or DEFAULT_USER_ACCESS_TTL
    refresh_ttl = spec.user_refresh_token_ttl or DEFAULT_USER_REFRESH_TTL
    if refresh_ttl < access:
        raise APIProblem.invalid_field("userRefreshTokenTtl", "must be at least userAccessTokenTtl")
    public, private, key_id = register_or_generate(spec.signing_public_key, "signingPublicKey")
    session.execute(
        insert(WALLET_CLIENT_KEYS).values(
            client_id=client_id,
            public_key_b64=public,
            key_id=key_id,
            keys_expire_at=spec.keys_expire_at,
            user_access_ttl=access,
            user_refresh_ttl=refresh_ttl,
            updated_at=now,
        )
    )
    return {
        "signing_public_key": public,
        "signing_private_key": private,
        "keys_expire_at": spec.keys_expire_at,
        "user_access_token_ttl": access,
        "user_refresh_token_ttl": refresh_ttl,
    }
