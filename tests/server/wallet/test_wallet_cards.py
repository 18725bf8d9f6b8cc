"""Cards, funds, transfers, charges/refunds, permissions and CVV through the API (D40-D44)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from .kit import Kit, body, own_code


async def _holder(kit: Kit) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A user, a funded virtual card of theirs (100) and the user's tokens."""
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    assert (await kit.fund(card["cardId"], "100")).status_code == 200
    return user, card, await kit.user_login(user["username"])


async def test_funds_exact_balance_and_movements(kit: Kit) -> None:
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    assert card["status"] == "active"
    assert card["balance"] == 0
    added = await kit.fund(card["cardId"], "10.0001")
    assert added.status_code == 200, added.text
    result = body(added)["data"]
    assert result["card"]["balance"] == Decimal("10.0001")
    assert result["movement"]["balanceAfter"] == Decimal("10.0001")
    assert b"10.0001" in added.content
    out = await kit.fund(card["cardId"], "0.0001", "withdraw")
    assert body(out)["data"]["card"]["balance"] == Decimal("10.0000")
    overdraw = await kit.fund(card["cardId"], "10.0001", "withdraw")
    assert (overdraw.status_code, own_code(overdraw)) == (422, 7303)
    assert (await kit.card(card["cardId"]))["balance"] == Decimal("10")
    moves = await kit.movements(card["cardId"])
    assert [(m["type"], m["direction"], m["amount"]) for m in moves] == [
        ("fund", "credit", Decimal("10.0001")),
        ("withdrawal", "debit", Decimal("0.0001")),
    ]


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b'{"operation": "add", "amount": 1.00001}', 7304),
        (b'{"operation": "add", "amount": 0}', 7304),
        (b'{"operation": "add", "amount": -5}', 7304),
        (b'{"operation": "add", "amount": "10"}', 7304),
        (b'{"operation": "add", "amount": true}', 7304),
        (b'{"operation": "add", "amount": null}', 7304),
        (b'{"operation": "add", "amount": 1e20}', 7304),
        (b'{"operation": "add"}', 7001),
        (b'{"operation": "steal", "amount": 1}', 7001),
        (b'{"operation": "add", "amount": NaN}', 7001),
        (b'{"operation": "add", "amount": Infinity}', 7001),
        (b'{"operation": "add", "amount": 1e400}', 7001),
        (b"[1]", 7001),
        (b"\xff\xff", 7001),
        (b"", 7001),
    ],
)
async def test_invalid_amounts_and_bodies(kit: Kit, raw: bytes, code: int) -> None:
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    response = await kit.client.post(
        f"/rest/cards/{card['cardId']}/funds",
        content=raw,
        headers={"Authorization": f"Bearer {await kit.app()}"},
    )
    assert response.status_code == 400, response.text
    assert own_code(response) == code
    if code == 7304:
        assert body(response)["details"][0]["field"] == "amount"
    assert (await kit.card(card["cardId"]))["balance"] == 0


async def test_balance_cannot_exceed_the_maximum(kit: Kit) -> None:
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    assert (await kit.fund(card["cardId"], "99999999999999.9999")).status_code == 200
    too_much = await kit.fund(card["cardId"], "1")
    assert (too_much.status_code, own_code(too_much)) == (400, 7304)


async def test_transfers(kit: Kit) -> None:
    user, source, tokens = await _holder(kit)
    target = await kit.virtual_card(user["authUserId"])
    usd = await kit.virtual_card(user["authUserId"], "USD")
    response = await kit.post(
        f"/cards/{source['cardId']}/transfers",
        {"toCardId": target["cardId"], "amount": Decimal("25.5")},
        tokens["accessToken"],
    )
    assert response.status_code == 201, response.text
    result = body(response)["data"]
    assert result["debit"]["balanceAfter"] == Decimal("74.5")
    assert result["credit"]["balanceAfter"] == Decimal("25.5")
    checks = [
        ({"toCardId": source["cardId"], "amount": 1}, 400, 7306),
        ({"toCardId": usd["cardId"], "amount": 1}, 409, 7305),
        ({"toCardId": "crd_nope", "amount": 1}, 404, 7301),
        ({"toCardId": target["cardId"], "amount": 1000}, 422, 7303),
        ({"toCardId": target["cardId"], "amount": "1"}, 400, 7304),
    ]
    for payload, status, code in checks:
        refused = await kit.post(f"/cards/{source['cardId']}/transfers", payload, await kit.app())
        assert (refused.status_code, own_code(refused)) == (status, code), payload
    blocked = await kit.post(f"/cards/{target['cardId']}/block", None, await kit.app())
    assert body(blocked)["data"]["status"] == "blocked"
    to_blocked = await kit.post(
        f"/cards/{source['cardId']}/transfers", {"toCardId": target["cardId"], "amount": 1}, await kit.app()
    )
    assert (to_blocked.status_code, own_code(to_blocked)) == (409, 7302)
    assert (await kit.card(source["cardId"]))["balance"] == Decimal("74.5")
    assert (await kit.card(target["cardId"]))["balance"] == Decimal("25.5")


async def test_charges_refunds_and_authorization_expiry(kit: Kit) -> None:
    _user, card, _tokens = await _holder(kit)
    cid = card["cardId"]
    auth = await kit.client.post(f"/_sandbox/cards/{cid}/charges", json={"amount": 30})
    assert auth.status_code == 201, auth.text
    charge = body(auth)
    state = await kit.card(cid)
    assert (state["balance"], state["pendingDebits"], state["availableBalance"]) == (100, 30, 70)
    over = await kit.fund(cid, "70.0001", "withdraw")
    assert own_code(over) == 7303
    too_big = await kit.client.post(f"/_sandbox/cards/{cid}/charges", json={"amount": 71})
    assert (too_big.status_code, own_code(too_big)) == (422, 7303)
    captured = await kit.client.post(f"/_sandbox/charges/{charge['chargeId']}/capture")
    assert body(captured)["status"] == "captured"
    state = await kit.card(cid)
    assert (state["balance"], state["pendingDebits"]) == (70, 0)
    refund = body(
        await kit.client.post(f"/_sandbox/charges/{charge['chargeId']}/refunds", json={"amount": 10})
    )
    assert (await kit.card(cid))["pendingCredits"] == 10
    assert body(await kit.client.post(f"/_sandbox/refunds/{refund['refundId']}/clear"))["status"] == "cleared"
    state = await kit.card(cid)
    assert (state["balance"], state["pendingCredits"]) == (80, 0)
    twice = await kit.client.post(f"/_sandbox/refunds/{refund['refundId']}/clear")
    assert twice.status_code == 409
    # an authorization left alone for 7 days is released by the scheduler
    held = body(await kit.client.post(f"/_sandbox/cards/{cid}/charges", json={"amount": 50}))
    assert (await kit.card(cid))["availableBalance"] == 30
    await kit.advance(7 * 86400 + 1)
    state = await kit.card(cid)
    assert (state["balance"], state["pendingDebits"], state["availableBalance"]) == (80, 0, 80)
    late = await kit.client.post(f"/_sandbox/charges/{held['chargeId']}/capture")
    assert late.status_code == 409
    # immediate capture
    now = body(await kit.client.post(f"/_sandbox/cards/{cid}/charges", json={"amount": 5, "capture": True}))
    assert now["status"] == "captured"
    moves = await kit.movements(cid)
    total = sum((m["amount"] if m["direction"] == "credit" else -m["amount"] for m in moves), Decimal(0))
    assert total == (await kit.card(cid))["balance"] == 75


async def test_card_lifecycle_stock_linking_and_states(kit: Kit) -> None:
    user = await kit.user()
    stock = await kit.client.post("/_sandbox/cards", json={"merchant": kit.merchant.slug, "balance": 12.5})
    assert stock.status_code == 201, stock.text
    card = body(stock)
    assert (card["status"], card["type"], card["balance"]) == ("inactive", "physical", 12.5)
    path = f"/users/{user['authUserId']}/cards"
    missing = await kit.post(path, {"cardId": card["cardId"]}, await kit.app())
    assert (missing.status_code, own_code(missing)) == (400, 7001)
    assert body(missing)["details"][0]["field"] == "clientId"
    linked = await kit.post(
        path, {"cardId": card["cardId"]}, await kit.app(), params={"clientId": kit.merchant.slug}
    )
    assert linked.status_code == 200, linked.text
    assert body(linked)["data"]["holderId"] == user["authUserId"]
    again = await kit.post(
        path, {"cardId": card["cardId"]}, await kit.app(), params={"clientId": kit.merchant.slug}
    )
    assert (again.status_code, own_code(again)) == (409, 7308)
    cid = card["cardId"]
    inactive = await kit.fund(cid, "1", "withdraw")
    assert (inactive.status_code, own_code(inactive)) == (409, 7302)
    assert (await kit.fund(cid, "1")).status_code == 200  # preload works on an inactive card
    active = await kit.post(f"/cards/{cid}/activation", None, await kit.app())
    assert body(active)["data"]["status"] == "active"
    alias = await kit.call("PATCH", f"/cards/{cid}", await kit.app(), {"alias": "groceries"})
    assert body(alias)["data"]["alias"] == "groceries"
    pin = await kit.call("PUT", f"/cards/{cid}/pin", await kit.app(), {"pin": "1234"})
    assert pin.status_code == 200
    assert b"1234" not in pin.content
    bad_pin = await kit.call("PUT", f"/cards/{cid}/pin", await kit.app(), {"pin": "12a4"})
    assert (bad_pin.status_code, own_code(bad_pin)) == (400, 7001)
    listed = body(await kit.call("GET", path, await kit.app()))["data"]
    assert [c["cardId"] for c in listed] == [cid]
    # external card through a linking token (single use)
    token = body(
        await kit.client.post("/_sandbox/linking-tokens", json={"pan": "4111111111111111", "expiry": "12/30"})
    )
    tokens = await kit.user_login(user["username"])
    ext = await kit.post(
        f"/users/{user['authUserId']}/linked-cards", {"token": token["token"]}, tokens["accessToken"]
    )
    assert ext.status_code == 201, ext.text
    external = body(ext)["data"]
    assert (external["type"], external["maskedPan"][-4:]) == ("linked", "1111")
    reuse = await kit.post(
        f"/users/{user['authUserId']}/linked-cards", {"token": token["token"]}, await kit.app()
    )
    assert (reuse.status_code, own_code(reuse)) == (400, 7309)
    not_fundable = await kit.fund(external["cardId"], "1")
    assert (not_fundable.status_code, own_code(not_fundable)) == (409, 7307)


async def test_summary_and_movement_dates(kit: Kit) -> None:
    user, card, tokens = await _holder(kit)
    await kit.fund(card["cardId"], "5", "withdraw")
    today = datetime.now(UTC).date().isoformat()
    path = f"/users/{user['authUserId']}/cards/summary"
    for params, field in (
        ({}, "startDate"),
        ({"startDate": today}, "endDate"),
        ({"startDate": "2024-13-01", "endDate": today}, "startDate"),
        ({"startDate": "20240101", "endDate": today}, "startDate"),
        ({"startDate": today, "endDate": "2000-01-01"}, "startDate"),
        ({"startDate": "0001-01-01", "endDate": "9999-12-31"}, "startDate"),
    ):
        response = await kit.call("GET", path, tokens["accessToken"], params=params)
        assert (response.status_code, own_code(response)) == (400, 7001), params
        assert body(response)["details"][0]["field"] == field
    response = await kit.call(
        "GET", path, tokens["accessToken"], params={"startDate": "2000-01-01", "endDate": "2999-01-01"}
    )
    assert response.status_code == 200, response.text
    figures = body(response)["data"]["cards"][0]
    assert (figures["openingBalance"], figures["credits"], figures["debits"], figures["closingBalance"]) == (
        0,
        100,
        5,
        95,
    )
    assert figures["movements"] == 2
    old = await kit.call(
        "GET", f"/cards/{card['cardId']}/movements", await kit.app(), params={"endDate": "2001-01-01"}
    )
    assert body(old)["data"] == []


async def test_permissions_are_enforced(kit: Kit) -> None:
    owner, card, owner_tokens = await _holder(kit)
    other_card = await kit.virtual_card(owner["authUserId"])
    helper = await kit.user()
    helper_tokens = await kit.user_login(helper["username"])
    h = helper_tokens["accessToken"]
    cid = card["cardId"]
    # without any grant the helper can do nothing on the card
    for method, path, payload in (
        ("GET", f"/cards/{cid}", None),
        ("PATCH", f"/cards/{cid}", {"alias": "x"}),
        ("POST", f"/cards/{cid}/block", None),
        ("PUT", f"/cards/{cid}/pin", {"pin": "0000"}),
        ("GET", f"/cards/{cid}/movements", None),
        ("POST", f"/cards/{cid}/transfers", {"toCardId": other_card["cardId"], "amount": 1}),
        ("POST", f"/cards/{cid}/activation", None),
        ("POST", f"/cards/{cid}/cvv/view-token", None),
        ("GET", f"/users/{owner['authUserId']}/cards", None),
        ("POST", f"/cards/{cid}/users/{helper['authUserId']}/permissions", {"permissions": ["checkCard"]}),
        ("GET", f"/cards/{cid}/users/permissions", None),
    ):
        response = await kit.call(method, path, h, payload)
        assert (response.status_code, own_code(response)) == (403, 7401), (method, path, response.text)
    # the owner grants checkCard and getCards
    grant = await kit.post(
        f"/cards/{cid}/users/{helper['authUserId']}/permissions",
        {"permissions": ["checkCard", "getCards"]},
        owner_tokens["accessToken"],
    )
    assert grant.status_code == 201, grant.text
    record = body(grant)["data"]
    assert record["permissions"] == ["checkCard", "getCards"]
    assert (await kit.call("GET", f"/cards/{cid}", h)).status_code == 200
    visible = body(await kit.call("GET", f"/users/{owner['authUserId']}/cards", h))["data"]
    assert [c["cardId"] for c in visible] == [cid]
    no_transfer = await kit.post(
        f"/cards/{cid}/transfers", {"toCardId": other_card["cardId"], "amount": 1}, h
    )
    assert (no_transfer.status_code, own_code(no_transfer)) == (403, 7401)
    # the application updates the record: transferBetweenCards now works, checkCard is gone
    patched = await kit.call(
        "PATCH",
        f"/cards/users/permissions/{record['id']}",
        await kit.app(),
        {"permissions": ["transferBetweenCards"]},
    )
    assert body(patched)["data"]["permissions"] == ["transferBetweenCards"]
    moved = await kit.post(f"/cards/{cid}/transfers", {"toCardId": other_card["cardId"], "amount": 1}, h)
    assert moved.status_code == 201, moved.text
    assert own_code(await kit.call("GET", f"/cards/{cid}", h)) == 7401
    # listings
    mine = body(await kit.call("GET", f"/cards/users/{helper['authUserId']}/permissions", h))["data"]
    assert [r["id"] for r in mine] == [record["id"]]
    by_card = body(await kit.call("GET", f"/cards/{cid}/users/permissions", owner_tokens["accessToken"]))[
        "data"
    ]
    assert [r["id"] for r in by_card] == [record["id"]]
    one = body(await kit.call("GET", f"/cards/{cid}/users/{helper['authUserId']}/permissions", h))["data"]
    assert len(one) == 1
    others = await kit.call("GET", f"/cards/users/{owner['authUserId']}/permissions", h)
    assert (others.status_code, own_code(others)) == (403, 7401)
    unknown = await kit.call(
        "PATCH", "/cards/users/permissions/prm_nope", await kit.app(), {"permissions": ["checkCard"]}
    )
    assert (unknown.status_code, own_code(unknown)) == (404, 7402)
    bad = await kit.post(
        f"/cards/{cid}/users/{helper['authUserId']}/permissions", {"permissions": ["fly"]}, await kit.app()
    )
    assert (bad.status_code, own_code(bad)) == (400, 7001)
    # a card of another merchant is not found
    other_kit_card = await kit.client.post(
        "/_sandbox/cards",
        json={"merchant": (await kit.client.post("/_sandbox/clients", json={})).json()["slug"]},
    )
    foreign = await kit.call("GET", f"/cards/{body(other_kit_card)['cardId']}", await kit.app())
    assert (foreign.status_code, own_code(foreign)) == (404, 7301)


async def test_cvv_two_steps(kit: Kit) -> None:
    owner, card, tokens = await _holder(kit)
    cid = card["cardId"]
    user_token = tokens["accessToken"]
    app_view = await kit.post(f"/cards/{cid}/cvv/view-token", None, await kit.app())
    assert (app_view.status_code, own_code(app_view)) == (403, 7502)
    app_read = await kit.call("GET", f"/cards/{cid}/cvv", await kit.app(), headers={"X-View-Token": "x"})
    assert (app_read.status_code, own_code(app_read)) == (403, 7502)
    issued = await kit.post(f"/cards/{cid}/cvv/view-token", None, user_token)
    assert issued.status_code == 200, issued.text
    view = body(issued)["data"]
    assert view["expiresIn"] == 60
    no_token = await kit.call("GET", f"/cards/{cid}/cvv", user_token)
    assert (no_token.status_code, own_code(no_token)) == (403, 7501)
    other_card = await kit.virtual_card(owner["authUserId"])
    wrong_card = await kit.call(
        "GET", f"/cards/{other_card['cardId']}/cvv", user_token, headers={"X-View-Token": view["viewToken"]}
    )
    assert (wrong_card.status_code, own_code(wrong_card)) == (403, 7501)
    cvv = await kit.call("GET", f"/cards/{cid}/cvv", user_token, headers={"X-View-Token": view["viewToken"]})
    assert cvv.status_code == 200, cvv.text
    assert len(body(cvv)["data"]["cvv"]) == 3
    again = await kit.call(
        "GET", f"/cards/{cid}/cvv", user_token, headers={"X-View-Token": view["viewToken"]}
    )
    assert (again.status_code, own_code(again)) == (403, 7501)
    # expiry on the virtual clock
    late = body(await kit.post(f"/cards/{cid}/cvv/view-token", None, user_token))["data"]
    await kit.advance(61)
    expired = await kit.call(
        "GET", f"/cards/{cid}/cvv", user_token, headers={"X-View-Token": late["viewToken"]}
    )
    assert (expired.status_code, own_code(expired)) == (403, 7501)
    # another user with checkCvv cannot use the owner's token
    helper = await kit.user()
    await kit.post(
        f"/cards/{cid}/users/{helper['authUserId']}/permissions",
        {"permissions": ["checkCvv"]},
        await kit.app(),
    )
    helper_token = (await kit.user_login(helper["username"]))["accessToken"]
    fresh = body(await kit.post(f"/cards/{cid}/cvv/view-token", None, user_token))["data"]
    foreign = await kit.call(
        "GET", f"/cards/{cid}/cvv", helper_token, headers={"X-View-Token": fresh["viewToken"]}
    )
    assert (foreign.status_code, own_code(foreign)) == (403, 7501)
    mine = body(await kit.post(f"/cards/{cid}/cvv/view-token", None, helper_token))["data"]
    assert (
        await kit.call("GET", f"/cards/{cid}/cvv", helper_token, headers={"X-View-Token": mine["viewToken"]})
    ).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/cards/%00",
        "/cards/" + "a" * 500,
        "/cards/%F0%9F%98%80",
        "/users/%00/cards",
        "/cards/users/%00/permissions",
    ],
)
async def test_weird_path_values_are_404(kit: Kit, path: str) -> None:
    response = await kit.client.get("/rest" + path, headers={"Authorization": f"Bearer {await kit.app()}"})
    assert response.status_code == 404, response.text
    assert own_code(response) in (7201, 7301)
