"""The live conformance check (``tests/openapi_conformance.py``, D133) catches a document that drifts
from the server, and an answer that drifts from the document; and passes on what the server really does.
Also: every money field of the document is a JSON number (D130)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from server_helpers import auth, create_link, dumps, link_body, page_token
from wallet.kit import Kit

from openapi_conformance import Exchange, Recorder, conformance_errors
from paysdk.contracts.sandbox import SandboxClient

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

CARD = "#/components/schemas/Card"
MONEY_WORDS = ("amount", "balance", "credits", "debits")
#: Properties named like money that count things (the reconciliation's counts of each kind, D331).
COUNTS = frozenset({"/components/schemas/ReconciliationCounts.amountMismatch"})


@pytest.fixture
def server_recorder() -> Recorder:
    """A recorder on ``app``, checked by the tests themselves (not at teardown)."""
    return Recorder()


def schema(document: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = document
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    assert isinstance(node, dict)
    return node


def money_properties(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every ``(where, schema)`` of a property named like money anywhere in ``node``."""
    if isinstance(node, dict):
        for name, value in node.get("properties", {}).items():
            if any(word in name.lower() for word in MONEY_WORDS):
                yield f"{where}.{name}", value
        for key, value in node.items():
            yield from money_properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for value in node:
            yield from money_properties(value, where)


def test_every_money_field_is_a_json_number(app: FastAPI) -> None:
    document = app.openapi()
    found = dict(money_properties(document))
    # Answers (components) and request bodies (inline) of every family.
    for expected in (
        "/components/schemas/Card.balance",
        "/components/schemas/Card.availableBalance",
        "/components/schemas/Card.pendingDebits",
        "/components/schemas/Card.pendingCredits",
        "/components/schemas/Movement.amount",
        "/components/schemas/Movement.balanceAfter",
        "/components/schemas/CardPeriodSummary.openingBalance",
        "/components/schemas/CardPeriodSummary.closingBalance",
        "/components/schemas/CardPeriodSummary.credits",
        "/components/schemas/CardPeriodSummary.debits",
    ):
        assert expected in found, expected
    requests = [where for where in found if "/requestBody/" in where]
    assert len(requests) >= 5  # the two link creates, the alternative create, funds, transfers
    for where, value in found.items():
        if value.get("type") == "array" or where in COUNTS:  # lists and counts of money-named things
            continue
        # An optional money field (the terminal PATCH's ``amount``) is a number or null, never a string.
        types = [v.get("type") for v in value["anyOf"]] if "anyOf" in value else [value.get("type")]
        assert "number" in types, (where, value)
        assert set(types) <= {"number", "null"}, (where, value)
        assert "string" not in json.dumps(value), (where, value)


async def test_what_the_server_does_conforms(
    app: FastAPI, server_recorder: Recorder, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    kit = Kit(asgi_client, merchant)
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    assert (await kit.fund(card["cardId"], Decimal("10.0001"))).status_code == 200
    app_token = await kit.app()
    refused = await kit.post(
        f"/cards/{card['cardId']}/funds", {"operation": "add", "amount": "10.00"}, app_token
    )
    assert refused.status_code == 400  # a string amount is refused (D45)
    bare = await kit.post(f"/users/{user['authUserId']}/cards/virtuals", None, app_token)
    assert bare.status_code == 201  # no body at all: the body is optional there
    link = await create_link(asgi_client, merchant)
    token = await page_token(asgi_client, f"/checkout/?orderId={link['uid']}")
    form = {"orderId": link["uid"], "formToken": token, "cardNumber": "4242424242424242"}
    paid = await asgi_client.post("/checkout/pay", data={**form, "expiry": "12/39", "cvc": "1", "name": "A"})
    assert paid.status_code == 400  # a 1-digit CVC: the form again
    forged = await asgi_client.post("/checkout/pay", data={**form, "formToken": "forged"})
    assert forged.status_code == 403
    paths = {exchange.path for exchange in server_recorder.exchanges}
    assert {"/transactions", "/checkout/pay", f"/rest/cards/{card['cardId']}/funds"} <= paths
    assert not any(path.startswith("/_sandbox") for path in paths)
    assert conformance_errors(app.openapi(), server_recorder.exchanges) == []
    server_recorder.check()


async def test_the_old_money_schema_is_caught(
    app: FastAPI, server_recorder: Recorder, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    kit = Kit(asgi_client, merchant)
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    assert (await kit.fund(card["cardId"], Decimal("5"))).status_code == 200
    await kit.card(card["cardId"])
    drifted = copy.deepcopy(app.openapi())
    schema(drifted, CARD)["properties"]["balance"] = {"type": "string"}  # what the document said before
    errors = conformance_errors(drifted, server_recorder.exchanges)
    assert errors
    assert any(error.startswith(f"GET /rest/cards/{card['cardId']} -> 200: the answer") for error in errors)
    assert all("balance" in error for error in errors), errors


async def test_a_request_the_document_refuses_is_caught(
    app: FastAPI, server_recorder: Recorder, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    await create_link(asgi_client, merchant)
    drifted = copy.deepcopy(app.openapi())
    body = drifted["paths"]["/transactions"]["post"]["requestBody"]["content"]["application/json"]
    body["schema"]["properties"]["amount"] = {"type": "string"}
    (error,) = conformance_errors(drifted, server_recorder.exchanges)
    assert error.startswith("POST /transactions -> 200: the request does not match")
    assert "amount" in error


async def test_a_refused_request_is_checked_by_its_answer_only(
    app: FastAPI, server_recorder: Recorder, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    refused = await asgi_client.post(
        "/transactions", content=dumps({**link_body(merchant), "amount": "10.00"}), headers=auth(merchant)
    )
    assert refused.status_code == 409  # D3: a string amount is an invalid field
    assert conformance_errors(app.openapi(), server_recorder.exchanges) == []
    drifted = copy.deepcopy(app.openapi())
    del drifted["paths"]["/transactions"]["post"]["responses"]["409"]
    (error,) = conformance_errors(drifted, server_recorder.exchanges)
    assert error.startswith("POST /transactions -> 409: the answer does not match")


async def test_an_undocumented_checkout_redirect_is_caught(
    app: FastAPI, server_recorder: Recorder, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    link = await create_link(asgi_client, merchant)
    token = await page_token(asgi_client, f"/checkout/?orderId={link['uid']}")
    form = {"orderId": link["uid"], "formToken": token, "cardNumber": "4242424242424242"}
    paid = await asgi_client.post(
        "/checkout/pay", data={**form, "expiry": "12/39", "cvc": "123", "name": "A"}
    )
    assert paid.status_code == 303
    assert conformance_errors(app.openapi(), server_recorder.exchanges) == []
    drifted = copy.deepcopy(app.openapi())
    del drifted["paths"]["/checkout/pay"]["post"]["responses"]["303"]["headers"]["Location"]["schema"]
    drifted["paths"]["/checkout/pay"]["post"]["responses"]["303"]["headers"]["Location"]["schema"] = {
        "type": "string",
        "pattern": "^https://",
    }
    (error,) = conformance_errors(drifted, server_recorder.exchanges)
    assert error.startswith("POST /checkout/pay -> 303: the answer does not match")
    assert "Location" in error


def test_a_wrong_answer_is_caught_and_fails_the_recorder(app: FastAPI) -> None:
    # An answer as the server sent it before D18 held everywhere: a balance as a string.
    card = {
        "cardId": "crd_1",
        "maskedPan": "**** 1234",
        "type": "virtual",
        "status": "active",
        "currency": "GTQ",
        "balance": "10.00",
        "availableBalance": 10,
        "pendingDebits": 0,
        "pendingCredits": 0,
        "merchant": "m",
        "createdAt": "2026-01-01T00:00:00Z",
    }
    exchange = Exchange(
        method="GET",
        path="/rest/cards/crd_1",
        query="",
        request_headers=[("authorization", "Bearer x")],
        request_body=b"",
        status=200,
        response_headers=[("content-type", "application/json"), ("x-request-id", "req_" + "0" * 32)],
        response_body=json.dumps({"data": card}).encode(),
    )
    (error,) = conformance_errors(app.openapi(), [exchange])
    assert error.startswith("GET /rest/cards/crd_1 -> 200: the answer does not match")
    assert "balance" in error
    exchange.response_body = json.dumps({"data": {**card, "balance": 10}}).encode()
    assert conformance_errors(app.openapi(), [exchange]) == []
    recorder = Recorder()
    recorder.apps.append(app)
    recorder.keep(Exchange("GET", "/rest/cards/crd_1", "", [], b"", 200, [], b"{}"))
    with pytest.raises(AssertionError, match=r"GET /rest/cards/crd_1 -> 200"):
        recorder.check()
