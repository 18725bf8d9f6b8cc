"""User sessions in a shared token store (``wallet.as_user(session, store=..., key=...)``) and the
application's stored pair (``wallet.stored_tokens()`` / ``wallet.forget_tokens()``), sync and async."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

import paysdk

from .conftest import HarnessFactory
from .support import keyed_environment
from .wallet_fake import MERCHANT, FakeWallet


def _credentials(fake: FakeWallet) -> paysdk.WalletCredentials:
    return paysdk.WalletCredentials(MERCHANT, fake.private_key_b64)


def test_user_pair_is_in_the_store_before_each_use(make_harness: HarnessFactory, tmp_path: Path) -> None:
    fake = FakeWallet()
    store = paysdk.FileTokenStore(tmp_path / "tokens.json")
    checked: list[str] = []
    key_box: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        # Every user bearer the SDK sends must already be the stored pair of the session's key.
        if request.url.path.endswith("/cards/c") and key_box:
            stored = store.load(key_box[0])
            assert stored is not None
            bearer = request.headers["authorization"].removeprefix("Bearer ")
            assert stored.access_token.reveal() == bearer
            checked.append(bearer)
        return fake.handler(request)

    harness = make_harness(handler, wallet=_credentials(fake), token_store=store)
    session = harness.call(lambda c: c.wallet.users.login("ana", "correct horse", access_token_ttl=60))
    view = harness.client.wallet.as_user(session, store=store)
    key_box.append(view.key)
    assert view.key == harness.client.wallet.user_key("u_ana")
    assert store.load(view.key) is None  # written on first use, under the lock
    harness.call(lambda c: view.cards.get("c"))
    assert checked == [session.tokens.access_token]
    fake.advance(120)  # the user's access token expired on the server, the application's did not
    harness.call(lambda c: view.cards.get("c"))
    assert fake.count("POST /users/refresh") == 1
    rotated = store.load(view.key)
    assert rotated is not None
    assert rotated.refresh_token != session.refresh_token
    assert view.session.access_token == rotated.access_token
    assert checked[-1] == rotated.access_token.reveal()
    assert len(checked) == 3  # first call, the rejected one, the replay: each with the stored pair
    assert "eyJ" not in repr(view)


def test_store_holds_the_latest_session(make_harness: HarnessFactory, tmp_path: Path) -> None:
    fake = FakeWallet()
    store = paysdk.FileTokenStore(tmp_path / "tokens.json")
    harness = make_harness(fake.handler, wallet=_credentials(fake), token_store=store)
    session = harness.call(lambda c: c.wallet.users.login("ana", "correct horse", access_token_ttl=60))
    first = harness.client.wallet.as_user(session, store=store, key="ana")
    harness.call(lambda c: first.cards.get("c"))
    fake.advance(120)
    harness.call(lambda c: first.cards.get("c"))
    assert fake.count("POST /users/refresh") == 1
    # A view given the old (spent) session: the store's rotated pair is newer and wins, no 7105.
    stale = harness.client.wallet.as_user(session, store=store, key="ana")
    harness.call(lambda c: stale.cards.get("c"))
    assert stale.session.access_token == first.session.access_token
    # A view on the key alone acts as the stored session.
    keyed = harness.client.wallet.as_user(store=store, key="ana")
    with pytest.raises(paysdk.ValidationError):
        keyed.session  # noqa: B018 - not loaded yet
    loaded = harness.call(lambda c: keyed.stored_session())
    assert loaded is not None
    assert loaded.user_id == "u_ana"
    assert loaded.access_token == first.session.access_token
    # A new login replaces the stored pair (obtained later).
    fake.advance(1)
    newer = harness.call(lambda c: c.wallet.users.login("ana", "correct horse"))
    fresh = harness.client.wallet.as_user(newer, store=store, key="ana")
    harness.call(lambda c: fresh.cards.get("c"))
    stored = store.load("ana")
    assert stored is not None
    assert stored.access_token == newer.access_token
    assert fake.count("POST /users/refresh") == 1
    assert harness.call(lambda c: keyed.forget_tokens()) is True
    assert store.load("ana") is None
    assert harness.call(lambda c: keyed.forget_tokens()) is False
    assert store.load(harness.client.wallet.user_key("x")) is None


def test_application_stored_tokens_and_forget(make_harness: HarnessFactory, tmp_path: Path) -> None:
    fake = FakeWallet()
    store = paysdk.FileTokenStore(tmp_path / "tokens.json")
    harness = make_harness(fake.handler, wallet=_credentials(fake), token_store=store)
    assert harness.call(lambda c: c.wallet.stored_tokens()) is None
    pair = harness.call(lambda c: c.wallet.login())
    stored = harness.call(lambda c: c.wallet.stored_tokens())
    assert isinstance(stored, paysdk.StoredTokens)
    assert stored.access_token == pair.access_token
    assert pair.access_token not in repr(stored)
    assert fake.count("POST /auth/login") == 1  # reading sends nothing
    # the public key function names the same entries, for tools that hold no signing key
    environment = harness.client.environment
    in_store = store.load(paysdk.wallet_store_key(environment, MERCHANT))
    assert in_store is not None
    assert in_store.access_token == pair.access_token
    assert paysdk.wallet_store_key(environment, MERCHANT, "u_ana") == harness.client.wallet.user_key("u_ana")
    with pytest.raises(paysdk.ValidationError):
        paysdk.wallet_store_key(environment, " ")
    assert harness.call(lambda c: c.wallet.forget_tokens()) is True
    assert harness.call(lambda c: c.wallet.stored_tokens()) is None
    assert harness.call(lambda c: c.wallet.forget_tokens()) is False
    harness.call(lambda c: c.wallet.cards.get("c"))
    assert fake.count("POST /auth/login") == 2  # forgotten: the next call logs in again


def test_as_user_argument_checks(make_harness: HarnessFactory, tmp_path: Path) -> None:
    fake = FakeWallet()
    store = paysdk.FileTokenStore(tmp_path / "tokens.json")
    harness = make_harness(fake.handler, wallet=_credentials(fake))
    wallet: Any = harness.client.wallet
    session = harness.call(lambda c: c.wallet.users.login("ana", "correct horse"))
    cases: list[tuple[str, Any]] = [
        ("session", lambda: wallet.as_user()),
        ("session", lambda: wallet.as_user("not a session", store=store)),
        ("key", lambda: wallet.as_user(session, key="ana")),
        ("key", lambda: wallet.as_user(store=store)),
        ("key", lambda: wallet.as_user(session, store=store, key=" ")),
        ("name", lambda: wallet.user_key("")),
    ]
    for field, make in cases:
        with pytest.raises(paysdk.ValidationError) as info:
            make()
        assert info.value.field == field


def test_sync_client_refuses_an_asyncio_store() -> None:
    class AsyncOnly:
        async def load(self, key: str) -> None:
            return None

        async def save(self, key: str, tokens: Any) -> None:
            return None

        async def delete(self, key: str) -> None:
            return None

        def lock(self, key: str) -> Any:
            return None

    fake = FakeWallet()
    transport = httpx.MockTransport(fake.handler)
    credentials = _credentials(fake)
    with paysdk.Client(environment=keyed_environment(), transport=transport, wallet=credentials) as client:
        session = client.wallet.users.login("ana", "correct horse")
        with pytest.raises(paysdk.ValidationError) as info:
            client.wallet.as_user(session, store=AsyncOnly())  # type: ignore[arg-type]
    assert info.value.field == "token_store"


def test_20_threads_one_user_session_one_refresh(tmp_path: Path) -> None:
    """20 threads, each with its own client (as 20 processes would be), share one user session through
    a FileTokenStore: after the user's access token expires, exactly one /users/refresh."""
    fake = FakeWallet()
    fake.refresh_delay = 0.05
    path = tmp_path / "tokens.json"
    environment = keyed_environment()

    def new_client() -> paysdk.Client:
        return paysdk.Client(
            environment=environment,
            transport=httpx.MockTransport(fake.handler),
            wallet=_credentials(fake),
            token_store=paysdk.FileTokenStore(path),
        )

    with new_client() as client:
        session = client.wallet.users.login("ana", "correct horse", access_token_ttl=60)
        client.wallet.as_user(session, store=paysdk.FileTokenStore(path)).cards.get("c")
        key = client.wallet.user_key("u_ana")
    fake.advance(120)  # the user token expired on the server; each client still thinks it fresh
    barrier = threading.Barrier(20)
    errors: list[BaseException] = []
    bearers: list[str] = []

    def work() -> None:
        try:
            with new_client() as own:
                # every thread starts from the original (now spent) session, as a stale copy would
                view = own.wallet.as_user(session, store=paysdk.FileTokenStore(path))
                barrier.wait()
                view.cards.get("c")
                bearers.append(view.session.access_token.reveal())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert fake.count("POST /users/refresh") == 1
    assert fake.count("POST /auth/login") == 1  # the application pair is shared through the file too
    assert fake.count("POST /auth/refresh") == 0
    assert len(set(bearers)) == 1
    stored = paysdk.FileTokenStore(path).load(key)
    assert stored is not None
    assert stored.access_token.reveal() == bearers[0]
