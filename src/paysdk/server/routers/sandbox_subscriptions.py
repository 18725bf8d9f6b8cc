"""Control-plane additions of the subscriptions under ``/_sandbox`` (D141, D142).

Plans and subscriptions in bulk come from here only (4.2 has no public create besides verify-card), and
``GET /_sandbox/subscriptions/{subUid}`` is the read the spec lacks. Left out of ``/openapi.json``; never
logged, faulted or idempotent (like the rest of ``/_sandbox``). Bare camelCase answers; creations answer
``201``; contract errors ``409 / 5000`` naming the field (D27, D46); an unknown plan or subscription is
``404``; JSON bodies only (D92).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel
from sqlalchemy.orm import Session
from starlette.responses import Response

from paysdk.contracts.subscriptions import PlanCreate, SandboxSubscriptionsCreate
from paysdk.contracts.wallet import validate_email
from paysdk.server.bodies import read_json_object, validate
from paysdk.server.core_tables import ClientRow
from paysdk.server.errors import APIProblem, JSONResponse
from paysdk.server.routers._transactions import Db
from paysdk.server.services import subscriptions

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox", include_in_schema=False)


def _answer(value: BaseModel, status: int = 200) -> Response:
    return JSONResponse(value.model_dump(by_alias=True, mode="python"), status_code=status)


@router.post("/plans")
async def create_plan(request: Request, db: Db) -> Response:
    """A plan of a client (D141): amount, currency, interval, term and the retry settings."""
    spec = validate(PlanCreate, await read_json_object(request))

    return _answer(await db.run(subscriptions.create_plan, db.session, spec, db.now), 201)


@router.get("/plans/{plan_id}")
async def get_plan(plan_id: str, db: Db) -> Response:
    """A plan by its ``planId``."""
    return _answer(await db.run(_plan_view, db.session, plan_id))


def _plan_view(session: Session, plan_id: str) -> Any:
    plan = subscriptions.load_plan(session, plan_id)
    client = session.get(ClientRow, plan.client_id)
    assert client is not None
    return subscriptions.plan_view(plan, client.slug)


@router.post("/subscriptions")
async def create_subscriptions(request: Request, db: Db) -> Response:
    """``count`` (1..100,000) active subscriptions of a plan at once, one bulk insert (D142)."""
    spec = validate(SandboxSubscriptionsCreate, await read_json_object(request))
    if spec.email is not None:
        try:
            email = validate_email(spec.email.strip())
        except ValueError as exc:
            raise APIProblem.invalid_field("email", str(exc)) from None
        spec = spec.model_copy(update={"email": email})

    return _answer(await db.run(subscriptions.create_subscriptions, db.session, db.context.clock, spec), 201)


@router.get("/subscriptions/{sub_uid}")
async def get_subscription(sub_uid: str, db: Db) -> Response:
    """One subscription with its plan, client, timezone, schedule, attempts and every charge (D142)."""
    return _answer(await db.run(_subscription_view, db.session, sub_uid))


def _subscription_view(session: Session, sub_uid: str) -> Any:
    return subscriptions.sandbox_view(session, subscriptions.load(session, sub_uid))
