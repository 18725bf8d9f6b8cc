"""The browser console's server side (issue 23; D720-D729): pages, the token and CSRF rules, masking,
languages, the CSP, and the actions (clock advance, faults, callback resend), in process on SQLite and
PostgreSQL. The Chromium, axe and screenshot checks are tests/browser's."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any, get_args

import httpx
import pytest
from server_helpers import JSON_TYPE, attempts, create_link, dumps, pay

from paysdk.contracts.sandbox import FaultKind
from paysdk.server.app import create_app
from paysdk.server.console.router import COOKIE, CSP
from paysdk.server.control_token import control_token_digest

C = "/_sandbox/console"
SAME = {"Origin": "http://testserver"}
PAGES = [
    "", "/", "/merchants", "/transactions", "/subscriptions", "/wallet", "/batches", "/terminal", "/clock",
    "/faults", "/tail", "/login",
]  # fmt: skip
TOKEN = "console-team-token-1f2e3d4c5b6a"


async def test_every_page_answers_without_data(asgi_client: httpx.AsyncClient) -> None:
    for path in PAGES:
        response = await asgi_client.get(C + path)
        assert response.status_code == 200, (path, response.text)
        assert response.headers["content-type"].startswith("text/html")
        assert response.headers["content-security-policy"] == CSP
        assert "script-src 'self'" in CSP
        assert "'unsafe-inline'" not in CSP
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["cache-control"] == "no-store"
        html = response.text
        assert "<main id='main'" in html
        assert "class='skip' href='#main'" in html
        assert html.count("<h1>") == 1
        # Self-contained: no asset from another origin, no inline script or style.
        assert not re.search(r"(src|href)='(https?:)?//", html)
        assert "<script>" not in html
        assert "style=" not in html
        assert " on" not in re.sub(r"'[^']*'", "", html)


async def test_static_files_come_from_the_package(asgi_client: httpx.AsyncClient) -> None:
    css = await asgi_client.get(C + "/static/console.css")
    js = await asgi_client.get(C + "/static/console.js")
    assert css.status_code == js.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert js.headers["content-type"].startswith("text/javascript")
    assert "EventSource" in js.text
    assert "/_sandbox/console/events" in js.text
    assert (await asgi_client.get(C + "/static/other.js")).status_code == 404
    assert "http" not in css.text


async def test_language_by_query_and_accept_language(asgi_client: httpx.AsyncClient) -> None:
    spanish = await asgi_client.get(C + "/clock", headers={"Accept-Language": "es-GT,es;q=0.9"})
    assert "<html lang='es'>" in spanish.text
    assert "Reloj virtual" in spanish.text
    assert spanish.headers["content-language"] == "es"
    english = await asgi_client.get(C + "/clock", headers={"Accept-Language": "en-US"})
    assert "<html lang='en'>" in english.text
    assert "Virtual clock" in english.text
    chosen = await asgi_client.get(C + "/clock?lang=en", headers={"Accept-Language": "es"})
    assert "<html lang='en'>" in chosen.text
    assert f"href='{C}/merchants?lang=en'" in chosen.text  # links keep the chosen language
    assert (await asgi_client.get(C + "/clock?lang=xx")).text.startswith("<!doctype html><html lang='es'>")


async def test_merchants_and_transactions_show_what_the_api_answers(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await merchant_factory(callback_url=callback_sink.url, display_name="Tienda Uno")
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4242424242424242")
    api = (await asgi_client.get(f"/_sandbox/transactions/{link['uid']}")).json()

    listing = (await asgi_client.get(C + "/merchants")).text
    assert merchant.slug in listing
    assert "Tienda Uno" in listing
    one = (await asgi_client.get(f"{C}/merchants/{merchant.slug}")).text
    assert merchant.sandbox_token in one  # loopback: not masked (D272)
    assert link["uid"] in one
    transactions = (await asgi_client.get(C + "/transactions")).text
    assert link["uid"] in transactions
    assert api["status"] == "approved"
    assert "approved" in transactions
    detail = (await asgi_client.get(f"{C}/transactions/{link['uid']}")).text
    [attempt] = await attempts(asgi_client, link["uid"])
    assert attempt.event_id in detail
    assert f"id='resend-{attempt.event_id}'" in detail
    assert "<td>200</td>" in detail
    assert api["reference"] in detail
    assert (await asgi_client.get(f"{C}/transactions/nope")).status_code == 404
    assert (await asgi_client.get(f"{C}/merchants/nope")).status_code == 404


async def test_resend_delivers_the_same_event_again(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    merchant = await merchant_factory(callback_url=callback_sink.url)
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4242424242424242")
    [first] = await attempts(asgi_client, link["uid"])
    response = await asgi_client.post(f"{C}/callbacks/{first.event_id}/resend", headers=SAME)
    assert response.status_code == 303
    assert response.headers["location"] == f"{C}/transactions/{link['uid']}"
    assert len(callback_sink.received) == 2
    one, two = callback_sink.received
    assert one.body == two.body
    assert one.headers["x-event-id"] == two.headers["x-event-id"] == first.event_id
    rows = await attempts(asgi_client, link["uid"])
    assert [(a.event_id, a.attempt, a.status_code) for a in rows] == [
        (first.event_id, 1, 200),
        (first.event_id, 2, 200),
    ]
    unknown = await asgi_client.post(f"{C}/callbacks/evt_unknown/resend", headers=SAME)
    assert unknown.status_code == 404


async def test_clock_advance_form(asgi_client: httpx.AsyncClient) -> None:
    before = (await asgi_client.get("/_sandbox/clock")).json()["offsetSeconds"]
    response = await asgi_client.post(f"{C}/clock/advance?lang=en", data={"seconds": "3600"}, headers=SAME)
    assert response.status_code == 303
    assert response.headers["location"].startswith(f"{C}/clock?")
    assert "lang=en" in response.headers["location"]
    after = (await asgi_client.get("/_sandbox/clock")).json()["offsetSeconds"]
    assert float(after) - float(before) == pytest.approx(3600)
    page = (await asgi_client.get(response.headers["location"])).text
    assert "id='clock-ran'" in page
    assert str(after).split(".")[0] in page
    for bad in ("", "abc", "-5", "0", "NaN"):
        refused = await asgi_client.post(f"{C}/clock/advance", data={"seconds": bad}, headers=SAME)
        assert refused.status_code == 400
        assert "id='clock-error'" in refused.text
        assert "seconds" in refused.text
    assert (await asgi_client.get("/_sandbox/clock")).json()["offsetSeconds"] == after


async def test_faults_on_and_off(asgi_client: httpx.AsyncClient) -> None:
    response = await asgi_client.post(
        f"{C}/faults", data={"kind": "error", "route": "POST /transactions", "count": "2", "status": "503"},
        headers=SAME,
    )  # fmt: skip
    assert response.status_code == 303
    [fault] = (await asgi_client.get("/_sandbox/faults")).json()
    assert fault["kind"] == "error"
    assert fault["remaining"] == 2
    assert fault["status"] == 503
    assert fault["id"] in (await asgi_client.get(C + "/faults")).text
    bad = await asgi_client.post(f"{C}/faults", data={"kind": "error", "count": "0"}, headers=SAME)
    assert bad.status_code == 400
    assert "count" in bad.text
    cleared = await asgi_client.post(f"{C}/faults/clear", headers=SAME)
    assert cleared.status_code == 303
    assert (await asgi_client.get("/_sandbox/faults")).json() == []


async def test_forms_from_elsewhere_change_nothing(asgi_client: httpx.AsyncClient) -> None:
    before = (await asgi_client.get("/_sandbox/clock")).json()["offsetSeconds"]
    for headers in (
        {},  # says nothing about where it comes from
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://testserver"},
    ):
        response = await asgi_client.post(f"{C}/clock/advance", data={"seconds": "60"}, headers=headers)
        assert response.status_code == 403, headers
    ok = await asgi_client.post(
        f"{C}/clock/advance", data={"seconds": "60"}, headers={"Sec-Fetch-Site": "same-origin"}
    )
    assert ok.status_code == 303
    after = (await asgi_client.get("/_sandbox/clock")).json()["offsetSeconds"]
    assert float(after) - float(before) == pytest.approx(60)


async def test_tail_lists_requests_and_callbacks(
    asgi_client: httpx.AsyncClient, merchant_factory: Any, callback_sink: Any
) -> None:
    empty = (await asgi_client.get(C + "/tail")).text
    assert "id='tail-empty'" in empty
    assert "data-live='tail'" in empty
    merchant = await merchant_factory(callback_url=callback_sink.url)
    link = await create_link(asgi_client, merchant)
    await pay(asgi_client, link["uid"], "4242424242424242")
    [attempt] = await attempts(asgi_client, link["uid"])
    page = (await asgi_client.get(C + "/tail")).text
    assert "POST /transactions" in page
    assert attempt.event_id in page
    assert merchant.sandbox_token not in page


# ------------------------------------------------------------------------ a shared (exposed) sandbox


@pytest.fixture
async def shared(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A server with a control token, bound as if on a shared network (masked re-reads)."""
    app = create_app(
        db_url,
        start_ticker=False,
        control_token_digest=control_token_digest(TOKEN),
        control_plane_exposed=True,
    )
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        ) as c:
            yield c
    finally:
        app.state.paysdk.db.dispose()


async def test_shared_sandbox_asks_for_the_token(shared: httpx.AsyncClient) -> None:
    for path in [p for p in PAGES if p != "/login"] + ["/events", "/merchants/x", "/transactions/x"]:
        response = await shared.get(C + path)
        assert response.status_code == 401, path
        assert "id='login'" in response.text
        assert "type='password'" in response.text
        assert response.headers["content-security-policy"] == CSP
    assert (await shared.get(C + "/login")).status_code == 200
    assert (await shared.get(C + "/static/console.css")).status_code == 200
    refused = await shared.post(f"{C}/clock/advance", data={"seconds": "60"}, headers=SAME)
    assert refused.status_code == 401
    wrong = await shared.post(f"{C}/login", data={"token": "nope", "next": C + "/clock"}, headers=SAME)
    assert wrong.status_code == 403
    assert "id='login-error'" in wrong.text
    assert COOKIE not in wrong.headers.get("set-cookie", "")
    empty = await shared.post(f"{C}/login", data={"token": " "}, headers=SAME)
    assert empty.status_code == 400
    right = await shared.post(f"{C}/login", data={"token": TOKEN, "next": C + "/clock"}, headers=SAME)
    assert right.status_code == 303
    assert right.headers["location"] == C + "/clock"
    cookie = right.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    for attribute in ("HttpOnly", "SameSite=strict", f"Path={C}"):
        assert attribute.lower() in cookie.lower(), attribute
    assert TOKEN not in cookie
    page = await shared.get(C + "/clock")
    assert page.status_code == 200
    assert "id='logout'" in page.text
    # The cookie is no control token: the JSON control plane still needs the header.
    assert (await shared.get("/_sandbox/clock")).status_code == 401
    # A redirect after the form stays in the console.
    away = await shared.post(f"{C}/login", data={"token": TOKEN, "next": "//evil.example/"}, headers=SAME)
    assert away.headers["location"] == C
    out = await shared.post(f"{C}/logout", headers=SAME)
    assert out.status_code == 303
    assert f'{COOKIE}=""' in out.headers["set-cookie"]
    shared.cookies.clear()
    assert (await shared.get(C + "/clock")).status_code == 401


async def test_shared_sandbox_takes_the_header_and_refuses_a_forged_cookie(shared: httpx.AsyncClient) -> None:
    assert (await shared.get(C + "/merchants", headers={"Paysdk-Control-Token": TOKEN})).status_code == 200
    assert (await shared.get(C + "/merchants", headers={"Paysdk-Control-Token": "x"})).status_code == 401
    shared.cookies.set(COOKIE, "0" * 64, path=C)
    assert (await shared.get(C + "/merchants")).status_code == 401


async def test_shared_sandbox_masks_secrets_until_revealed(shared: httpx.AsyncClient) -> None:
    header = {"Paysdk-Control-Token": TOKEN}
    created = await shared.post(
        "/_sandbox/clients",
        content=dumps({"callbackUrl": "https://shop.example/cb"}),
        headers={**JSON_TYPE, **header},
    )
    assert created.status_code == 201
    client = created.json()
    page = (await shared.get(f"{C}/merchants/{client['slug']}", headers=header)).text
    assert client["sandboxToken"] not in page
    assert client["productionToken"] not in page
    assert client["callbackHeaderValue"] not in page
    assert "id='secret-sandboxToken'>****<" in page
    assert "id='reveal'" in page
    listing = (await shared.get(C + "/merchants", headers=header)).text
    assert client["sandboxToken"] not in listing
    revealed = await shared.post(f"{C}/merchants/{client['slug']}/reveal", headers={**header, **SAME})
    assert revealed.status_code == 200
    assert client["sandboxToken"] in revealed.text
    assert client["productionToken"] in revealed.text
    assert "id='revealed'" in revealed.text
    again = (await shared.get(f"{C}/merchants/{client['slug']}", headers=header)).text
    assert client["sandboxToken"] not in again


async def test_the_fault_form_offers_every_kind_of_the_contract(asgi_client: httpx.AsyncClient) -> None:
    page = (await asgi_client.get(C + "/faults")).text
    offered = re.findall(r"<option value='([a-z_]+)'>", page)
    assert offered == list(get_args(FaultKind))  # callback_down included (the scenarios' kind, D702)
