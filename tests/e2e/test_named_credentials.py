"""Named credentials against the REAL reference server (async in process, sync over a socket): one
client holds the merchant token, the wallet application credentials and backoffice credentials, and
each call sends exactly the credential its operation names (``raw``, ``bearer``, ``hook_keys``,
``wallet_app``, ``wallet_user``). The backoffice tokens are held but never used here: the server's
backoffice routes arrive with issue 11, whose tests must then drive ``backoffice_app`` and
``backoffice_user`` against the real server (tests/sdk/test_sdk_backoffice_auth.py uses a fake until then).
"""

from __future__ import annotations

import secrets
from decimal import Decimal

import pytest

import paysdk

from .conftest import Maker, call


async def test_one_client_sends_each_call_its_named_credential(make: Maker) -> None:
    sandbox = make()
    shop = await call(sandbox.sandbox.create_client(amount_min=Decimal("1.00"), amount_max=Decimal("5000")))
    assert shop.signing_private_key is not None
    tag = secrets.token_hex(3)
    ana = await call(sandbox.sandbox.create_user(shop.slug, "ana", f"ana-{tag}@x.io", "password-1"))
    backoffice = paysdk.BackofficeCredentials(
        shop.slug, shop.signing_private_key, user=paysdk.BackofficeUser(f"ops-{tag}@x.io", "bo-password")
    )
    client = make(
        merchant_token=shop.sandbox_token,
        wallet=paysdk.WalletCredentials(shop.slug, shop.signing_private_key),
        backoffice=backoffice,
    )
    assert sorted(client._providers) == ["backoffice_app", "backoffice_user", "wallet_app"]

    link = await call(
        client.payment_links.create(amount=10, user_id="+50255550123", channel="wa", client=shop.slug)
    )
    alternative = await call(
        client.alternative_payments.create(
            amount=Decimal("8.25"), channel="app", client=shop.slug, user_id="+50255550123"
        )
    )
    hooked = await call(
        client.payment_links.create_with_hook_keys(
            private_key=shop.hook_private_key,
            public_key=shop.hook_public_key,
            amount=Decimal("12.00"),
            user_id="+50255550123",
            channel="web",
        )
    )
    card = await call(client.wallet.cards.issue_virtual(ana.user_id, currency="GTQ"))
    session = await call(client.wallet.users.login("ana", "password-1"))
    seen = await call(client.wallet.as_user(session).cards.get(card.card_id))
    assert seen.card_id == card.card_id
    for uid in (link.uid, alternative.uid, hooked.uid):
        assert (await call(sandbox.sandbox.transaction(uid))).client == shop.slug

    entries = await call(sandbox.sandbox.requests())
    by_path = {(e.method, e.path): e for e in entries}
    assert "authorization" in by_path["POST", "/transactions"].headers
    assert "authorization" in by_path["POST", "/api/v1/integrations/transactions"].headers
    # The hook keys travel in the body only: no Authorization, though the client holds a merchant token.
    assert "authorization" not in by_path["POST", "/transactions-hook"].headers
    assert "authorization" not in by_path["POST", "/rest/auth/login"].headers
    assert "authorization" in by_path["GET", f"/rest/cards/{card.card_id}"].headers
    assert not [e for e in entries if e.path.startswith("/cms")]  # backoffice tokens held, not fetched
    for entry in entries:
        assert shop.sandbox_token not in repr(entry)


async def test_a_missing_credential_is_refused_before_sending(make: Maker) -> None:
    sandbox = make()
    shop = await call(sandbox.sandbox.create_client())
    client = make(merchant_token=shop.sandbox_token)
    before = len(await call(sandbox.sandbox.requests()))
    with pytest.raises(paysdk.ValidationError) as info:
        await call(client.wallet.cards.get("card_1"))
    assert info.value.field == "wallet"
    anonymous = make(merchant_token="")
    with pytest.raises(paysdk.ValidationError) as info:
        await call(
            anonymous.payment_links.create(amount=10, user_id="+50255550123", channel="wa", client="x")
        )
    assert info.value.field == "merchant_token"
    assert len(await call(sandbox.sandbox.requests())) == before
