"""Control-plane additions of the wallet under ``/_sandbox`` (docs/wallet.md; D27, D36, D39, D43).

Left out of ``/openapi.json``; never logged, faulted or idempotent (like the rest of ``/_sandbox``).
Bare camelCase answers; creations answer ``201``; contract errors ``409 / 5000`` (D27); wallet rules
keep their wallet codes (an authorization beyond the available balance is ``422 / 7303``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel
from sqlalchemy.orm import Session
from starlette.responses import Response

from paysdk.contracts.wallet import (
    SandboxChargeCreate,
    SandboxLinkingTokenCreate,
    SandboxRefundCreate,
    SandboxStockCardCreate,
    SandboxUserCreate,
    SandboxWalletKeysCreate,
)
from paysdk.server.bodies import read_json_object, validate
from paysdk.server.context import get_context
from paysdk.server.errors import JSONResponse
from paysdk.server.services import wallet_sandbox, wallet_tokens, wallet_users

__all__ = ["router"]

router = APIRouter(prefix="/_sandbox", include_in_schema=False)


def _answer(value: BaseModel | list[Any], status: int = 200) -> Response:
    if isinstance(value, list):
        return JSONResponse(
            [item.model_dump(by_alias=True, mode="python") for item in value], status_code=status
        )
    return JSONResponse(value.model_dump(by_alias=True, mode="python"), status_code=status)


@router.post("/clients/{slug}/keys")
async def rotate_keys(slug: str, request: Request) -> Response:
    """Rotate the client's wallet signing key: generate one (private key answered once) or register one."""
    context = get_context(request)
    spec = validate(SandboxWalletKeysCreate, await read_json_object(request, allow_empty=True))

    def work(session: Session) -> Any:
        return wallet_tokens.rotate_client_keys(session, slug, spec, context.clock.now(session))

    return _answer(await context.run(work), 201)


@router.post("/users")
async def create_user(request: Request) -> Response:
    """A wallet user (cardholder) of a merchant."""
    context = get_context(request)
    spec = validate(SandboxUserCreate, await read_json_object(request))

    def work(session: Session) -> Any:
        return wallet_users.create_user(session, spec, context.clock.now(session))

    return _answer(await context.run(work), 201)


@router.post("/cards")
async def create_stock_card(request: Request) -> Response:
    """An issued physical card no one holds yet (``inactive``), optionally preloaded."""
    context = get_context(request)
    spec = validate(SandboxStockCardCreate, await read_json_object(request))

    def work(session: Session) -> Any:
        return wallet_sandbox.create_stock_card(session, context.clock.now(session), spec)

    return _answer(await context.run(work), 201)


@router.post("/linking-tokens")
async def create_linking_token(request: Request) -> Response:
    """A temporary token for ``POST /rest/users/{userId}/linked-cards`` (single use, 10 minutes)."""
    context = get_context(request)
    spec = validate(SandboxLinkingTokenCreate, await read_json_object(request))

    def work(session: Session) -> Any:
        return wallet_sandbox.create_linking_token(session, context.clock.now(session), spec)

    return _answer(await context.run(work), 201)


@router.post("/cards/{card_id}/charges")
async def create_charge(card_id: str, request: Request) -> Response:
    """A card payment: an authorization (pending debit, 7 days) or, with ``capture: true``, a capture."""
    context = get_context(request)
    spec = validate(SandboxChargeCreate, await read_json_object(request))

    def work(session: Session) -> Any:
        return wallet_sandbox.authorize(session, context.clock.now(session), card_id, spec)

    return _answer(await context.run(work), 201)


@router.post("/charges/{charge_id}/capture")
async def capture_charge(charge_id: str, request: Request) -> Response:
    """Capture an authorization: the held amount leaves the balance."""
    context = get_context(request)

    def work(session: Session) -> Any:
        return wallet_sandbox.capture(session, context.clock.now(session), charge_id)

    return _answer(await context.run(work))


@router.post("/charges/{charge_id}/refunds")
async def create_refund(charge_id: str, request: Request) -> Response:
    """Refund (part of) a captured charge: a pending credit until cleared."""
    context = get_context(request)
    spec = validate(SandboxRefundCreate, await read_json_object(request, allow_empty=True))

    def work(session: Session) -> Any:
        return wallet_sandbox.create_refund(session, context.clock.now(session), charge_id, spec)

    return _answer(await context.run(work), 201)


@router.post("/refunds/{refund_id}/clear")
async def clear_refund(refund_id: str, request: Request) -> Response:
    """The refund's pending credit reaches the balance."""
    context = get_context(request)

    def work(session: Session) -> Any:
        return wallet_sandbox.clear_refund(session, context.clock.now(session), refund_id)

    return _answer(await context.run(work))


@router.get("/outbox")
async def outbox(request: Request, to: str | None = None) -> Response:
    """The emails (OTP codes) the sandbox would have sent, oldest first (``?to=`` filters)."""
    context = get_context(request)
    return _answer(await context.run(wallet_users.outbox, to))
