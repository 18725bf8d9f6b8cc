"""The request log masks wallet secrets and lists refreshes; /openapi.json documents the wallet."""

from __future__ import annotations

import httpx

from .kit import Kit, body


async def test_request_log_masks_wallet_secrets(kit: Kit) -> None:
    user = await kit.user()
    card = await kit.virtual_card(user["authUserId"])
    tokens = await kit.user_login(user["username"])
    pair = await kit.login()
    await kit.post("/auth/refresh", {"refreshToken": pair["refreshToken"]})
    await kit.post("/users/logout", None, await kit.app(), headers={"X-User-Token": tokens["accessToken"]})
    await kit.call(
        "GET", f"/cards/{card['cardId']}/cvv", tokens["accessToken"], headers={"X-View-Token": "view-secret"}
    )
    log = body(await kit.client.get("/_sandbox/requests", params={"path": "/rest/"}))
    refreshes = [
        entry for entry in log if entry["method"] == "POST" and entry["path"] == "/rest/auth/refresh"
    ]
    assert len(refreshes) == 1
    text = str(log)
    for secret in (tokens["accessToken"], pair["accessToken"], await kit.app(), "view-secret"):
        assert secret not in text
    logout = next(entry for entry in log if entry["path"] == "/rest/users/logout")
    assert logout["headers"]["x-user-token"] == "****"
    assert logout["headers"]["authorization"] == "****"
    cvv = next(entry for entry in log if entry["path"].endswith("/cvv"))
    assert cvv["headers"]["x-view-token"] == "****"


async def test_openapi_documents_the_public_wallet_only(asgi_client: httpx.AsyncClient) -> None:
    spec = (await asgi_client.get("/openapi.json")).json()
    paths = spec["paths"]
    assert "/rest/auth/login" in paths
    assert "/rest/cards/{cardId}/funds" in paths
    assert "/rest/cards/{cardId}/users/{authUserId}/permissions" in paths
    assert not any(path.startswith("/_sandbox") for path in paths)
    funds = paths["/rest/cards/{cardId}/funds"]["post"]
    schema = funds["requestBody"]["content"]["application/json"]["schema"]
    assert set(schema["properties"]) >= {"operation", "amount", "reference"}
    assert "422" in funds["responses"]
    ok = funds["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/FundsResultEnvelope"}  # {"data": ...} (D30)
    envelope = spec["components"]["schemas"]["FundsResultEnvelope"]
    assert envelope["required"] == ["data"]
    assert envelope["properties"]["data"] == {"$ref": "#/components/schemas/FundsResult"}
