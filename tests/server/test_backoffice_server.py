"""The backoffice routes of the reference server over HTTP (D105-D107, D183-D185, D189, D200): login
errors, bodies, the control plane's refusals, and association of a cardholder an upload created."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import nacl.signing
from cardholder_kit import Backoffice, csv_file, done, person
from fastapi import FastAPI
from sqlalchemy import select

from openapi_conformance import Exchange, conformance_errors
from paysdk.contracts.sandbox import SandboxClient
from paysdk.server.wallet_tables import WalletUserRow

CMS = "/cms/rest"
ASSOCIATION = "/app/partners/{partnerId}/cardholders/{cardholderId}/cards/association"


async def _merchant(client: httpx.AsyncClient) -> tuple[str, str]:
    answer = await client.post("/_sandbox/clients", json={})
    assert answer.status_code == 201
    body = answer.json()
    key = nacl.signing.SigningKey(base64.b64decode(body["signingPrivateKey"]))
    signature = base64.b64encode(key.sign(body["slug"].encode()).signature).decode()
    return body["slug"], signature


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _logged_in(client: httpx.AsyncClient) -> dict[str, Any]:
    slug, signature = await _merchant(client)
    operator = await client.post(
        "/_sandbox/backoffice/operators",
        json={"merchant": slug, "email": "ops@acme.io", "password": "secret-pw-1"},
    )
    assert operator.status_code == 201
    assert "password" not in operator.json()
    app = (await client.post(f"{CMS}/app/auth/login", json={"merchant": slug, "signature": signature})).json()
    user = await client.post(
        f"{CMS}/app/users/login",
        json={"email": "OPS@acme.io", "password": "secret-pw-1", "accessTokenTtl": 120},
        headers=_bearer(app["data"]["accessToken"]),
    )
    assert user.status_code == 200
    assert user.json()["data"]["expiresIn"] == 120
    return {"slug": slug, "signature": signature, "app": app["data"], "user": user.json()["data"]}


async def test_login_errors(asgi_client: httpx.AsyncClient) -> None:
    slug, signature = await _merchant(asgi_client)
    bad_sig = await asgi_client.post(f"{CMS}/app/auth/login", json={"merchant": slug, "signature": "AAAA"})
    assert (bad_sig.status_code, bad_sig.json()["ownCode"]) == (401, 7604)
    unknown = await asgi_client.post(
        f"{CMS}/app/auth/login", json={"merchant": "nobody", "signature": signature}
    )
    assert (unknown.status_code, unknown.json()["ownCode"]) == (401, 7601)
    for raw in (b"", b"[]", b"{bad", b'{"merchant": 1}'):
        answer = await asgi_client.post(
            f"{CMS}/app/auth/login", content=raw, headers={"Content-Type": "application/json"}
        )
        assert (answer.status_code, answer.json()["ownCode"]) == (400, None), raw
    app = (
        await asgi_client.post(f"{CMS}/app/auth/login", json={"merchant": slug, "signature": signature})
    ).json()
    no_operator = await asgi_client.post(
        f"{CMS}/app/users/login",
        json={"email": "ghost@acme.io", "password": "whatever-1"},
        headers=_bearer(app["data"]["accessToken"]),
    )
    assert (no_operator.status_code, no_operator.json()["ownCode"]) == (401, 7101)
    no_bearer = await asgi_client.post(f"{CMS}/app/users/login", json={"email": "a@b.io", "password": "x"})
    assert (no_bearer.status_code, no_bearer.json()["ownCode"]) == (401, 7102)
    ttl = await asgi_client.post(
        f"{CMS}/app/users/login",
        json={"email": "a@b.io", "password": "x", "accessTokenTtl": 5},
        headers=_bearer(app["data"]["accessToken"]),
    )
    assert ttl.status_code == 400
    assert ttl.json()["details"][0]["field"] == "accessTokenTtl"


async def test_user_refresh_rotates_and_reuse_revokes(asgi_client: httpx.AsyncClient) -> None:
    state = await _logged_in(asgi_client)
    app_token = state["app"]["accessToken"]
    refresh = state["user"]["refreshToken"]
    rotated = await asgi_client.post(
        f"{CMS}/app/users/refresh", json={"refreshToken": refresh}, headers=_bearer(app_token)
    )
    assert rotated.status_code == 200
    assert rotated.json()["data"]["refreshToken"] != refresh
    again = await asgi_client.post(
        f"{CMS}/app/users/refresh", json={"refreshToken": refresh}, headers=_bearer(app_token)
    )
    assert (again.status_code, again.json()["ownCode"]) == (401, 7105)
    # The whole family is revoked: the rotated pair's access token stops too.
    revoked = await asgi_client.post(
        f"{CMS}/app/partners/p/cardholders/u/cards/association",
        json={"cardId": "c"},
        headers=_bearer(rotated.json()["data"]["accessToken"]),
    )
    assert (revoked.status_code, revoked.json()["ownCode"]) == (401, 7104)
    # An application refresh token on the user refresh route: 7106.
    wrong = await asgi_client.post(
        f"{CMS}/app/users/refresh",
        json={"refreshToken": state["app"]["refreshToken"]},
        headers=_bearer(app_token),
    )
    assert (wrong.status_code, wrong.json()["ownCode"]) == (401, 7106)


async def test_control_plane_refusals(asgi_client: httpx.AsyncClient) -> None:
    slug, _ = await _merchant(asgi_client)
    base = "/_sandbox/backoffice"
    assert (
        await asgi_client.post(f"{base}/operators", json={"merchant": "nobody", "email": "a@b.io"})
    ).status_code == 404
    assert (
        await asgi_client.post(f"{base}/operators", json={"merchant": slug, "email": "nope"})
    ).status_code == 409
    assert (
        await asgi_client.post(f"{base}/operators", json={"merchant": slug, "email": "a@b.io"})
    ).status_code == 201
    taken = await asgi_client.post(f"{base}/operators", json={"merchant": slug, "email": "A@b.io"})
    assert taken.status_code == 409
    assert taken.json()["details"][0]["field"] == "email"
    assert (await asgi_client.get(f"{base}/operators")).status_code == 409
    generated = await asgi_client.post(f"{base}/partners", json={"merchant": slug, "name": "Acme"})
    assert generated.status_code == 201
    assert generated.json()["partnerId"].startswith("ptn_")
    bad_id = await asgi_client.post(
        f"{base}/partners", json={"merchant": slug, "name": "Acme", "partnerId": "a b"}
    )
    assert bad_id.status_code == 409
    assert bad_id.json()["details"][0]["field"] == "partnerId"
    assert (
        await asgi_client.post(f"{base}/partners", json={"merchant": slug, "name": "X", "partnerId": "p1"})
    ).status_code == 201
    twice = await asgi_client.post(
        f"{base}/partners", json={"merchant": slug, "name": "Y", "partnerId": "p1"}
    )
    assert twice.status_code == 409
    # Another merchant may use the same partnerId (ids are per merchant, D200).
    other, _ = await _merchant(asgi_client)
    assert (
        await asgi_client.post(f"{base}/partners", json={"merchant": other, "name": "X", "partnerId": "p1"})
    ).status_code == 201
    missing_user = await asgi_client.post(
        f"{base}/partners/p1/cardholders", json={"merchant": slug, "userId": "usr_x"}
    )
    assert missing_user.status_code == 404
    assert missing_user.json()["details"][0]["field"] == "userId"


async def test_association_of_an_uploaded_cardholder(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    """A cardholder the bulk upload created is the partner's (D185): association works for them, and a
    wallet user who is not the partner's cardholder is 404 naming cardholderId."""
    bo = Backoffice(asgi_client, merchant)
    partner = await bo.partner("acme")
    answer = await bo.upload(partner, csv_file([person(1)]))
    assert answer.status_code == 202, answer.text
    assert done(await bo.progress(partner, answer.json()["data"]["batchId"]))["created"] == 1
    with app.state.paysdk.db.session() as session:
        holder = session.scalars(
            select(WalletUserRow.id).where(
                WalletUserRow.merchant == merchant.slug, WalletUserRow.username == "u1"
            )
        ).one()
    stranger = (
        await asgi_client.post(
            "/_sandbox/users",
            json={
                "merchant": merchant.slug,
                "username": "ana",
                "email": "ana@x.io",
                "password": "password-1",
            },
        )
    ).json()["authUserId"]
    card = (await asgi_client.post("/_sandbox/cards", json={"merchant": merchant.slug})).json()
    headers = _bearer(await bo.token())

    def path(cardholder: str) -> str:
        return f"{CMS}/app/partners/acme/cardholders/{cardholder}/cards/association"

    refused = await asgi_client.post(path(stranger), json={"cardId": card["cardId"]}, headers=headers)
    assert refused.status_code == 404
    assert refused.json()["details"][0]["field"] == "cardholderId"
    created = await asgi_client.post(path(holder), json={"cardId": card["cardId"]}, headers=headers)
    assert created.status_code == 201
    assert created.json()["data"]["holderId"] == holder
    same = await asgi_client.post(path(holder), json={"cardId": card["cardId"]}, headers=headers)
    assert same.status_code == 200
    assert same.json() == created.json()  # the card again, unchanged (D189)
    # ... as /openapi.json declares the 200 (D391: it once declared no body for it).
    repeat = Exchange(
        "POST",
        path(holder),
        "",
        [(k, v) for k, v in same.request.headers.items()],
        same.request.content,
        same.status_code,
        list(same.headers.items()),
        same.content,
    )
    assert conformance_errors(app.openapi(), [repeat]) == []
    declared = app.openapi()["paths"][f"{CMS}{ASSOCIATION}"]["post"]["responses"]
    assert declared["200"]["content"] == declared["201"]["content"]
    bad_body = await asgi_client.post(path(holder), json={"cardId": ""}, headers=headers)
    assert bad_body.status_code == 400
    assert bad_body.json()["details"][0]["field"] == "cardId"
