"""Per-call options and per-call answer metadata against the REAL reference server (issue 9, 1.3/1.4).

``timeout=``, ``idempotency_key=`` and ``extra_headers=`` on wallet money calls, ``with_raw_response``
on every family (its calls count for the ``covers`` check like plain calls), and many concurrent calls
each getting its own request id, matched against the server's request log. Async in process
(``ASGITransport``) and sync over a socket (the ``make`` fixture), plus async over a socket where the
SDK's own deadline is what is tested (``ASGITransport`` ignores timeouts).
"""

from __future__ import annotations

import asyncio
import secrets
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest

import paysdk
from paysdk.contracts.sandbox import SandboxClient
from paysdk.contracts.wallet import TransferResult

from .conftest import Maker, call

WALLET = "/rest"  # the wallet's path prefix on the reference server


async def _wallet(make: Maker) -> tuple[Any, Any, SandboxClient, str]:
    """A control-plane client, a wallet client, its merchant and one user's id."""
    control = make()
    merchant = await call(control.sandbox.create_client(payment_methods=["akisiQR"]))
    assert merchant.signing_private_key is not None
    user = await call(
        control.sandbox.create_user(merchant.slug, "ana", f"ana-{secrets.token_hex(3)}@x.io", "password-1")
    )
    client = make(wallet=paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key))
    return control, client, merchant, user.user_id


async def _log_entry(control: Any, request_id: str | None) -> Any:
    assert request_id is not None
    assert request_id.startswith("req_")
    entries = [e for e in await call(control.sandbox.requests()) if e.request_id == request_id]
    assert len(entries) == 1, f"{request_id} is not in the server's request log"
    return entries[0]


@pytest.mark.covers(
    "wallet.cards.issue_virtual",
    "wallet.funds.add",
    "wallet.funds.withdraw",
    "wallet.transfers.create",
    "wallet.cards.get",
    "sandbox.requests",
)
async def test_idempotency_key_and_extra_headers_on_wallet_money_calls(make: Maker) -> None:
    control, client, _, user_id = await _wallet(make)
    card = await call(client.wallet.cards.issue_virtual(user_id, currency="GTQ"))
    spare = await call(client.wallet.cards.issue_virtual(user_id, "GTQ"))
    raw = client.with_raw_response.wallet

    funded = await call(raw.funds.add(card.card_id, "100", idempotency_key=f"fund-{card.card_id}"))
    assert funded.status_code == 200
    assert not funded.replayed
    assert funded.attempts == 1
    again = await call(raw.funds.add(card.card_id, "100", idempotency_key=f"fund-{card.card_id}"))
    assert again.replayed
    assert again.parse() == funded.parse()
    assert again.request_id != funded.request_id

    key = f"transfer-{secrets.token_hex(4)}"
    headers = {"Cache-Control": "no-store", "X-Trace-Id": "trace-1234"}
    first = await call(
        raw.transfers.create(
            card.card_id, spare.card_id, Decimal("25.25"), "rent", idempotency_key=key, extra_headers=headers
        )
    )
    replay = await call(
        raw.transfers.create(card.card_id, spare.card_id, "25.25", "rent", idempotency_key=key)
    )
    assert isinstance(first.parse(), TransferResult)
    assert not first.replayed
    assert replay.replayed
    assert replay.parse().transfer_id == first.parse().transfer_id
    assert replay.headers["idempotent-replayed"] == "true"
    balance = await call(client.wallet.cards.get(card.card_id))
    assert balance.balance == Decimal("74.75")  # one transfer, one top-up

    # The server saw the key and the extra headers: the allow-listed one in clear, the custom one
    # masked by the request log (D95), the key masked too.
    logged = await _log_entry(control, first.request_id)
    assert logged.path == f"{WALLET}/cards/{card.card_id}/transfers"
    assert logged.headers["cache-control"] == "no-store"
    assert logged.headers["x-trace-id"] == "****"
    assert logged.headers["idempotency-key"] == "****"
    assert "trace-1234" not in repr(first)
    assert key not in repr(first.headers)

    # Options are refused before anything is sent, naming the option.
    with pytest.raises(paysdk.ValidationError) as bad:
        await call(client.wallet.funds.withdraw(card.card_id, "1", extra_headers={"Authorization": "x"}))
    assert bad.value.field == "extra_headers"
    with pytest.raises(paysdk.ValidationError) as line_break:
        await call(client.wallet.funds.withdraw(card.card_id, "1", extra_headers={"X-A": "1\r\nX-B: 2"}))
    assert line_break.value.field == "extra_headers"
    with pytest.raises(paysdk.ValidationError) as get_key:
        await call(client.wallet.cards.get(card.card_id, idempotency_key="k"))
    assert get_key.value.field == "idempotency_key"
    withdrawn = await call(client.wallet.funds.withdraw(card.card_id, "1", timeout=10))
    assert withdrawn.card.balance == Decimal("73.75")


@pytest.mark.covers(
    "payment_links.create",
    "payment_links.create_with_hook_keys",
    "alternative_payments.create",
    "alternative_payments.create_payment_intent",
    "alternative_payments.process",
    "alternative_payments.dismiss",
    "wallet.jwks",
    "wallet.cards.get",
    "wallet.cards.list",
    "wallet.users.login",
    "wallet.as_user",
    "sandbox.health",
    "sandbox.get_client",
)
async def test_with_raw_response_on_every_family(make: Maker) -> None:
    control, client, merchant, user_id = await _wallet(make)
    plain = make(merchant_token=merchant.sandbox_token)
    raw = plain.with_raw_response
    assert raw is plain.with_raw_response  # one view per client

    link = await call(
        raw.payment_links.create(amount="10.50", user_id="+50255550123", channel="wa", client=merchant.slug)
    )
    assert link.status_code in (200, 201)
    assert link.parse().uid
    assert plain.last_response is not None
    assert plain.last_response.request_id == link.request_id
    hook = await call(
        raw.payment_links.create_with_hook_keys(
            private_key=merchant.hook_private_key,
            public_key=merchant.hook_public_key,
            amount=Decimal("5"),
            user_id="+50255550123",
            channel="sms",
            timeout=15,
        )
    )
    assert hook.parse().uid != link.parse().uid

    alt = await call(
        raw.alternative_payments.create(amount=1, channel="web", client=merchant.slug, user_id="+50255550123")
    )
    uid = alt.parse().uid
    intent = await call(raw.alternative_payments.create_payment_intent(uid, processor="akisiQR"))
    processed = await call(
        raw.alternative_payments.process(uid, processor="akisiQR", extra_headers={"X-N": "1"})
    )
    assert processed.parse().type == "base64"
    second = await call(
        plain.alternative_payments.create(
            amount=1, channel="web", client=merchant.slug, user_id="+50255550123"
        )
    )
    dismissed = await call(raw.alternative_payments.dismiss(second.uid))
    assert dismissed.status_code == 200

    health = await call(control.with_raw_response.sandbox.health())
    assert health.parse().status == "ok"
    assert health.request_id
    got = await call(control.with_raw_response.sandbox.get_client(merchant.slug))
    assert got.parse().slug == merchant.slug

    wallet_raw = client.with_raw_response.wallet
    jwks = await call(wallet_raw.jwks())
    assert jwks.parse().keys
    assert jwks.headers.get("authorization") is None
    card = await call(client.wallet.cards.issue_virtual(user_id, "USD"))
    got_card = await call(wallet_raw.cards.get(card.card_id))
    assert got_card.parse().card_id == card.card_id
    assert got_card.attempts == 1
    login = await call(wallet_raw.users.login("ana", "password-1"))
    session = login.parse()
    assert isinstance(session, paysdk.UserSession)
    assert session.user_id == user_id
    view = wallet_raw.as_user(session)
    mine = await call(view.cards.list(user_id))
    assert [c.card_id for c in mine.parse()] == [card.card_id]

    # Every answer's metadata is its own, and matches the server's log.
    for answer in (link, hook, alt, intent, processed, dismissed, jwks, got_card, login, mine):
        entry = await _log_entry(control, answer.request_id)
        assert entry.status_code == answer.status_code
        assert entry.path.endswith(answer.path)
        assert answer.elapsed >= 0
        assert answer.retries == 0
        assert not answer.replayed


@pytest.mark.covers("payment_links.create", "sandbox.requests")
async def test_concurrent_calls_each_get_their_own_metadata(make: Maker, kind: str) -> None:
    control = make()
    merchant = await call(control.sandbox.create_client())
    client = make(merchant_token=merchant.sandbox_token)
    create = client.with_raw_response.payment_links.create
    count = 24

    def one(n: int) -> Any:
        return create(amount=str(n + 1), user_id="+50255550123", channel="wa", client=merchant.slug)

    if kind.startswith("async"):
        answers = await asyncio.gather(*(one(n) for n in range(count)))
    else:
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(one, range(count)))
    ids = [a.request_id for a in answers]
    assert len(set(ids)) == count
    assert all(i and i.startswith("req_") for i in ids)
    assert len({a.parse().uid for a in answers}) == count
    logged = {e.request_id: e for e in await call(control.sandbox.requests()) if e.path == "/transactions"}
    assert set(ids) <= set(logged)
    for answer in answers:
        assert logged[answer.request_id].status_code == answer.status_code
        assert answer.headers["x-request-id"] == answer.request_id


@pytest.fixture
def socket_env(live_server: str) -> paysdk.Environment:
    return paysdk.Environment.local(live_server)


def _socket_client(kind: str, env: paysdk.Environment, **options: Any) -> Any:
    return (paysdk.AsyncClient if kind.startswith("async") else paysdk.Client)(environment=env, **options)


@pytest.fixture(params=["async-socket", "sync-socket"])
def socket_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_per_call_timeout_and_key_on_a_wallet_transfer(
    socket_kind: str, socket_env: paysdk.Environment
) -> None:
    """Over a socket (the SDK's own deadline): a transfer slowed by the server outlasts its per-call
    ``timeout`` (the client's is 30 s); sent again with the same ``idempotency_key`` it happens once,
    and a further send is answered from the server's store, ``replayed``."""
    control = _socket_client(socket_kind, socket_env)
    merchant = await call(control.sandbox.create_client())
    assert merchant.signing_private_key is not None
    user = await call(control.sandbox.create_user(merchant.slug, "ana", "ana@x.io", "password-1"))
    client = _socket_client(
        socket_kind, socket_env, wallet=paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key)
    )
    try:
        card = await call(client.wallet.cards.issue_virtual(user.user_id, "GTQ"))
        spare = await call(client.wallet.cards.issue_virtual(user.user_id, "GTQ"))
        await call(client.wallet.funds.add(card.card_id, "50"))
        route = f"POST {WALLET}/cards/{card.card_id}/transfers"
        await call(control.sandbox.add_fault("latency", route=route, count=1, latency_ms=1500))
        key = f"slow-{secrets.token_hex(4)}"
        once = client.with_options(max_retries=0)
        with pytest.raises(paysdk.APITimeoutError) as timed_out:
            await call(
                once.wallet.transfers.create(
                    card.card_id, spare.card_id, "10", idempotency_key=key, timeout=0.3
                )
            )
        assert timed_out.value.outcome_unknown  # the request may have taken effect
        patient = client.with_options(max_retries=6)
        replay = await call(
            patient.with_raw_response.wallet.transfers.create(
                card.card_id, spare.card_id, "10", idempotency_key=key
            )
        )
        # Whether the server finished the abandoned first request or dropped it with its connection,
        # the key lets the transfer happen once: a third send is the stored answer, replayed.
        third = await call(
            client.with_raw_response.wallet.transfers.create(
                card.card_id, spare.card_id, "10", idempotency_key=key, timeout=5
            )
        )
        assert third.replayed
        assert third.parse().transfer_id == replay.parse().transfer_id
        assert replay.request_id != third.request_id
        after = await call(client.wallet.cards.get(card.card_id))
        assert after.balance == Decimal("40")
    finally:
        for each in (client, control):
            if isinstance(each, paysdk.AsyncClient):
                await each.aclose()
            else:
                each.close()
