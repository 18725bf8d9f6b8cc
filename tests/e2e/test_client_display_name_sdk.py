"""``client.sandbox.create_client(display_name=...)`` and ``client.sandbox.update_client`` against the
REAL reference server (async in process, sync over a socket; SQLite and PostgreSQL): the name the hosted
checkout shows (D413)."""

from __future__ import annotations

import secrets

import pytest

import paysdk

from .conftest import Maker, call

covers = pytest.mark.covers


@covers("sandbox.update_client")
async def test_display_name_set_changed_and_removed(make: Maker) -> None:
    sandbox = make()
    slug = "dn-" + secrets.token_hex(4)
    shop = await call(sandbox.sandbox.create_client(slug=slug, display_name="Tienda Ana"))
    assert shop.display_name == "Tienda Ana"
    assert (await call(sandbox.sandbox.get_client(slug))).display_name == "Tienda Ana"

    renamed = await call(sandbox.sandbox.update_client(slug, display_name="Ana & Hijos"))
    assert (renamed.slug, renamed.display_name) == (slug, "Ana & Hijos")
    assert (await call(sandbox.sandbox.get_client(slug))).display_name == "Ana & Hijos"

    cleared = await call(sandbox.sandbox.update_client(slug, display_name=None))
    assert cleared.display_name is None
    assert (await call(sandbox.sandbox.get_client(slug))).display_name is None

    with pytest.raises(paysdk.ValidationError):  # checked before it is sent
        await call(sandbox.sandbox.update_client(slug, display_name=""))
    with pytest.raises(paysdk.InvalidFieldError) as refused:  # the server's own rule: no control chars
        await call(sandbox.sandbox.update_client(slug, display_name="Ana\u0007"))
    assert "displayName" in str(refused.value)
    with pytest.raises(paysdk.NotFoundError):
        await call(sandbox.sandbox.update_client("nobody-" + slug, display_name="X"))
    assert (await call(sandbox.sandbox.get_client(slug))).display_name is None
