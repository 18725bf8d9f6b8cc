"""A concurrent mixed load on the ledger (issue 12): funds (the fast path, D256), transfers, captures and
refunds (the ordinary path) at once on a few cards, on SQLite and PostgreSQL. Afterwards every card's
movements sum to its balance, each movement's ``balanceAfter`` follows from the one before, no balance
or available balance is negative, and every refusal is an exact ``7303``."""

from __future__ import annotations

import asyncio
import random
from decimal import Decimal
from typing import Any

import httpx

from .kit import JSON_TYPE, Kit, body, dumps, own_code

CARDS = 6
OPERATIONS = 180
START = Decimal(200)


def _amount(rng: random.Random) -> Decimal:
    return Decimal(rng.randint(1, 600_000)) / 10_000  # 0.0001 .. 60


async def test_movements_sum_to_the_balance_after_a_concurrent_mixed_load(kit: Kit) -> None:
    rng = random.Random(12)
    token = await kit.app()
    user = await kit.user()
    cards = [(await kit.virtual_card(user["authUserId"]))["cardId"] for _ in range(CARDS)]
    for card_id in cards:
        assert (await kit.fund(card_id, str(START))).status_code == 200
    answers: list[httpx.Response] = []

    async def sandbox(path: str, payload: Any = None) -> httpx.Response:
        content = dumps(payload) if payload is not None else b""
        return await kit.client.post(path, content=content, headers=JSON_TYPE)

    captured: list[str] = []

    async def fund() -> None:
        card_id = rng.choice(cards)
        operation = rng.choice(["add", "withdraw", "withdraw"])
        answers.append(
            await kit.post(f"/cards/{card_id}/funds", {"operation": operation, "amount": _amount(rng)}, token)
        )

    async def transfer() -> None:
        source, target = rng.sample(cards, 2)
        answers.append(
            await kit.post(f"/cards/{source}/transfers", {"toCardId": target, "amount": _amount(rng)}, token)
        )

    async def charge() -> None:
        card_id = rng.choice(cards)
        held = await sandbox(f"/_sandbox/cards/{card_id}/charges", {"amount": _amount(rng)})
        answers.append(held)
        if held.status_code != 201:
            return
        capture = await sandbox(f"/_sandbox/charges/{body(held)['chargeId']}/capture")
        answers.append(capture)
        if capture.status_code == 200:
            captured.append(body(held)["chargeId"])

    async def refund() -> None:
        if not captured:
            await fund()
            return
        charge_id = rng.choice(captured)
        created = await sandbox(f"/_sandbox/charges/{charge_id}/refunds", {"amount": Decimal("0.5")})
        answers.append(created)
        if created.status_code == 201:
            answers.append(await sandbox(f"/_sandbox/refunds/{body(created)['refundId']}/clear"))

    kinds = [fund, fund, fund, transfer, charge, refund]
    await asyncio.gather(*(rng.choice(kinds)() for _ in range(OPERATIONS)))

    unexpected = [(a.status_code, a.text) for a in answers if a.status_code not in (200, 201, 409, 422)]
    assert not unexpected
    refusals = [a for a in answers if a.status_code == 422]
    assert all(own_code(a) == 7303 for a in refusals), [a.text for a in refusals]
    conflicts = [a for a in answers if a.status_code == 409]
    assert all(a.request.url.path.endswith("/refunds") for a in conflicts), [a.text for a in conflicts]
    assert sum(a.status_code == 200 for a in answers) > OPERATIONS // 3
    kinds_seen: set[str] = set()
    for card_id in cards:
        state: dict[str, Any] = await kit.card(card_id)
        moves = await kit.movements(card_id)
        running = Decimal(0)
        for move in moves:
            running += move["amount"] if move["direction"] == "credit" else -move["amount"]
            assert move["balanceAfter"] == running, (card_id, move)
            assert move["balanceAfter"] >= 0
            kinds_seen.add(move["type"])
        assert running == state["balance"]
        assert state["availableBalance"] >= 0
        assert state["pendingDebits"] >= 0
        assert state["availableBalance"] == state["balance"] - state["pendingDebits"]
    assert {"fund", "withdrawal", "transfer_out", "transfer_in"} <= kinds_seen
    assert len(kinds_seen) >= 5  # captures and cleared refunds moved money too
