"""One rule for text a spreadsheet could run as a formula (issue 20 item 17, D384 revising D210), on
SQLite and PostgreSQL (``db_url``): a free-text value starting with ``= + - @``, a tab or a carriage
return (leading blanks ignored) is refused wherever the server takes one (cardholder files, batch charge
descriptions, wallet aliases and descriptions, lead and partner names), while values with a format of
their own that start the same way (an E.164 phone ``+502...``) are kept."""

from __future__ import annotations

import base64

import httpx
import nacl.signing
import pytest
from cardholder_kit import HEADER, Backoffice, cardholders, csv_file, done, person, xlsx_file

from paysdk.contracts.sandbox import SandboxClient
from paysdk.contracts.spreadsheet import FORMULA_MESSAGE

FORMULAS = ["+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", "\t=1", " +1"]


@pytest.fixture
async def bo(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> Backoffice:
    return Backoffice(asgi_client, merchant)


@pytest.mark.parametrize("name", FORMULAS)
async def test_a_cardholder_name_a_spreadsheet_would_run_refuses_the_file(
    bo: Backoffice, db_url: str, name: str
) -> None:
    partner = await bo.partner()
    for kind in ("csv", "xlsx"):
        bad = [*person(2, prefix=kind)[:3], "Ana", name]
        rows = [person(1, prefix=kind), bad, person(3, prefix=kind)]
        content = csv_file(rows) if kind == "csv" else xlsx_file(rows)
        answer = await bo.upload(partner, content, f"f.{kind}")
        assert answer.status_code == 400, answer.text
        [detail] = answer.json()["details"]
        assert (detail["field"], detail["message"]) == (
            "lastName",
            "row 3: a formula is not accepted; give the value itself",
        )
    assert cardholders(db_url, bo.merchant.slug) == {}


async def test_a_phone_number_is_no_formula(bo: Backoffice, db_url: str) -> None:
    partner = await bo.partner()
    row = person(1)
    row[HEADER.index("phone")] = "+50255555555"
    answer = await bo.upload(partner, csv_file([row]), "f.csv")
    assert answer.status_code == 202, answer.text
    events = await bo.progress(partner, answer.json()["data"]["batchId"])
    assert done(events)["created"] == 1
    assert cardholders(db_url, bo.merchant.slug) == {"u1": 1}


async def _wallet_app(client: httpx.AsyncClient) -> tuple[str, dict[str, str]]:
    created = (await client.post("/_sandbox/clients", json={})).json()
    key = nacl.signing.SigningKey(base64.b64decode(created["signingPrivateKey"]))
    signature = base64.b64encode(key.sign(created["slug"].encode()).signature).decode()
    login = await client.post("/rest/auth/login", json={"merchant": created["slug"], "signature": signature})
    assert login.status_code == 200, login.text
    return created["slug"], {"Authorization": "Bearer " + login.json()["data"]["accessToken"]}


@pytest.mark.parametrize("text", FORMULAS)
async def test_wallet_free_text_refuses_formulas(asgi_client: httpx.AsyncClient, text: str) -> None:
    slug, app = await _wallet_app(asgi_client)
    user = await asgi_client.post(
        "/_sandbox/users",
        json={
            "merchant": slug,
            "username": "ana",
            "email": "ana@example.com",
            "password": "long-enough-1",
            "profile": {"firstName": text, "phone": "+50255555555"},
        },
    )
    assert user.status_code == 409, user.text
    assert user.json()["details"][0]["field"] == "profile.firstName"
    user = await asgi_client.post(
        "/_sandbox/users",
        json={
            "merchant": slug,
            "username": "ana",
            "email": "ana@example.com",
            "password": "long-enough-1",
            "profile": {"firstName": "Ana", "phone": "+50255555555"},
        },
    )
    assert user.status_code == 201, user.text
    user_id = user.json()["authUserId"]
    card = await asgi_client.post(f"/rest/users/{user_id}/cards/virtuals", json={"alias": text}, headers=app)
    assert (card.status_code, card.json()["details"][0]["field"]) == (400, "alias"), card.text
    assert card.json()["details"][0]["message"] == FORMULA_MESSAGE
    card = await asgi_client.post(
        f"/rest/users/{user_id}/cards/virtuals", json={"alias": "Daily"}, headers=app
    )
    assert card.status_code == 201, card.text
    card_id = card.json()["data"]["cardId"]
    renamed = await asgi_client.patch(f"/rest/cards/{card_id}", json={"alias": text}, headers=app)
    assert (renamed.status_code, renamed.json()["details"][0]["field"]) == (400, "alias")
    funded = await asgi_client.post(
        f"/rest/cards/{card_id}/funds", json={"operation": "add", "amount": 5, "reference": text}, headers=app
    )
    assert (funded.status_code, funded.json()["details"][0]["field"]) == (400, "reference")


@pytest.mark.parametrize("text", FORMULAS)
async def test_lead_and_partner_names_refuse_formulas(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, text: str
) -> None:
    partner = (await asgi_client.post("/_sandbox/clients", json={})).json()
    lead = await asgi_client.post(
        "/leads",
        json={
            "business": {"legalName": text, "taxId": "1-2"},
            "contact": {"name": "Ana", "email": "ana@sol.gt", "phone": "+50255555555"},
            "country": "SV",
            "channels": ["web"],
            "currencies": ["USD"],
        },
        headers={"Authorization": partner["sandboxToken"]},
    )
    assert (lead.status_code, lead.json()["details"][0]["field"]) == (409, "business.legalName"), lead.text
    named = await asgi_client.post(
        "/_sandbox/backoffice/partners", json={"merchant": merchant.slug, "name": text}
    )
    assert (named.status_code, named.json()["details"][0]["field"]) == (409, "name"), named.text
