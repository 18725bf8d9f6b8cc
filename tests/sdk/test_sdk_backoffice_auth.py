"""Backoffice credentials (spec 4.4, 5.3.5-5.3.7, D105-D107) against a fake backoffice.

The reference server has no backoffice routes yet (issue 11 adds them, and with them real-server
tests of these flows), so this drives the SDK's two-token machinery through httpx.MockTransport:
one client holds the application token and the backoffice user token at once, each operation sends
the one it names, the user logs in with the application bearer, and refreshes are single-flight
across threads, tasks and clients sharing a store.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import httpx
import pytest

import paysdk
from paysdk._credentials import CREDENTIALS
from paysdk._pipeline import Operation, data_envelope

from .backoffice_fake import APP_ROUTE, EMAIL, PASSWORD, USER_ROUTE, FakeBackoffice
from .conftest import Harness, HarnessFactory
from .support import keyed_environment
from .wallet_fake import MERCHANT


def probe(route: str, auth: str) -> Operation[dict[str, Any]]:
    return Operation(
        method="GET",
        path=route,
        base="cms",
        auth=auth,  # type: ignore[arg-type]
        parse=data_envelope(dict),
    )


APP = probe(APP_ROUTE, "backoffice_app")
USER = probe(USER_ROUTE, "backoffice_user")


def credentials(fake: FakeBackoffice, *, user: bool = True, password: str = PASSWORD) -> Any:
    who = paysdk.BackofficeUser(EMAIL, password) if user else None
    return paysdk.BackofficeCredentials(MERCHANT, fake.private_key_b64, user=who)


def spent(fake: FakeBackoffice) -> dict[str, int]:
    """How many refresh tokens of each kind were used; a reuse would have answered 7105 and
    revoked the family, so single flight shows as exactly one spent token per refresh round."""
    counts = {"application": 0, "user": 0}
    for entry in fake.refresh.values():
        counts[entry["kind"]] += entry["used"]
    return counts


def harness_for(make_harness: HarnessFactory, fake: FakeBackoffice, **options: Any) -> Harness:
    options.setdefault("backoffice", credentials(fake))
    return make_harness(fake.handler, **options)


def test_one_client_holds_both_tokens_and_each_call_sends_its_own(make_harness: HarnessFactory) -> None:
    fake = FakeBackoffice()
    store = paysdk.MemoryTokenStore()
    harness = harness_for(make_harness, fake, token_store=store)
    assert harness.call(lambda c: c._request(USER)) == {"scope": "user"}
    assert harness.call(lambda c: c._request(APP)) == {"scope": "application"}
    assert harness.call(lambda c: c._request(USER)) == {"scope": "user"}
    assert fake.seen == [
        ("POST /app/auth/login", "-"),
        ("POST /app/users/login", "application"),  # the user logs in with the application bearer
        (f"GET {USER_ROUTE}", "user"),
        (f"GET {APP_ROUTE}", "application"),
        (f"GET {USER_ROUTE}", "user"),
    ]
    env = keyed_environment()
    app_pair = store.load(paysdk.backoffice_store_key(env, MERCHANT))
    user_pair = store.load(paysdk.backoffice_store_key(env, MERCHANT, EMAIL))
    assert app_pair is not None
    assert user_pair is not None
    assert fake.access[app_pair.access_token.reveal()][0] == "application"
    assert fake.access[user_pair.access_token.reveal()][0] == "user"
    login = fake.seen_headers[1]
    assert "authorization" not in fake.seen_headers[0]
    assert login["authorization"] == f"Bearer {app_pair.access_token.reveal()}"


def test_expired_user_token_refreshes_with_the_application_bearer(make_harness: HarnessFactory) -> None:
    fake = FakeBackoffice()
    harness = harness_for(make_harness, fake)
    harness.call(lambda c: c._request(USER))
    fake.advance(1860)  # both access tokens expired on the server's clock
    assert harness.call(lambda c: c._request(USER)) == {"scope": "user"}
    # The user refresh's own bearer was stale too: refused (7103) before its refresh token was
    # looked at, the application token refreshed once, the user refresh replayed once.
    assert fake.count("POST /app/users/refresh") == 2
    assert fake.count("POST /app/auth/refresh") == 1
    assert fake.count("POST /app/auth/login") == 1
    assert fake.count("POST /app/users/login") == 1
    refresh_kinds = [kind for route, kind in fake.seen if route == "POST /app/users/refresh"]
    assert refresh_kinds == ["application", "application"]
    assert spent(fake) == {"application": 1, "user": 1}
    assert harness.call(lambda c: c._request(APP)) == {"scope": "application"}
    assert fake.count("POST /app/auth/refresh") == 1  # already renewed


def test_dead_user_session_logs_in_again_once(make_harness: HarnessFactory) -> None:
    """Unlike a wallet user session, the client holds the backoffice user's password: a revoked
    session (7104) leads to one new user login and one replay, never a loop."""
    fake = FakeBackoffice()
    harness = harness_for(make_harness, fake)
    harness.call(lambda c: c._request(USER))
    fake.revoke_users()
    assert harness.call(lambda c: c._request(USER)) == {"scope": "user"}
    assert fake.count("POST /app/users/login") == 2
    assert fake.count("POST /app/users/refresh") == 0
    assert fake.count(f"GET {USER_ROUTE}") == 3
    assert fake.count("POST /app/auth/login") == 1


def test_wrong_password_is_raised_and_not_retried(make_harness: HarnessFactory) -> None:
    fake = FakeBackoffice()
    harness = harness_for(make_harness, fake, backoffice=credentials(fake, password="wrong"))
    with pytest.raises(paysdk.InvalidCredentialsError):
        harness.call(lambda c: c._request(USER))
    assert fake.count("POST /app/users/login") == 1
    assert fake.count(f"GET {USER_ROUTE}") == 0
    assert harness.call(lambda c: c._request(APP)) == {"scope": "application"}


def test_missing_credentials_are_refused_before_sending(make_harness: HarnessFactory) -> None:
    fake = FakeBackoffice()
    app_only = harness_for(make_harness, fake, backoffice=credentials(fake, user=False))
    with pytest.raises(paysdk.ValidationError) as info:
        app_only.call(lambda c: c._request(USER))
    assert info.value.field == "backoffice"
    assert "BackofficeUser" in str(info.value)
    assert fake.count("POST /app/auth/login") == 0
    bare = make_harness(fake.handler)
    for op in (APP, USER):

        def send(client: Any, op: Operation[Any] = op) -> Any:
            return client._request(op)

        with pytest.raises(paysdk.ValidationError) as info:
            bare.call(send)
        assert info.value.field == "backoffice"
    assert sum(fake.calls.values()) == 0


def test_wallet_and_backoffice_side_by_side() -> None:
    fake = FakeBackoffice()
    client = paysdk.Client(
        environment=keyed_environment(),
        transport=httpx.MockTransport(fake.handler),
        wallet=paysdk.WalletCredentials(MERCHANT, fake.private_key_b64),
        backoffice=credentials(fake),
    )
    with client:
        assert sorted(client._providers) == ["backoffice_app", "backoffice_user", "wallet_app"]
        for name, manager in client._providers.items():
            assert manager.kind.credential == name
            assert manager.kind.field == CREDENTIALS[name].field
        keys = {manager.key for manager in client._providers.values()}
        assert len(keys) == 3  # one store namespace per kind
        assert client._request(APP) == {"scope": "application"}
        clone = client.with_options(environment=paysdk.Environment.local("http://other.test"))
        assert {m.key for m in clone._providers.values()}.isdisjoint(keys)


def test_50_threads_one_user_refresh() -> None:
    fake = FakeBackoffice()
    fake.refresh_delay = 0.05
    with paysdk.Client(
        environment=keyed_environment(),
        transport=httpx.MockTransport(fake.handler),
        backoffice=credentials(fake),
    ) as client:
        client._request(USER)
        client._request(APP)
        fake.advance(1860)
        barrier = threading.Barrier(50)
        errors: list[BaseException] = []
        ops = [USER if n % 2 else APP for n in range(50)]

        def work(op: Operation[Any]) -> None:
            try:
                barrier.wait()
                client._request(op)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(op,)) for op in ops]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert errors == []
    assert spent(fake) == {"application": 1, "user": 1}  # one refresh of each, never a reuse
    assert fake.count("POST /app/auth/login") == 1
    assert fake.count("POST /app/users/login") == 1


async def test_50_tasks_one_user_refresh() -> None:
    fake = FakeBackoffice()
    fake.refresh_delay = 0.01
    async with paysdk.AsyncClient(
        environment=keyed_environment(),
        transport=httpx.MockTransport(fake.handler),
        backoffice=credentials(fake),
    ) as client:
        await client._request(USER)
        fake.advance(1860)
        answers = await asyncio.gather(*(client._request(USER if n % 2 else APP) for n in range(50)))
    assert sorted({a["scope"] for a in answers}) == ["application", "user"]
    assert spent(fake) == {"application": 1, "user": 1}
    assert fake.count("POST /app/users/login") == 1


def test_two_clients_share_a_store_single_flight(tmp_path: Any) -> None:
    fake = FakeBackoffice()
    store = paysdk.FileTokenStore(tmp_path / "tokens.json")
    clients = [
        paysdk.Client(
            environment=keyed_environment(),
            transport=httpx.MockTransport(fake.handler),
            backoffice=credentials(fake),
            token_store=store,
        )
        for _ in range(2)
    ]
    clients[0]._request(USER)
    clients[1]._request(USER)
    assert fake.count("POST /app/users/login") == 1  # the second client found the stored pair
    fake.advance(1860)
    for client in clients:
        assert client._request(USER) == {"scope": "user"}
        client.close()
    assert spent(fake) == {"application": 1, "user": 1}
    assert fake.count("POST /app/auth/login") == 1
    assert fake.count("POST /app/users/login") == 1  # no reuse (7105) forced a new login


def test_no_secret_in_repr_logs_or_errors(
    make_harness: HarnessFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="paysdk")
    fake = FakeBackoffice()
    creds = credentials(fake)
    harness = harness_for(make_harness, fake, backoffice=creds)
    harness.call(lambda c: c._request(USER))
    fake.revoke_users()
    fake.login_error = None
    wrong = harness_for(make_harness, fake, backoffice=credentials(fake, password="not-the-password"))
    with pytest.raises(paysdk.InvalidCredentialsError) as info:
        wrong.call(lambda c: c._request(USER))
    secrets_seen = [PASSWORD, "not-the-password", fake.private_key_b64, *fake.access, *fake.refresh]
    texts = [
        caplog.text,
        repr(harness.client),
        repr(wrong.client),
        repr(creds),
        str(creds),
        repr(creds.user),
        repr(info.value),
        str(info.value),
        repr(info.value.headers),
        repr(info.value.body),
        *(repr(manager) for manager in harness.client._providers.values()),
        *(repr(manager.current) for manager in harness.client._providers.values()),
    ]
    blob = "\n".join(texts)
    for secret in secrets_seen:
        assert secret not in blob
    assert f"user=BackofficeUser(email='{EMAIL}', password='****')" in repr(harness.client)
