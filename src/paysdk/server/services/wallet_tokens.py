"""Wallet tokens: the server's signing key, application login, issuing, verifying and rotating JWTs.

Decisions D32-D38:

* One Ed25519 key per environment (D33), generated once and stored in ``wallet_server_keys``; cached per
  :class:`~paysdk.server.db.Database`; published at ``/rest/.well-known/jwks.json``.
* Tokens are EdDSA JWTs (:func:`paysdk._jwt.encode_jwt`), header ``typ`` ``at+jwt``/``rt+jwt`` and
  ``kid``; claims ``iss aud sub merchant kind token_use sid fam jti iat exp``, every one required and
  checked. Verification (:func:`authenticate`) allows exactly EdDSA, refuses ``crit``, checks ``typ``,
  ``iss``, ``aud``, ``exp`` on the virtual clock, then reads the session row by primary key (one
  indexed query) so a logged-out session or a revoked family stops every token at once.
* Codes: bad token ``7102``; expired ``7103``; revoked ``7104``; a rotated refresh token presented
  again ``7105`` (and the family is revoked, D35); wrong kind or ``typ`` for the endpoint ``7106``; a
  token of the other environment ``7107`` (it verifies with the other environment's key, or, when that
  key is not in this database, its unverified ``iss`` names the other environment: a refusal either way).
* Application login (D36): the signature over the exact UTF-8 bytes of the slug is checked first
  (``7604``), then the key expiry on the virtual clock (``7616``), so an unauthenticated caller learns
  nothing about a merchant's keys; an unknown slug is ``7601``.
* Refresh (D35): single use through a conditional ``UPDATE ... WHERE used_at IS NULL``. Functions that
  must commit a state change *and* refuse (a reuse revokes the family, then answers ``7105``) return the
  :class:`~paysdk.server.errors.APIProblem` instead of raising it; the router raises it after commit.
"""

from __future__ import annotations

import base64
import secrets
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import nacl.signing
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk import _jwt
from paysdk.contracts.wallet import (
    ACCESS_TOKEN_TYP,
    REFRESH_TOKEN_TYP,
    AppLoginRequest,
    Jwk,
    Jwks,
    SandboxWalletKeys,
    SandboxWalletKeysCreate,
    TokenPair,
    WalletCode,
)
from paysdk.server.context import ServerContext
from paysdk.server.core_tables import ClientRow
from paysdk.server.db import Database
from paysdk.server.errors import APIProblem
from paysdk.server.services.wallet_client_keys import (
    DEFAULT_USER_ACCESS_TTL,
    DEFAULT_USER_REFRESH_TTL,
    register_or_generate,
)
from paysdk.server.services.wallet_common import new_id, valid_slug, wallet_problem
from paysdk.server.wallet_tables import (
    WalletClientKeyRow,
    WalletRefreshTokenRow,
    WalletServerKeyRow,
    WalletSessionRow,
)

__all__ = [
    "APP_ACCESS_TTL",
    "APP_REFRESH_TTL",
    "AUDIENCE",
    "AUDIENCE_KINDS",
    "BACKOFFICE_AUDIENCE",
    "DEFAULT_USER_ACCESS_TTL",
    "DEFAULT_USER_REFRESH_TTL",
    "VERIFIED",
    "Principal",
    "VerifiedTokens",
    "app_login",
    "authenticate",
    "cached_server_keys",
    "check_claims",
    "client_wallet_settings",
    "create_session",
    "invalid_token",
    "issue_pair",
    "issuer",
    "jwks",
    "refresh",
    "revoke_session",
    "revoke_user_sessions",
    "rotate_client_keys",
    "server_keys",
    "verified_claims",
]

APP_ACCESS_TTL = 30 * 60
APP_REFRESH_TTL = 7 * 86400
AUDIENCE = "wallet"
#: ``aud`` of the backoffice's tokens (D184): a wallet token is no backoffice token and the reverse.
BACKOFFICE_AUDIENCE = "paysdk-cms"
Kind = Literal["application", "user", "backoffice_app", "backoffice_user"]
#: The token kinds of each audience (D184).
AUDIENCE_KINDS: dict[str, tuple[str, ...]] = {
    AUDIENCE: ("application", "user"),
    BACKOFFICE_AUDIENCE: ("backoffice_app", "backoffice_user"),
}
_REQUIRED_STR = ("iss", "aud", "sub", "merchant", "kind", "token_use", "sid", "fam", "jti")


def issuer(environment: str) -> str:
    """``iss`` of the environment's tokens (D33)."""
    return f"paysdk-wallet:{environment}"


def audience_of(kind: str) -> str:
    """``aud`` of a token of ``kind``: the backoffice's for its two kinds, else the wallet's (D184)."""
    return BACKOFFICE_AUDIENCE if kind.startswith("backoffice_") else AUDIENCE


def _other(environment: str) -> str:
    return "production" if environment == "sandbox" else "sandbox"


# ---------------------------------------------------------------------------------- server keys


@dataclass(frozen=True, slots=True)
class ServerKeys:
    """The environment's signing key, its ``kid`` and the verification map."""

    signing: nacl.signing.SigningKey
    kid: str
    verify: Mapping[str, nacl.signing.VerifyKey]


_KEYS: weakref.WeakKeyDictionary[Database, dict[str, ServerKeys]] = weakref.WeakKeyDictionary()


def _keys_of(row: WalletServerKeyRow) -> ServerKeys:
    signing = _jwt.load_signing_key(row.seed_b64)
    return ServerKeys(signing, row.kid, {row.kid: signing.verify_key})


def server_keys(session: Session, context: ServerContext, environment: str | None = None) -> ServerKeys:
    """The signing key of ``environment`` (default: the server's), generated on first use (D33)."""
    env = environment or context.environment
    cache = _KEYS.setdefault(context.db, {})
    cached = cache.get(env)
    if cached is not None:
        return cached
    row = session.get(WalletServerKeyRow, env)
    if row is None:
        signing = nacl.signing.SigningKey.generate()
        candidate = WalletServerKeyRow(
            environment=env,
            seed_b64=base64.b64encode(bytes(signing)).decode("ascii"),
            kid=_jwt.public_jwk(signing)["kid"],
            created_at=context.clock.now(session),
        )
        try:
            with session.begin_nested():
                session.add(candidate)
            row = candidate
        except IntegrityError:  # another instance over this database created it first
            row = session.scalars(
                select(WalletServerKeyRow)
                .where(WalletServerKeyRow.environment == env)
                .execution_options(populate_existing=True)
            ).one()
    keys = _keys_of(row)
    cache[env] = keys
    return keys


def _existing_keys(session: Session, context: ServerContext, environment: str) -> ServerKeys | None:
    cached = _KEYS.get(context.db, {}).get(environment)
    if cached is not None:
        return cached
    row = session.get(WalletServerKeyRow, environment)
    return _keys_of(row) if row is not None else None


def jwks(session: Session, context: ServerContext) -> Jwks:
    """The public key set of this environment (bare JWKS, D33)."""
    keys = server_keys(session, context)
    return Jwks(keys=[Jwk.model_validate(_jwt.public_jwk(keys.signing))])


# ------------------------------------------------------------------------------- issuing tokens


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a verified access token speaks for."""

    kind: Kind
    client_id: int
    merchant: str
    user_id: str | None
    session_id: str
    family_id: str

    @property
    def is_application(self) -> bool:
        """The merchant's backend (application token)."""
        return self.kind in ("application", "backoffice_app")


def create_session(
    session: Session,
    context: ServerContext,
    now: datetime,
    kind: Kind,
    client_id: int,
    merchant: str,
    user_id: str | None,
) -> WalletSessionRow:
    """A new session with its own refresh family."""
    row = WalletSessionRow(
        id=new_id("ses"),
        family_id=new_id("fam"),
        environment=context.environment,
        kind=kind,
        client_id=client_id,
        merchant=merchant,
        user_id=user_id,
        created_at=now,
    )
    session.add(row)
    session.flush()  # the refresh tokens issued next reference it
    return row


def issue_pair(
    session: Session,
    context: ServerContext,
    now: datetime,
    row: WalletSessionRow,
    access_ttl: int,
    refresh_ttl: int,
) -> TokenPair:
    """A new access + refresh token of ``row``'s session and family; the refresh ``jti`` is recorded."""
    keys = server_keys(session, context)
    iat = int(now.timestamp())
    subject = row.user_id if row.user_id else row.merchant
    base: dict[str, Any] = {
        "iss": issuer(context.environment),
        "aud": audience_of(row.kind),
        "sub": subject,
        "merchant": row.merchant,
        "kind": row.kind,
        "sid": row.id,
        "fam": row.family_id,
        "iat": iat,
    }
    access_claims = {**base, "token_use": "access", "jti": secrets.token_urlsafe(16), "exp": iat + access_ttl}
    refresh_jti = secrets.token_urlsafe(24)
    refresh_claims = {**base, "token_use": "refresh", "jti": refresh_jti, "exp": iat + refresh_ttl}
    session.add(
        WalletRefreshTokenRow(
            jti=refresh_jti,
            session_id=row.id,
            expires_at=now + timedelta(seconds=refresh_ttl),
            created_at=now,
        )
    )
    return TokenPair(
        access_token=_jwt.encode_jwt(keys.signing, access_claims, typ=ACCESS_TOKEN_TYP, kid=keys.kid),
        refresh_token=_jwt.encode_jwt(keys.signing, refresh_claims, typ=REFRESH_TOKEN_TYP, kid=keys.kid),
        token_type="Bearer",
        expires_in=access_ttl,
        refresh_expires_in=refresh_ttl,
    )


# ---------------------------------------------------------------------------- verifying tokens


def _invalid(message: str, field: str) -> APIProblem:
    return wallet_problem(WalletCode.TOKEN_INVALID, message, field, "invalid token")


class VerifiedTokens:
    """The signature verification cache (D257): the claims of tokens whose Ed25519 signature verified,
    keyed by the token's exact text and its ``typ``, so a token presented again skips the verification
    (about a tenth of a millisecond each).

    An entry holds the verification key map it verified with and is used only with that same map (a
    key read again after a reset of the key cache verifies again). Bounded (least recently used first
    out) and honouring expiry: an entry whose ``exp`` has passed on the wall clock is dropped when met
    (the virtual clock is never behind the wall clock, so such a token is refused anyway); every claim
    check after the signature (``exp`` on the virtual clock, issuer, audience, the session row) is still
    made on every call. Only verified tokens enter: a forged or altered token never matches an entry.
    """

    def __init__(self, size: int = 4096, wall: Callable[[], float] = time.time) -> None:
        self._size = size
        self._wall = wall
        self._entries: OrderedDict[tuple[str, str], tuple[Mapping[str, Any], dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, token: str, typ: str, verify: Mapping[str, Any]) -> dict[str, Any] | None:
        """A copy of the cached claims of ``token`` verified with ``verify``, else ``None``."""
        key = (token, typ)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            keys, claims = entry
            exp = claims.get("exp")
            if keys is not verify or not isinstance(exp, int) or exp <= self._wall():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
        return dict(claims)

    def put(self, token: str, typ: str, verify: Mapping[str, Any], claims: Mapping[str, Any]) -> None:
        """Remember claims whose signature just verified with ``verify`` (not when already expired)."""
        exp = claims.get("exp")
        if not isinstance(exp, int) or exp <= self._wall():
            return
        with self._lock:
            self._entries[(token, typ)] = (verify, dict(claims))
            self._entries.move_to_end((token, typ))
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()


#: The process's signature cache (:class:`VerifiedTokens`, D257).
VERIFIED = VerifiedTokens()


def verified_claims(token: str, typ: str, keys: ServerKeys) -> dict[str, Any]:
    """:func:`paysdk._jwt.verify_jwt`'s claims through :data:`VERIFIED` (raises ``JWTError`` alike)."""
    claims = VERIFIED.get(token, typ, keys.verify)
    if claims is None:
        _header, claims = _jwt.verify_jwt(token, keys.verify, typ=typ)
        VERIFIED.put(token, typ, keys.verify, claims)
    return claims


def _verified(
    session: Session, context: ServerContext, token: str | None, typ: str, field: str
) -> dict[str, Any]:
    """Header and signature checks; the claims of a token signed by this environment's key."""
    if not token:
        raise _invalid("A bearer token is required.", field)
    keys = server_keys(session, context)
    try:
        return verified_claims(token, typ, keys)
    except _jwt.JWTError:
        pass
    other_typ = REFRESH_TOKEN_TYP if typ == ACCESS_TOKEN_TYP else ACCESS_TOKEN_TYP
    try:
        _jwt.verify_jwt(token, keys.verify, typ=other_typ)
    except _jwt.JWTError:
        pass
    else:
        kind = "a refresh token" if typ == ACCESS_TOKEN_TYP else "an access token"
        raise wallet_problem(
            WalletCode.WRONG_TOKEN_TYPE, f"This endpoint does not take {kind}.", field, "wrong token type"
        )
    other_env = _other(context.environment)
    if _from_other_environment(session, context, token, other_env, keys):
        raise wallet_problem(
            WalletCode.WRONG_ENVIRONMENT,
            f"This token belongs to the {other_env} environment; this server is {context.environment}.",
            field,
            "token of the wrong environment",
        )
    raise _invalid("The token is malformed or its signature does not verify.", field)


def cached_server_keys(context: ServerContext) -> ServerKeys | None:
    """The environment's key when this process has it loaded already (no database read), else ``None``."""
    return _KEYS.get(context.db, {}).get(context.environment)


def invalid_token(message: str, field: str) -> APIProblem:
    """The ``401 / 7102`` problem of a token that is not one of ours."""
    return _invalid(message, field)


def _from_other_environment(
    session: Session, context: ServerContext, token: str, other_env: str, own: ServerKeys
) -> bool:
    other = _existing_keys(session, context, other_env)
    if other is not None:
        for typ in (ACCESS_TOKEN_TYP, REFRESH_TOKEN_TYP):
            try:
                _jwt.verify_jwt(token, other.verify, typ=typ)
            except _jwt.JWTError:
                continue
            return True
        return False
    try:
        header, claims = _jwt.decode_unverified(token)
    except _jwt.JWTError:
        return False
    return header.get("kid") not in own.verify and claims.get("iss") == issuer(other_env)


def _checked_claims(
    claims: Mapping[str, Any],
    context: ServerContext,
    now: datetime,
    token_use: str,
    field: str,
    audience: str = AUDIENCE,
) -> None:
    for name in _REQUIRED_STR:
        if not isinstance(claims.get(name), str) or not claims[name]:
            raise _invalid(f"The token lacks the {name} claim.", field)
    for name in ("iat", "exp"):
        value = claims.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise _invalid(f"The token lacks the {name} claim.", field)
    if claims["iss"] != issuer(context.environment):
        if claims["iss"] == issuer(_other(context.environment)):
            raise wallet_problem(
                WalletCode.WRONG_ENVIRONMENT, "This token belongs to the other environment.", field
            )
        raise _invalid("The token has the wrong issuer.", field)
    if claims["aud"] != audience:  # another surface's token (D184): unknown here
        raise _invalid("The token has the wrong audience: it is not a token of this API.", field)
    if claims["token_use"] != token_use or claims["kind"] not in AUDIENCE_KINDS[audience]:
        raise _invalid("The token's use does not match its type.", field)
    if int(now.timestamp()) >= claims["exp"]:
        raise wallet_problem(WalletCode.TOKEN_EXPIRED, "The token has expired.", field, "expired")


#: The claim checks made after the signature (issuer, audience, use, ``exp`` on the virtual clock).
check_claims = _checked_claims


def _session_of(
    session: Session, claims: Mapping[str, Any], field: str, *, lock: bool = False
) -> WalletSessionRow:
    statement = select(WalletSessionRow).where(WalletSessionRow.id == claims["sid"])
    if lock:
        statement = statement.with_for_update()
    row = session.scalars(statement).first()
    if (
        row is None
        or row.family_id != claims["fam"]
        or row.kind != claims["kind"]
        or row.merchant != claims["merchant"]
        or (row.user_id or row.merchant) != claims["sub"]
    ):
        raise _invalid("The token names no session.", field)
    if row.revoked_reason is not None:
        raise wallet_problem(WalletCode.TOKEN_REVOKED, "The token has been revoked.", field, "revoked")
    return row


def authenticate(
    session: Session,
    context: ServerContext,
    now: datetime,
    token: str | None,
    *,
    field: str = "Authorization",
    kind: Kind | None = None,
    audience: str = AUDIENCE,
) -> Principal:
    """Verify an access token (see the module docstring); ``kind`` demands application or user (7106);
    ``audience``: the surface's (the wallet's by default; another surface's token is ``7102``, D184)."""
    claims = _verified(session, context, token, ACCESS_TOKEN_TYP, field)
    _checked_claims(claims, context, now, "access", field, audience)
    if kind is not None and claims["kind"] != kind:
        wanted = "the application token" if kind in ("application", "backoffice_app") else "a user token"
        raise wallet_problem(
            WalletCode.WRONG_TOKEN_TYPE, f"This endpoint needs {wanted}.", field, "wrong token type"
        )
    row = _session_of(session, claims, field)
    return Principal(
        kind=row.kind,  # type: ignore[arg-type]  # one of AUDIENCE_KINDS (checked against the claims)
        client_id=row.client_id,
        merchant=row.merchant,
        user_id=row.user_id,
        session_id=row.id,
        family_id=row.family_id,
    )


def revoke_session(session: Session, session_id: str, reason: str, now: datetime) -> None:
    """Revoke one session (and so its family and every token of it)."""
    session.execute(
        update(WalletSessionRow)
        .where(WalletSessionRow.id == session_id, WalletSessionRow.revoked_reason.is_(None))
        .values(revoked_reason=reason, revoked_at=now)
        .execution_options(synchronize_session=False)
    )


def revoke_user_sessions(session: Session, user_id: str, reason: str, now: datetime) -> None:
    """Revoke every session of a user (password reset)."""
    session.execute(
        update(WalletSessionRow)
        .where(WalletSessionRow.user_id == user_id, WalletSessionRow.revoked_reason.is_(None))
        .values(revoked_reason=reason, revoked_at=now)
        .execution_options(synchronize_session=False)
    )


def refresh(
    session: Session,
    context: ServerContext,
    now: datetime,
    token: str,
    kind: Kind,
    *,
    merchant: str | None = None,
    ttls: tuple[int, int] | None = None,
) -> TokenPair | APIProblem:
    """Rotate a refresh token (D35). A reuse revokes the family and *returns* the ``7105`` problem."""
    field = "refreshToken"
    claims = _verified(session, context, token, REFRESH_TOKEN_TYP, field)
    _checked_claims(claims, context, now, "refresh", field, audience_of(kind))
    if claims["kind"] != kind:
        wanted = (
            "an application refresh token"
            if kind in ("application", "backoffice_app")
            else "a user refresh token"
        )
        raise wallet_problem(WalletCode.WRONG_TOKEN_TYPE, f"This endpoint needs {wanted}.", field)
    if merchant is not None and claims["merchant"] != merchant:
        raise wallet_problem(
            WalletCode.TOKEN_INVALID, "This refresh token belongs to another merchant.", field
        )
    row = _session_of(session, claims, field, lock=True)
    used = session.execute(
        update(WalletRefreshTokenRow)
        .where(
            WalletRefreshTokenRow.jti == claims["jti"],
            WalletRefreshTokenRow.session_id == row.id,
            WalletRefreshTokenRow.used_at.is_(None),
        )
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if getattr(used, "rowcount", 0) != 1:
        known = session.scalar(
            select(WalletRefreshTokenRow.jti).where(WalletRefreshTokenRow.jti == claims["jti"])
        )
        if known is None:
            raise _invalid("Unknown refresh token.", field)
        revoke_session(session, row.id, "reuse", now)
        return wallet_problem(
            WalletCode.REFRESH_TOKEN_REUSED,
            "This refresh token was already used: every token of its family is revoked. Log in again.",
            field,
            "already used",
        )
    if ttls is None:
        ttls = _ttls(session, row)
    return issue_pair(session, context, now, row, *ttls)


def _ttls(session: Session, row: WalletSessionRow) -> tuple[int, int]:
    if row.kind in ("application", "backoffice_app"):
        return APP_ACCESS_TTL, APP_REFRESH_TTL
    settings = session.get(WalletClientKeyRow, row.client_id)
    if settings is None:
        return DEFAULT_USER_ACCESS_TTL, DEFAULT_USER_REFRESH_TTL
    return settings.user_access_ttl, settings.user_refresh_ttl


# ------------------------------------------------------------------------------- application login


def app_login(
    session: Session,
    context: ServerContext,
    now: datetime,
    body: AppLoginRequest,
    kind: Literal["application", "backoffice_app"] = "application",
) -> TokenPair:
    """``POST /auth/login`` (D36); with ``kind="backoffice_app"``, ``POST {cms}/app/auth/login`` (D105)."""
    client = (
        session.scalars(select(ClientRow).where(ClientRow.slug == body.merchant)).first()
        if valid_slug(body.merchant)
        else None
    )
    settings = session.get(WalletClientKeyRow, client.id) if client is not None else None
    if client is None or settings is None:
        raise wallet_problem(WalletCode.UNKNOWN_MERCHANT, "Unknown merchant.", "merchant", "unknown merchant")
    try:
        verify = _jwt.verify_key_from_b64(settings.public_key_b64)
    except _jwt.JWTError:  # pragma: no cover - only valid keys are stored
        verify = None
    if verify is None or not _jwt.verify_merchant_signature(verify, body.merchant, body.signature):
        raise wallet_problem(
            WalletCode.INVALID_SIGNATURE,
            "The signature does not verify: sign the exact UTF-8 bytes of the merchant slug.",
            "signature",
            "does not verify",
        )
    if settings.keys_expire_at is not None and settings.keys_expire_at <= now:
        raise wallet_problem(
            WalletCode.KEYS_EXPIRED, "The signature keys expired: rotate them and log in again.", "signature"
        )
    row = create_session(session, context, now, kind, client.id, client.slug, None)
    return issue_pair(session, context, now, row, APP_ACCESS_TTL, APP_REFRESH_TTL)


# ------------------------------------------------------------------------------ client key pairs


def client_wallet_settings(session: Session, client_id: int) -> dict[str, Any]:
    """The wallet fields of a client's control-plane view (never the private key)."""
    row = session.get(WalletClientKeyRow, client_id)
    if row is None:
        return {}
    return {
        "signing_public_key": row.public_key_b64,
        "keys_expire_at": row.keys_expire_at,
        "user_access_token_ttl": row.user_access_ttl,
        "user_refresh_token_ttl": row.user_refresh_ttl,
    }


def rotate_client_keys(
    session: Session, slug: str, spec: SandboxWalletKeysCreate, now: datetime
) -> SandboxWalletKeys:
    """``POST /_sandbox/clients/{slug}/keys``: a new key (generated or registered), optional expiry."""
    client = (
        session.scalars(select(ClientRow).where(ClientRow.slug == slug)).first() if valid_slug(slug) else None
    )
    if client is None:
        raise APIProblem.not_found("Client", "slug")
    public, private, key_id = register_or_generate(spec.public_key, "publicKey")
    row = session.get(WalletClientKeyRow, client.id, with_for_update=True)
    if row is None:
        row = WalletClientKeyRow(
            client_id=client.id,
            public_key_b64=public,
            key_id=key_id,
            keys_expire_at=spec.expires_at,
            user_access_ttl=DEFAULT_USER_ACCESS_TTL,
            user_refresh_ttl=DEFAULT_USER_REFRESH_TTL,
            updated_at=now,
        )
        session.add(row)
    else:
        row.public_key_b64 = public
        row.key_id = key_id
        row.keys_expire_at = spec.expires_at
        row.updated_at = now
    return SandboxWalletKeys(
        merchant=client.slug,
        public_key=public,
        key_id=key_id,
        expires_at=spec.expires_at,
        private_key=private,
    )
