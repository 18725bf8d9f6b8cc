"""A server started the way ``paysdk serve`` starts it (``create_app(..., lazy_routers=True)``, D303):
only what serving needs is imported at start, the families' routers load on the first request that needs
them, and everything then answers as in an app built at once (same routes, same ``/openapi.json``, the
fast lane, jobs whose handlers are imported when they first run).
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
from server_helpers import JSON_TYPE, advance, auth, body, create_link, dumps, link_body, pay
from sqlalchemy.orm import Session

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import jobs
from paysdk.server.app import _IncludeRouters, create_app
from paysdk.server.clock import Clock
from paysdk.server.families import FAMILIES
from paysdk.server.hotpath.lanes import LANE_NAME
from paysdk.server.refs import is_ref, resolve
from paysdk.server.services import callbacks, cardholders, renewals, terminal, wallet_sandbox

_PROBE = textwrap.dedent(
    """
    import asyncio, json, sys
    import httpx
    from paysdk.server.app import create_app

    from paysdk.server.families import FAMILIES  # the registry names its routers and imports none

    ROUTERS = {ref.partition(":")[0] for f in FAMILIES for _, ref in f.routers if isinstance(ref, str)}

    def loaded():  # the families' registered router modules imported so far
        return sorted(m for m in sys.modules if m in ROUTERS)

    def tables():
        return sorted(m for m in sys.modules if m.startswith("paysdk.server.") and m.endswith("_tables"))

    async def main():
        app = create_app(sys.argv[1], start_ticker=False, lazy_routers=True)
        seen = {"start": loaded()}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            seen["health"] = (await client.get("/_sandbox/health")).status_code
            seen["after_health"] = loaded()
            seen["client"] = (await client.post("/_sandbox/clients", json={})).status_code
            seen["after_client"] = loaded()
            seen["tables_after_client"] = tables()
            wallet = ("paysdk.contracts.wallet", "paysdk.server.services.wallet_tokens")
            seen["wallet_after_client"] = sorted(m for m in wallet if m in sys.modules)
            seen["docs"] = (await client.get("/openapi.json")).status_code
            seen["after_docs"] = loaded()
            seen["tables_after_docs"] = tables()
        print(json.dumps(seen))

    asyncio.run(main())
    """
)


def test_a_lazy_start_imports_no_family_router_until_needed(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, f"sqlite:///{tmp_path / 'probe.db'}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(run.stdout)
    assert seen["start"] == []  # the readiness probe's router is the core's (paysdk.server.health)
    assert seen["health"] == 200
    assert seen["after_health"] == seen["start"]  # the readiness probe's own router answers it
    # The first real request includes its own family's routers up to the one that answers it (D610).
    assert seen["client"] == 201
    # Of the control plane, only the router of its first routes (reset, client create, D621).
    assert seen["after_client"] == ["paysdk.server.routers.sandbox_first"]
    # Nor the other families' tables (D613): the core's and the deprecation marks the middleware reads; a
    # new client's wallet keys are written without the wallet's tables (D620).
    assert seen["tables_after_client"] == ["paysdk.server.core_tables", "paysdk.server.deprecation_tables"]
    assert seen["wallet_after_client"] == []
    assert seen["docs"] == 200
    every = {ref.partition(":")[0] for f in FAMILIES for _, ref in f.routers if isinstance(ref, str)}
    assert every <= set(seen["after_docs"])
    # Once every router is included, the registrations' table checks have run (they import every table).
    every_table = {
        ref.partition(":")[0] for f in FAMILIES for ref in (*f.tables, *f.kept_tables) if isinstance(ref, str)
    }
    assert every_table <= set(seen["tables_after_docs"])


async def test_a_lazy_app_serves_as_an_eager_one(tmp_path: Path, callback_sink: Any) -> None:
    lazy = create_app(f"sqlite:///{tmp_path / 'lazy.db'}", start_ticker=False, lazy_routers=True)
    eager = create_app(f"sqlite:///{tmp_path / 'eager.db'}", start_ticker=False)
    try:
        transport = httpx.ASGITransport(app=lazy)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            assert (await client.get("/_sandbox/health")).status_code == 200
            created = await client.post(
                "/_sandbox/clients", content=dumps({"callbackUrl": callback_sink.url}), headers=JSON_TYPE
            )
            assert created.status_code == 201
            merchant = SandboxClient.model_validate(body(created))
            # The first public request loads the routers and the fast lane.
            link = await create_link(client, merchant, amount=Decimal("12.34"))
            await pay(client, link["uid"], "4242424242424242")
            assert len(callback_sink.received) == 1
            again = await client.post(
                "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
            )
            assert again.status_code == 200
            # The routers no request needed yet are included REST_AFTER seconds after the first request
            # (D610); the next request runs the route checks and installs every family's lanes.
            layer = _include_layer(lazy)
            deadline = time.monotonic() + 120
            while layer.routers is not None and layer.routers._pending:
                assert time.monotonic() < deadline, "the other routers were never included"
                await asyncio.sleep(0.05)
            assert (await client.get("/_sandbox/health")).status_code == 200
            assert layer.routers is None
            # Both lanes were built when the routers loaded: the hot creates and the routes with path
            # parameters (POST /rest/cards/{cardId}/funds, D261).
            lanes = [r for r in lazy.router.routes if getattr(r, "name", None) == LANE_NAME]
            assert any(getattr(route, "path", None) == "/transactions" for route in lanes)
            assert any(getattr(route, "path", "").endswith("/funds") for route in lanes)
            # A control-plane route of a router included late (not in /openapi.json).
            assert body(await client.get("/_sandbox/deprecations")) == []
            lazy_document = (await client.get("/openapi.json")).json()
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=eager), base_url="http://testserver"
        ) as client:
            eager_document = (await client.get("/openapi.json")).json()
        assert lazy_document == eager_document
    finally:
        lazy.state.paysdk.db.dispose()
        eager.state.paysdk.db.dispose()


def _include_layer(app: Any) -> _IncludeRouters:
    """The lazily started app's router-including layer, from its built stack."""
    layer = app.middleware_stack
    while not isinstance(layer, _IncludeRouters):
        layer = layer.app
    return layer


RAN: list[str] = []


def probe_job(session: Session, clock: Clock, ref: str) -> None:
    """A job handler the test names by reference."""
    RAN.append(ref)


async def test_a_job_handler_given_by_reference_is_imported_when_its_job_runs(tmp_path: Path) -> None:
    application = create_app(
        f"sqlite:///{tmp_path / 'jobs.db'}",
        start_ticker=False,
        job_handlers={"probe": f"{__name__}:probe_job"},
    )
    try:
        context = application.state.paysdk

        def queue(session: Session) -> None:
            now = context.clock.now(session)
            jobs.add(session, "probe", "r-1", now + timedelta(minutes=5), now)

        context.call(queue)
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            await advance(client, 600)
        assert RAN == ["r-1"]
    finally:
        application.state.paysdk.db.dispose()


def test_job_and_fast_lane_references_name_the_services_constants() -> None:
    """The registrations name job kinds literally (importing the services would defeat D303): they are
    the kinds the services schedule."""
    kinds = {kind: handler for family in FAMILIES for kind, handler in family.jobs.items()}
    assert all(is_ref(handler) for handler in kinds.values())
    assert kinds[renewals.JOB_KIND] == "paysdk.server.services.renewals:run_renewals"
    assert kinds[cardholders.JOB_KIND] == "paysdk.server.services.cardholders:run_batch"
    assert kinds[terminal.SETTLEMENT_JOB] == "paysdk.server.services.terminal:run_settlement"
    assert kinds[terminal.LAPSE_JOB] == "paysdk.server.services.terminal:lapse_authorization"
    assert kinds[wallet_sandbox.EXPIRE_JOB] == "paysdk.server.services.wallet_sandbox:expire_authorization"
    assert all(callable(resolve(handler)) for handler in kinds.values())
    assert kinds[callbacks.JOB_KIND] == "paysdk.server.services.callbacks:deliver_job"
    assert kinds["expire"] == "paysdk.server.services.payments:expire_job"  # transaction expiries
    for family in FAMILIES:
        for handler in family.fast_lane:
            assert callable(resolve(handler))


def test_the_client_keys_insert_has_the_mapped_tables_columns() -> None:
    """A new client's wallet keys are written without the wallet's mapped tables (D620), through a table
    clause that must stay the mapped table's: same name, columns and column types."""
    from paysdk.server.services.wallet_client_keys import WALLET_CLIENT_KEYS
    from paysdk.server.wallet_tables import WalletClientKeyRow

    mapped = WalletClientKeyRow.__table__
    assert WALLET_CLIENT_KEYS.name == WalletClientKeyRow.__tablename__
    clause = {c.name: repr(c.type) for c in WALLET_CLIENT_KEYS.columns}
    assert clause == {c.name: repr(c.type) for c in mapped.columns}


async def test_a_new_clients_wallet_keys_are_its_row(app: Any, asgi_client: httpx.AsyncClient) -> None:
    """The keys a create answers are the row the wallet reads: generated (its private key answered once)
    and registered (none answered), with the lifetimes given or the defaults."""
    from nacl.signing import SigningKey

    from paysdk import _jwt
    from paysdk.server.services import wallet_tokens
    from paysdk.server.wallet_tables import WalletClientKeyRow

    generated = body(await asgi_client.post("/_sandbox/clients", json={"userAccessTokenTtl": 60}))
    registered_key = SigningKey.generate()
    registered = body(
        await asgi_client.post(
            "/_sandbox/clients",
            json={
                "signingPublicKey": _jwt.public_key_b64(registered_key),
                "keysExpireAt": "2030-01-02T03:04:05Z",
            },
        )
    )
    seed = SigningKey(base64.b64decode(generated["signingPrivateKey"]))
    assert generated["signingPublicKey"] == _jwt.public_key_b64(seed)
    assert registered["signingPrivateKey"] is None
    assert registered["signingPublicKey"] == _jwt.public_key_b64(registered_key)
    with app.state.paysdk.db.session() as session:
        rows = {
            row.client_id: row
            for row in session.query(WalletClientKeyRow).order_by(WalletClientKeyRow.client_id)
        }
        assert [row.public_key_b64 for row in rows.values()] == [
            generated["signingPublicKey"],
            registered["signingPublicKey"],
        ]
        first, second = rows.values()
        assert (first.user_access_ttl, first.user_refresh_ttl) == (60, wallet_tokens.DEFAULT_USER_REFRESH_TTL)
        assert first.key_id == _jwt.public_jwk(seed)["kid"]
        assert first.keys_expire_at is None
        assert second.keys_expire_at == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
        assert second.user_access_ttl == wallet_tokens.DEFAULT_USER_ACCESS_TTL
    for made in (generated, registered):
        assert (
            body(await asgi_client.get(f"/_sandbox/clients/{made['slug']}"))["signingPublicKey"]
            == made["signingPublicKey"]
        )


def test_the_partial_unique_indexes_are_partial_on_each_database(app: Any) -> None:
    # Their PostgreSQL WHERE is given when the table is created (not at import: D307); a full unique
    # index on (subscription_id, period) would refuse a period's second, retried, attempt.
    engine = app.state.paysdk.db.engine
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            query = "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'subscription_charges'"
        else:
            query = "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'subscription_charges'"
        ddl = dict(connection.exec_driver_sql(query).all())
    paid = " ".join(ddl["ux_subscription_charges_paid"].split())
    attempt = " ".join(ddl["ux_subscription_charges_attempt"].split())
    for ddl_of_index in (paid, attempt):
        assert "UNIQUE" in ddl_of_index
        assert "WHERE" in ddl_of_index
        assert "renewal" in ddl_of_index
    assert "approved" in paid
    assert "approved" not in attempt
