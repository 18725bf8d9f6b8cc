"""Control-plane additions of the wallet under ``/_sandbox`` (docs/wallet.md; D27, D36, D39, D43).

Left out of ``/openapi.json``; never logged, faulted or idempotent (like the rest of ``/_sandbox``).
Bare camelCase answers; creations answer ``201``; contract errors ``409 / 5000`` (D27); wallet rules
keep their wallet codes (an authorization beyond the available balance is ``422 / 7303``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel
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
from paysdk.server.errors import JSONResponse
from paysdk.server.routers._transactions import Db
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
async def rotate_keys(slug: str, request: Request, db: Db) -> Response:
    """Rotate the client's wallet signing key: generate one (private key answered once) or register one."""
    spec = validate(SandboxWalletKeysCreate, await read_json_object(request, allow_empty=True))

    return _answer(await db.run(wallet_tokens.rotate_client_keys, db.session, slug, spec, db.now), 201)


@router.post("/users")
async def create_user(request: Request, db: Db) -> Response:
    """A wallet user (cardholder) of a merchant."""
    spec = validate(SandboxUserCreate, await read_json_object(request))

    return _answer(await db.run(wallet_users.create_user, db.session, spec, db.now), 201)


@router.post("/cards")
async def create_stock_card(request: Request, db: Db) -> Response:
    """An issued physical card no one holds yet (``inactive``), optionally preloaded."""
    spec = validate(SandboxStockCardCreate, await read_json_object(request))

    return _answer(await db.run(wallet_sandbox.create_stock_card, db.session, db.now, spec), 201)


@router.post("/linking-tokens")
async def create_linking_token(request: Request, db: Db) -> Response:
    """A temporary token for ``POST /rest/users/{userId}/linked-cards`` (single use, 10 minutes)."""
    spec = validate(SandboxLinkingTokenCreate, await read_json_object(request))

    return _answer(await db.run(wallet_sandbox.create_linking_token, db.session, db.now, spec), 201)


@router.post("/cards/{card_id}/charges")
async def create_charge(card_id: str, request: Request, db: Db) -> Response:
    """A card payment: an authorization (pending debit, 7 days) or, with ``capture: true``, a capture."""
    spec = validate(SandboxChargeCreate, await read_json_object(request))

    return _answer(await db.run(wallet_sandbox.authorize, db.session, db.now, card_id, spec), 201)


@router.post("/charges/{charge_id}/capture")
async def capture_charge(charge_id: str, db: Db) -> Response:
    """Capture an authorization: the held amount leaves the balance."""
    return _answer(await db.run(wallet_sandbox.capture, db.session, db.now, charge_id))


@router.post("/charges/{charge_id}/refunds")
async def create_refund(charge_id: str, request: Request, db: Db) -> Response:
    """Refund (part of) a captured charge: a pending credit until cleared."""
    spec = validate(SandboxRefundCreate, await read_json_object(request, allow_empty=True))

    return _answer(await db.run(wallet_sandbox.create_refund, db.session, db.now, charge_id, spec), 201)


@router.post("/refunds/{refund_id}/clear")
async def clear_refund(refund_id: str, db: Db) -> Response:
    """The refund's pending credit reaches the balance."""
    return _answer(await db.run(wallet_sandbox.clear_refund, db.session, db.now, refund_id))


@router.get("/outbox")
async def outbox(db: Db, to: str | None = None) -> Response:
    """The emails (OTP codes) the sandbox would have sent, oldest first (``?to=`` filters)."""
    return _answer(await db.run(wallet_users.outbox, db.session, to))
