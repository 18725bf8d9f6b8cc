"""Wallet POSTs honour Idempotency-Key like every public POST (D17): a retried withdrawal debits once."""

from __future__ import annotations

from decimal import Decimal

from .kit import Kit, body, own_code


async def test_replayed_withdrawal_debits_once(kit: Kit) -> None:
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    assert (await kit.fund(card["cardId"], "100")).status_code == 200
    token = await kit.app()
    payload = {"operation": "withdraw", "amount": Decimal("30.0001")}
    headers = {"Idempotency-Key": "withdraw-order-1"}
    first = await kit.post(f"/cards/{card['cardId']}/funds", payload, token, headers=headers)
    again = await kit.post(f"/cards/{card['cardId']}/funds", payload, token, headers=headers)
    assert first.status_code == again.status_code == 200
    assert body(first) == body(again)  # the stored answer, not a second withdrawal
    assert (await kit.card(card["cardId"]))["balance"] == Decimal("69.9999")
    assert len(await kit.movements(card["cardId"])) == 2  # the fund and one withdrawal

    other = await kit.post(
        f"/cards/{card['cardId']}/funds", {**payload, "amount": Decimal(5)}, token, headers=headers
    )
    assert other.status_code == 422  # the IETF draft's status for a key reused with another body (D17)
    assert own_code(other) is None
