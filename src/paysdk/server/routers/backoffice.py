"""The backoffice on ``{cms_base_url}`` (``/cms/rest`` on the reference server; spec 4.4, 5.3.5-5.3.7;
decisions D105-D107, D183-D185, D189, D200-D209): application and user login and refresh, and operator
card association. HTTP only; the logic is in :mod:`paysdk.server.services.backoffice`.

* ``POST /app/auth/login {merchant, signature}`` and ``POST /app/auth/refresh {refreshToken}``: no bearer.
* ``POST /app/users/login {email, password, accessTokenTtl?, refreshTokenTtl?}`` and
  ``POST /app/users/refresh {refreshToken}``: the backoffice application token.
* ``POST /app/partners/{partnerId}/cardholders/{cardholderId}/cards/association {cardId}``: the
  backoffice user token (D184).

Refreshes commit what they changed (a reuse revokes the family) before answering the error.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from sqlalchemy.orm import Session
from starlette.responses import Response

from paysdk.contracts.backoffice import (
    BackofficeUserLoginRequest,
    BackofficeUserRefreshRequest,
    CardAssociationRequest,
)
from paysdk.contracts.wallet import AppLoginRequest, Card, RefreshRequest, TokenPair
from paysdk.server.context import ServerContext, get_context
from paysdk.server.errors import APIProblem
from paysdk.server.routers._common import (
    BACKOFFICE_ERRORS,
    bearer,
    data,
    only,
    raise_problem,
    route,
    unauthed,
)
from paysdk.server.services import backoffice
from paysdk.server.services.wallet_tokens import Principal

__all__ = ["router"]

router = APIRouter(tags=["backoffice"])

T = TypeVar("T")


async def _as_application(
    request: Request, fn: Callable[[Session, ServerContext, datetime, Principal], T]
) -> T:
    """Run ``fn(session, context, now, app)`` in one transaction, the backoffice application token first."""
    context = get_context(request)
    token = bearer(request)

    def work(session: Session) -> T:
        now = context.clock.now(session)
        app = backoffice.app_principal(session, context, now, token)
        return fn(session, context, now, app)

    return await context.run(work)


def _association_route() -> dict[str, Any]:
    kwargs = route(
        "Associate a card with a partner's cardholder (backoffice user token)",
        auth="backoffice-user",
        body=CardAssociationRequest,
        answer=Card,
        envelope=True,
        status=201,
        errors=only(BACKOFFICE_ERRORS, 400, 404, 409),
    )
    # The same card, in the same envelope as the 201 (D391).
    kwargs["responses"][200] = {
        "model": kwargs["response_model"],
        "description": "The card was already this cardholder's: unchanged (D189).",
    }
    return kwargs


@router.post(
    "/app/auth/login",
    **route(
        "Backoffice application login (signature over the merchant slug)",
        auth="signature",
        body=AppLoginRequest,
        answer=TokenPair,
        envelope=True,
        errors=only(BACKOFFICE_ERRORS, 400, 401),
    ),
)
async def app_login(request: Request) -> Response:
    """Log the application in to the backoffice with the Ed25519 signature of its slug (D105)."""
    body = backoffice.parse_backoffice_body(AppLoginRequest, await request.body())

    def work(session: Session, context: ServerContext, now: datetime) -> TokenPair:
        return backoffice.app_login(session, context, now, body)

    return data(await unauthed(request, work))


@router.post(
    "/app/auth/refresh",
    **route(
        "Refresh the backoffice application token pair (single-use refresh token)",
        auth="none",
        body=RefreshRequest,
        answer=TokenPair,
        envelope=True,
        errors=only(BACKOFFICE_ERRORS, 400, 401),
    ),
)
async def app_refresh(request: Request) -> Response:
    """Rotate the backoffice application's refresh token (D106)."""
    body = backoffice.parse_backoffice_body(RefreshRequest, await request.body())

    def work(session: Session, context: ServerContext, now: datetime) -> TokenPair | APIProblem:
        return backoffice.app_refresh(session, context, now, body.refresh_token)

    return data(raise_problem(await unauthed(request, work)))


@router.post(
    "/app/users/login",
    **route(
        "Backoffice user (operator) login (application bearer)",
        auth="backoffice-application",
        body=BackofficeUserLoginRequest,
        answer=TokenPair,
        envelope=True,
        errors=only(BACKOFFICE_ERRORS, 400, 429),
    ),
)
async def user_login(request: Request) -> Response:
    """Log an operator in with email and password (D105); 5 wrong passwords in a row lock the email
    (``429 / 7108`` with ``Retry-After``, D381)."""
    body = backoffice.parse_backoffice_body(BackofficeUserLoginRequest, await request.body())

    def work(
        session: Session, context: ServerContext, now: datetime, app: Principal
    ) -> TokenPair | APIProblem:
        return backoffice.user_login(session, context, now, app, body)

    return data(raise_problem(await _as_application(request, work)))


@router.post(
    "/app/users/refresh",
    **route(
        "Refresh a backoffice user session (application bearer)",
        auth="backoffice-application",
        body=BackofficeUserRefreshRequest,
        answer=TokenPair,
        envelope=True,
        errors=only(BACKOFFICE_ERRORS, 400),
    ),
)
async def user_refresh(request: Request) -> Response:
    """Rotate an operator's refresh token (D106)."""
    body = backoffice.parse_backoffice_body(BackofficeUserRefreshRequest, await request.body())

    def work(
        session: Session, context: ServerContext, now: datetime, app: Principal
    ) -> TokenPair | APIProblem:
        return backoffice.user_refresh(session, context, now, app, body)

    return data(raise_problem(await _as_application(request, work)))


@router.post(
    "/app/partners/{partnerId}/cardholders/{cardholderId}/cards/association",
    **_association_route(),
)
async def associate_card(request: Request, partnerId: str, cardholderId: str) -> Response:
    """Give a card no one holds to the partner's cardholder (D189); already theirs: ``200`` unchanged."""
    context = get_context(request)
    token = bearer(request)
    raw = await request.body()

    def work(session: Session) -> tuple[Card, bool]:
        now = context.clock.now(session)
        principal = backoffice.operator_principal(session, context, now, token)
        body = backoffice.parse_backoffice_body(CardAssociationRequest, raw)
        return backoffice.associate_card(session, principal, partnerId, cardholderId, body)

    card, created = await context.run(work)
    return data(card, 201 if created else 200)
