"""The ledger's fast path (``POST /cards/{cardId}/funds`` in Core through the group commit, D256-D259):
the same rules and answers as the ordinary path, on SQLite and PostgreSQL, and the signature cache."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import httpx
import nacl.signing
import pytest
from fastapi import FastAPI

from paysdk import _jwt
from paysdk.contracts.wallet import ACCESS_TOKEN_TYP, FundsRequest, FundsResult
from paysdk.server import create_app
from paysdk.server.families import FAMILIES
from paysdk.server.hotpath.lanes import LANE_NAME
from paysdk.server.ledger_batches import ledger_batches
from paysdk.server.services import wallet_funds, wallet_ledger, wallet_tokens
from paysdk.server.services.wallet_tokens import VerifiedTokens

from .kit import Kit, body, forge, own_code


async def _card(kit: Kit, amount: str | None = None) -> str:
    user = await kit.user()
    card_id: str = (await kit.virtual_card(user["authUserId"]))["cardId"]
    if amount is not None:
        assert (await kit.fund(card_id, amount)).status_code == 200
    return card_id


def _signed(moves: list[dict[str, Any]]) -> Decimal:
    return sum((m["amount"] if m["direction"] == "credit" else -m["amount"] for m in moves), Decimal(0))


async def test_withdrawals_respect_pending_debits_and_refuse_exactly_with_7303(kit: Kit) -> None:
    card_id = await _card(kit, "100")
    held = await kit.client.post(f"/_sandbox/cards/{card_id}/charges", json={"amount": 30})
    assert held.status_code == 201, held.text
    before = await kit.movements(card_id)
    over = await kit.fund(card_id, "70.0001", "withdraw")
    assert (over.status_code, own_code(over)) == (422, 7303)
    assert body(over) == {
        "ownCode": 7303,
        "message": "Insufficient funds: nothing was withdrawn.",
        "details": [{"field": "amount", "message": "exceeds the available balance"}],
    }
    assert await kit.movements(card_id) == before  # nothing written
    state = await kit.card(card_id)
    assert (state["balance"], state["pendingDebits"], state["availableBalance"]) == (100, 30, 70)
    exact = await kit.fund(card_id, "70", "withdraw")
    assert exact.status_code == 200, exact.text
    result = body(exact)["data"]
    assert (result["card"]["balance"], result["card"]["availableBalance"]) == (30, 0)
    assert result["card"]["pendingDebits"] == 30
    assert result["movement"]["balanceAfter"] == 30
    nothing = await kit.fund(card_id, "0.0001", "withdraw")
    assert (nothing.status_code, own_code(nothing)) == (422, 7303)
    # the hold can still be captured: the balance reaches 0, never below
    capture = await kit.client.post(f"/_sandbox/charges/{body(held)['chargeId']}/capture")
    assert capture.status_code == 200, capture.text
    assert (await kit.card(card_id))["balance"] == 0


async def test_every_movement_carries_the_balance_after_it(kit: Kit) -> None:
    card_id = await _card(kit)
    steps = [("add", "10.0001"), ("add", "5"), ("withdraw", "0.0001"), ("withdraw", "7.5"), ("add", "2.25")]
    running = Decimal(0)
    for operation, amount in steps:
        answer = await kit.fund(card_id, amount, operation)
        assert answer.status_code == 200, answer.text
        running += Decimal(amount) if operation == "add" else -Decimal(amount)
        data = body(answer)["data"]
        assert data["movement"]["balanceAfter"] == running == data["card"]["balance"]
        assert data["movement"]["type"] == ("fund" if operation == "add" else "withdrawal")
        assert data["movement"]["cardId"] == card_id
    moves = await kit.movements(card_id)
    assert [m["balanceAfter"] for m in moves] == [
        sum(
            (Decimal(a) if op == "add" else -Decimal(a) for op, a in steps[: i + 1]),
            Decimal(0),
        )
        for i in range(len(steps))
    ]
    assert _signed(moves) == (await kit.card(card_id))["balance"] == running


async def test_the_answer_is_the_card_as_read_afterwards(kit: Kit) -> None:
    card_id = await _card(kit, "12.5")
    answer = body(await kit.fund(card_id, "2.5", "withdraw"))["data"]
    assert answer["card"] == await kit.card(card_id)
    assert answer["movement"] == (await kit.movements(card_id))[-1]


async def test_card_states_and_access_are_refused_as_before(kit: Kit) -> None:
    card_id = await _card(kit, "10")
    blocked = await kit.post(f"/cards/{card_id}/block", None, await kit.app())
    assert blocked.status_code == 200
    refused = await kit.fund(card_id, "1", "withdraw")
    assert (refused.status_code, own_code(refused)) == (409, 7302)
    added = await kit.fund(card_id, "1")  # the issuer may credit a blocked card (D42)
    assert added.status_code == 200
    assert body(added)["data"]["card"]["status"] == "blocked"
    unknown = await kit.fund("crd_" + "0" * 24, "1")
    assert (unknown.status_code, own_code(unknown)) == (404, 7301)
    malformed_id = await kit.fund("x" * 300, "1")
    assert (malformed_id.status_code, own_code(malformed_id)) == (404, 7301)
    user = await kit.user()
    user_token = (await kit.user_login(user["username"]))["accessToken"]
    as_user = await kit.post(f"/cards/{card_id}/funds", {"operation": "add", "amount": 1}, user_token)
    assert (as_user.status_code, own_code(as_user)) == (401, 7106)
    too_much = await kit.fund(card_id, "99999999999999")
    assert (too_much.status_code, own_code(too_much)) == (400, 7304)  # beyond the maximum balance
    assert (await kit.card(card_id))["balance"] == 11


async def test_another_merchants_card_is_not_found(kit: Kit, merchant_factory: Any) -> None:
    card_id = await _card(kit, "10")
    other = Kit(kit.client, await merchant_factory())
    answer = await other.fund(card_id, "1", "withdraw")
    assert (answer.status_code, own_code(answer)) == (404, 7301)
    assert (await kit.card(card_id))["balance"] == 10


async def test_bad_expired_and_revoked_tokens_are_refused(kit: Kit) -> None:
    card_id = await _card(kit, "10")
    path = f"/cards/{card_id}/funds"
    payload = {"operation": "add", "amount": 1}
    missing = await kit.post(path, payload)
    assert (missing.status_code, own_code(missing)) == (401, 7102)
    token = await kit.app()
    forged = forge(
        {"alg": "EdDSA", "typ": ACCESS_TOKEN_TYP, "kid": "x"},
        {"sub": "x"},
        nacl.signing.SigningKey.generate(),
    )
    assert own_code(await kit.post(path, payload, forged)) == 7102
    head, claims, _sig = token.split(".")
    altered = f"{head}.{claims}.{'A' * 86}"
    assert own_code(await kit.post(path, payload, altered)) == 7102
    assert (await kit.post(path, payload, token)).status_code == 200  # verified once, cached
    await kit.advance(31 * 60)  # past the application token's 30 minutes
    expired = await kit.post(path, payload, token)
    assert (expired.status_code, own_code(expired)) == (401, 7103)
    user = await kit.user()
    user_token = (await kit.user_login(user["username"]))["accessToken"]
    as_user = await kit.post(path, payload, user_token)
    assert own_code(as_user) == 7106  # verified (and cached), then refused: not the application
    fresh = (await kit.login())["accessToken"]  # the old application token expired above
    logout = await kit.post("/users/logout", None, fresh, headers={"X-User-Token": user_token})
    assert logout.status_code in (200, 204), logout.text
    revoked = await kit.post(path, payload, user_token)  # the cached signature does not skip the session
    assert (revoked.status_code, own_code(revoked)) == (401, 7104)
    assert (await kit.card(card_id))["balance"] == 11


async def test_idempotency_keys_are_still_honoured(kit: Kit) -> None:
    card_id = await _card(kit, "10")
    headers = {"Idempotency-Key": "fund-once-1"}
    first = await kit.post(
        f"/cards/{card_id}/funds", {"operation": "withdraw", "amount": 4}, await kit.app(), headers=headers
    )
    again = await kit.post(
        f"/cards/{card_id}/funds", {"operation": "withdraw", "amount": 4}, await kit.app(), headers=headers
    )
    assert first.status_code == again.status_code == 200
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.content == first.content
    other = await kit.post(
        f"/cards/{card_id}/funds", {"operation": "withdraw", "amount": 5}, await kit.app(), headers=headers
    )
    assert other.status_code == 422
    assert (await kit.card(card_id))["balance"] == 6
    assert len(await kit.movements(card_id)) == 2
    # the same key sent by many at once: one withdrawal, the others replay it or are told it is in progress
    key = {"Idempotency-Key": "fund-once-2"}
    token = await kit.app()
    answers = await asyncio.gather(
        *(
            kit.post(f"/cards/{card_id}/funds", {"operation": "withdraw", "amount": 1}, token, headers=key)
            for _ in range(8)
        )
    )
    assert {a.status_code for a in answers} <= {200, 409}
    assert (await kit.card(card_id))["balance"] == 5
    assert len(await kit.movements(card_id)) == 3


async def test_the_fast_path_answers_as_the_ordinary_path(kit: Kit, app: FastAPI) -> None:
    """The Core function and the ORM service, called directly on the same card, agree."""
    card_id = await _card(kit, "50")
    token = await kit.app()
    context = app.state.paysdk
    request = FundsRequest(operation="withdraw", amount=Decimal("1.5"))
    fast = await ledger_batches(context).fund(token, card_id, request)
    assert isinstance(fast, FundsResult)

    def slow(session: Any) -> FundsResult:
        now = context.clock.now(session)
        who = wallet_tokens.authenticate(session, context, now, token)
        return wallet_funds.funds(session, now, who, card_id, request)

    ordinary = await context.run(slow)
    assert fast.card.model_dump(exclude={"balance", "available_balance"}) == ordinary.card.model_dump(
        exclude={"balance", "available_balance"}
    )
    assert (fast.card.balance, ordinary.card.balance) == (Decimal("48.5"), Decimal(47))
    assert fast.movement.model_dump(exclude={"movement_id", "balance_after", "created_at"}) == (
        ordinary.movement.model_dump(exclude={"movement_id", "balance_after", "created_at"})
    )
    assert await ledger_batches(context).fund(None, card_id, request) is wallet_ledger.SLOW


# ------------------------------------------------------------------------------ the signature cache


def _token(key: nacl.signing.SigningKey, exp: int, jti: str = "j") -> str:
    return _jwt.encode_jwt(key, {"exp": exp, "jti": jti}, typ=ACCESS_TOKEN_TYP, kid="k")


def test_the_cache_is_keyed_by_the_exact_token_and_its_key_map() -> None:
    key = nacl.signing.SigningKey.generate()
    verify = {"k": key.verify_key}
    cache = VerifiedTokens(wall=lambda: 1000.0)
    token = _token(key, 2000)
    assert cache.get(token, ACCESS_TOKEN_TYP, verify) is None
    cache.put(token, ACCESS_TOKEN_TYP, verify, {"exp": 2000, "sub": "a"})
    assert cache.get(token, ACCESS_TOKEN_TYP, verify) == {"exp": 2000, "sub": "a"}
    assert cache.get(token + "x", ACCESS_TOKEN_TYP, verify) is None  # another text: verified again
    assert cache.get(token, "rt+jwt", verify) is None
    assert cache.get(token, ACCESS_TOKEN_TYP, {"k": key.verify_key}) is None  # another key map: dropped
    assert len(cache) == 0
    claims = {"exp": 2000}
    cache.put(token, ACCESS_TOKEN_TYP, verify, claims)
    got = cache.get(token, ACCESS_TOKEN_TYP, verify)
    assert got is not None
    got["exp"] = 9999  # a caller's copy: the entry is unchanged
    assert cache.get(token, ACCESS_TOKEN_TYP, verify) == claims


def test_the_cache_honours_expiry_and_its_bound() -> None:
    now = [1000.0]
    cache = VerifiedTokens(size=3, wall=lambda: now[0])
    verify: dict[str, Any] = {}
    for i in range(5):
        cache.put(f"t{i}", ACCESS_TOKEN_TYP, verify, {"exp": 1500 + i})
    assert len(cache) == 3
    assert cache.get("t0", ACCESS_TOKEN_TYP, verify) is None  # the oldest left first
    assert cache.get("t2", ACCESS_TOKEN_TYP, verify) == {"exp": 1502}
    now[0] = 1503.0
    assert cache.get("t2", ACCESS_TOKEN_TYP, verify) is None  # expired: dropped
    assert cache.get("t4", ACCESS_TOKEN_TYP, verify) == {"exp": 1504}
    cache.put("late", ACCESS_TOKEN_TYP, verify, {"exp": 1503})  # expired already: not remembered
    assert cache.get("late", ACCESS_TOKEN_TYP, verify) is None
    cache.clear()
    assert len(cache) == 0


def test_verified_claims_verifies_once_and_refuses_forgeries() -> None:
    key = nacl.signing.SigningKey.generate()
    keys = wallet_tokens.ServerKeys(key, "k", {"k": key.verify_key})
    token = _jwt.encode_jwt(key, {"exp": 2**40, "jti": "once"}, typ=ACCESS_TOKEN_TYP, kid="k")
    assert wallet_tokens.verified_claims(token, ACCESS_TOKEN_TYP, keys)["jti"] == "once"
    assert wallet_tokens.VERIFIED.get(token, ACCESS_TOKEN_TYP, keys.verify) is not None
    head, claims, _sig = token.split(".")
    with pytest.raises(_jwt.JWTError):
        wallet_tokens.verified_claims(f"{head}.{claims}.{'A' * 86}", ACCESS_TOKEN_TYP, keys)
    other = nacl.signing.SigningKey.generate()
    forged = _jwt.encode_jwt(other, {"exp": 2**40, "jti": "once"}, typ=ACCESS_TOKEN_TYP, kid="k")
    with pytest.raises(_jwt.JWTError):
        wallet_tokens.verified_claims(forged, ACCESS_TOKEN_TYP, keys)


# ------------------------------------------------------------------------- the parametrized lane (D261)


def test_the_funds_route_is_the_only_parametrized_lane(tmp_path: Any) -> None:
    app = create_app(f"sqlite:///{tmp_path / 'lanes.db'}", start_ticker=False, families=FAMILIES)
    try:
        lanes = [route for route in app.router.routes if getattr(route, "name", None) == LANE_NAME]
        assert [
            (sorted(getattr(route, "methods", ())), getattr(route, "path", ""))
            for route in lanes
            if "{" in getattr(route, "path", "")
        ] == [(["POST"], "/rest/cards/{cardId}/funds")]
    finally:
        app.state.paysdk.db.dispose()


async def test_the_lane_answers_as_fastapi_routing_does(kit: Kit, db_url: str) -> None:
    """The same requests through the lane (``kit``'s app) and through FastAPI's routing (another app over
    the same database, fast lane off): the same status, body shape and effect."""
    routed = create_app(db_url, start_ticker=False)
    routed.router.routes[:] = [r for r in routed.router.routes if getattr(r, "name", None) != LANE_NAME]
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=routed), base_url="http://testserver"
        ) as client:
            other = Kit(client, kit.merchant)
            card_id = await _card(kit, "10")
            token = await kit.app()
            cases: list[tuple[str, Any]] = [
                (f"/cards/{card_id}/funds", {"operation": "withdraw", "amount": 1}),
                (f"/cards/{card_id}/funds", {"operation": "withdraw", "amount": 100}),
                (f"/cards/{card_id}/funds", {"operation": "add", "amount": "1"}),
                (f"/cards/{card_id}/funds", {"operation": "steal", "amount": 1}),
                ("/cards/crd_000000000000000000000000/funds", {"operation": "add", "amount": 1}),
                (f"/cards/{card_id}/funds/", {"operation": "add", "amount": 1}),
                (f"/cards/{card_id}/fund", {"operation": "add", "amount": 1}),
            ]
            for path, payload in cases:
                laned = await kit.post(path, payload, token)
                plain = await other.post(path, payload, token)
                assert laned.status_code == plain.status_code, (path, laned.text, plain.text)
                if laned.status_code == 200:
                    one, two = body(laned)["data"], body(plain)["data"]
                    assert one["movement"]["amount"] == two["movement"]["amount"]
                    step = one["movement"]["amount"]  # applied in turn: the second after the first
                    assert abs(one["card"]["balance"] - two["card"]["balance"]) == step
                else:
                    assert laned.content == plain.content, path
            assert (await kit.card(card_id))["balance"] == 8
    finally:
        routed.state.paysdk.db.dispose()
