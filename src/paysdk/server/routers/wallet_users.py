"""Wallet end-user endpoints under ``/rest/users`` (spec 4.3, 5.3.6, 5.3.8; decisions D34, D37-D39).

All take the application access token as bearer (a user token is ``401 / 7106``). ``/users/logout``
names the session to end with ``X-User-Token`` (D38). Login, OTP verification and refresh commit what
they changed (an attempt count, a revoked family) before answering an error.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from paysdk.contracts.wallet import (
    LogoutResult,
    OtpRequest,
    OtpSent,
    OtpVerified,
    OtpVerifyRequest,
    PasswordResetRequest,
    PasswordResetResult,
    TokenPair,
    UserLoginRequest,
    UserRefreshRequest,
)
from paysdk.server.routers._bearer import WalletApplicationDb
from paysdk.server.routers._common import WALLET_ERRORS, data, header, only, raise_problem, route
from paysdk.server.services import wallet_users
from paysdk.server.services.wallet_common import parse_wallet_body

__all__ = ["router"]

router = APIRouter(prefix="/users", tags=["wallet: users"])


@router.post(
    "/login",
    **route(
        "User login (application bearer)",
        auth="wallet-application",
        body=UserLoginRequest,
        answer=TokenPair,
        envelope=True,
        errors=only(WALLET_ERRORS, 400, 429),
    ),
)
async def user_login(request: Request, db: WalletApplicationDb) -> Response:
    """Log a cardholder in with username and password; 5 wrong passwords in a row lock the username
    (``429 / 7108`` with ``Retry-After``, D381)."""
    body = parse_wallet_body(UserLoginRequest, await request.body())

    return data(
        raise_problem(await db.run(wallet_users.user_login, db.session, db.context, db.now, db.caller, body))
    )


@router.post(
    "/refresh",
    **route(
        "Refresh a user session (TTL overrides)",
        auth="wallet-application",
        body=UserRefreshRequest,
        answer=TokenPair,
        envelope=True,
        errors=only(WALLET_ERRORS, 400),
    ),
)
async def user_refresh(request: Request, db: WalletApplicationDb) -> Response:
    """Rotate a user's refresh token, optionally with other lifetimes (D34, D35)."""
    body = parse_wallet_body(UserRefreshRequest, await request.body())

    return data(
        raise_problem(
            await db.run(wallet_users.user_refresh, db.session, db.context, db.now, db.caller, body)
        )
    )


@router.post(
    "/logout",
    **route(
        "End a user session (X-User-Token)",
        auth="wallet-application",
        answer=LogoutResult,
        envelope=True,
        errors=only(WALLET_ERRORS),
    ),
)
async def logout(request: Request, db: WalletApplicationDb) -> Response:
    """End the session of the user access token in ``X-User-Token`` (D38). No body."""
    user_token = header(request, "x-user-token")

    return data(await db.run(wallet_users.logout, db.session, db.context, db.now, db.caller, user_token))


@router.post(
    "/auth/otp",
    **route(
        "Request a one-time code by email",
        auth="wallet-application",
        body=OtpRequest,
        answer=OtpSent,
        envelope=True,
        errors=only(WALLET_ERRORS, 400),
    ),
)
async def request_otp(request: Request, db: WalletApplicationDb) -> Response:
    """Send a 6-digit code to the user's email (the sandbox outbox); always ``sent`` (D39)."""
    body = parse_wallet_body(OtpRequest, await request.body())

    return data(await db.run(wallet_users.request_otp, db.session, db.now, db.caller, body))


@router.put(
    "/auth/otp",
    **route(
        "Verify a one-time code",
        auth="wallet-application",
        body=OtpVerifyRequest,
        answer=OtpVerified,
        envelope=True,
        errors=only(WALLET_ERRORS, 400, 429),
    ),
)
async def verify_otp(request: Request, db: WalletApplicationDb) -> Response:
    """Verify a code; ``purpose = password_reset`` answers a reset token (D39)."""
    body = parse_wallet_body(OtpVerifyRequest, await request.body())

    return data(raise_problem(await db.run(wallet_users.verify_otp, db.session, db.now, db.caller, body)))


@router.post(
    "/auth/password/reset",
    **route(
        "Reset a password with the OTP reset token",
        auth="wallet-application",
        body=PasswordResetRequest,
        answer=PasswordResetResult,
        envelope=True,
        errors=only(WALLET_ERRORS, 400),
    ),
)
async def reset_password(request: Request, db: WalletApplicationDb) -> Response:
    """Set a new password; every session of the user ends (D39)."""
    body = parse_wallet_body(PasswordResetRequest, await request.body())

    return data(await db.run(wallet_users.reset_password, db.session, db.now, db.caller, body))
