"""Property tests: no body ever gives a 5xx; Decimal amounts round-trip exactly (D18, D20)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_helpers import PHONE, auth, body, dumps, transaction

from paysdk.contracts.sandbox import SandboxClient

DOCUMENTED = {200, 400, 401, 409, 413}

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
field_values = {
    "amount": json_values | st.decimals(min_value=-10, max_value=200000, places=3),
    "userId": json_values | st.just(PHONE),
    "channel": json_values | st.sampled_from(["wa", "sms", "email", "web", "app", "WA"]),
    "currency": json_values | st.sampled_from(["GTQ", "USD", "EUR"]),
    "externalId": json_values,
    "ads": json_values,
    "customKeys": json_values,
}
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(
    data=st.fixed_dictionaries({}, optional=field_values),
    with_client=st.booleans(),
    extra=st.dictionaries(st.text(max_size=8), json_values, max_size=2),
)
async def test_any_json_object_gets_a_documented_answer(
    asgi_client: httpx.AsyncClient,
    merchant: SandboxClient,
    data: dict[str, Any],
    with_client: bool,
    extra: dict[str, Any],
) -> None:
    payload = {**extra, **data}
    if with_client:
        payload["client"] = merchant.slug
    response = await asgi_client.post("/transactions", content=dumps(payload), headers=auth(merchant))
    assert response.status_code in DOCUMENTED, (payload, response.text)
    answer = body(response)
    if response.status_code != 200:
        assert set(answer) == {"ownCode", "message", "details"}


@SETTINGS
@given(value=json_values)
async def test_any_json_value_gets_a_documented_answer(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, value: Any
) -> None:
    for path, headers in (
        ("/transactions", auth(merchant)),
        ("/transactions-hook", {}),
        ("/api/v1/integrations/transactions", auth(merchant, bearer=True)),
    ):
        response = await asgi_client.post(path, content=dumps(value), headers=headers)
        assert response.status_code < 500, (path, value, response.text)
        assert response.status_code in DOCUMENTED | {201}


@SETTINGS
@given(raw=st.binary(max_size=200))
async def test_any_bytes_get_a_documented_answer(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, raw: bytes
) -> None:
    response = await asgi_client.post("/transactions", content=raw, headers=auth(merchant))
    assert response.status_code in {400, 409}, response.text


@SETTINGS
@given(
    header=st.binary(min_size=1, max_size=80).filter(
        lambda b: b"\r" not in b and b"\n" not in b and b"\x00" not in b
    )
)
async def test_any_authorization_bytes_never_5xx(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, header: bytes
) -> None:
    response = await asgi_client.post(
        "/transactions", content=dumps({"amount": 5}), headers=[(b"Authorization", header.strip() or b"x")]
    )
    assert response.status_code == 401


@SETTINGS
@given(amount=st.decimals(min_value=Decimal("1.00"), max_value=Decimal("100000.00"), places=2))
async def test_decimal_amounts_round_trip_exactly(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient, amount: Decimal
) -> None:
    payload = {"amount": amount, "userId": PHONE, "channel": "wa", "client": merchant.slug}
    response = await asgi_client.post("/transactions", content=dumps(payload), headers=auth(merchant))
    assert response.status_code == 200, response.text
    stored = await transaction(asgi_client, body(response)["uid"])
    assert stored.amount == amount
    assert stored.amount.as_tuple().exponent == -2
    raw = (await asgi_client.get(f"/_sandbox/transactions/{stored.uid}")).content
    assert f'"amount":{amount.quantize(Decimal("0.01"))}'.encode() in raw
