"""Token-managed credentials, for every token kind: application keys, token kinds, store keys, and
the token manager (the I/O shell of :mod:`paysdk._tokens`).

A :class:`TokenKind` says what is generic about one kind of access token (wallet application, wallet
user session, backoffice application, backoffice user): the credential name operations give in
``auth`` (:mod:`paysdk._credentials`), the argument an error names, and how to refresh a pair. The
login builder is bound to the credentials that log in (keys, or an email and password) and the store
key to the environment, merchant and kind (:func:`credential_key`, :func:`user_key`).

:class:`AsyncTokenManager` is hand-written; :class:`TokenManager` is generated from it by
``scripts/unasync.py``. The manager only takes locks, reads and writes the store, and sends the login
or refresh request; every decision is :class:`paysdk._tokens.TokenFlow`'s. Locks, outermost first:
the manager's own lock (``asyncio.Lock`` / ``threading.Lock``: the tasks or threads sharing this
client), then ``store.lock(key)`` (other clients, processes or hosts sharing the store). A kind whose
login or refresh needs another token (a user's, with the application bearer) takes that token's
locks inside its own, never the other way round.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paysdk._credentials import needs_token_manager
from paysdk._environment import Environment
from paysdk._errors import APIError, RequestError, ValidationError
from paysdk._jwt import JWTError, load_signing_key, public_key_b64, sign_merchant
from paysdk._pipeline import Base, Operation, base_url_for, data_envelope
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
)

if TYPE_CHECKING:
    import nacl.signing  # pynacl loads on first use (paysdk._jwt)

    from paysdk._client import AsyncClient, Client
    from paysdk.contracts.wallet import TokenPair  # the wallet contracts load with the first login (D460)

__all__ = [
    "ApplicationKey",
    "AsyncTokenManager",
    "TokenKind",
    "TokenManager",
    "credential_key",
    "pair_from_stored",
    "token_operation",
    "user_key",
]


class ApplicationKey:
    """An application's signing credentials: the merchant slug and its Ed25519 private key (D36).

    ``private_key`` is the 32-byte seed (raw bytes, base64, base64url or hex), a
    :class:`~paysdk.Secret` of one, or an OKP JWK (a mapping, or its JSON text). It is checked here
    (:class:`~paysdk.ValidationError` ``private_key`` otherwise, never showing the key) and never
    appears in a repr, log line or error. Not picklable.
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
        return f"{type(self).__name__}(merchant={self._merchant!r}, private_key='****')"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError(f"paysdk.{type(self).__name__} is not picklable")


@dataclass(frozen=True, slots=True)
class TokenKind:
    """One kind of access token: the credential name operations give for it (``wallet_app``, ...),
    the argument an error names (``wallet``, ``backoffice``), and the builder of its refresh request.
    """

    credential: str
    field: str
    refresh: Callable[[Secret], Operation[TokenPair]]


def credential_key(environment: Environment, base: Base, role: str, merchant: str) -> str:
    """The store key of an application credential: one per environment, address, role (the kind's
    namespace: ``app`` for the wallet, ``backoffice-app``) and merchant."""
    return f"{environment.name}|{base_url_for(environment, base)}|{role}|{merchant}"


def user_key(application: str, name: str) -> str:
    """The store key of the user session ``name`` of the application whose store key is ``application``."""
    return f"{application}|user|{name}"


def pair_from_stored(stored: StoredTokens) -> TokenPair:
    """The :class:`~paysdk.contracts.wallet.TokenPair` of a stored pair (lifetimes from the local times)."""
    from paysdk.contracts.wallet import TokenPair

    return TokenPair(
        access_token=stored.access_token.reveal(),
        refresh_token=stored.refresh_token.reveal(),
        expires_in=max(round(stored.access_expires_at - stored.obtained_at), 0),
        refresh_expires_in=max(round(stored.refresh_expires_at - stored.obtained_at), 0),
    )


def token_operation(base: Base, path: str, body: dict[str, Any], auth: str = "none") -> Operation[TokenPair]:
    """A login or refresh request answering a token pair (``{"data": {...}}``, D32).

    Never replayed once its bytes may have arrived: a refresh spends the refresh token (a replay would
    present a used one and revoke the family), hence no idempotency key and not idempotent: retried
    only on connect errors.
    """
    from paysdk.contracts.wallet import TokenPair

    return Operation(
        method="POST",
        path=path,
        base=base,
        auth=auth,  # type: ignore[arg-type]
        json=body,
        parse=data_envelope(TokenPair.model_validate),
        idempotent=False,
        uses_idempotency_keys=False,
    )


def check_ttls(body: dict[str, Any], access_token_ttl: object, refresh_token_ttl: object) -> dict[str, Any]:
    """``body`` with ``accessTokenTtl``/``refreshTokenTtl`` added when given (positive ints of seconds)."""
    for name, value, wire in (
        ("access_token_ttl", access_token_ttl, "accessTokenTtl"),
        ("refresh_token_ttl", refresh_token_ttl, "refreshTokenTtl"),
    ):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValidationError(name, "must be a positive int of seconds")
        body[wire] = value
    return body


def _own_code(exc: RequestError) -> int | None:
    return exc.own_code if isinstance(exc, APIError) else None


def _no_token(kind: TokenKind, decision: Decision) -> ValidationError:
    return ValidationError(kind.field, f"no usable {kind.credential} token: {decision.reason}")


# unasync: begin
class AsyncTokenManager:
    """Hands out a valid access token for one credential; refreshes or logs in, single-flight.

    ``kind`` (:class:`TokenKind`) is the kind of token and builds the refresh operation; ``login``
    builds the login operation (``None``: this credential cannot log in, e.g. a wallet user session).
    Those operations name the credential they need in ``auth``: ``via`` is the manager that supplies
    it (a wallet user view refreshes with its client's application token); ``None``: the client's.
    ``seed``: a pair (e.g. a user session from a login) saved into the store on first use, under the
    lock, unless the store already holds a pair obtained at the same time or later (see
    :func:`paysdk._tokens.newer_pair`).
    """

    def __init__(
        self,
        client: AsyncClient,
        kind: TokenKind,
        *,
        key: str,
        store: AsyncTokenStore,
        login: Callable[[], Operation[TokenPair]] | None = None,
        via: AsyncTokenManager | None = None,
        policy: RefreshPolicy | None = None,
        initial: StoredTokens | None = None,
        seed: StoredTokens | None = None,
    ) -> None:
        self._client = client
        self._kind = kind
        self._key = key
        self._store = store
        self._refresh = kind.refresh
        self._login = login
        self._via = via
        self._policy = policy or RefreshPolicy()
        import asyncio  # here, not at import: ``from paysdk import Client`` does not load it (D461)

        self._lock = asyncio.Lock()
        self._current = initial
        self._seed = seed

    @property
    def kind(self) -> TokenKind:
        """The kind of token this manager hands out."""
        return self._kind

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
        if not needs_token_manager(op.auth):
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
                    raise error if error is not None else _no_token(self._kind, decision)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class TokenManager:
    """Hands out a valid access token for one credential; refreshes or logs in, single-flight.

    ``kind`` (:class:`TokenKind`) is the kind of token and builds the refresh operation; ``login``
    builds the login operation (``None``: this credential cannot log in, e.g. a wallet user session).
    Those operations name the credential they need in ``auth``: ``via`` is the manager that supplies
    it (a wallet user view refreshes with its client's application token); ``None``: the client's.
    ``seed``: a pair (e.g. a user session from a login) saved into the store on first use, under the
    lock, unless the store already holds a pair obtained at the same time or later (see
    :func:`paysdk._tokens.newer_pair`).
    """

    def __init__(
        self,
        client: Client,
        kind: TokenKind,
        *,
        key: str,
        store: TokenStore,
        login: Callable[[], Operation[TokenPair]] | None = None,
        via: TokenManager | None = None,
        policy: RefreshPolicy | None = None,
        initial: StoredTokens | None = None,
        seed: StoredTokens | None = None,
    ) -> None:
        self._client = client
        self._kind = kind
        self._key = key
        self._store = store
        self._refresh = kind.refresh
        self._login = login
        self._via = via
        self._policy = policy or RefreshPolicy()
        self._lock = threading.Lock()
        self._current = initial
        self._seed = seed

    @property
    def kind(self) -> TokenKind:
        """The kind of token this manager hands out."""
        return self._kind

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
        if not needs_token_manager(op.auth):
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
                    raise error if error is not None else _no_token(self._kind, decision)


# unasync: generated end
