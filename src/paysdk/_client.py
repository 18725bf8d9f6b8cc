"""The clients: :class:`AsyncClient` (hand-written) and :class:`Client` (generated from it).

The async class between ``# unasync: begin`` and ``# unasync: end`` is the source of truth;
``scripts/unasync.py`` writes the sync twin into the ``# unasync: generated`` block below it. Edit the
async code, then run ``python scripts/unasync.py``. Everything that is logic lives in
:mod:`paysdk._pipeline` (pure); the classes here only loop: build, send, decide, sleep, log.
"""

from __future__ import annotations

import copy
import functools
import logging
import os
import random
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

import httpx

from paysdk._auth import AsyncTokenManager, TokenManager, user_key
from paysdk._backoffice_auth import (
    BACKOFFICE_APP_TOKENS,
    BACKOFFICE_USER_TOKENS,
    BackofficeCredentials,
    backoffice_app_key,
    backoffice_app_login_operation,
    backoffice_user_login_operation,
)
from paysdk._credentials import (
    CREDENTIALS,
    Credential,
    CredentialValue,
    credential_for,
    credential_secrets,
    missing_credential,
    needs_token_manager,
    recovery_codes,
)
from paysdk._deadline import attempt_deadline
from paysdk._deprecation import warn_once
from paysdk._environment import Environment
from paysdk._errors import AuthenticationError, ValidationError
from paysdk._logging import LOGGER_NAME, setup_from_env
from paysdk._pipeline import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
    APIResponse,
    ClientConfig,
    Operation,
    Outcome,
    ResponseInfo,
    RetryDecision,
    attempt_budget,
    buffered_response,
    build_request,
    call_total_timeout,
    check_answer,
    describe_outcome,
    idempotency_key_for,
    may_have_been_received,
    response_info,
    result_from_outcome,
    retry_decision,
    validate_headers,
    validate_max_response_bytes,
    validate_max_retries,
    validate_timeout,
    validate_token,
    validate_total_timeout,
)
from paysdk._secret import Secret
from paysdk._token_stores import AsyncStoreAdapter, AsyncTokenStore, StoreAdapter, TokenStore
from paysdk._types import NOT_GIVEN, NotGiven
from paysdk._wallet_auth import (
    WALLET_APP_TOKENS,
    WalletCredentials,
    app_login_operation,
    application_key,
)
from paysdk.resources._base import LazyResource

if TYPE_CHECKING:  # each family's module is imported on first use of its attribute (LazyResource, D460)
    from paysdk.resources._base import Parsed, Raw
    from paysdk.resources.alternative_payments import AlternativePayments, AsyncAlternativePayments
    from paysdk.resources.backoffice import AsyncBackoffice, Backoffice
    from paysdk.resources.onboarding import AsyncOnboarding, Onboarding
    from paysdk.resources.payment_links import AsyncPaymentLinks, PaymentLinks
    from paysdk.resources.reconciliation import AsyncReconciliation, Reconciliation
    from paysdk.resources.sandbox import AsyncSandbox, Sandbox
    from paysdk.resources.subscriptions import AsyncSubscriptions, Subscriptions
    from paysdk.resources.terminal import AsyncTerminal, Terminal
    from paysdk.resources.wallet import AsyncWallet, Wallet

__all__ = ["AsyncClient", "AsyncClientWithRawResponse", "Client", "ClientWithRawResponse"]

T = TypeVar("T")

#: Environment variable read when ``merchant_token`` is not passed.
TOKEN_ENV_VAR = "PAYSDK_MERCHANT_TOKEN"


def new_idempotency_key() -> str:
    """A fresh idempotency key (UUID4), minted once per logical call."""
    return str(uuid.uuid4())


def make_config(
    merchant_token: str | Secret | None,
    environment: Environment | None,
    timeout: object,
    max_retries: object,
    default_headers: Mapping[str, str] | None,
    total_timeout: object = DEFAULT_TOTAL_TIMEOUT,
    max_response_bytes: object = DEFAULT_MAX_RESPONSE_BYTES,
) -> ClientConfig:
    """Validate the client arguments (reading ``PAYSDK_*`` defaults) into a :class:`ClientConfig`."""
    setup_from_env()  # PAYSDK_LOG, read once per process
    if merchant_token is None:
        merchant_token = os.environ.get(TOKEN_ENV_VAR) or None
    if environment is None:
        environment = Environment.from_env()  # ValidationError naming the PAYSDK_* variable
    elif not isinstance(environment, Environment):
        raise ValidationError("environment", "must be a paysdk.Environment")
    checked_timeout = validate_timeout(timeout)
    return ClientConfig(
        environment=environment,
        merchant_token=validate_token(merchant_token),
        timeout=checked_timeout,
        max_retries=validate_max_retries(max_retries),
        default_headers=validate_headers(default_headers),
        total_timeout=validate_total_timeout(total_timeout, checked_timeout),
        max_response_bytes=validate_max_response_bytes(max_response_bytes),
    )


def replace_config(
    config: ClientConfig,
    *,
    merchant_token: str | Secret | NotGiven | None,
    environment: Environment | NotGiven,
    timeout: float | httpx.Timeout | NotGiven,
    max_retries: int | NotGiven,
    default_headers: Mapping[str, str] | NotGiven,
    total_timeout: float | NotGiven = NOT_GIVEN,
    max_response_bytes: int | NotGiven = NOT_GIVEN,
) -> ClientConfig:
    """``config`` with the given options replaced (``NOT_GIVEN`` keeps the current value)."""
    new_timeout = config.timeout if isinstance(timeout, NotGiven) else validate_timeout(timeout)
    return ClientConfig(
        environment=config.environment if isinstance(environment, NotGiven) else environment,
        merchant_token=(
            config.merchant_token if isinstance(merchant_token, NotGiven) else validate_token(merchant_token)
        ),
        timeout=new_timeout,
        total_timeout=validate_total_timeout(
            config.total_timeout if isinstance(total_timeout, NotGiven) else total_timeout, new_timeout
        ),
        max_response_bytes=(
            config.max_response_bytes
            if isinstance(max_response_bytes, NotGiven)
            else validate_max_response_bytes(max_response_bytes)
        ),
        max_retries=(
            config.max_retries if isinstance(max_retries, NotGiven) else validate_max_retries(max_retries)
        ),
        default_headers=(
            config.default_headers
            if isinstance(default_headers, NotGiven)
            else validate_headers(default_headers)
        ),
        user_agent=config.user_agent,
    )


def client_repr(
    name: str,
    config: ClientConfig,
    wallet: WalletCredentials | None = None,
    backoffice: BackofficeCredentials | None = None,
) -> str:
    """``Client(environment='local', base_url='...', merchant_token=Secret('****'), max_retries=2)``."""
    token = repr(config.merchant_token) if config.merchant_token is not None else "None"
    env = config.environment
    wallet_part = f", wallet={wallet!r}" if wallet is not None else ""
    backoffice_part = f", backoffice={backoffice!r}" if backoffice is not None else ""
    return (
        f"{name}(environment={env.name!r}, base_url={env.base_url!r}, merchant_token={token}"
        f"{wallet_part}{backoffice_part}, max_retries={config.max_retries})"
    )


def check_wallet(wallet: object) -> WalletCredentials | None:
    """``wallet=`` is ``None`` or :class:`~paysdk.WalletCredentials`."""
    if wallet is not None and not isinstance(wallet, WalletCredentials):
        raise ValidationError("wallet", "must be paysdk.WalletCredentials(merchant, private_key)")
    return wallet


def check_backoffice(backoffice: object) -> BackofficeCredentials | None:
    """``backoffice=`` is ``None`` or :class:`~paysdk.BackofficeCredentials`."""
    if backoffice is not None and not isinstance(backoffice, BackofficeCredentials):
        raise ValidationError("backoffice", "must be paysdk.BackofficeCredentials(merchant, private_key)")
    return backoffice


def log_attempt(
    logger: logging.Logger, op: Operation[Any], attempt: int, outcome: Outcome, seconds: float
) -> None:
    """One metadata line per attempt (never headers or bodies)."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "%s %s attempt=%d %s elapsed_ms=%d",
            op.method.upper(),
            op.path,
            attempt,
            describe_outcome(outcome),
            round(seconds * 1000),
        )


def log_retry(logger: logging.Logger, op: Operation[Any], attempt: int, decision: RetryDecision) -> None:
    """One line per retry, at INFO."""
    logger.info(
        "retrying %s %s after attempt %d (%s) in %.2fs",
        op.method.upper(),
        op.path,
        attempt,
        decision.reason,
        decision.delay,
    )


# unasync: begin
class AsyncClientWithRawResponse:
    """``client.with_raw_response``: the client's resources whose methods return
    :class:`~paysdk.APIResponse` (the result, from ``.parse()``, with the metadata of its own answer)::

        answer = await client.with_raw_response.wallet.cards.get(card_id)
        card = answer.parse()
        print(answer.status_code, answer.request_id, answer.attempts, answer.replayed)

    Same arguments, per-call options, validation and errors as the plain methods. Methods that are not
    one API call (``wallet.login``, the token-store helpers, ``wallet.as_user``, which returns a view
    in the same mode) behave as they do on the client.
    """

    payment_links: LazyResource[AsyncPaymentLinks[Raw]] = LazyResource(
        "paysdk.resources.payment_links:AsyncPaymentLinks"
    )
    alternative_payments: LazyResource[AsyncAlternativePayments[Raw]] = LazyResource(
        "paysdk.resources.alternative_payments:AsyncAlternativePayments"
    )
    wallet: LazyResource[AsyncWallet[Raw]] = LazyResource("paysdk.resources.wallet:AsyncWallet")
    sandbox: LazyResource[AsyncSandbox[Raw]] = LazyResource("paysdk.resources.sandbox:AsyncSandbox")
    subscriptions: LazyResource[AsyncSubscriptions[Raw]] = LazyResource(
        "paysdk.resources.subscriptions:AsyncSubscriptions"
    )
    backoffice: LazyResource[AsyncBackoffice[Raw]] = LazyResource(
        "paysdk.resources.backoffice:AsyncBackoffice"
    )
    terminal: LazyResource[AsyncTerminal[Raw]] = LazyResource("paysdk.resources.terminal:AsyncTerminal")
    reconciliation: LazyResource[AsyncReconciliation[Raw]] = LazyResource(
        "paysdk.resources.reconciliation:AsyncReconciliation"
    )
    onboarding: LazyResource[AsyncOnboarding[Raw]] = LazyResource(
        "paysdk.resources.onboarding:AsyncOnboarding"
    )

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    def _new_resource(self, cls: Callable[..., T]) -> T:
        """A resource of ``self._client`` in the raw mode (:class:`~paysdk.resources._base.LazyResource`)."""
        return cls(self._client, raw=True)


class AsyncClient:
    """The API client, for ``asyncio`` code::

        async with paysdk.AsyncClient(merchant_token, paysdk.Environment.local()) as client:
            link = await client.payment_links.create(
                amount=Decimal("10.50"), user_id="+50212345678", channel="wa", client="my-shop"
            )

    ``merchant_token`` defaults to ``$PAYSDK_MERCHANT_TOKEN``; it is needed only by calls that send it
    (:class:`~paysdk.ValidationError` ``merchant_token`` otherwise) and is kept as a
    :class:`~paysdk.Secret`: no repr, error or log line shows it. ``environment`` defaults to
    :meth:`Environment.from_env() <paysdk.Environment.from_env>`.

    ``timeout`` is seconds or an :class:`httpx.Timeout` (default 30 s, 5 s to connect); ``None`` is
    refused rather than silently disabling timeouts. It bounds each attempt as a whole (its ``read``
    value: connecting, sending and reading the whole answer, however slowly the bytes come).
    ``total_timeout`` (default 60 s) bounds the whole call: every attempt and every wait between them,
    ``Retry-After`` included. ``max_response_bytes`` (default 16 MiB) caps the answer read; a larger
    one raises :class:`~paysdk.ResponseTooLargeError` and its connection is closed.
    ``max_retries`` (default 2) bounds retries of
    connect errors, timeouts, 408/429/5xx answers; a POST is retried after its bytes may have been
    sent only when the environment honours idempotency keys (one key per call, reused on each attempt).

    Pass ``http_client`` to share your own pool (it is then yours to close) or ``transport`` for tests
    (e.g. :class:`httpx.MockTransport`). ``default_headers`` are added to every request. Log lines go
    to ``logger`` (default ``logging.getLogger("paysdk")``): metadata only, DEBUG per attempt, INFO per retry.

    ``wallet`` (:class:`~paysdk.WalletCredentials`) enables :attr:`wallet`: the application logs in
    lazily on the first wallet call and its tokens are refreshed single-flight through
    ``token_store`` (default a :class:`~paysdk.MemoryTokenStore`; share a
    :class:`~paysdk.FileTokenStore` or :class:`~paysdk.RedisTokenStore` between processes or hosts that
    use the same credential).

    ``backoffice`` (:class:`~paysdk.BackofficeCredentials`) holds both backoffice tokens at once
    (spec 5.3.7): the application token and, with ``user=``, the backoffice user token; each backoffice
    operation names the one it takes. They are token-managed like the wallet's, in the same store.
    Every credential an operation can name is listed in :mod:`paysdk._credentials`.

    Resources: :attr:`payment_links`, :attr:`alternative_payments`, :attr:`wallet`, :attr:`sandbox`,
    :attr:`subscriptions` (wallet application token, D138), :attr:`backoffice` (D184).
    Every method takes the per-call options ``timeout=``, ``extra_headers=`` and, on POSTs,
    ``idempotency_key=`` (:class:`~paysdk.CallOptions`). :attr:`with_raw_response` returns each call's
    answer metadata with its result; :attr:`last_response` holds the metadata of the last answer
    (:class:`~paysdk.ResponseInfo`), overwritten by concurrent calls.
    """

    # Each family's resource is built, and its module imported, on first use (D460).
    payment_links: LazyResource[AsyncPaymentLinks[Parsed]] = LazyResource(
        "paysdk.resources.payment_links:AsyncPaymentLinks"
    )
    alternative_payments: LazyResource[AsyncAlternativePayments[Parsed]] = LazyResource(
        "paysdk.resources.alternative_payments:AsyncAlternativePayments"
    )
    wallet: LazyResource[AsyncWallet[Parsed]] = LazyResource("paysdk.resources.wallet:AsyncWallet")
    sandbox: LazyResource[AsyncSandbox[Parsed]] = LazyResource("paysdk.resources.sandbox:AsyncSandbox")
    subscriptions: LazyResource[AsyncSubscriptions[Parsed]] = LazyResource(
        "paysdk.resources.subscriptions:AsyncSubscriptions"
    )
    backoffice: LazyResource[AsyncBackoffice[Parsed]] = LazyResource(
        "paysdk.resources.backoffice:AsyncBackoffice"
    )
    terminal: LazyResource[AsyncTerminal[Parsed]] = LazyResource("paysdk.resources.terminal:AsyncTerminal")
    reconciliation: LazyResource[AsyncReconciliation[Parsed]] = LazyResource(
        "paysdk.resources.reconciliation:AsyncReconciliation"
    )
    onboarding: LazyResource[AsyncOnboarding[Parsed]] = LazyResource(
        "paysdk.resources.onboarding:AsyncOnboarding"
    )
    _raw_view: AsyncClientWithRawResponse | None

    def __init__(
        self,
        merchant_token: str | Secret | None = None,
        environment: Environment | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        default_headers: Mapping[str, str] | None = None,
        logger: logging.Logger | None = None,
        wallet: WalletCredentials | None = None,
        backoffice: BackofficeCredentials | None = None,
        token_store: TokenStore | AsyncTokenStore | None = None,
        total_timeout: float = DEFAULT_TOTAL_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self._config = make_config(
            merchant_token,
            environment,
            timeout,
            max_retries,
            default_headers,
            total_timeout,
            max_response_bytes,
        )
        self._wallet_credentials = check_wallet(wallet)
        self._backoffice_credentials = check_backoffice(backoffice)
        self._token_store = AsyncStoreAdapter.of(token_store)
        if http_client is not None and transport is not None:
            raise ValidationError("transport", "pass either http_client or transport, not both")
        self._owns_http = http_client is None
        self._http = (
            http_client
            if http_client is not None
            else httpx.AsyncClient(transport=transport, timeout=self._config.timeout)
        )
        if http_client is None and transport is None:
            # the attempt deadline at the socket; httpcore loads with the pool, as httpx loads it (D461)
            from paysdk._transport import install_deadlines

            install_deadlines(self._http)
        self._logger = logger or logging.getLogger(LOGGER_NAME)
        import asyncio  # here, not at import: ``from paysdk import Client`` does not load it (D461)

        self._sleep = asyncio.sleep
        self._random = random.random
        self._now = time.time
        self._monotonic = time.monotonic
        self._mint_key = new_idempotency_key
        #: Metadata of the last answer this client received (``None`` before any, or after a
        #: connection error). In concurrent code, prefer the attributes of the result or error.
        self.last_response: ResponseInfo | None = None
        self._deprecations_seen: set[str] = set()  # operations warned about (D196)
        #: The token-managed credentials this client holds, by credential name.
        self._providers = self._make_token_providers()
        self._bind_resources()

    @property
    def with_raw_response(self) -> AsyncClientWithRawResponse:
        """The resources of this client whose methods return :class:`~paysdk.APIResponse`: each
        call's result with its own status, headers, request id, attempts and ``replayed`` flag."""
        if self._raw_view is None:
            self._raw_view = AsyncClientWithRawResponse(self)
        return self._raw_view

    def _bind_resources(self) -> None:
        """Start without resources: each is built on first use (a copy's are its own)."""
        self._raw_view = None
        LazyResource.forget(self)

    def _new_resource(self, cls: Callable[..., T]) -> T:
        """A resource of this client (:class:`~paysdk.resources._base.LazyResource`)."""
        return cls(self)

    def _make_token_providers(self) -> dict[str, AsyncTokenManager]:
        env, store = self._config.environment, self._token_store
        providers: dict[str, AsyncTokenManager] = {}
        wallet = self._wallet_credentials
        if wallet is not None:
            providers["wallet_app"] = AsyncTokenManager(
                self,
                WALLET_APP_TOKENS,
                key=application_key(env, wallet.merchant),
                store=store,
                login=functools.partial(app_login_operation, wallet),
            )
        backoffice = self._backoffice_credentials
        if backoffice is not None:
            application = AsyncTokenManager(
                self,
                BACKOFFICE_APP_TOKENS,
                key=backoffice_app_key(env, backoffice.merchant),
                store=store,
                login=functools.partial(backoffice_app_login_operation, backoffice),
            )
            providers["backoffice_app"] = application
            if backoffice.user is not None:
                providers["backoffice_user"] = AsyncTokenManager(
                    self,
                    BACKOFFICE_USER_TOKENS,
                    key=user_key(application.key, backoffice.user.email),
                    store=store,
                    login=functools.partial(backoffice_user_login_operation, backoffice.user),
                    via=application,
                )
        return providers

    def _token_provider(self, credential: Credential) -> AsyncTokenManager:
        """The token manager of ``credential`` (:class:`~paysdk.ValidationError` naming what to pass
        when this client does not hold it)."""
        provider = self._providers.get(credential.name)
        if provider is None:
            raise missing_credential(credential)
        return provider

    def _wallet_manager(self) -> AsyncTokenManager:
        """The application token manager (:class:`~paysdk.ValidationError` ``wallet`` without credentials)."""
        return self._token_provider(CREDENTIALS["wallet_app"])

    @property
    def environment(self) -> Environment:
        """The environment this client talks to."""
        return self._config.environment

    @property
    def timeout(self) -> httpx.Timeout:
        """The default timeout of every call."""
        return self._config.timeout

    @property
    def max_retries(self) -> int:
        """How many times a failed call may be retried."""
        return self._config.max_retries

    @property
    def total_timeout(self) -> float:
        """Seconds a whole call may take, retries and waits included."""
        return self._config.total_timeout

    @property
    def max_response_bytes(self) -> int:
        """The largest answer read, in bytes."""
        return self._config.max_response_bytes

    def with_options(
        self,
        *,
        merchant_token: str | Secret | NotGiven | None = NOT_GIVEN,
        environment: Environment | NotGiven = NOT_GIVEN,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        default_headers: Mapping[str, str] | NotGiven = NOT_GIVEN,
        total_timeout: float | NotGiven = NOT_GIVEN,
        max_response_bytes: int | NotGiven = NOT_GIVEN,
    ) -> Self:
        """A copy of this client with some options changed, sharing its connection pool.

        Closing the copy does not close the pool; close the original client.
        """
        clone = copy.copy(self)
        clone._config = replace_config(
            self._config,
            merchant_token=merchant_token,
            environment=environment,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            total_timeout=total_timeout,
            max_response_bytes=max_response_bytes,
        )
        clone._owns_http = False
        clone.last_response = None
        if not isinstance(environment, NotGiven):
            clone._providers = clone._make_token_providers()  # other addresses: other tokens
        clone._bind_resources()
        return clone

    async def aclose(self) -> None:
        """Close the connection pool, unless it was passed in as ``http_client``."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return client_repr(
            type(self).__name__, self._config, self._wallet_credentials, self._backoffice_credentials
        )

    async def _authed_request(
        self,
        op: Operation[T],
        tokens: AsyncTokenManager | None = None,
        recover: frozenset[int] | None = None,
    ) -> T:
        """A call whose credential (``op.auth``) is an access token, its result
        (:meth:`_authed_request_raw`)."""
        return (await self._authed_request_raw(op, tokens, recover)).parse()

    async def _authed_request_raw(
        self,
        op: Operation[T],
        tokens: AsyncTokenManager | None = None,
        recover: frozenset[int] | None = None,
    ) -> APIResponse[T]:
        """A call whose credential (``op.auth``) is an access token: from ``tokens``, else the client's
        provider of that credential. After a 401 that a new token can fix (the credential's
        ``recover`` codes: 7102, 7103 refresh; 7104, 7105 log in again), the single-flight recovery
        and one replay. ``recover`` narrows those codes (a user refresh's 7104/7105 are about its
        body token)."""
        credential = credential_for(op.auth)
        if tokens is None:
            tokens = self._token_provider(credential)
        codes = recovery_codes(credential, recover)
        token = await tokens.token()
        try:
            return await self._request_raw(op, credential=token)
        except AuthenticationError as exc:
            if exc.own_code not in codes:
                raise
            token = await tokens.recover(token, exc)
        return await self._request_raw(op, credential=token)

    async def _request(self, op: Operation[T], *, credential: CredentialValue | None = None) -> T:
        """Run one logical call (:meth:`_request_raw`): its result."""
        return (await self._request_raw(op, credential=credential)).parse()

    async def _request_raw(
        self, op: Operation[T], *, credential: CredentialValue | None = None
    ) -> APIResponse[T]:
        """Run one logical call: attempts, retries and the final result (with its answer's metadata)
        or error. ``credential``: the access token to send (token-managed credentials without one go
        through :meth:`_authed_request_raw`); otherwise ``build_request`` takes the merchant token or
        the call's own."""
        if credential is None and needs_token_manager(op.auth):
            return await self._authed_request_raw(op)
        config = self._config
        key = idempotency_key_for(op, config, mint=self._mint_key)
        started = self._monotonic()
        attempt = 0
        maybe_received = False  # an attempt may have reached the server (outcome_unknown)
        while True:
            attempt += 1
            request = build_request(op, config, key, attempt=attempt, credential=credential)
            sent = self._monotonic()
            deadline = sent + attempt_budget(op, config, elapsed=sent - started)
            outcome: Outcome
            try:
                with attempt_deadline(deadline):
                    outcome = await self._receive(await self._http.send(request, stream=True), deadline)
            except httpx.RequestError as exc:
                outcome = exc
            log_attempt(self._logger, op, attempt, outcome, self._monotonic() - sent)
            maybe_received = maybe_received or may_have_been_received(outcome)
            remaining = call_total_timeout(op, config) - (self._monotonic() - started)
            decision = retry_decision(
                op, attempt, outcome, config, key, rng=self._random, now=self._now, remaining=remaining
            )
            if not decision.retry:
                break
            log_retry(self._logger, op, attempt, decision)
            await self._sleep(decision.delay)
        elapsed = self._monotonic() - started
        info = None
        if isinstance(outcome, httpx.Response):
            info = response_info(op, outcome, attempts=attempt, elapsed=elapsed)
            warn_once(self._deprecations_seen, op.method, op.path, outcome.headers)  # D196
        self.last_response = info
        secrets = (*config.secrets(), *credential_secrets(credential))
        result = result_from_outcome(
            op, outcome, attempts=attempt, secrets=secrets, maybe_received=maybe_received
        )
        return APIResponse(result, cast(ResponseInfo, info))  # an error without an answer has raised

    async def _receive(self, response: httpx.Response, deadline: float) -> httpx.Response:
        """Read an answer as a stream: at most ``max_response_bytes`` (decoded), by the attempt's
        ``deadline`` (``time.monotonic``); the connection is closed when either is passed (D61)."""
        limit = self._config.max_response_bytes
        chunks: list[bytes] = []
        try:
            check_answer(response, -1, limit, left=deadline - self._monotonic())
            size = 0
            async for chunk in response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                check_answer(response, size, limit, left=deadline - self._monotonic())
        finally:
            await response.aclose()
        return buffered_response(response, b"".join(chunks))


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class ClientWithRawResponse:
    """``client.with_raw_response``: the client's resources whose methods return
    :class:`~paysdk.APIResponse` (the result, from ``.parse()``, with the metadata of its own answer)::

        answer = client.with_raw_response.wallet.cards.get(card_id)
        card = answer.parse()
        print(answer.status_code, answer.request_id, answer.attempts, answer.replayed)

    Same arguments, per-call options, validation and errors as the plain methods. Methods that are not
    one API call (``wallet.login``, the token-store helpers, ``wallet.as_user``, which returns a view
    in the same mode) behave as they do on the client.
    """

    payment_links: LazyResource[PaymentLinks[Raw]] = LazyResource(
        "paysdk.resources.payment_links:PaymentLinks"
    )
    alternative_payments: LazyResource[AlternativePayments[Raw]] = LazyResource(
        "paysdk.resources.alternative_payments:AlternativePayments"
    )
    wallet: LazyResource[Wallet[Raw]] = LazyResource("paysdk.resources.wallet:Wallet")
    sandbox: LazyResource[Sandbox[Raw]] = LazyResource("paysdk.resources.sandbox:Sandbox")
    subscriptions: LazyResource[Subscriptions[Raw]] = LazyResource(
        "paysdk.resources.subscriptions:Subscriptions"
    )
    backoffice: LazyResource[Backoffice[Raw]] = LazyResource("paysdk.resources.backoffice:Backoffice")
    terminal: LazyResource[Terminal[Raw]] = LazyResource("paysdk.resources.terminal:Terminal")
    reconciliation: LazyResource[Reconciliation[Raw]] = LazyResource(
        "paysdk.resources.reconciliation:Reconciliation"
    )
    onboarding: LazyResource[Onboarding[Raw]] = LazyResource("paysdk.resources.onboarding:Onboarding")

    def __init__(self, client: Client) -> None:
        self._client = client

    def _new_resource(self, cls: Callable[..., T]) -> T:
        """A resource of ``self._client`` in the raw mode (:class:`~paysdk.resources._base.LazyResource`)."""
        return cls(self._client, raw=True)


class Client:
    """The API client, for blocking code::

        with paysdk.Client(merchant_token, paysdk.Environment.local()) as client:
            link = client.payment_links.create(
                amount=Decimal("10.50"), user_id="+50212345678", channel="wa", client="my-shop"
            )

    ``merchant_token`` defaults to ``$PAYSDK_MERCHANT_TOKEN``; it is needed only by calls that send it
    (:class:`~paysdk.ValidationError` ``merchant_token`` otherwise) and is kept as a
    :class:`~paysdk.Secret`: no repr, error or log line shows it. ``environment`` defaults to
    :meth:`Environment.from_env() <paysdk.Environment.from_env>`.

    ``timeout`` is seconds or an :class:`httpx.Timeout` (default 30 s, 5 s to connect); ``None`` is
    refused rather than silently disabling timeouts. It bounds each attempt as a whole (its ``read``
    value: connecting, sending and reading the whole answer, however slowly the bytes come).
    ``total_timeout`` (default 60 s) bounds the whole call: every attempt and every wait between them,
    ``Retry-After`` included. ``max_response_bytes`` (default 16 MiB) caps the answer read; a larger
    one raises :class:`~paysdk.ResponseTooLargeError` and its connection is closed.
    ``max_retries`` (default 2) bounds retries of
    connect errors, timeouts, 408/429/5xx answers; a POST is retried after its bytes may have been
    sent only when the environment honours idempotency keys (one key per call, reused on each attempt).

    Pass ``http_client`` to share your own pool (it is then yours to close) or ``transport`` for tests
    (e.g. :class:`httpx.MockTransport`). ``default_headers`` are added to every request. Log lines go
    to ``logger`` (default ``logging.getLogger("paysdk")``): metadata only, DEBUG per attempt, INFO per retry.

    ``wallet`` (:class:`~paysdk.WalletCredentials`) enables :attr:`wallet`: the application logs in
    lazily on the first wallet call and its tokens are refreshed single-flight through
    ``token_store`` (default a :class:`~paysdk.MemoryTokenStore`; share a
    :class:`~paysdk.FileTokenStore` or :class:`~paysdk.RedisTokenStore` between processes or hosts that
    use the same credential).

    ``backoffice`` (:class:`~paysdk.BackofficeCredentials`) holds both backoffice tokens at once
    (spec 5.3.7): the application token and, with ``user=``, the backoffice user token; each backoffice
    operation names the one it takes. They are token-managed like the wallet's, in the same store.
    Every credential an operation can name is listed in :mod:`paysdk._credentials`.

    Resources: :attr:`payment_links`, :attr:`alternative_payments`, :attr:`wallet`, :attr:`sandbox`,
    :attr:`subscriptions` (wallet application token, D138), :attr:`backoffice` (D184).
    Every method takes the per-call options ``timeout=``, ``extra_headers=`` and, on POSTs,
    ``idempotency_key=`` (:class:`~paysdk.CallOptions`). :attr:`with_raw_response` returns each call's
    answer metadata with its result; :attr:`last_response` holds the metadata of the last answer
    (:class:`~paysdk.ResponseInfo`), overwritten by concurrent calls.
    """

    # Each family's resource is built, and its module imported, on first use (D460).
    payment_links: LazyResource[PaymentLinks[Parsed]] = LazyResource(
        "paysdk.resources.payment_links:PaymentLinks"
    )
    alternative_payments: LazyResource[AlternativePayments[Parsed]] = LazyResource(
        "paysdk.resources.alternative_payments:AlternativePayments"
    )
    wallet: LazyResource[Wallet[Parsed]] = LazyResource("paysdk.resources.wallet:Wallet")
    sandbox: LazyResource[Sandbox[Parsed]] = LazyResource("paysdk.resources.sandbox:Sandbox")
    subscriptions: LazyResource[Subscriptions[Parsed]] = LazyResource(
        "paysdk.resources.subscriptions:Subscriptions"
    )
    backoffice: LazyResource[Backoffice[Parsed]] = LazyResource("paysdk.resources.backoffice:Backoffice")
    terminal: LazyResource[Terminal[Parsed]] = LazyResource("paysdk.resources.terminal:Terminal")
    reconciliation: LazyResource[Reconciliation[Parsed]] = LazyResource(
        "paysdk.resources.reconciliation:Reconciliation"
    )
    onboarding: LazyResource[Onboarding[Parsed]] = LazyResource("paysdk.resources.onboarding:Onboarding")
    _raw_view: ClientWithRawResponse | None

    def __init__(
        self,
        merchant_token: str | Secret | None = None,
        environment: Environment | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        default_headers: Mapping[str, str] | None = None,
        logger: logging.Logger | None = None,
        wallet: WalletCredentials | None = None,
        backoffice: BackofficeCredentials | None = None,
        token_store: TokenStore | TokenStore | None = None,
        total_timeout: float = DEFAULT_TOTAL_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self._config = make_config(
            merchant_token,
            environment,
            timeout,
            max_retries,
            default_headers,
            total_timeout,
            max_response_bytes,
        )
        self._wallet_credentials = check_wallet(wallet)
        self._backoffice_credentials = check_backoffice(backoffice)
        self._token_store = StoreAdapter.of(token_store)
        if http_client is not None and transport is not None:
            raise ValidationError("transport", "pass either http_client or transport, not both")
        self._owns_http = http_client is None
        self._http = (
            http_client
            if http_client is not None
            else httpx.Client(transport=transport, timeout=self._config.timeout)
        )
        if http_client is None and transport is None:
            # the attempt deadline at the socket; httpcore loads with the pool, as httpx loads it (D461)
            from paysdk._transport import install_deadlines

            install_deadlines(self._http)
        self._logger = logger or logging.getLogger(LOGGER_NAME)
        self._sleep = time.sleep
        self._random = random.random
        self._now = time.time
        self._monotonic = time.monotonic
        self._mint_key = new_idempotency_key
        #: Metadata of the last answer this client received (``None`` before any, or after a
        #: connection error). In concurrent code, prefer the attributes of the result or error.
        self.last_response: ResponseInfo | None = None
        self._deprecations_seen: set[str] = set()  # operations warned about (D196)
        #: The token-managed credentials this client holds, by credential name.
        self._providers = self._make_token_providers()
        self._bind_resources()

    @property
    def with_raw_response(self) -> ClientWithRawResponse:
        """The resources of this client whose methods return :class:`~paysdk.APIResponse`: each
        call's result with its own status, headers, request id, attempts and ``replayed`` flag."""
        if self._raw_view is None:
            self._raw_view = ClientWithRawResponse(self)
        return self._raw_view

    def _bind_resources(self) -> None:
        """Start without resources: each is built on first use (a copy's are its own)."""
        self._raw_view = None
        LazyResource.forget(self)

    def _new_resource(self, cls: Callable[..., T]) -> T:
        """A resource of this client (:class:`~paysdk.resources._base.LazyResource`)."""
        return cls(self)

    def _make_token_providers(self) -> dict[str, TokenManager]:
        env, store = self._config.environment, self._token_store
        providers: dict[str, TokenManager] = {}
        wallet = self._wallet_credentials
        if wallet is not None:
            providers["wallet_app"] = TokenManager(
                self,
                WALLET_APP_TOKENS,
                key=application_key(env, wallet.merchant),
                store=store,
                login=functools.partial(app_login_operation, wallet),
            )
        backoffice = self._backoffice_credentials
        if backoffice is not None:
            application = TokenManager(
                self,
                BACKOFFICE_APP_TOKENS,
                key=backoffice_app_key(env, backoffice.merchant),
                store=store,
                login=functools.partial(backoffice_app_login_operation, backoffice),
            )
            providers["backoffice_app"] = application
            if backoffice.user is not None:
                providers["backoffice_user"] = TokenManager(
                    self,
                    BACKOFFICE_USER_TOKENS,
                    key=user_key(application.key, backoffice.user.email),
                    store=store,
                    login=functools.partial(backoffice_user_login_operation, backoffice.user),
                    via=application,
                )
        return providers

    def _token_provider(self, credential: Credential) -> TokenManager:
        """The token manager of ``credential`` (:class:`~paysdk.ValidationError` naming what to pass
        when this client does not hold it)."""
        provider = self._providers.get(credential.name)
        if provider is None:
            raise missing_credential(credential)
        return provider

    def _wallet_manager(self) -> TokenManager:
        """The application token manager (:class:`~paysdk.ValidationError` ``wallet`` without credentials)."""
        return self._token_provider(CREDENTIALS["wallet_app"])

    @property
    def environment(self) -> Environment:
        """The environment this client talks to."""
        return self._config.environment

    @property
    def timeout(self) -> httpx.Timeout:
        """The default timeout of every call."""
        return self._config.timeout

    @property
    def max_retries(self) -> int:
        """How many times a failed call may be retried."""
        return self._config.max_retries

    @property
    def total_timeout(self) -> float:
        """Seconds a whole call may take, retries and waits included."""
        return self._config.total_timeout

    @property
    def max_response_bytes(self) -> int:
        """The largest answer read, in bytes."""
        return self._config.max_response_bytes

    def with_options(
        self,
        *,
        merchant_token: str | Secret | NotGiven | None = NOT_GIVEN,
        environment: Environment | NotGiven = NOT_GIVEN,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
        max_retries: int | NotGiven = NOT_GIVEN,
        default_headers: Mapping[str, str] | NotGiven = NOT_GIVEN,
        total_timeout: float | NotGiven = NOT_GIVEN,
        max_response_bytes: int | NotGiven = NOT_GIVEN,
    ) -> Self:
        """A copy of this client with some options changed, sharing its connection pool.

        Closing the copy does not close the pool; close the original client.
        """
        clone = copy.copy(self)
        clone._config = replace_config(
            self._config,
            merchant_token=merchant_token,
            environment=environment,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            total_timeout=total_timeout,
            max_response_bytes=max_response_bytes,
        )
        clone._owns_http = False
        clone.last_response = None
        if not isinstance(environment, NotGiven):
            clone._providers = clone._make_token_providers()  # other addresses: other tokens
        clone._bind_resources()
        return clone

    def close(self) -> None:
        """Close the connection pool, unless it was passed in as ``http_client``."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return client_repr(
            type(self).__name__, self._config, self._wallet_credentials, self._backoffice_credentials
        )

    def _authed_request(
        self,
        op: Operation[T],
        tokens: TokenManager | None = None,
        recover: frozenset[int] | None = None,
    ) -> T:
        """A call whose credential (``op.auth``) is an access token, its result
        (:meth:`_authed_request_raw`)."""
        return (self._authed_request_raw(op, tokens, recover)).parse()

    def _authed_request_raw(
        self,
        op: Operation[T],
        tokens: TokenManager | None = None,
        recover: frozenset[int] | None = None,
    ) -> APIResponse[T]:
        """A call whose credential (``op.auth``) is an access token: from ``tokens``, else the client's
        provider of that credential. After a 401 that a new token can fix (the credential's
        ``recover`` codes: 7102, 7103 refresh; 7104, 7105 log in again), the single-flight recovery
        and one replay. ``recover`` narrows those codes (a user refresh's 7104/7105 are about its
        body token)."""
        credential = credential_for(op.auth)
        if tokens is None:
            tokens = self._token_provider(credential)
        codes = recovery_codes(credential, recover)
        token = tokens.token()
        try:
            return self._request_raw(op, credential=token)
        except AuthenticationError as exc:
            if exc.own_code not in codes:
                raise
            token = tokens.recover(token, exc)
        return self._request_raw(op, credential=token)

    def _request(self, op: Operation[T], *, credential: CredentialValue | None = None) -> T:
        """Run one logical call (:meth:`_request_raw`): its result."""
        return (self._request_raw(op, credential=credential)).parse()

    def _request_raw(self, op: Operation[T], *, credential: CredentialValue | None = None) -> APIResponse[T]:
        """Run one logical call: attempts, retries and the final result (with its answer's metadata)
        or error. ``credential``: the access token to send (token-managed credentials without one go
        through :meth:`_authed_request_raw`); otherwise ``build_request`` takes the merchant token or
        the call's own."""
        if credential is None and needs_token_manager(op.auth):
            return self._authed_request_raw(op)
        config = self._config
        key = idempotency_key_for(op, config, mint=self._mint_key)
        started = self._monotonic()
        attempt = 0
        maybe_received = False  # an attempt may have reached the server (outcome_unknown)
        while True:
            attempt += 1
            request = build_request(op, config, key, attempt=attempt, credential=credential)
            sent = self._monotonic()
            deadline = sent + attempt_budget(op, config, elapsed=sent - started)
            outcome: Outcome
            try:
                with attempt_deadline(deadline):
                    outcome = self._receive(self._http.send(request, stream=True), deadline)
            except httpx.RequestError as exc:
                outcome = exc
            log_attempt(self._logger, op, attempt, outcome, self._monotonic() - sent)
            maybe_received = maybe_received or may_have_been_received(outcome)
            remaining = call_total_timeout(op, config) - (self._monotonic() - started)
            decision = retry_decision(
                op, attempt, outcome, config, key, rng=self._random, now=self._now, remaining=remaining
            )
            if not decision.retry:
                break
            log_retry(self._logger, op, attempt, decision)
            self._sleep(decision.delay)
        elapsed = self._monotonic() - started
        info = None
        if isinstance(outcome, httpx.Response):
            info = response_info(op, outcome, attempts=attempt, elapsed=elapsed)
            warn_once(self._deprecations_seen, op.method, op.path, outcome.headers)  # D196
        self.last_response = info
        secrets = (*config.secrets(), *credential_secrets(credential))
        result = result_from_outcome(
            op, outcome, attempts=attempt, secrets=secrets, maybe_received=maybe_received
        )
        return APIResponse(result, cast(ResponseInfo, info))  # an error without an answer has raised

    def _receive(self, response: httpx.Response, deadline: float) -> httpx.Response:
        """Read an answer as a stream: at most ``max_response_bytes`` (decoded), by the attempt's
        ``deadline`` (``time.monotonic``); the connection is closed when either is passed (D61)."""
        limit = self._config.max_response_bytes
        chunks: list[bytes] = []
        try:
            check_answer(response, -1, limit, left=deadline - self._monotonic())
            size = 0
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                check_answer(response, size, limit, left=deadline - self._monotonic())
        finally:
            response.close()
        return buffered_response(response, b"".join(chunks))


# unasync: generated end
