"""The SDK methods no other end-to-end test calls, against the REAL reference server (async in process,
sync over a uvicorn socket; SQLite and PostgreSQL), so that every public method is exercised for real
(``tests/sdk_coverage.py``, ``test_real_server_coverage.py``). Also: the request id of every answer
reaches ``exc.request_id`` and ``last_response.request_id`` (D65)."""

from __future__ import annotations

import secrets
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import paysdk
from paysdk.contracts.wallet import CardPermissionType

from .conftest import Maker, call

covers = pytest.mark.covers
PHONE = "+50255550123"


@covers(
    "sandbox.health",
    "sandbox.get_client",
    "sandbox.test_cards",
    "sandbox.faults",
    "sandbox.clear_faults",
    "sandbox.callbacks",
    "sandbox.reset",
)
async def test_control_plane(make: Maker, callback_sink: Any) -> None:
    sandbox = make()
    health = await call(sandbox.sandbox.health())
    assert (health.status, health.environment) == ("ok", "sandbox")
    shop = await call(sandbox.sandbox.create_client(callback_url=callback_sink.url))
    again = await call(sandbox.sandbox.get_client(shop.slug))
    assert (again.slug, again.sandbox_token) == (shop.slug, shop.sandbox_token)
    cards = await call(sandbox.sandbox.test_cards())
    approving = next(card.number for card in cards if card.outcome == "approved")

    fault = await call(sandbox.sandbox.add_fault("latency", route="GET /nowhere", count=3, latency_ms=1))
    assert [(f.id, f.remaining) for f in await call(sandbox.sandbox.faults())] == [(fault.id, 3)]
    await call(sandbox.sandbox.clear_faults())
    assert await call(sandbox.sandbox.faults()) == []

    client = make(merchant_token=shop.sandbox_token)
    link = await call(client.payment_links.create(amount=10, user_id=PHONE, channel="wa", client=shop.slug))
    await call(sandbox.sandbox.pay(link.uid, approving))  # delivers the first callback attempt
    (attempt,) = await call(sandbox.sandbox.callbacks(link.uid))
    assert (attempt.uid, attempt.attempt, attempt.status_code, attempt.url) == (
        link.uid,
        1,
        200,
        callback_sink.url,
    )
    assert len(callback_sink.received) == 1

    await call(sandbox.sandbox.reset())
    with pytest.raises(paysdk.NotFoundError):
        await call(sandbox.sandbox.get_client(shop.slug))
    assert await call(sandbox.sandbox.callbacks()) == []


async def test_request_ids_reach_results_and_errors(make: Maker) -> None:
    sandbox = make()
    shop = await call(sandbox.sandbox.create_client())
    client = make(merchant_token=shop.sandbox_token)
    link = await call(client.payment_links.create(amount=10, user_id=PHONE, channel="wa", client=shop.slug))
    ok_id = client.last_response.request_id
    with pytest.raises(paysdk.UnknownClientError) as refused:
        await call(client.payment_links.create(amount=10, user_id=PHONE, channel="wa", client="nobody"))
    with pytest.raises(paysdk.NotFoundError) as missing:
        await call(client.alternative_payments.dismiss("no-such-uid"))
    ids = [ok_id, refused.value.request_id, missing.value.request_id]
    assert all(isinstance(i, str) and i.startswith("req_") and len(i) == 36 for i in ids), ids
    assert len(set(ids)) == 3
    log = await call(sandbox.sandbox.requests())
    assert [entry.request_id for entry in log] == ids
    assert sandbox.last_response.request_id not in ids  # the control plane's answer has its own
    assert link.uid


@covers("sandbox.simulate")
async def test_simulate_pays_on_the_rail(make: Maker) -> None:
    sandbox = make()
    shop = await call(sandbox.sandbox.create_client())
    client = make(merchant_token=shop.sandbox_token)
    payment = await call(
        client.alternative_payments.create(amount=5, channel="app", client=shop.slug, user_id=PHONE)
    )
    await call(client.alternative_payments.process(payment.uid, processor="akisiQR"))
    await call(sandbox.sandbox.simulate(payment.uid, "paid"))
    assert (await call(sandbox.sandbox.transaction(payment.uid))).status == "approved"


@covers(
    "sandbox.create_stock_card",
    "sandbox.create_linking_token",
    "sandbox.charge",
    "sandbox.capture",
    "sandbox.refund",
    "sandbox.clear_refund",
    "wallet.cards.link",
    "wallet.cards.activate",
    "wallet.cards.set_pin",
    "wallet.cards.update_alias",
    "wallet.cards.link_external",
    "wallet.cards.summary",
    "wallet.permissions.list_for_user",
    "wallet.permissions.list_for_card",
)
async def test_cards_charges_and_permissions(make: Maker) -> None:
    sandbox = make()
    shop = await call(sandbox.sandbox.create_client())
    tag = secrets.token_hex(3)
    ana = await call(sandbox.sandbox.create_user(shop.slug, "ana", f"ana-{tag}@x.io", "password-1"))
    ben = await call(sandbox.sandbox.create_user(shop.slug, "ben", f"ben-{tag}@x.io", "password-2"))
    client = make(wallet=paysdk.WalletCredentials(shop.slug, shop.signing_private_key))
    cards = client.wallet.cards

    stock = await call(sandbox.sandbox.create_stock_card(shop.slug, balance="50.2500"))
    assert (stock.type, stock.holder_id, stock.balance) == ("physical", None, Decimal("50.25"))
    linked = await call(cards.link(ana.user_id, stock.card_id, shop.slug))
    assert (linked.status, linked.holder_id) == ("inactive", ana.user_id)
    assert (await call(cards.activate(stock.card_id))).status == "active"
    pinned = await call(cards.set_pin(stock.card_id, "4321"))
    assert "4321" not in repr(pinned)
    assert (await call(cards.update_alias(stock.card_id, "daily"))).alias == "daily"

    token = await call(sandbox.sandbox.create_linking_token("4111111111111111", "12/30"))
    assert token.token not in repr(token)
    external = await call(cards.link_external(ana.user_id, token.token, alias="bank"))
    assert (external.type, external.masked_pan[-4:], external.alias) == ("linked", "1111", "bank")
    with pytest.raises(paysdk.LinkingTokenInvalidError):  # single use
        await call(cards.link_external(ana.user_id, token.token))

    charge = await call(sandbox.sandbox.charge(stock.card_id, "20.0001"))
    assert charge.status == "authorized"
    held = await call(cards.get(stock.card_id))
    assert (held.balance, held.available_balance) == (Decimal("50.25"), Decimal("30.2499"))
    captured = await call(sandbox.sandbox.capture(charge.charge_id))
    assert (captured.status, captured.captured_amount) == ("captured", Decimal("20.0001"))
    refund = await call(sandbox.sandbox.refund(charge.charge_id, "5"))
    assert (refund.status, refund.amount) == ("pending", Decimal("5"))
    cleared = await call(sandbox.sandbox.clear_refund(refund.refund_id))
    assert cleared.status == "cleared"
    assert (await call(cards.get(stock.card_id))).balance == Decimal("35.2499")

    summary = await call(cards.summary(ana.user_id, "2000-01-01", "2099-12-31"))
    figures = {figure.card_id: figure for figure in summary.cards}
    figure = figures[stock.card_id]
    assert (figure.opening_balance, figure.credits, figure.debits, figure.closing_balance) == (
        Decimal("0"),
        Decimal("55.25"),  # the stock card's balance, then the refund
        Decimal("20.0001"),
        Decimal("35.2499"),
    )

    record = await call(
        client.wallet.permissions.grant(stock.card_id, ben.user_id, [CardPermissionType.CHECK_CARD])
    )
    by_user = await call(client.wallet.permissions.list_for_user(ben.user_id))
    by_card = await call(client.wallet.permissions.list_for_card(stock.card_id))
    assert [r.id for r in by_user] == [r.id for r in by_card] == [record.id]
    assert await call(client.wallet.permissions.list_for_card(external.card_id)) == []


@covers(
    "wallet.stored_tokens",
    "wallet.forget_tokens",
    "wallet.user_key",
    "wallet.as_user",
    "wallet.as_user.stored_session",
    "wallet.as_user.forget_tokens",
)
async def test_token_store_in_the_home_directory(
    make: Maker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    sandbox = make()
    shop = await call(sandbox.sandbox.create_client())
    user = await call(
        sandbox.sandbox.create_user(shop.slug, "cy", f"cy-{secrets.token_hex(3)}@x.io", "password-3")
    )
    store = paysdk.FileTokenStore("~/.myapp/tokens.json")  # as docs/sdk.md shows it
    client = make(wallet=paysdk.WalletCredentials(shop.slug, shop.signing_private_key), token_store=store)
    assert await call(client.wallet.stored_tokens()) is None
    pair = await call(client.wallet.login())
    stored = await call(client.wallet.stored_tokens())
    assert stored.access_token == pair.access_token
    assert (tmp_path / ".myapp" / "tokens.json").is_file()
    assert await call(client.wallet.forget_tokens()) is True
    assert await call(client.wallet.stored_tokens()) is None
    await call(client.wallet.cards.list(user.user_id))  # logs in again by itself
    assert await call(client.wallet.stored_tokens()) is not None

    session = await call(client.wallet.users.login("cy", "password-3"))
    key = client.wallet.user_key(session.user_id)
    assert key.endswith(session.user_id)
    view = client.wallet.as_user(session, store=store)
    assert view.key == key
    kept = await call(view.stored_session())
    assert kept is not None
    assert kept.user_id == session.user_id
    assert await call(view.cards.list(user.user_id)) == []
    assert await call(view.forget_tokens()) is True
    assert await call(view.stored_session()) is None
