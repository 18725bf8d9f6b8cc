"""The API families' registrations (``paysdk.server.families``) drive the server: every route of the app
belongs to one registered family and lies under its prefixes, every ``POST`` honours ``Idempotency-Key``
exactly as its family says (in ``/openapi.json`` and in real answers), a family added to the list is
mounted, made idempotent, documented, reset and its jobs run, with no other file touched; and a
registration that does not hold together stops the server before it serves anything."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastapi.routing
import httpx
import pytest
import sqlalchemy
from fastapi import APIRouter, FastAPI, Request
from fastapi.routing import APIRoute
from server_helpers import JSON_TYPE
from sqlalchemy import Integer, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from starlette.responses import JSONResponse, Response

from paysdk.server import create_app
from paysdk.server.app import is_control_path
from paysdk.server.clock import Clock
from paysdk.server.context import get_context
from paysdk.server.core_tables import Base, JobRow
from paysdk.server.families import (
    FAMILIES,
    Family,
    check_families,
    family_of,
    honours_idempotency_key,
    hook,
    kept_tables_of,
    route_paths,
    tables_of,
)
from paysdk.server.services import subscription_api


class _TestBase(DeclarativeBase):
    """Tables of the test family (kept off the server's ``Base``, whose tables must all be registered)."""


class EchoRow(_TestBase):
    __tablename__ = "test_echoes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    body: Mapped[str] = mapped_column(Text)


ECHO_JOB = "test_echo"
calls: list[str] = []


def _echo_job(session: Session, clock: Clock, ref: str) -> None:
    session.add(EchoRow(body=f"job:{ref}"))


echo_router = APIRouter(prefix="/v9", tags=["echo"])


@echo_router.post("/echoes", summary="Store an echo")
async def create_echo(request: Request) -> Response:
    raw = (await request.body()).decode()
    calls.append(raw)
    context = get_context(request)

    def store(session: Session) -> int:
        row = EchoRow(body=raw)
        session.add(row)
        session.flush()
        return row.id

    return JSONResponse({"id": await context.run(store), "calls": len(calls)})


ECHO = Family(
    name="echo",
    prefixes=("/v9",),
    routers=(("", echo_router),),
    tables=(EchoRow,),
    jobs={ECHO_JOB: _echo_job},
    sdk_resources=(),
    cli_groups=(),
)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'families.db'}"


@pytest.fixture
def echo_app(db_url: str) -> Iterator[FastAPI]:
    calls.clear()
    application = create_app(db_url, start_ticker=False, families=(*FAMILIES, ECHO))
    try:
        yield application
    finally:
        application.state.paysdk.db.dispose()


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x1", path)


def _app_routes(app: FastAPI) -> list[tuple[str, str]]:
    """``(method, path)`` of every API route the app serves (FastAPI 0.16x includes routers lazily: its
    ``iter_route_contexts`` gives the effective routes)."""
    contexts = getattr(fastapi.routing, "iter_route_contexts", None)
    routes: list[Any] = list(contexts(app.routes)) if contexts is not None else list(app.routes)
    return [
        (method, str(route.path))
        for route in routes
        if isinstance(getattr(route, "original_route", route), APIRoute)
        for method in sorted(route.methods or ())
    ]


def test_every_route_of_the_app_is_under_the_prefixes_of_exactly_its_family(app: FastAPI) -> None:
    registered = {(m, p) for family in FAMILIES for m, p, _ in route_paths(family)}
    served = _app_routes(app)
    assert set(served) == registered  # nothing is mounted that no family registers, nor the reverse
    for method, path in served:
        owners = [f for f in FAMILIES if any((m, p) == (method, path) for m, p, _ in route_paths(f))]
        assert len(owners) == 1, (method, path)
        assert family_of(path) is owners[0], (method, path)
        # The control plane is exactly the non-public families' routes (never logged, faulted, idempotent).
        assert is_control_path(path) is (not owners[0].public), (method, path)
    documented = {(method.upper(), path) for path, item in app.openapi()["paths"].items() for method in item}
    assert documented == {
        (m, p) for f in FAMILIES if f.public for m, p, r in route_paths(f) if r.include_in_schema
    }


async def test_every_post_honours_idempotency_key_exactly_as_its_family_says(
    app: FastAPI, asgi_client: httpx.AsyncClient
) -> None:
    document = app.openapi()
    posts = [(m, p) for m, p in _app_routes(app) if m == "POST" and not is_control_path(p)]
    assert len(posts) > 20
    for method, path in posts:
        family = family_of(path)
        assert family is not None, path
        assert family.public, path
        assert honours_idempotency_key(method, path) is family.idempotent_posts, path
        parameters = document["paths"][path]["post"].get("parameters", [])
        documented = any(p.get("$ref", "").endswith("/Idempotency-Key") for p in parameters)
        assert documented is family.idempotent_posts, path
        # The real answer: a blank key is refused by the idempotency layer (400 naming the header)
        # before the route runs, exactly on the operations whose family honours keys.
        answer = await asgi_client.post(
            _concrete(path), content=b"{}", headers={**JSON_TYPE, "Idempotency-Key": " "}
        )
        refused = answer.status_code == 400 and "Idempotency-Key" in answer.text
        assert refused is family.idempotent_posts, (path, answer.status_code, answer.text[:200])


async def test_an_added_family_is_mounted_idempotent_documented_reset_and_runs_its_jobs(
    echo_app: FastAPI,
) -> None:
    transport = httpx.ASGITransport(app=echo_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        key = {"Idempotency-Key": "echo-1"}
        first = await client.post("/v9/echoes", content=b"hello", headers=key)
        again = await client.post("/v9/echoes", content=b"hello", headers=key)
        assert first.status_code == again.status_code == 200
        assert again.json() == first.json() == {"id": 1, "calls": 1}
        assert again.headers["idempotent-replayed"] == "true"
        assert calls == ["hello"]  # the route ran once
        other = await client.post("/v9/echoes", content=b"other", headers=key)
        assert other.status_code == 422  # the key was used with another body (D17)

        operation = echo_app.openapi()["paths"]["/v9/echoes"]["post"]
        assert {"$ref": "#/components/parameters/Idempotency-Key"} in operation["parameters"]
        requests = (await client.get("/_sandbox/requests")).json()
        assert [r["path"] for r in requests if r["path"].startswith("/v9")] == ["/v9/echoes"] * 3

        with echo_app.state.paysdk.db.session() as session:
            now = echo_app.state.paysdk.clock.now(session)
            session.add(JobRow(kind=ECHO_JOB, ref="r1", due_at=now, status="pending", created_at=now))
        advanced = await client.post("/_sandbox/clock/advance", json={"seconds": 1})
        assert advanced.status_code == 200
        with echo_app.state.paysdk.db.session() as session:
            assert [row.body for row in session.scalars(sqlalchemy.select(EchoRow))] == ["hello", "job:r1"]
            assert [(j.kind, j.status) for j in session.scalars(sqlalchemy.select(JobRow))] == [
                (ECHO_JOB, "done")
            ]

        assert (await client.post("/_sandbox/reset")).status_code == 200
        with echo_app.state.paysdk.db.session() as session:
            assert session.scalars(sqlalchemy.select(EchoRow)).all() == []


async def test_a_stored_job_of_an_unknown_kind_stays_pending_and_is_named_at_start(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Written by a server that registered the echo family; this one does not.
    first = create_app(sqlite_url, start_ticker=False, families=(*FAMILIES, ECHO))
    with first.state.paysdk.db.session() as session:
        now = first.state.paysdk.clock.now(session)
        session.add(JobRow(kind=ECHO_JOB, ref="r2", due_at=now, status="pending", created_at=now))
    first.state.paysdk.db.dispose()

    with caplog.at_level(logging.ERROR, logger="paysdk.server.scheduler"):
        second = create_app(sqlite_url, start_ticker=False)
    try:
        assert any(
            ECHO_JOB in record.getMessage() and "never run" in record.getMessage()
            for record in caplog.records
        )
        scheduler = second.state.paysdk.scheduler
        assert ECHO_JOB not in scheduler.kinds
        assert await scheduler.run_due() == 0
        transport = httpx.ASGITransport(app=second)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            assert (await client.post("/_sandbox/clock/advance", json={"seconds": 3600})).status_code == 200
        with second.state.paysdk.db.session() as session:
            # Not marked done unrun, not claimed in a loop: left for a server that knows the kind.
            assert [(j.kind, j.status) for j in session.scalars(sqlalchemy.select(JobRow))] == [
                (ECHO_JOB, "pending")
            ]
    finally:
        second.state.paysdk.db.dispose()

    third = create_app(sqlite_url, start_ticker=False, families=(*FAMILIES, ECHO))
    try:
        assert await third.state.paysdk.scheduler.run_due() == 1  # the family is back: the job runs
    finally:
        third.state.paysdk.db.dispose()


def _family(**changes: Any) -> Family:
    fields: dict[str, Any] = {
        "name": "echo",
        "prefixes": ("/v9",),
        "routers": (("", echo_router),),
        "tables": (EchoRow,),
        "jobs": {ECHO_JOB: _echo_job},
    }
    fields.update(changes)
    return Family(**fields)


stray_router = APIRouter()


@stray_router.post("/v1/stray")
async def stray(request: Request) -> Response:  # pragma: no cover - never mounted
    return Response()


nesting_router = APIRouter()
nesting_router.include_router(echo_router)
nesting_router.include_router(stray_router, prefix="/v8")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        # A route under a prefix no family registers would otherwise skip idempotency without a word.
        (_family(routers=(("", echo_router), ("", stray_router))), "route POST /v1/stray is outside"),
        # A router included by the family's router is checked too.
        (_family(routers=(("", nesting_router),)), "route POST /v8/v1/stray is outside"),
        # Mounted under another family's prefix: still outside its own.
        (_family(routers=(("/rest", stray_router),)), "route POST /rest/v1/stray is outside"),
        (_family(prefixes=("/v9", "/rest")), "prefix '/rest' is registered by wallet too"),
        (_family(prefixes=("/v9/",)), "prefix '/v9/' must start with '/' and not end with it"),
        (_family(jobs={"callback": _echo_job}), "job kind 'callback' is registered by payment links"),
        (_family(jobs={"wallet_auth_exp": _echo_job}), "job kind 'wallet_auth_exp' is registered by wallet"),
        (_family(jobs={"x" * 17: _echo_job}), "must have 1 to 16 characters"),
        (_family(name="wallet"), "two families are named 'wallet'"),
        (_family(hooks={"after_lunch": (_echo_job,)}), "echo: no hook is named 'after_lunch'"),
        (_family(tables=(EchoRow, JobRow)), "table jobs is registered by the core too"),
    ],
)
def test_an_inconsistent_registration_stops_the_server_before_it_serves(
    sqlite_url: str, extra: Family, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        create_app(sqlite_url, start_ticker=False, families=(*FAMILIES, extra))
    assert not Path(sqlite_url.removeprefix("sqlite:///")).exists()  # refused before the database


def test_a_table_declared_on_base_that_no_family_registers_is_refused() -> None:
    # The wallet's tables are declared on Base: leaving the wallet out leaves them unregistered.
    without_wallet = tuple(f for f in FAMILIES if f.name != "wallet")
    with pytest.raises(ValueError, match="table wallet_cards is declared on Base but no family registers it"):
        check_families(without_wallet)
    registered = {t.__tablename__ for f in FAMILIES for t in (*tables_of(f), *kept_tables_of(f))}
    assert "wallet_cards" in registered
    assert set(Base.metadata.tables) >= registered


def test_a_fast_lane_route_with_path_parameters_is_refused(sqlite_url: str) -> None:
    router = APIRouter()

    @router.post("/v9/echoes/{echo_id}")
    async def with_parameter(request: Request) -> Response:  # pragma: no cover - never served
        return Response()

    extra = _family(routers=(("", router),), fast_lane=(with_parameter,))
    with pytest.raises(
        ValueError, match=re.escape("fast-lane route POST /v9/echoes/{echo_id} has path parameters")
    ):
        create_app(sqlite_url, start_ticker=False, families=(*FAMILIES, extra))


def test_hooks_are_a_closed_set_resolved_in_registration_order() -> None:
    # The payments call these; the subscriptions' card verification registers its steps (D551, D552).
    assert hook("card_given") == (subscription_api.remember_card,)
    assert hook("card_approved") == (subscription_api.on_verified,)
    seed_steps = hook("seed")
    assert [f"{f.__module__}:{f.__name__}" for f in seed_steps] == ["paysdk.server.seed:install_seed"]
    extra = _family(hooks={"card_approved": (_echo_job,)})
    assert hook("card_approved", (*FAMILIES, extra)) == (subscription_api.on_verified, _echo_job)
    with pytest.raises(ValueError, match="no hook is named 'after_lunch'"):
        hook("after_lunch")
