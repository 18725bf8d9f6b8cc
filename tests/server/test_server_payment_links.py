"""POST /transactions and /transactions-hook: happy paths and the error contract.

Spec 7 and decisions D1-D4, D9, D14, D20.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from decimal import Decimal
from typing import Any

import httpx
import pytest
from server_helpers import PHONE, assert_error, auth, body, create_link, dumps, link_body, transaction

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app


async def test_create_link_answers_uid_reference_and_checkout_url(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    response = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
    )
    assert response.status_code == 200
    data = body(response)
    assert set(data) == {"uid", "reference", "URL"}
    assert re.fullmatch(r"PL-[A-Z2-7]{16}", data["reference"])
    assert data["URL"] == f"http://testserver/checkout/?orderId={data['uid']}"
    stored = await transaction(asgi_client, data["uid"])
    assert stored.status == "pending"
    assert stored.amount == Decimal("10.50")
    assert stored.currency == "GTQ"  # the client's first currency (D3)
    assert stored.kind == "payment_link"
    assert stored.expire_at - stored.created_at == __import__("datetime").timedelta(hours=24)


async def test_uids_and_references_are_unique_and_ordered_by_creation(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    # D22: a uid is a version-7 UUID and a reference starts with the creation time in milliseconds, so
    # links made later sort later (and new rows append to their indexes).
    links = []
    for _ in range(5):
        links.append(await create_link(asgi_client, merchant))
        await asyncio.sleep(0.002)  # each link in a later millisecond
    uids = [link["uid"] for link in links]
    references = [link["reference"] for link in links]
    assert all(uuid.UUID(uid).version == 7 and uuid.UUID(uid).variant == uuid.RFC_4122 for uid in uids)
    assert uids == sorted(uids)
    assert references == sorted(references)
    assert len(set(uids)) == len(set(references)) == 5


async def test_bearer_prefix_is_accepted(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    response = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant, bearer=True)
    )
    assert response.status_code == 200


async def test_optional_fields_are_kept(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    data = await create_link(
        asgi_client,
        merchant,
        currency="USD",
        externalId="order-77",
        customKeys={"a": Decimal("1.5"), "b": [1]},
    )
    stored = await transaction(asgi_client, data["uid"])
    assert stored.currency == "USD"
    assert stored.external_id == "order-77"
    assert (stored.model_extra or {})["customKeys"] == {"a": Decimal("1.5"), "b": [1]}


@pytest.mark.parametrize(
    ("headers", "own_code"),
    [
        ({}, None),
        ({"Authorization": ""}, None),
        ({"Authorization": "0" * 64}, None),
        ({"Authorization": "Bearer " + "f" * 64}, None),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, None),
    ],
)
async def test_missing_or_unknown_token_is_401_without_own_code(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, headers: dict[str, str], own_code: int | None
) -> None:
    response = await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=headers)
    assert_error(response, 401, own_code, "Authorization")


async def test_non_ascii_authorization_header_is_401(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    response = await asgi_client.post(
        "/transactions",
        content=dumps(link_body(merchant)),
        headers=[(b"Authorization", b"\xff\xfe" + merchant.sandbox_token.encode())],
    )
    assert_error(response, 401, None)


async def test_production_token_on_sandbox_server_is_2007(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    for bearer in (False, True):
        response = await asgi_client.post(
            "/transactions",
            content=dumps(link_body(merchant)),
            headers=auth(merchant, production=True, bearer=bearer),
        )
        assert_error(response, 401, 2007, "Authorization")


async def test_sandbox_token_on_production_server_is_2007(
    db_url: str, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    production = create_app(db_url, "production", start_ticker=False)
    try:
        transport = httpx.ASGITransport(app=production)
        async with httpx.AsyncClient(transport=transport, base_url="http://prod") as client:
            refused = await client.post(
                "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
            )
            assert_error(refused, 401, 2007)
            accepted = await client.post(
                "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant, production=True)
            )
            assert accepted.status_code == 200
            assert body(accepted)["URL"].startswith("http://prod/checkout/?orderId=")
    finally:
        production.state.paysdk.db.dispose()


@pytest.mark.parametrize("field", ["amount", "userId", "channel", "client"])
async def test_missing_required_field_is_5000_naming_it(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, field: str
) -> None:
    data = link_body(merchant)
    del data[field]
    response = await asgi_client.post("/transactions", content=dumps(data), headers=auth(merchant))
    assert_error(response, 409, 5000, field)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("amount", "10.50"),
        ("amount", True),
        ("amount", None),
        ("amount", {"value": 1}),
        ("amount", Decimal("10.505")),
        ("amount", Decimal("1e20")),
        ("userId", 50212345678),
        ("userId", "not-a-phone"),
        ("userId", ""),
        ("channel", "telegram"),
        ("channel", "WA"),
        ("channel", 1),
        ("currency", "EUR"),
        ("client", {"slug": "x"}),
        ("externalId", 12),
        ("ads", "none"),
        ("customKeys", [1, 2]),
    ],
)
async def test_wrong_type_or_unknown_value_is_5000(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, field: str, value: Any
) -> None:
    response = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant, **{field: value})), headers=auth(merchant)
    )
    assert_error(response, 409, 5000, field)


async def test_channel_or_currency_not_enabled_for_client_is_5000(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    merchant = await merchant_factory(channels=["web"], currencies=["USD"])
    refused = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
    )
    assert_error(refused, 409, 5000, "channel")
    refused = await asgi_client.post(
        "/transactions",
        content=dumps(link_body(merchant, channel="web", currency="GTQ")),
        headers=auth(merchant),
    )
    assert_error(refused, 409, 5000, "currency")
    ok = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant, channel="web")), headers=auth(merchant)
    )
    assert ok.status_code == 200
    assert (await transaction(asgi_client, body(ok)["uid"])).currency == "USD"


async def test_slug_is_case_sensitive_5004(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    for slug in (merchant.slug.upper(), merchant.slug + "x", "other"):
        response = await asgi_client.post(
            "/transactions", content=dumps(link_body(merchant, client=slug)), headers=auth(merchant)
        )
        assert_error(response, 409, 5004, "client")


async def test_another_clients_slug_is_5004(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, merchant_factory: Any
) -> None:
    other = await merchant_factory()
    response = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant, client=other.slug)), headers=auth(merchant)
    )
    assert_error(response, 409, 5004)


@pytest.mark.parametrize(
    "amount", [Decimal("0"), Decimal("-5.00"), Decimal("0.99"), Decimal("100000.01"), 10**9]
)
async def test_amount_outside_range_is_2003(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, amount: Any
) -> None:
    response = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant, amount=amount)), headers=auth(merchant)
    )
    assert_error(response, 400, 2003, "amount")


@pytest.mark.parametrize(
    "amount", [Decimal("1.00"), 1, Decimal("100000.00"), Decimal("99.9"), Decimal("5.100")]
)
async def test_range_bounds_are_inclusive(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, amount: Any
) -> None:
    data = await create_link(asgi_client, merchant, amount=amount)
    assert (await transaction(asgi_client, data["uid"])).amount == Decimal(amount)


async def test_validation_order_contract_then_slug_then_range(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    # Missing field + wrong slug + bad range: 5000 first (D4).
    data = link_body(merchant, client="WRONG", amount=Decimal("0"))
    del data["userId"]
    assert_error(
        await asgi_client.post("/transactions", content=dumps(data), headers=auth(merchant)), 409, 5000
    )
    # Wrong slug + bad range: 5004.
    data = link_body(merchant, client="WRONG", amount=Decimal("0"))
    assert_error(
        await asgi_client.post("/transactions", content=dumps(data), headers=auth(merchant)), 409, 5004
    )
    # Auth comes before everything.
    assert_error(await asgi_client.post("/transactions", content=b"{oops"), 401, None)


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"",
        b"   ",
        b'{"amount": NaN}',
        b'{"amount": Infinity}',
        b'{"amount": -Infinity}',
        b'{"amount": 1e400}',
        b'{"amount": 1' + b"0" * 100 + b"}",
        b'\xff\xfe{"amount": 1}',
        '{"userId": "\u00e9"}'.encode("latin-1"),
        b'{"userId": "\\ud800"}',
        b'{"a": 1,}',
        b"[" * 100000,
    ],
)
async def test_malformed_body_is_400_field_body(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, raw: bytes
) -> None:
    response = await asgi_client.post("/transactions", content=raw, headers=auth(merchant))
    data = assert_error(response, 400, None, "body")
    assert data["details"][0]["field"] == "body"


@pytest.mark.parametrize("raw", [b"[]", b"[1, 2]", b'"text"', b"42", b"null", b"true"])
async def test_json_that_is_not_an_object_is_5000(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, raw: bytes
) -> None:
    response = await asgi_client.post("/transactions", content=raw, headers=auth(merchant))
    assert_error(response, 409, 5000, "body")


async def test_nul_and_deep_nesting_are_refused_not_500(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    nul = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant, externalId="a\x00b")), headers=auth(merchant)
    )
    assert_error(nul, 409, 5000, "externalId")
    deep: Any = 1
    for _ in range(40):
        deep = {"k": deep}
    nested = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant, customKeys=deep)), headers=auth(merchant)
    )
    assert nested.status_code == 409


async def test_huge_body_is_413(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    response = await asgi_client.post(
        "/transactions",
        content=dumps(link_body(merchant, externalId="x" * (2 << 20))),
        headers=auth(merchant),
    )
    assert_error(response, 413, None, "body")


async def test_unknown_route_and_method_use_the_error_body(asgi_client: httpx.AsyncClient) -> None:
    assert_error(await asgi_client.get("/nope"), 404, None)
    response = await asgi_client.get("/transactions")
    assert_error(response, 405, None)
    assert "POST" in response.headers["allow"]


# ------------------------------------------------------------------------------------------ hook


def hook_body(merchant: SandboxClient, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "privateKey": merchant.hook_private_key,
        "publicKey": merchant.hook_public_key,
        "amount": Decimal("12.00"),
        "userId": PHONE,
        "channel": "web",
    }
    data.update(overrides)
    return data


async def test_hook_creates_a_link_with_body_keys(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    response = await asgi_client.post(
        "/transactions-hook", content=dumps(hook_body(merchant)), headers={"Origin": "https://shop.example"}
    )
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == "*"
    data = body(response)
    assert set(data) == {"uid", "reference", "URL"}
    assert (await transaction(asgi_client, data["uid"])).client == merchant.slug
    with_client = await asgi_client.post(
        "/transactions-hook", content=dumps(hook_body(merchant, client=merchant.slug))
    )
    assert with_client.status_code == 200


async def test_hook_errors(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, merchant_factory: Any
) -> None:
    other = await merchant_factory()
    missing = hook_body(merchant)
    del missing["privateKey"]
    response = await asgi_client.post("/transactions-hook", content=dumps(missing))
    assert_error(response, 401, None)
    assert response.headers["access-control-allow-origin"] == "*"
    swapped = hook_body(merchant, publicKey=other.hook_public_key)
    assert_error(await asgi_client.post("/transactions-hook", content=dumps(swapped)), 401, None)
    mismatch = hook_body(merchant, client=other.slug)
    assert_error(await asgi_client.post("/transactions-hook", content=dumps(mismatch)), 409, 5004, "client")
    assert_error(await asgi_client.post("/transactions-hook", content=b"{nope"), 400, None, "body")
    no_amount = hook_body(merchant)
    del no_amount["amount"]
    assert_error(await asgi_client.post("/transactions-hook", content=dumps(no_amount)), 409, 5000, "amount")
    assert_error(
        await asgi_client.post(
            "/transactions-hook", content=dumps(hook_body(merchant, amount=Decimal("0.5")))
        ),
        400,
        2003,
    )


@pytest.mark.parametrize("path", ["/transactions-hook", "/transactions"])
async def test_user_id_is_checked_as_e164_even_after_a_close_number_was_accepted(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, path: str
) -> None:
    """The phone check (spec 2.1) runs on both endpoints, and its cache of accepted numbers answers only
    for the exact string it accepted: a variant of an accepted number is checked again, and refused."""

    async def post(user_id: str) -> httpx.Response:
        if path == "/transactions-hook":
            return await asgi_client.post(path, content=dumps(hook_body(merchant, userId=user_id)))
        return await asgi_client.post(
            path, content=dumps(link_body(merchant, userId=user_id)), headers=auth(merchant)
        )

    def refused(response: httpx.Response) -> None:
        data = assert_error(response, 409, 5000, "userId")
        assert "userId" in data["message"], data

    refused(await post("not-a-phone"))
    accepted = "+5025555" + str(uuid.uuid4().int % 10_000).zfill(4)  # not seen by the cache before
    assert (await post(accepted)).status_code == 200
    assert (await post(accepted)).status_code == 200  # answered from the cache
    for variant in (
        accepted[1:],  # the same digits without "+"
        "00" + accepted[1:],  # an international prefix instead of "+"
        accepted[:-1],  # one digit short
        accepted + "12345678",  # too long
        accepted[:-2] + "l" + accepted[-1],  # a letter among the digits
        "not-a-phone",  # refused twice: a refusal is never remembered as accepted
    ):
        refused(await post(variant))


async def test_hook_cors_preflight(asgi_client: httpx.AsyncClient) -> None:
    response = await asgi_client.options(
        "/transactions-hook",
        headers={
            "Origin": "https://shop.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == "*"
    assert "POST" in response.headers["access-control-allow-methods"]
    assert "OPTIONS" in response.headers["access-control-allow-methods"]
    assert "content-type" in response.headers["access-control-allow-headers"].lower()
    # Other endpoints are not CORS-enabled.
    plain = await asgi_client.options("/transactions", headers={"Origin": "https://shop.example"})
    assert "access-control-allow-origin" not in plain.headers
