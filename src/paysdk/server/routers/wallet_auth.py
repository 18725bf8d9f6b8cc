"""Wallet application authentication under ``/rest`` (spec 4.3, 5.3; decisions D32, D33, D35, D36).

* ``POST /auth/login`` ``{merchant, signature}``: the Ed25519 signature of the exact UTF-8 bytes of the
  slug -> a token pair (access 30 min, refresh 7 days).
* ``POST /auth/refresh`` ``{refreshToken}``: single-use rotation; a reuse revokes the family (``7105``).
* ``GET /.well-known/jwks.json``: the environment's public key (bare JWKS, stable).

Every request is logged by the request log layer like any public request (refreshes included).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.wallet import AppLoginRequest, Jwks, RefreshRequest, TokenPair
from paysdk.server.errors import JSONResponse
from paysdk.server.routers._common import WALLET_ERRORS, data, only, raise_problem, route
from paysdk.server.routers._transactions import Db
from paysdk.server.services import wallet_tokens
from paysdk.server.services.wallet_common import parse_wallet_body

__all__ = ["router"]

router = APIRouter(tags=["wallet: authentication"])


@router.post(
    "/auth/login",
    **route(
        "Application login (signature over the merchant slug)",
        auth="signature",
        body=AppLoginRequest,
        answer=TokenPair,
        envelope=True,
        errors=only(WALLET_ERRORS, 400, 401),
    ),
)
async def app_login(request: Request, db: Db) -> Response:
    """Log the application in with the Ed25519 signature of its slug (D36)."""
    body = parse_wallet_body(AppLoginRequest, await request.body())

    return data(await db.run(wallet_tokens.app_login, db.session, db.context, db.now, body))


@router.post(
    "/auth/refresh",
    **route(
        "Refresh the application token pair (single-use refresh token)",
        auth="none",
        body=RefreshRequest,
        answer=TokenPair,
        envelope=True,
        errors=only(WALLET_ERRORS, 400, 401),
    ),
)
async def app_refresh(request: Request, db: Db) -> Response:
    """Rotate the application's refresh token (D35)."""
    body = parse_wallet_body(RefreshRequest, await request.body())

    return data(
        raise_problem(
            await db.run(
                wallet_tokens.refresh, db.session, db.context, db.now, body.refresh_token, "application"
            )
        )
    )


@router.get(
    "/.well-known/jwks.json",
    **route("The wallet's public signing keys (JWKS)", auth="none", answer=Jwks, errors={}),
)
async def jwks(db: Db) -> Response:
    """The environment's Ed25519 public key as a bare JWKS (D33)."""

    keys = await db.run(wallet_tokens.jwks, db.session, db.context)
    return JSONResponse(
        keys.model_dump(by_alias=True, mode="python"), headers={"Cache-Control": "max-age=300"}
    )
