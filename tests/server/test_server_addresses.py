"""Public address, allowed hosts and the control plane's origin and body-type checks (D90-D92).

In process (``httpx.ASGITransport``) and over a real socket (``live_server``): a foreign ``Host`` is
refused before routing (DNS rebinding), URLs handed out never follow the ``Host`` header, and the
control plane refuses other origins and non-JSON bodies without changing anything.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from server_helpers import JSON_TYPE, auth, body, create_alternative, dumps, form_token, link_body
from test_server_alternative_payments import decode_qr

from paysdk.contracts.alternative_payments import ProcessResult
from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app
from paysdk.server.addresses import ServerAddresses

PUBLIC = "https://pay.example:8443"


@pytest.fixture
async def public_client(db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A server with ``public_url=PUBLIC`` that also answers ``shop.test`` (an allow-listed proxy name)."""
    application = create_app(db_url, start_ticker=False, public_url=PUBLIC, allowed_hosts=["shop.test"])
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application), base_url="http://testserver"
        ) as client:
            yield client
    finally:
        application.state.paysdk.db.dispose()


async def _merchant(client: httpx.AsyncClient, **fields: Any) -> SandboxClient:
    created = await client.post("/_sandbox/clients", content=dumps(fields), headers=JSON_TYPE)
    assert created.status_code == 201, created.text
    return SandboxClient.model_validate(body(created))


# ------------------------------------------------------------------------------- public address (D90)


async def test_links_forms_and_rails_use_the_public_url_whatever_the_host(
    public_client: httpx.AsyncClient,
) -> None:
    merchant = await _merchant(public_client)
    for host in ("shop.test", "localhost:8000", "testserver"):
        headers = {**auth(merchant), "Host": host}
        link = await public_client.post("/transactions", content=dumps(link_body(merchant)), headers=headers)
        assert link.status_code == 200, link.text
        uid = body(link)["uid"]
        assert body(link)["URL"] == f"{PUBLIC}/checkout/?orderId={uid}"

        page = await public_client.get(f"/checkout/?orderId={uid}", headers={"Host": host})
        assert f"action='{PUBLIC}/checkout/pay'" in page.text
        assert host not in page.text
        assert f"form-action 'self' {PUBLIC};" in page.headers["content-security-policy"]
        paid = await public_client.post(
            "/checkout/pay",
            headers={"Host": host},
            data={
                "orderId": uid,
                "formToken": form_token(page.text),
                "cardNumber": "4242424242424242",
                "expiry": "12/39",
                "cvc": "123",
                "name": "Ada",
            },
        )
        assert paid.status_code == 303
        assert paid.headers["location"] == f"{PUBLIC}/checkout/?orderId={uid}"

    uid = (await create_alternative(public_client, merchant))["uid"]
    rail = await public_client.post(
        f"/api/v1/integrations/transactions/{uid}/payments",
        content=dumps({"processor": "zigi", "data": {}}),
        headers={**auth(merchant, bearer=True), "Host": "shop.test"},
    )
    assert body(rail)["data"] == {"type": "url", "data": f"{PUBLIC}/checkout/rails/zigi?orderId={uid}"}

    uid = (await create_alternative(public_client, merchant))["uid"]
    qr = await public_client.post(
        f"/api/v1/integrations/transactions/{uid}/payments",
        content=dumps({"processor": "akisiQR", "data": {}}),
        headers={**auth(merchant, bearer=True), "Host": "shop.test"},
    )
    assert (
        decode_qr(ProcessResult.model_validate(body(qr)["data"]))
        == f"{PUBLIC}/checkout/rails/akisiQR?orderId={uid}"
    )


async def test_attacker_host_yields_no_link_on_the_attacker_host(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    """The issue's probe: ``Host: attacker.example`` made a link on attacker.example. Now it is refused
    before routing, and an allowed name (``localhost``) still gets the server's own address."""
    headers = {**auth(merchant), "Host": "attacker.example"}
    refused = await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=headers)
    assert refused.status_code == 421
    assert body(refused)["details"] == [{"field": "Host", "message": "not a host this server answers"}]
    assert "orderId" not in refused.text

    local = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers={**auth(merchant), "Host": "localhost"}
    )
    assert body(local)["URL"].startswith("http://testserver/checkout/?orderId=")


# ------------------------------------------------------------------------------- allowed hosts (D91)


@pytest.mark.parametrize(
    "host",
    ["localhost", "LOCALHOST:8000", "127.0.0.1", "127.0.0.1:9", "[::1]", "[::1]:8000", "testserver"],
)
async def test_loopback_names_and_the_servers_own_address_are_answered(
    asgi_client: httpx.AsyncClient, host: str
) -> None:
    response = await asgi_client.get("/_sandbox/health", headers={"Host": host})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "host",
    ["attacker.example", "attacker.example:8000", "localhost.attacker.example", "127.0.0.2", "[::2]"],
)
async def test_foreign_hosts_are_421_before_routing(asgi_client: httpx.AsyncClient, host: str) -> None:
    for method, path in (("GET", "/_sandbox/health"), ("GET", "/nowhere"), ("OPTIONS", "/transactions-hook")):
        response = await asgi_client.request(method, path, headers={"Host": host})
        assert response.status_code == 421, (method, path)
        assert body(response)["ownCode"] is None


async def test_allow_list_public_url_host_and_any(db_url: str) -> None:
    listed = create_app(
        db_url, start_ticker=False, public_url="http://Pay.Example", allowed_hosts=["shop.test"]
    )
    anything = create_app(db_url, start_ticker=False, allowed_hosts=["*"])
    try:
        for application, host, status in (
            (listed, "shop.test:8080", 200),
            (listed, "pay.example", 200),
            (listed, "other.test", 421),
            (anything, "other.test", 200),
        ):
            transport = httpx.ASGITransport(app=application)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
                response = await client.get("/_sandbox/health", headers={"Host": host})
                assert response.status_code == status, host
    finally:
        listed.state.paysdk.db.dispose()
        anything.state.paysdk.db.dispose()


@pytest.mark.parametrize(
    ("public_url", "allowed", "named"),
    [
        ("ftp://pay.example", (), "ftp://pay.example"),
        ("pay.example", (), "pay.example"),
        ("http://pay.example/?next=1", (), "?next=1"),
        ("http://user:pw@pay.example", (), "pay.example"),
        ("http://pay.example:99999", (), "99999"),
        ("http://pay.example;script-src *", (), "characters"),
        ("http://pay.example/a'b", (), "characters"),
        (None, ("http://shop.test",), "http://shop.test"),
        (None, ("shop.test:8000",), "shop.test:8000"),
        (None, ("",), "''"),
    ],
)
def test_malformed_addresses_are_refused_by_name(
    public_url: str | None, allowed: tuple[str, ...], named: str
) -> None:
    with pytest.raises(ValueError, match=r"public URL|allowed host") as caught:
        ServerAddresses(public_url, allowed)
    assert named in str(caught.value)


def test_ipv6_and_idn_allowed_hosts_are_spelled_as_the_host_header_does() -> None:
    addresses = ServerAddresses("http://[::1]:8000/sandbox/", ["::2", "[::3]", "Bücher.Example"])
    assert addresses.public_url == "http://[::1]:8000/sandbox"
    assert {b"[::2]", b"[::3]", b"xn--bcher-kva.example"} <= addresses.hosts


# ------------------------------------------------------------------------ control plane (D92)


async def test_control_plane_refuses_foreign_origins_and_changes_nothing(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    for origin in ("http://127.0.0.1:9999", "http://attacker.example", "null", "http://testserver:81"):
        headers = {**JSON_TYPE, "Origin": origin}
        created = await asgi_client.post(
            "/_sandbox/clients", content=dumps({"slug": "evil"}), headers=headers
        )
        assert created.status_code == 403, origin
        assert body(created)["details"] == [
            {"field": "Origin", "message": "must be this server's own origin"}
        ]
        fault = await asgi_client.post("/_sandbox/faults", content=dumps({"kind": "error"}), headers=headers)
        assert fault.status_code == 403
        reset = await asgi_client.post("/_sandbox/reset", headers={"Origin": origin})
        assert reset.status_code == 403
        read = await asgi_client.get(f"/_sandbox/clients/{merchant.slug}", headers={"Origin": origin})
        assert read.status_code == 403
        assert merchant.sandbox_token not in read.text
    assert (await asgi_client.get("/_sandbox/clients/evil")).status_code == 404
    assert body(await asgi_client.get("/_sandbox/faults")) == []
    assert (await asgi_client.get(f"/_sandbox/clients/{merchant.slug}")).status_code == 200  # not reset

    own = await asgi_client.post(
        "/_sandbox/clients",
        content=dumps({"slug": "own"}),
        headers={**JSON_TYPE, "Origin": "http://testserver"},
    )
    assert own.status_code == 201


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ],
)
async def test_control_plane_takes_json_bodies_only(
    asgi_client: httpx.AsyncClient, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    for path, payload in (
        ("/_sandbox/clients", {"slug": "evil", "callbackUrl": "http://attacker.example/cb"}),
        ("/_sandbox/faults", {"kind": "error", "count": 5}),
    ):
        response = await asgi_client.post(path, content=dumps(payload), headers=headers)
        assert response.status_code == 415, response.text
        assert body(response)["details"][0]["field"] == "Content-Type"
    assert (await asgi_client.get("/_sandbox/clients/evil")).status_code == 404
    assert body(await asgi_client.get("/_sandbox/faults")) == []


async def test_control_plane_json_variants_and_empty_bodies_pass(asgi_client: httpx.AsyncClient) -> None:
    spelled = await asgi_client.post(
        "/_sandbox/clients",
        content=dumps({"slug": "shop-a"}),
        headers={"Content-Type": "Application/JSON; charset=utf-8"},
    )
    assert spelled.status_code == 201
    assert (await asgi_client.post("/_sandbox/reset")).status_code == 200  # no body, no type: the SDK's reset
    assert (await asgi_client.delete("/_sandbox/faults")).status_code == 200


async def test_hook_cors_preflight_still_answers_any_origin(asgi_client: httpx.AsyncClient) -> None:
    """The hook is meant for browser pages on any origin (D14): the origin checks leave it alone."""
    preflight = await asgi_client.options(
        "/transactions-hook",
        headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    posted = await asgi_client.post(
        "/transactions-hook", content=b"{}", headers={"Origin": "https://shop.example", **JSON_TYPE}
    )
    assert posted.status_code not in (403, 415, 421)
    assert posted.headers["access-control-allow-origin"] == "*"


# ------------------------------------------------------------------------- over a real socket


async def test_dns_rebinding_gets_no_tokens_over_a_real_socket(live_server: str) -> None:
    port = live_server.rsplit(":", 1)[1]
    async with httpx.AsyncClient(base_url=live_server, timeout=10) as client:
        merchant = SandboxClient.model_validate(
            body(await client.post("/_sandbox/clients", content=b"{}", headers=JSON_TYPE))
        )
        path = f"/_sandbox/clients/{merchant.slug}"
        rebound = await client.get(path, headers={"Host": f"attacker.example:{port}"})
        assert rebound.status_code == 421
        assert merchant.sandbox_token not in rebound.text
        assert merchant.production_token not in rebound.text
        assert (await client.get(path, headers={"Host": f"localhost:{port}"})).status_code == 200

        # The default public address is the one the server listens on, not the Host it was asked as.
        link = await client.post(
            "/transactions",
            content=dumps(link_body(merchant)),
            headers={**auth(merchant), "Host": f"localhost:{port}"},
        )
        assert body(link)["URL"].startswith(f"{live_server}/checkout/?orderId=")


def test_app_factory_refuses_a_malformed_public_url(db_url: str) -> None:
    with pytest.raises(ValueError, match="public URL 'javascript:alert"):
        create_app(db_url, start_ticker=False, public_url="javascript:alert(1)")
