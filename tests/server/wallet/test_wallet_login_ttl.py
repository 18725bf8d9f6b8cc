"""``/users/login`` takes the same lifetime overrides as ``/users/refresh`` (spec 5.3.3, D34)."""

from __future__ import annotations

from .kit import PASSWORD, Kit, body, own_code


async def test_login_honours_ttl_overrides_within_bounds(kit: Kit) -> None:
    user = await kit.user()
    app = await kit.app()
    login = {"username": user["username"], "password": PASSWORD}
    answer = await kit.post("/users/login", {**login, "accessTokenTtl": 120, "refreshTokenTtl": 600}, app)
    assert answer.status_code == 200, answer.text
    pair = body(answer)["data"]
    assert (pair["expiresIn"], pair["refreshExpiresIn"]) == (120, 600)

    for bad, field in (
        ({"accessTokenTtl": 30}, "accessTokenTtl"),
        ({"refreshTokenTtl": 10**9}, "refreshTokenTtl"),
        ({"accessTokenTtl": 3600, "refreshTokenTtl": 600}, "refreshTokenTtl"),
    ):
        refused = await kit.post("/users/login", {**login, **bad}, app)
        assert refused.status_code == 400
        assert own_code(refused) == 7001
        assert body(refused)["details"][0]["field"] == field
