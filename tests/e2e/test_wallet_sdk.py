"""The wallet through the SDK against the REAL reference server: async in process (ASGITransport) and
sync over a uvicorn socket, on SQLite and PostgreSQL. One test body serves both client kinds (the
``kind``/``make`` fixtures of ``conftest.py``)."""

from __future__ import annotations

import secrets
from datetime import timedelta
from decimal import Decimal

import pytest

import paysdk
from paysdk.contracts.wallet import CardPermissionType

from .conftest import Maker, call


@pytest.mark.covers(
    "sandbox.create_user",
    "wallet.login",
    "wallet.jwks",
    "wallet.cards.issue_virtual",
    "wallet.funds.add",
    "wallet.funds.withdraw",
    "wallet.cards.get",
    "wallet.transfers.create",
    "wallet.cards.list",
    "wallet.cards.movements",
    "wallet.users.login",
    "wallet.as_user",
    "wallet.permissions.grant",
    "wallet.permissions.list",
    "wallet.cards.block",
    "wallet.permissions.update",
    "wallet.cards.unblock",
    "wallet.cards.cvv_view_token",
    "wallet.cards.cvv",
    "wallet.users.logout",
)
async def test_wallet_end_to_end(make: Maker) -> None:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client())
    assert merchant.signing_private_key is not None
    tag = secrets.token_hex(3)
    ana = await call(sandbox.sandbox.create_user(merchant.slug, "ana", f"ana-{tag}@x.io", "password-1"))
    ben = await call(sandbox.sandbox.create_user(merchant.slug, "ben", f"ben-{tag}@x.io", "password-2"))
    client = make(wallet=paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key))

    # Application login (explicit here; lazy otherwise) and the JWKS.
    pair = await call(client.wallet.login())
    assert pair.access_token not in repr(pair)
    jwks = await call(client.wallet.jwks())
    assert jwks.keys[0].kty == "OKP"

    # Issue two cards, fund one, refuse an overdraw, transfer.
    card = await call(client.wallet.cards.issue_virtual(ana.user_id, currency="GTQ", alias="main"))
    spare = await call(client.wallet.cards.issue_virtual(ana.user_id, currency="GTQ"))
    funded = await call(client.wallet.funds.add(card.card_id, Decimal("100.5000"), reference="top-up"))
    assert funded.card.balance == Decimal("100.5")
    with pytest.raises(paysdk.InsufficientFundsError) as overdraw:
        await call(client.wallet.funds.withdraw(card.card_id, "1000"))
    assert overdraw.value.own_code == 7303
    assert isinstance(overdraw.value, paysdk.UnprocessableEntityError)
    after = await call(client.wallet.cards.get(card.card_id))
    assert after.balance == Decimal("100.5")
    withdrawn = await call(client.wallet.funds.withdraw(card.card_id, "0.5"))
    assert withdrawn.card.balance == Decimal("100")
    transfer = await call(client.wallet.transfers.create(card.card_id, spare.card_id, "25.2500", "rent"))
    assert transfer.debit.amount == Decimal("25.25")
    cards = await call(client.wallet.cards.list(ana.user_id))
    balances = {c.card_id: c.balance for c in cards}
    assert balances == {card.card_id: Decimal("74.75"), spare.card_id: Decimal("25.25")}
    movements = await call(client.wallet.cards.movements(card.card_id))
    assert {m.type for m in movements} >= {"fund", "withdrawal", "transfer_out"}

    # User sessions: the owner grants ben a permission; ben's view is limited by it.
    ana_session = await call(client.wallet.users.login("ana", "password-1"))
    assert ana_session.user_id == ana.user_id
    ana_view = client.wallet.as_user(ana_session)
    record = await call(
        ana_view.permissions.grant(card.card_id, ben.user_id, [CardPermissionType.CHECK_CARD])
    )
    assert record.permissions == [CardPermissionType.CHECK_CARD]
    listed = await call(client.wallet.permissions.list(card.card_id, ben.user_id))
    assert [r.id for r in listed] == [record.id]
    ben_session = await call(client.wallet.users.login("ben", "password-2"))
    ben_view = client.wallet.as_user(ben_session)
    seen = await call(ben_view.cards.get(card.card_id))
    assert seen.card_id == card.card_id
    with pytest.raises(paysdk.CardPermissionDeniedError):
        await call(ben_view.cards.block(card.card_id))
    updated = await call(client.wallet.permissions.update(record.id, ["checkCard", "updateStatus"]))
    assert CardPermissionType.UPDATE_STATUS in updated.permissions
    blocked = await call(ben_view.cards.block(card.card_id))
    assert blocked.status == "blocked"
    await call(ana_view.cards.unblock(card.card_id))

    # CVV: two steps, user session only.
    view_token = await call(ana_view.cards.cvv_view_token(card.card_id))
    cvv = await call(ana_view.cards.cvv(card.card_id, view_token))
    assert cvv.cvv.isdigit()
    assert cvv.cvv not in repr(cvv)
    with pytest.raises(paysdk.CvvNeedsUserSessionError):
        await call(client.wallet.cards.cvv_view_token(card.card_id))

    # Logout: the user's tokens stop working; a user session cannot log in again by itself.
    await call(client.wallet.users.logout(ana_session))
    with pytest.raises(paysdk.TokenRevokedError):
        await call(ana_view.cards.get(card.card_id))


@pytest.mark.covers("sandbox.advance_clock", "wallet.users.refresh")
async def test_user_session_refreshed_automatically(make: Maker) -> None:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client(user_access_token_ttl=60))
    user = await call(
        sandbox.sandbox.create_user(merchant.slug, "cy", f"cy-{secrets.token_hex(3)}@x.io", "pw-123456")
    )
    client = make(wallet=paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key))
    session = await call(client.wallet.users.login("cy", "pw-123456"))
    view = client.wallet.as_user(session)
    await call(view.cards.list(user.user_id))
    await call(sandbox.sandbox.advance_clock(120))  # the user's 60 s access token is dead on the server
    assert await call(view.cards.list(user.user_id)) == []
    assert view.session.tokens.refresh_token != session.tokens.refresh_token
    # The old session's refresh token is spent: presenting it again revokes the family.
    with pytest.raises(paysdk.RefreshTokenReusedError):
        await call(client.wallet.users.refresh(session))


@pytest.mark.covers("sandbox.clock", "sandbox.rotate_wallet_keys")
async def test_login_refused_is_typed(make: Maker) -> None:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client())
    wrong = make(wallet=paysdk.WalletCredentials(merchant.slug, "44" * 32))
    with pytest.raises(paysdk.InvalidSignatureError):
        await call(wrong.wallet.cards.list("anyone"))
    unknown = make(wallet=paysdk.WalletCredentials("no-such-shop", "44" * 32))
    with pytest.raises(paysdk.UnknownMerchantError):
        await call(unknown.wallet.login())
    clock = await call(sandbox.sandbox.clock())
    keys = await call(
        sandbox.sandbox.rotate_wallet_keys(merchant.slug, expires_at=clock.now + timedelta(minutes=1))
    )
    assert keys.private_key is not None
    assert keys.private_key not in repr(keys)
    client = make(wallet=paysdk.WalletCredentials(merchant.slug, keys.private_key))
    await call(client.wallet.login())
    await call(sandbox.sandbox.advance_clock(120))
    expiring = make(wallet=paysdk.WalletCredentials(merchant.slug, keys.private_key))
    with pytest.raises(paysdk.KeysExpiredError):
        await call(expiring.wallet.login())


@pytest.mark.covers(
    "wallet.users.request_otp",
    "sandbox.outbox",
    "wallet.users.verify_otp",
    "wallet.users.reset_password",
)
async def test_password_reset_with_otp(make: Maker) -> None:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client())
    email = f"dee-{secrets.token_hex(3)}@x.io"
    await call(sandbox.sandbox.create_user(merchant.slug, "dee", email, "old-password"))
    client = make(wallet=paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key))
    sent = await call(client.wallet.users.request_otp(email))
    assert sent.sent
    messages = await call(sandbox.sandbox.outbox(to=email))
    code = str(messages[-1].data.get("otp") or messages[-1].data.get("code"))
    verified = await call(client.wallet.users.verify_otp(email, code))
    assert verified.token is not None
    assert verified.token not in repr(verified)
    with pytest.raises(paysdk.PasswordMismatchError):
        await call(
            client.wallet.users.reset_password(email, "new-password-1", "new-password-2", verified.token)
        )
    result = await call(
        client.wallet.users.reset_password(email, "new-password-1", "new-password-1", verified.token)
    )
    assert result.reset
    session = await call(client.wallet.users.login("dee", "new-password-1"))
    assert session.user_id
    with pytest.raises(paysdk.InvalidCredentialsError):
        await call(client.wallet.users.login("dee", "old-password"))
