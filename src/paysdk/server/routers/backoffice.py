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

from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.orm import Session
from starlette.responses import Response

from paysdk.contracts.backoffice import (
    BackofficeUserLoginRequest,
    BackofficeUserRefreshRequest,
    CardAssociationRequest,
)
from paysdk.contracts.wallet import AppLoginRequest, Card, RefreshRequest, TokenPair
from paysdk.server.routers._bearer import BackofficeApplicationDb, BackofficeOperatorDb
from paysdk.server.routers._common import (
    BACKOFFICE_ERRORS,
    data,
    only,
    raise_problem,
    route,
)
from paysdk.server.routers._transactions import Db
from paysdk.server.services import backoffice
from paysdk.server.services.backoffice import OperatorPrincipal

__all__ = ["router"]

router = APIRouter(tags=["backoffice"])


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
async def app_login(request: Request, db: Db) -> Response:
    """Log the application in to the backoffice with the Ed25519 signature of its slug (D105)."""
    body = backoffice.parse_backoffice_body(AppLoginRequest, await request.body())

    return data(await db.run(backoffice.app_login, db.session, db.context, db.now, body))


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
async def app_refresh(request: Request, db: Db) -> Response:
    """Rotate the backoffice application's refresh token (D106)."""
    body = backoffice.parse_backoffice_body(RefreshRequest, await request.body())

    return data(
        raise_problem(
            await db.run(backoffice.app_refresh, db.session, db.context, db.now, body.refresh_token)
        )
    )


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
async def user_login(request: Request, db: BackofficeApplicationDb) -> Response:
    """Log an operator in with email and password (D105); 5 wrong passwords in a row lock the email
    (``429 / 7108`` with ``Retry-After``, D381)."""
    body = backoffice.parse_backoffice_body(BackofficeUserLoginRequest, await request.body())

    return data(
        raise_problem(await db.run(backoffice.user_login, db.session, db.context, db.now, db.caller, body))
    )


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
async def user_refresh(request: Request, db: BackofficeApplicationDb) -> Response:
    """Rotate an operator's refresh token (D106)."""
    body = backoffice.parse_backoffice_body(BackofficeUserRefreshRequest, await request.body())

    return data(
        raise_problem(await db.run(backoffice.user_refresh, db.session, db.context, db.now, db.caller, body))
    )


@router.post(
    "/app/partners/{partnerId}/cardholders/{cardholderId}/cards/association",
    **_association_route(),
)
async def associate_card(
    request: Request, partnerId: str, cardholderId: str, db: BackofficeOperatorDb
) -> Response:
    """Give a card no one holds to the partner's cardholder (D189); already theirs: ``200`` unchanged."""
    raw = await request.body()
    card, created = await db.run(_associate, db.session, db.caller, partnerId, cardholderId, raw)
    return data(card, 201 if created else 200)


def _associate(
    session: Session, operator: OperatorPrincipal, partner_id: str, cardholder_id: str, raw: bytes
) -> tuple[Card, bool]:
    """The association, its body parsed after the operator's token (a bad token is 401 before a bad body)."""
    body = backoffice.parse_backoffice_body(CardAssociationRequest, raw)
    return backoffice.associate_card(session, operator, partner_id, cardholder_id, body)
