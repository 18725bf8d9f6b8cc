"""Wallet tokens through the client shells (sync and async): lazy login, proactive refresh, the 401
single-flight path, dead refresh tokens, refused logins, user sessions, concurrency, redaction."""

from __future__ import annotations

import asyncio
import logging
import pickle
import threading
from typing import Any

import httpx
import pytest

import paysdk
from paysdk._token_stores import StoreAdapter

from .conftest import Harness, HarnessFactory
from .support import keyed_environment
from .wallet_fake import MERCHANT, FakeWallet


def wallet_harness(make_harness: HarnessFactory, fake: FakeWallet, **options: Any) -> Harness:
    credentials = paysdk.WalletCredentials(MERCHANT, fake.private_key_b64)
    return make_harness(fake.handler, wallet=credentials, **options)


def test_lazy_login_on_first_call_then_cached(make_harness: HarnessFactory) -> None:
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    assert fake.count("POST /auth/login") == 0
    card = harness.call(lambda c: c.wallet.cards.get("card_1"))
    assert card.card_id == "card_1"
    harness.call(lambda c: c.wallet.cards.get("card_2"))
    assert fake.count("POST /auth/login") == 1
    assert fake.count("POST /auth/refresh") == 0
    assert fake.count("GET /cards/card_1") == 1
    auth = fake.seen_headers[-1]["authorization"]
    assert auth.startswith("Bearer ")
    assert auth.removeprefix("Bearer ") in fake.access


def test_explicit_login_and_jwks(make_harness: HarnessFactory) -> None:
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    pair = harness.call(lambda c: c.wallet.login())
    assert isinstance(pair, paysdk.contracts.wallet.TokenPair) if hasattr(paysdk, "contracts") else True
    assert pair.access_token in fake.access
    assert pair.access_token not in repr(pair)
    jwks = harness.call(lambda c: c.wallet.jwks())
    assert jwks.keys[0].kid == fake.kid
    harness.call(lambda c: c.wallet.cards.get("card_1"))
    assert fake.count("POST /auth/login") == 1  # the explicit login's pair is reused


def test_proactive_refresh_before_exp(make_harness: HarnessFactory) -> None:
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    clock = [1_000_000.0]
    harness.client._now = lambda: clock[0]
    harness.call(lambda c: c.wallet.cards.get("c"))
    clock[0] += 1800 - 59  # 59 s left of 30 min: inside the 60 s margin
    fake.advance(1800 - 59)
    harness.call(lambda c: c.wallet.cards.get("c"))
    assert fake.count("POST /auth/refresh") == 1
    assert fake.count("GET /cards/c") == 2  # no 401 was needed
    clock[0] += 100
    harness.call(lambda c: c.wallet.cards.get("c"))
    assert fake.count("POST /auth/refresh") == 1  # the new token is fresh


def test_401_expired_refreshes_once_and_replays(make_harness: HarnessFactory) -> None:
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    harness.call(lambda c: c.wallet.cards.get("c"))
    fake.advance(1860)  # the server's clock moved: the SDK still thinks the token valid
    card = harness.call(lambda c: c.wallet.cards.get("c"))
    assert card.card_id == "c"
    assert fake.count("POST /auth/refresh") == 1
    assert fake.count("GET /cards/c") == 3  # first call, rejected call, replay
    assert fake.count("POST /auth/login") == 1


def test_401_after_replay_is_raised_not_looped(make_harness: HarnessFactory) -> None:
    fake = FakeWallet(access_ttl=60)
    harness = wallet_harness(make_harness, fake)
    harness.call(lambda c: c.wallet.cards.get("c"))
    original = fake._issue

    def issue_already_expired(kind: str, sub: str, access_ttl: int | None = None) -> dict[str, Any]:
        answer = original(kind, sub, access_ttl)
        token = answer["data"]["accessToken"]
        fake.access[token] = (kind, fake.now - 1)  # born dead
        return answer

    fake._issue = issue_already_expired  # type: ignore[method-assign]
    fake.advance(120)
    with pytest.raises(paysdk.TokenExpiredError):
        harness.call(lambda c: c.wallet.cards.get("c"))
    assert fake.count("GET /cards/c") == 3
    assert fake.count("POST /auth/refresh") == 1


def test_dead_refresh_token_logs_in_again_without_loop(make_harness: HarnessFactory) -> None:
    """A crash between the server's rotation and the store's write leaves a spent refresh token."""
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    harness.call(lambda c: c.wallet.cards.get("c"))
    for entry in fake.refresh.values():
        entry["used"] = True  # rotated by the server, never saved by the client
    fake.advance(1860)
    card = harness.call(lambda c: c.wallet.cards.get("c"))
    assert card.card_id == "c"
    assert fake.count("POST /auth/refresh") == 1  # 7105, once
    assert fake.count("POST /auth/login") == 2  # the first one and the recovery
    assert fake.count("GET /cards/c") == 3


def test_dead_refresh_and_refused_login_raise_typed_error(make_harness: HarnessFactory) -> None:
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    harness.call(lambda c: c.wallet.cards.get("c"))
    for entry in fake.refresh.values():
        entry["used"] = True
    fake.advance(1860)
    fake.login_error = 7616
    with pytest.raises(paysdk.KeysExpiredError) as info:
        harness.call(lambda c: c.wallet.cards.get("c"))
    assert info.value.status_code == 401
    assert isinstance(info.value, paysdk.WalletError)
    assert fake.count("POST /auth/refresh") == 1
    assert fake.count("POST /auth/login") == 2
    assert fake.count("GET /cards/c") == 2


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (7604, paysdk.InvalidSignatureError),
        (7616, paysdk.KeysExpiredError),
        (7601, paysdk.UnknownMerchantError),
    ],
)
def test_refused_login_is_typed_and_not_retried(
    make_harness: HarnessFactory, code: int, error: type[paysdk.APIError]
) -> None:
    fake = FakeWallet()
    fake.login_error = code
    harness = wallet_harness(make_harness, fake)
    with pytest.raises(error):
        harness.call(lambda c: c.wallet.cards.get("c"))
    assert fake.count("POST /auth/login") == 1
    assert fake.count("GET /cards/c") == 0


def test_wrong_key_gives_invalid_signature(make_harness: HarnessFactory) -> None:
    fake = FakeWallet()
    other = paysdk.WalletCredentials(MERCHANT, "11" * 32)
    harness = make_harness(fake.handler, wallet=other)
    with pytest.raises(paysdk.InvalidSignatureError):
        harness.call(lambda c: c.wallet.login())


def test_no_wallet_credentials(make_harness: HarnessFactory) -> None:
    harness = make_harness(FakeWallet().handler)
    with pytest.raises(paysdk.ValidationError) as info:
        harness.call(lambda c: c.wallet.cards.get("c"))
    assert info.value.field == "wallet"


def test_login_and_refresh_are_not_retried_after_send(make_harness: HarnessFactory) -> None:
    """A read timeout on the refresh POST is raised: replaying it would present a spent token."""
    fake = FakeWallet()
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if request.url.path == "/rest/auth/refresh":
            raise httpx.ReadTimeout("slow", request=request)
        return fake.handler(request)

    harness = make_harness(handler, wallet=paysdk.WalletCredentials(MERCHANT, fake.private_key_b64))
    harness.call(lambda c: c.wallet.cards.get("c"))
    fake.advance(1860)
    with pytest.raises(paysdk.APITimeoutError):
        harness.call(lambda c: c.wallet.cards.get("c"))
    assert calls.count("/rest/auth/refresh") == 1
    assert "idempotency-key" not in {k.lower() for h in fake.seen_headers for k in h if "login" in str(h)}


def test_merchant_token_calls_unchanged(make_harness: HarnessFactory) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"uid": "u1", "reference": "PL-1", "URL": "http://x/?orderId=u1"})

    harness = make_harness(handler, wallet=paysdk.WalletCredentials(MERCHANT, "22" * 32))
    harness.call(
        lambda c: c.payment_links.create(amount="10.00", user_id="+50223456789", channel="wa", client="shop")
    )
    assert seen[0].headers["authorization"] == harness.client._config.merchant_token.reveal()
    assert not seen[0].headers["authorization"].startswith("Bearer")


# ------------------------------------------------------------------------------ user sessions


def test_user_session_as_user_refresh_and_logout(make_harness: HarnessFactory) -> None:
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    session = harness.call(lambda c: c.wallet.users.login("ana", "correct horse"))
    assert session.user_id == "u_ana"
    assert session.tokens.access_token not in repr(session)
    view = harness.client.wallet.as_user(session)
    harness.call(lambda c: view.cards.get("c"))
    assert fake.seen_bearers[-1] == session.tokens.access_token
    fake.advance(1860)  # both the app and the user access tokens are now expired on the server
    harness.call(lambda c: view.cards.get("c"))
    # The user refresh is sent with the (expired) application bearer first: 401 7103 on the app token,
    # which is refreshed single-flight, then the user refresh is replayed once and succeeds.
    assert fake.count("POST /auth/refresh") == 1
    assert fake.count("POST /users/refresh") == 2
    rotated = view.session
    assert rotated.tokens.refresh_token != session.tokens.refresh_token
    assert fake.seen_bearers[-1] == rotated.tokens.access_token
    harness.call(lambda c: c.wallet.users.logout(rotated))
    assert fake.count("POST /users/logout") == 1
    # Explicit refresh of the old (spent) session: the family reuse error, typed; the application
    # token is not renewed for it (7105 concerns the body's refresh token, not the bearer).
    logins = fake.count("POST /auth/login")
    with pytest.raises(paysdk.RefreshTokenReusedError):
        harness.call(lambda c: c.wallet.users.refresh(session))
    assert fake.count("POST /auth/login") == logins
    assert fake.count("POST /users/refresh") == 3


def test_user_session_dead_refresh_raises_no_login(make_harness: HarnessFactory) -> None:
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    session = harness.call(lambda c: c.wallet.users.login("ana", "correct horse"))
    fresh = harness.call(lambda c: c.wallet.users.refresh(session, access_token_ttl=600))
    view = harness.client.wallet.as_user(session)  # the old, spent session
    fake.advance(1860)
    logins = fake.count("POST /auth/login")
    with pytest.raises(paysdk.RefreshTokenReusedError):
        harness.call(lambda c: view.cards.get("c"))
    assert fake.count("POST /users/login") == 1
    assert fake.count("POST /auth/login") == logins  # a user 7105 never re-logs the application
    assert fresh.user_id == "u_ana"


def test_wrong_password_is_typed(make_harness: HarnessFactory) -> None:
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    with pytest.raises(paysdk.InvalidCredentialsError) as info:
        harness.call(lambda c: c.wallet.users.login("ana", "Pa55-not-it"))
    assert "Pa55-not-it" not in repr(info.value.body) + str(info.value)


def test_insufficient_funds_is_typed(make_harness: HarnessFactory) -> None:
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    with pytest.raises(paysdk.InsufficientFundsError) as info:
        harness.call(lambda c: c.wallet.funds.withdraw("c", "1000.0001"))
    assert isinstance(info.value, paysdk.UnprocessableEntityError)
    assert info.value.own_code == 7303


# ------------------------------------------------------------------------------ concurrency


def test_50_threads_share_one_client_one_refresh() -> None:
    fake = FakeWallet()
    fake.refresh_delay = 0.05
    credentials = paysdk.WalletCredentials(MERCHANT, fake.private_key_b64)
    with paysdk.Client(
        environment=keyed_environment(), transport=httpx.MockTransport(fake.handler), wallet=credentials
    ) as client:
        client.wallet.cards.get("c")
        fake.advance(1860)
        barrier = threading.Barrier(50)
        errors: list[BaseException] = []

        def work() -> None:
            try:
                barrier.wait()
                client.wallet.cards.get("c")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(50)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert errors == []
    assert fake.count("POST /auth/refresh") == 1
    assert fake.count("POST /auth/login") == 1


def test_50_threads_proactive_one_refresh() -> None:
    fake = FakeWallet()
    fake.refresh_delay = 0.05
    credentials = paysdk.WalletCredentials(MERCHANT, fake.private_key_b64)
    client = paysdk.Client(
        environment=keyed_environment(), transport=httpx.MockTransport(fake.handler), wallet=credentials
    )
    clock = [1_000_000.0]
    client._now = lambda: clock[0]
    client.wallet.cards.get("c")
    clock[0] += 1790
    barrier = threading.Barrier(50)

    def work() -> None:
        barrier.wait()
        client.wallet.cards.get("c")

    threads = [threading.Thread(target=work) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    client.close()
    assert fake.count("POST /auth/refresh") == 1
    assert fake.count("GET /cards/c") == 51


async def test_50_tasks_gather_one_refresh() -> None:
    fake = FakeWallet()
    fake.refresh_delay = 0.01
    credentials = paysdk.WalletCredentials(MERCHANT, fake.private_key_b64)
    async with paysdk.AsyncClient(
        environment=keyed_environment(), transport=httpx.MockTransport(fake.handler), wallet=credentials
    ) as client:
        await client.wallet.cards.get("c")
        fake.advance(1860)
        cards = await asyncio.gather(*(client.wallet.cards.get("c") for _ in range(50)))
    assert len(cards) == 50
    assert fake.count("POST /auth/refresh") == 1
    assert fake.count("POST /auth/login") == 1


async def test_first_calls_concurrently_log_in_once() -> None:
    fake = FakeWallet()
    credentials = paysdk.WalletCredentials(MERCHANT, fake.private_key_b64)
    async with paysdk.AsyncClient(
        environment=keyed_environment(), transport=httpx.MockTransport(fake.handler), wallet=credentials
    ) as client:
        await asyncio.gather(*(client.wallet.cards.get("c") for _ in range(20)))
    assert fake.count("POST /auth/login") == 1


def test_two_clients_share_a_store_single_flight() -> None:
    """Clients sharing a store (like processes sharing a FileTokenStore) refresh once in total."""
    fake = FakeWallet()
    store = paysdk.MemoryTokenStore()
    credentials = paysdk.WalletCredentials(MERCHANT, fake.private_key_b64)
    clients = [
        paysdk.Client(
            environment=keyed_environment(),
            transport=httpx.MockTransport(fake.handler),
            wallet=credentials,
            token_store=store,
        )
        for _ in range(2)
    ]
    clients[0].wallet.cards.get("c")
    clients[1].wallet.cards.get("c")
    assert fake.count("POST /auth/login") == 1  # the second client found the stored pair
    fake.advance(1860)
    clients[0].wallet.cards.get("c")
    clients[1].wallet.cards.get("c")  # its cached token is rejected; the store has the new one
    assert fake.count("POST /auth/refresh") == 1
    for client in clients:
        client.close()


def test_sync_client_refuses_async_store() -> None:
    class AsyncOnly:
        async def load(self, key: str) -> None:
            return None

        async def save(self, key: str, tokens: Any) -> None:
            return None

        async def delete(self, key: str) -> None:
            return None

        def lock(self, key: str) -> Any:
            return None

    with pytest.raises(paysdk.ValidationError) as info:
        paysdk.Client(environment=keyed_environment(), token_store=AsyncOnly())  # type: ignore[arg-type]
    assert info.value.field == "token_store"
    assert isinstance(StoreAdapter.of(None), paysdk.MemoryTokenStore)


# ------------------------------------------------------------------------------ redaction


def test_no_secret_in_repr_logs_or_errors(
    make_harness: HarnessFactory, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeWallet()
    harness = wallet_harness(make_harness, fake)
    caplog.set_level(logging.DEBUG, logger="paysdk")
    session = harness.call(lambda c: c.wallet.users.login("ana", "correct horse"))
    fake.advance(1860)
    view = harness.client.wallet.as_user(session)
    harness.call(lambda c: view.cards.get("c"))
    with pytest.raises(paysdk.InsufficientFundsError) as info:
        harness.call(lambda c: c.wallet.funds.withdraw("c", "5"))
    credentials = harness.client._wallet_credentials
    secrets_seen = [
        fake.private_key_b64,
        bytes(fake.client_key).hex(),
        "correct horse",
        *fake.access,
        *fake.refresh,
    ]
    texts = [
        caplog.text,
        repr(harness.client),
        repr(credentials),
        str(credentials),
        repr(session),
        str(session),
        repr(view),
        repr(view.session),
        repr(session.tokens),
        repr(info.value),
        str(info.value),
        repr(info.value.headers),
        repr(harness.client.wallet.users),
        repr(harness.client._wallet_manager()),
        repr(harness.client._wallet_manager().current),
    ]
    blob = "\n".join(texts)
    for secret in secrets_seen:
        assert secret not in blob
    assert "WalletCredentials(merchant='wallet-shop', private_key='****')" in repr(harness.client)


def test_wallet_credentials_validation() -> None:
    key = "ab" * 32
    creds = paysdk.WalletCredentials("shop", key)
    assert key not in repr(creds)
    assert paysdk.WalletCredentials("shop", bytes.fromhex(key)).public_key == creds.public_key
    assert paysdk.WalletCredentials("shop", paysdk.Secret(key)).public_key == creds.public_key
    for bad in ("not a key", b"short", {"kty": "RSA"}, 42):
        with pytest.raises(paysdk.ValidationError) as info:
            paysdk.WalletCredentials("shop", bad)  # type: ignore[arg-type]
        assert info.value.field == "private_key"
        assert "not a key" not in str(info.value)
    with pytest.raises(paysdk.ValidationError) as merchant_error:
        paysdk.WalletCredentials("", key)
    assert merchant_error.value.field == "merchant"
    with pytest.raises(TypeError):
        pickle.dumps(creds)
