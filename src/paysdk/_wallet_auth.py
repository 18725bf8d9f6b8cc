"""Wallet credentials, user sessions, and the token manager (the I/O shell of :mod:`paysdk._tokens`).

:class:`AsyncTokenManager` is hand-written; :class:`TokenManager` is generated from it by
``scripts/unasync.py``. The manager only takes locks, reads and writes the store, and sends the login
or refresh request; every decision is :class:`paysdk._tokens.TokenFlow`'s. Locks, outermost first:
the manager's own lock (``asyncio.Lock`` / ``threading.Lock``: the tasks or threads sharing this
client), then ``store.lock(key)`` (other clients, processes or hosts sharing the store).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from paysdk._environment import Environment
from paysdk._errors import APIError, RequestError, ValidationError
from paysdk._jwt import JWTError, decode_unverified, load_signing_key, public_key_b64, sign_merchant
from paysdk._pipeline import Operation, data_envelope
from paysdk._secret import Secret
from paysdk._token_stores import AsyncTokenStore, TokenStore
from paysdk._tokens import (
    REPLAY_CODES,
    Decision,
    RefreshPolicy,
    Step,
    StoredTokens,
    TokenFlow,
    is_fresh,
    newer_pair,
    tokens_from_pair,
)
from paysdk.contracts.wallet import TokenPair

if TYPE_CHECKING:
    from collections.abc import Callable

    import nacl.signing  # pynacl loads on first use (paysdk._jwt)

    from paysdk._client import AsyncClient, Client

__all__ = [
    "AsyncTokenManager",
    "TokenManager",
    "UserSession",
    "WalletCredentials",
    "app_login_operation",
    "app_refresh_operation",
    "application_key",
    "pair_from_stored",
    "user_key",
    "user_refresh_operation",
    "wallet_store_key",
]


class WalletCredentials:
    """An application's wallet credentials: the merchant slug and its Ed25519 private key (D36).

    ``private_key`` is the 32-byte seed (raw bytes, base64, base64url or hex), a
    :class:`~paysdk.Secret` of one, or an OKP JWK (a mapping, or its JSON text). It is checked here
    (:class:`~paysdk.ValidationError` ``private_key`` otherwise, never showing the key) and never
    appears in a repr, log line or error.
    """

    __slots__ = ("_key", "_merchant")

    def __init__(self, merchant: str, private_key: str | bytes | Secret | Mapping[str, Any]) -> None:
        if not isinstance(merchant, str) or not merchant.strip():
            raise ValidationError("merchant", "must be the non-empty merchant (client) slug")
        try:
            self._key: nacl.signing.SigningKey = load_signing_key(private_key)
        except JWTError as exc:
            raise ValidationError("private_key", str(exc)) from None
        except (TypeError, ValueError):
            raise ValidationError("private_key", "is not an Ed25519 private key") from None
        self._merchant = merchant.strip()

    @property
    def merchant(self) -> str:
        """The merchant (client) slug."""
        return self._merchant

    @property
    def public_key(self) -> str:
        """The Ed25519 public key, standard base64 (what the control plane registers)."""
        return public_key_b64(self._key)

    def signature(self) -> str:
        """The login signature: base64 Ed25519 signature of the exact UTF-8 bytes of :attr:`merchant`."""
        return sign_merchant(self._key, self._merchant)

    def __repr__(self) -> str:
        return f"WalletCredentials(merchant={self._merchant!r}, private_key='****')"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("paysdk.WalletCredentials is not picklable")


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


@dataclass(frozen=True, eq=False)
class UserSession:
    """A wallet user's session: the user token pair, whose ``sub`` is :attr:`user_id`.

    ``tokens`` is the :class:`~paysdk.contracts.wallet.TokenPair` (masked repr). ``expires_at`` /
    ``refresh_expires_at`` are when the tokens expire by the local clock. A refresh rotates both
    tokens: keep the new session and discard the old one (its refresh token is spent).
    """

    tokens: TokenPair = field(repr=False)
    user_id: str
    expires_at: datetime
    refresh_expires_at: datetime
    stored: StoredTokens = field(repr=False)

    @classmethod
    def from_pair(cls, pair: TokenPair, *, now: float) -> UserSession:
        """The session of a ``/users/login`` or ``/users/refresh`` answer received at ``now``."""
        stored = tokens_from_pair(
            pair.access_token,
            pair.refresh_token,
            expires_in=pair.expires_in,
            refresh_expires_in=pair.refresh_expires_in,
            now=now,
        )
        return cls.from_stored(stored)

    @classmethod
    def from_stored(cls, stored: StoredTokens) -> UserSession:
        """The session of a stored pair (``user_id`` read from the access token's ``sub``)."""
        access = stored.access_token.reveal()
        try:
            _, claims = decode_unverified(access)
            subject = claims.get("sub")
        except JWTError:
            subject = None
        return cls(
            tokens=pair_from_stored(stored),
            user_id=subject if isinstance(subject, str) else "",
            expires_at=_utc(stored.access_expires_at),
            refresh_expires_at=_utc(stored.refresh_expires_at),
            stored=stored,
        )

    @property
    def access_token(self) -> Secret:
        """The user access token (a :class:`~paysdk.Secret`)."""
        return self.stored.access_token

    @property
    def refresh_token(self) -> Secret:
        """The user refresh token (a :class:`~paysdk.Secret`; single-use)."""
        return self.stored.refresh_token

    def __repr__(self) -> str:
        return (
            f"UserSession(user_id={self.user_id!r}, expires_at={self.expires_at.isoformat()}, "
            f"tokens=****)"
        )

    __str__ = __repr__


def pair_from_stored(stored: StoredTokens) -> TokenPair:
    """The :class:`~paysdk.contracts.wallet.TokenPair` of a stored pair (lifetimes from the local times)."""
    return TokenPair(
        access_token=stored.access_token.reveal(),
        refresh_token=stored.refresh_token.reveal(),
        expires_in=max(round(stored.access_expires_at - stored.obtained_at), 0),
        refresh_expires_in=max(round(stored.refresh_expires_at - stored.obtained_at), 0),
    )


# ----------------------------------------------------------------------------- auth operations


def application_key(environment: Environment, merchant: str) -> str:
    """The store key of an application credential (one per environment and merchant)."""
    return f"{environment.name}|{environment.wallet_base_url}|app|{merchant}"


def user_key(application: str, name: str) -> str:
    """The store key of the user session ``name`` of the application whose store key is ``application``."""
    return f"{application}|user|{name}"


def wallet_store_key(environment: Environment, merchant: str, user: str | None = None) -> str:
    """The key under which a :class:`~paysdk.TokenStore` holds a wallet token pair: the application's
    (``merchant`` in ``environment``) or, with ``user``, the user session of that name (a user id, or
    any name of yours; :meth:`paysdk.Client.wallet.user_key <paysdk.resources.wallet.Wallet.user_key>`
    gives the same key). Read a pair with ``store.load(key)``; change one only holding
    ``store.lock(key)``, e.g. ``with store.lock(key): store.delete(key)`` to forget it."""
    if not isinstance(merchant, str) or not merchant.strip():
        raise ValidationError("merchant", "must be the non-empty merchant (client) slug")
    key = application_key(environment, merchant.strip())
    if user is None:
        return key
    if not isinstance(user, str) or not user.strip():
        raise ValidationError("user", "must be a non-empty string")
    return user_key(key, user.strip())


def _token_op(path: str, body: dict[str, Any], auth: str = "none") -> Operation[TokenPair]:
    # Login and refresh are never replayed once their bytes may have arrived: a refresh spends the
    # refresh token (a replay would present a used one and revoke the family), hence no idempotency
    # key and not idempotent: retried only on connect errors.
    return Operation(
        method="POST",
        path=path,
        base="wallet",
        auth=auth,  # type: ignore[arg-type]
        json=body,
        parse=data_envelope(TokenPair.model_validate),
        idempotent=False,
        uses_idempotency_keys=False,
    )


def app_login_operation(credentials: WalletCredentials) -> Operation[TokenPair]:
    """``POST /auth/login {merchant, signature}`` (D36)."""
    return _token_op(
        "/auth/login", {"merchant": credentials.merchant, "signature": Secret(credentials.signature())}
    )


def app_refresh_operation(refresh_token: Secret) -> Operation[TokenPair]:
    """``POST /auth/refresh {refreshToken}``."""
    return _token_op("/auth/refresh", {"refreshToken": refresh_token})


def user_refresh_operation(
    refresh_token: Secret,
    *,
    merchant: str | None = None,
    access_token_ttl: int | None = None,
    refresh_token_ttl: int | None = None,
) -> Operation[TokenPair]:
    """``POST /users/refresh`` (application bearer)."""
    body: dict[str, Any] = {"refreshToken": refresh_token}
    for name, value, wire in (
        ("merchant", merchant, "merchant"),
        ("access_token_ttl", access_token_ttl, "accessTokenTtl"),
        ("refresh_token_ttl", refresh_token_ttl, "refreshTokenTtl"),
    ):
        if value is None:
            continue
        if name == "merchant":
            if not isinstance(value, str) or not value:
                raise ValidationError(name, "must be a non-empty string")
        elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValidationError(name, "must be a positive int of seconds")
        body[wire] = value
    return _token_op("/users/refresh", body, auth="wallet_app")


def _own_code(exc: RequestError) -> int | None:
    return exc.own_code if isinstance(exc, APIError) else None


def _no_token(decision: Decision) -> ValidationError:
    return ValidationError("wallet", f"no usable wallet token: {decision.reason}")


# unasync: begin
class AsyncTokenManager:
    """Hands out a valid access token for one credential; refreshes or logs in, single-flight.

    ``login`` builds the login operation (``None``: this credential cannot log in, e.g. a user
    session); ``refresh`` the refresh operation for a refresh token. ``via`` is the manager whose
    token those operations need as bearer (user sessions refresh with the application token).
    ``seed``: a pair (e.g. a user session from a login) saved into the store on first use, under the
    lock, unless the store already holds a pair obtained at the same time or later (see
    :func:`paysdk._tokens.newer_pair`).
    """

    def __init__(
        self,
        client: AsyncClient,
        *,
        key: str,
        store: AsyncTokenStore,
        refresh: Callable[[Secret], Operation[TokenPair]],
        login: Callable[[], Operation[TokenPair]] | None = None,
        via: AsyncTokenManager | None = None,
        policy: RefreshPolicy | None = None,
        initial: StoredTokens | None = None,
        seed: StoredTokens | None = None,
    ) -> None:
        self._client = client
        self._key = key
        self._store = store
        self._refresh = refresh
        self._login = login
        self._via = via
        self._policy = policy or RefreshPolicy()
        self._lock = asyncio.Lock()
        self._current = initial
        self._seed = seed

    @property
    def key(self) -> str:
        """The store key of this credential."""
        return self._key

    @property
    def current(self) -> StoredTokens | None:
        """The pair this manager last used (``None`` before the first call)."""
        return self._current

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key={self._key!r}, store={self._store!r})"

    async def token(self) -> Secret:
        """A fresh access token: the cached one, else the stored one, else refreshed or logged in."""
        current = self._current
        if current is not None and is_fresh(current, self._client._now(), self._policy):
            return current.access_token
        tokens = await self._acquire(None, None, None)
        return tokens.access_token

    async def recover(self, rejected: Secret, cause: APIError) -> Secret:
        """After ``cause`` (a 401 for ``rejected``): the token to replay with, single-flight."""
        tokens = await self._acquire(rejected, cause.own_code, cause)
        return tokens.access_token

    async def login(self) -> StoredTokens:
        """Log in now (even when a valid pair is stored) and store the new pair."""
        return await self._acquire(None, None, None, force_login=True)

    async def stored(self) -> StoredTokens | None:
        """The pair in the store now (read under the lock; nothing is refreshed or sent)."""
        async with self._lock, self._store.lock(self._key):
            return await self._load()

    async def forget(self) -> bool:
        """Drop the cached and the stored pair (e.g. after a logout); whether a pair was stored."""
        async with self._lock, self._store.lock(self._key):
            found = await self._store.load(self._key) is not None
            await self._store.delete(self._key)
            self._current = None
            self._seed = None
            return found

    async def _load(self) -> StoredTokens | None:
        # Call it holding the locks: the seed goes in first, unless the store holds a newer pair.
        stored = await self._store.load(self._key)
        seed = self._seed
        if seed is not None and newer_pair(stored, seed) is seed:
            await self._store.save(self._key, seed)  # persist BEFORE use
            stored = seed
        self._seed = None
        return stored

    async def _send(self, op: Operation[TokenPair]) -> TokenPair:
        if self._via is None:
            return await self._client._request(op)
        # 7104/7105 here concern the refresh token in the body, not the bearer: not the via's problem.
        return await self._client._authed_request(op, self._via, REPLAY_CODES)

    async def _acquire(
        self,
        rejected: Secret | None,
        code: int | None,
        cause: APIError | None,
        *,
        force_login: bool = False,
    ) -> StoredTokens:
        async with self._lock, self._store.lock(self._key):
            stored = await self._load()
            flow = TokenFlow(
                stored,
                self._client._now(),
                self._policy,
                can_login=self._login is not None,
                rejected=rejected,
                rejected_code=code,
            )
            decision = Decision(Step.LOGIN, reason="explicit login") if force_login else flow.start()
            error: Exception | None = cause
            while True:
                if decision.step is Step.USE and decision.tokens is not None:
                    if decision.save:
                        await self._store.save(self._key, decision.tokens)  # persist BEFORE use
                    self._current = decision.tokens
                    return decision.tokens
                if decision.step is Step.REFRESH and decision.tokens is not None:
                    try:
                        pair = await self._send(self._refresh(decision.tokens.refresh_token))
                    except RequestError as exc:
                        error = exc
                        decision = flow.refresh_failed(_own_code(exc))
                        continue
                    decision = flow.refresh_succeeded(
                        pair.access_token,
                        pair.refresh_token,
                        expires_in=pair.expires_in,
                        refresh_expires_in=pair.refresh_expires_in,
                        now=self._client._now(),
                    )
                elif decision.step is Step.LOGIN and self._login is not None:
                    try:
                        pair = await self._send(self._login())
                    except RequestError as exc:
                        error = exc
                        decision = flow.login_failed(_own_code(exc))
                        continue
                    decision = flow.login_succeeded(
                        pair.access_token,
                        pair.refresh_token,
                        expires_in=pair.expires_in,
                        refresh_expires_in=pair.refresh_expires_in,
                        now=self._client._now(),
                    )
                else:
                    raise error if error is not None else _no_token(decision)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class TokenManager:
    """Hands out a valid access token for one credential; refreshes or logs in, single-flight.

    ``login`` builds the login operation (``None``: this credential cannot log in, e.g. a user
    session); ``refresh`` the refresh operation for a refresh token. ``via`` is the manager whose
    token those operations need as bearer (user sessions refresh with the application token).
    ``seed``: a pair (e.g. a user session from a login) saved into the store on first use, under the
    lock, unless the store already holds a pair obtained at the same time or later (see
    :func:`paysdk._tokens.newer_pair`).
    """

    def __init__(
        self,
        client: Client,
        *,
        key: str,
        store: TokenStore,
        refresh: Callable[[Secret], Operation[TokenPair]],
        login: Callable[[], Operation[TokenPair]] | None = None,
        via: TokenManager | None = None,
        policy: RefreshPolicy | None = None,
        initial: StoredTokens | None = None,
        seed: StoredTokens | None = None,
    ) -> None:
        self._client = client
        self._key = key
        self._store = store
        self._refresh = refresh
        self._login = login
        self._via = via
        self._policy = policy or RefreshPolicy()
        self._lock = threading.Lock()
        self._current = initial
        self._seed = seed

    @property
    def key(self) -> str:
        """The store key of this credential."""
        return self._key

    @property
    def current(self) -> StoredTokens | None:
        """The pair this manager last used (``None`` before the first call)."""
        return self._current

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key={self._key!r}, store={self._store!r})"

    def token(self) -> Secret:
        """A fresh access token: the cached one, else the stored one, else refreshed or logged in."""
        current = self._current
        if current is not None and is_fresh(current, self._client._now(), self._policy):
            return current.access_token
        tokens = self._acquire(None, None, None)
        return tokens.access_token

    def recover(self, rejected: Secret, cause: APIError) -> Secret:
        """After ``cause`` (a 401 for ``rejected``): the token to replay with, single-flight."""
        tokens = self._acquire(rejected, cause.own_code, cause)
        return tokens.access_token

    def login(self) -> StoredTokens:
        """Log in now (even when a valid pair is stored) and store the new pair."""
        return self._acquire(None, None, None, force_login=True)

    def stored(self) -> StoredTokens | None:
        """The pair in the store now (read under the lock; nothing is refreshed or sent)."""
        with self._lock, self._store.lock(self._key):
            return self._load()

    def forget(self) -> bool:
        """Drop the cached and the stored pair (e.g. after a logout); whether a pair was stored."""
        with self._lock, self._store.lock(self._key):
            found = self._store.load(self._key) is not None
            self._store.delete(self._key)
            self._current = None
            self._seed = None
            return found

    def _load(self) -> StoredTokens | None:
        # Call it holding the locks: the seed goes in first, unless the store holds a newer pair.
        stored = self._store.load(self._key)
        seed = self._seed
        if seed is not None and newer_pair(stored, seed) is seed:
            self._store.save(self._key, seed)  # persist BEFORE use
            stored = seed
        self._seed = None
        return stored

    def _send(self, op: Operation[TokenPair]) -> TokenPair:
        if self._via is None:
            return self._client._request(op)
        # 7104/7105 here concern the refresh token in the body, not the bearer: not the via's problem.
        return self._client._authed_request(op, self._via, REPLAY_CODES)

    def _acquire(
        self,
        rejected: Secret | None,
        code: int | None,
        cause: APIError | None,
        *,
        force_login: bool = False,
    ) -> StoredTokens:
        with self._lock, self._store.lock(self._key):
            stored = self._load()
            flow = TokenFlow(
                stored,
                self._client._now(),
                self._policy,
                can_login=self._login is not None,
                rejected=rejected,
                rejected_code=code,
            )
            decision = Decision(Step.LOGIN, reason="explicit login") if force_login else flow.start()
            error: Exception | None = cause
            while True:
                if decision.step is Step.USE and decision.tokens is not None:
                    if decision.save:
                        self._store.save(self._key, decision.tokens)  # persist BEFORE use
                    self._current = decision.tokens
                    return decision.tokens
                if decision.step is Step.REFRESH and decision.tokens is not None:
                    try:
                        pair = self._send(self._refresh(decision.tokens.refresh_token))
                    except RequestError as exc:
                        error = exc
                        decision = flow.refresh_failed(_own_code(exc))
                        continue
                    decision = flow.refresh_succeeded(
                        pair.access_token,
                        pair.refresh_token,
                        expires_in=pair.expires_in,
                        refresh_expires_in=pair.refresh_expires_in,
                        now=self._client._now(),
                    )
                elif decision.step is Step.LOGIN and self._login is not None:
                    try:
                        pair = self._send(self._login())
                    except RequestError as exc:
                        error = exc
                        decision = flow.login_failed(_own_code(exc))
                        continue
                    decision = flow.login_succeeded(
                        pair.access_token,
                        pair.refresh_token,
                        expires_in=pair.expires_in,
                        refresh_expires_in=pair.refresh_expires_in,
                        now=self._client._now(),
                    )
                else:
                    raise error if error is not None else _no_token(decision)
# unasync: generated end
