"""The routers' dependencies: :class:`Transactions` runs a service in one transaction, its stand-ins
replaced by the transaction's values, the credentials verified first; a route's dependency can be
overridden as FastAPI's can (D570)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.server.context import ServerContext
from paysdk.server.core_tables import ClientRow
from paysdk.server.errors import APIProblem
from paysdk.server.routers._bearer import wallet_db
from paysdk.server.routers._transactions import Transactions
from paysdk.server.services import wallet_tokens


def _context(app: FastAPI) -> ServerContext:
    context = app.state.paysdk
    assert isinstance(context, ServerContext)
    return context


def test_a_stand_in_used_outside_run_says_what_it_stands_for(app: FastAPI) -> None:
    db: Transactions[None] = Transactions(_context(app))
    with pytest.raises(RuntimeError, match=r"db\.session stands for the session of a transaction"):
        db.session.execute(text("SELECT 1"))
    with pytest.raises(RuntimeError, match=r"db\.now stands for"):
        db.now.isoformat()


async def test_run_hands_the_service_the_transactions_values(app: FastAPI) -> None:
    context = _context(app)
    db: Transactions[None] = Transactions(context)
    seen: dict[str, Any] = {}

    def service(session: Session, now: datetime, label: str, *, context: ServerContext) -> int:
        seen.update(session=session, now=now, label=label, context=context)
        return int(session.execute(text("SELECT 41 + 1")).scalar_one())

    assert await db.run(service, db.session, db.now, "plain", context=db.context) == 42
    assert isinstance(seen["session"], Session)
    assert isinstance(seen["now"], datetime)
    assert seen["label"] == "plain"
    assert seen["context"] is context
    # the virtual clock's time, read in the transaction
    assert abs((seen["now"] - await context.run(context.clock.now)).total_seconds()) < 60


async def test_a_route_without_credentials_has_no_caller(app: FastAPI) -> None:
    db: Transactions[None] = Transactions(_context(app))
    with pytest.raises(RuntimeError, match="take no credentials"):
        await db.run(lambda caller: caller, db.caller)


async def test_the_bearer_is_verified_before_the_service_runs(app: FastAPI) -> None:
    db = Transactions(_context(app), "not-a-token", wallet_tokens.authenticate)
    ran: list[object] = []
    with pytest.raises(APIProblem) as raised:
        await db.run(ran.append, db.caller)
    assert raised.value.status == 401
    assert ran == []


async def test_a_routes_credentials_can_be_overridden(app: FastAPI, asgi_client: httpx.AsyncClient) -> None:
    def refuse(session: Session, context: ServerContext, now: datetime, token: str | None) -> Any:
        raise APIProblem(403, 7401, f"overridden, token {token!r}", [("Authorization", "overridden")])

    async def overridden() -> Transactions[Any]:
        return Transactions(_context(app), "from-the-override", refuse)

    app.dependency_overrides[wallet_db] = overridden
    response = await asgi_client.get("/rest/users/someone/cards", headers={"Authorization": "Bearer x"})
    assert response.status_code == 403
    assert "from-the-override" in response.json()["message"]
    del app.dependency_overrides[wallet_db]
    response = await asgi_client.get("/rest/users/someone/cards", headers={"Authorization": "Bearer x"})
    assert response.status_code == 401


async def test_run_returns_only_once_committed(app: FastAPI) -> None:
    """A commit that fails (here: the flush at commit finds a row without its required columns) is the
    caller's exception: ``run`` never hands back a result the database did not keep."""
    db: Transactions[None] = Transactions(_context(app))

    def add_incomplete_client(session: Session) -> str:
        session.add(ClientRow(slug="never-kept"))
        return "answered"

    with pytest.raises(IntegrityError):
        await db.run(add_incomplete_client, db.session)
    assert await db.run(_clients, db.session) == 0


def _clients(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(ClientRow)) or 0)
