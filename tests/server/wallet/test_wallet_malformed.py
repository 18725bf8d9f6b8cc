"""No input gives a 5xx on any wallet endpoint (D1, D20, D31): garbage bodies, tokens and headers."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from .kit import Kit, bearer

BODIES: list[bytes] = [
    b"",
    b"{",
    b"[]",
    b'"text"',
    b"\xff\xfe\x00",
    b'{"amount": NaN}',
    b'{"amount": 1e400, "operation": "add"}',
    b'{"amount": 123456789012345678901234567890, "operation": "withdraw"}',
    b'{"x": "\\ud800"}',
    b'{"username": {"a": 1}, "password": [1], "refreshToken": 5, "email": null, "permissions": "checkCard"}',
    b'{"toCardId": "crd_' + b"a" * 300 + b'", "amount": 1, "alias": "' + b"z" * 100 + b'"}',
    b'{"cardId": "\\u0000", "token": "x", "pin": "\\u0661\\u0662\\u0663\\u0664"}',
    b'{"accessTokenTtl": 1e3, "refreshToken": "a.b.c", "otp": 123456, "purpose": 1}',
]


async def test_garbage_never_yields_a_5xx(kit: Kit, asgi_client: httpx.AsyncClient) -> None:
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    spec = (await asgi_client.get("/openapi.json")).json()
    values = {
        "userId": user["authUserId"],
        "authUserId": user["authUserId"],
        "cardId": card["cardId"],
        "id": "prm_x",
    }
    tokens: list[dict[str, Any]] = [
        {},
        bearer(await kit.app()),
        bearer("a.b.c"),
        {"Authorization": "Basic Zm9vOmJhcg=="},
        {"Authorization": "Bearer " + "x" * 9000},
    ]
    seen = 0
    for template, operations in spec["paths"].items():
        if not template.startswith("/rest"):
            continue
        path = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)
        for method in operations:
            for headers in tokens:
                for raw in BODIES if method in ("post", "put", "patch") else [b""]:
                    response = await asgi_client.request(
                        method.upper(),
                        path,
                        content=raw,
                        headers={**headers, "X-User-Token": "garbage", "X-View-Token": "garbage"},
                        params={"startDate": "2024-02-30", "endDate": "x", "clientId": "\x01"},
                    )
                    seen += 1
                    assert response.status_code < 500, (method, path, raw, response.text)
                    if response.status_code >= 400:
                        assert set(response.json()) == {"ownCode", "message", "details"}
    assert seen > 200


@pytest.mark.parametrize("raw_header", [b"Bearer \xff\xfe", b"\xc3\xa9", b"Bearer " + bytes(range(128, 160))])
async def test_non_ascii_authorization_is_401(kit: Kit, raw_header: bytes) -> None:
    response = await kit.client.get("/rest/cards/crd_x", headers=[(b"authorization", raw_header)])
    assert response.status_code == 401
    assert response.json()["ownCode"] == 7102
