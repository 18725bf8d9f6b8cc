"""Wallet cards, funds, transfers, CVV and permissions under ``/rest`` (spec 2.5, 4.3; D37, D40-D44).

HTTP only: bodies are parsed raw (:func:`~paysdk.server.services.wallet_common.parse_wallet_body`), the
bearer is verified and the service runs in the same transaction (:data:`~._bearer.WalletDb`); the rules
live in :mod:`paysdk.server.services.wallet_cards` (cards), :mod:`~paysdk.server.services.wallet_funds`
(funds, transfers) and :mod:`~paysdk.server.services.wallet_permissions`. Path and query values are
taken as strings and checked by the service, so no input reaches FastAPI's own validation (and its 422
shape).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from paysdk.contracts.wallet import (
    AliasUpdate,
    Card,
    CardSummary,
    Cvv,
    CvvViewToken,
    FundsRequest,
    FundsResult,
    IssueVirtualCardRequest,
    LinkCardRequest,
    LinkExternalCardRequest,
    Movement,
    PermissionGrant,
    PermissionRecord,
    PinRequest,
    TransferRequest,
    TransferResult,
)
from paysdk.server.context import get_context
from paysdk.server.ledger_batches import ledger_batches
from paysdk.server.routers._bearer import WalletDb, wallet_db
from paysdk.server.routers._common import WALLET_ERRORS, bearer, data, header, lane, only, route
from paysdk.server.services import wallet_cards as cards
from paysdk.server.services import wallet_funds, wallet_permissions
from paysdk.server.services import wallet_ledger as ledger
from paysdk.server.services.wallet_common import parse_date, parse_wallet_body

__all__ = ["router"]

router = APIRouter(tags=["wallet: cards"])

UserId = Annotated[str, Path(alias="userId", description="The cardholder's authUserId")]
AuthUserId = Annotated[str, Path(alias="authUserId", description="The authorized user's authUserId")]
CardId = Annotated[str, Path(alias="cardId")]
StartDate = Annotated[str | None, Query(alias="startDate", description="YYYY-MM-DD (client timezone)")]
EndDate = Annotated[str | None, Query(alias="endDate", description="YYYY-MM-DD, inclusive")]
_CARD_ERRORS = only(WALLET_ERRORS, 400, 403, 404, 409)


# ------------------------------------------------------------------------------------- users' cards


@router.get(
    "/users/{userId}/cards",
    **route(
        "List a user's cards (getCards)",
        auth="wallet",
        answer=Card,
        many=True,
        envelope=True,
        errors=only(WALLET_ERRORS, 403, 404),
    ),
)
async def list_cards(user_id: UserId, db: WalletDb) -> Response:
    """The cards the user holds (an authorized user sees those it may ``getCards``)."""
    return data(await db.run(cards.list_cards, db.session, db.caller, user_id))


@router.get(
    "/users/{userId}/cards/summary",
    **route(
        "A user's card figures for a period (getAllTransfersByDate)",
        auth="wallet",
        answer=CardSummary,
        envelope=True,
        errors=only(WALLET_ERRORS, 400, 403, 404),
    ),
)
async def card_summary(
    user_id: UserId, db: WalletDb, start_date: StartDate = None, end_date: EndDate = None
) -> Response:
    """Opening and closing balance, credits, debits and movement count per card; both dates required."""
    start = parse_date(start_date, "startDate", required=True)
    end = parse_date(end_date, "endDate", required=True)
    assert start is not None
    assert end is not None

    return data(await db.run(cards.summary, db.session, db.caller, user_id, start, end))


@router.post(
    "/users/{userId}/cards",
    **route(
        "Link an issued (stock) card to a user",
        auth="wallet",
        body=LinkCardRequest,
        answer=Card,
        envelope=True,
        errors=only(WALLET_ERRORS, 400, 404, 409),
    ),
)
async def link_card(
    request: Request,
    user_id: UserId,
    db: WalletDb,
    client_id: Annotated[str | None, Query(alias="clientId")] = None,
) -> Response:
    """Give an unassigned physical card a holder (application token; ``clientId`` required)."""
    body = parse_wallet_body(LinkCardRequest, await request.body())

    return data(await db.run(cards.link_stock, db.session, db.now, db.caller, user_id, client_id, body))


@router.post(
    "/users/{userId}/cards/virtuals",
    **route(
        "Issue a virtual card",
        auth="wallet",
        body=IssueVirtualCardRequest,
        body_required=False,  # no body: a card of the client's first currency
        answer=Card,
        envelope=True,
        status=201,
        errors=only(WALLET_ERRORS, 400, 404),
    ),
)
async def issue_virtual(request: Request, user_id: UserId, db: WalletDb) -> Response:
    """A new active virtual card with balance 0 (application token)."""
    body = parse_wallet_body(IssueVirtualCardRequest, await request.body(), allow_empty=True)

    return data(await db.run(cards.issue_virtual, db.session, db.now, db.caller, user_id, body), 201)


@router.post(
    "/users/{userId}/linked-cards",
    **route(
        "Link a third-party card through a temporary token",
        auth="wallet",
        body=LinkExternalCardRequest,
        answer=Card,
        envelope=True,
        status=201,
        errors=only(WALLET_ERRORS, 400, 403, 404),
    ),
)
async def link_external(request: Request, user_id: UserId, db: WalletDb) -> Response:
    """Link an external card (application token or the user's own session)."""
    body = parse_wallet_body(LinkExternalCardRequest, await request.body())

    return data(await db.run(cards.link_external, db.session, db.now, db.caller, user_id, body), 201)


# ------------------------------------------------------------------------------ permissions (4.3)
# The literal ``/cards/users/...`` routes come before ``/cards/{cardId}/...`` ones.


@router.patch(
    "/cards/users/permissions/{id}",
    **route(
        "Update a permission record",
        auth="wallet",
        body=PermissionGrant,
        answer=PermissionRecord,
        envelope=True,
        errors=only(WALLET_ERRORS, 400, 403, 404),
    ),
)
async def update_permissions(
    request: Request, permission_id: Annotated[str, Path(alias="id")], db: WalletDb
) -> Response:
    """Replace the permission set of a record (application or the card's holder)."""
    body = parse_wallet_body(PermissionGrant, await request.body())

    return data(
        await db.run(
            wallet_permissions.update_permissions, db.session, db.now, db.caller, permission_id, body
        )
    )


@router.get(
    "/cards/users/{authUserId}/permissions",
    **route(
        "List a user's card permissions",
        auth="wallet",
        answer=PermissionRecord,
        many=True,
        envelope=True,
        errors=only(WALLET_ERRORS, 403, 404),
    ),
)
async def user_permissions(user_id: AuthUserId, db: WalletDb) -> Response:
    """Every permission record granted to the user (application or that user)."""
    return data(await db.run(wallet_permissions.list_user_permissions, db.session, db.caller, user_id))


@router.get(
    "/cards/{cardId}/users/permissions",
    **route(
        "List every permission on a card",
        auth="wallet",
        answer=PermissionRecord,
        many=True,
        envelope=True,
        errors=only(WALLET_ERRORS, 403, 404),
    ),
)
async def card_permissions(card_id: CardId, db: WalletDb) -> Response:
    """Every permission record of the card (application or the card's holder)."""
    return data(await db.run(wallet_permissions.list_card_permissions, db.session, db.caller, card_id))


@router.post(
    "/cards/{cardId}/users/{authUserId}/permissions",
    **route(
        "Grant permissions on a card",
        auth="wallet",
        body=PermissionGrant,
        answer=PermissionRecord,
        envelope=True,
        status=201,
        errors=only(WALLET_ERRORS, 400, 403, 404),
    ),
)
async def grant_permissions(request: Request, card_id: CardId, user_id: AuthUserId, db: WalletDb) -> Response:
    """Grant (or replace) a user's permissions on the card: ``201`` created, ``200`` replaced."""
    body = parse_wallet_body(PermissionGrant, await request.body())

    record, created = await db.run(
        wallet_permissions.grant_permissions, db.session, db.now, db.caller, card_id, user_id, body
    )
    return data(record, 201 if created else 200)


@router.get(
    "/cards/{cardId}/users/{authUserId}/permissions",
    **route(
        "List one user's permissions on one card",
        auth="wallet",
        answer=PermissionRecord,
        many=True,
        envelope=True,
        errors=only(WALLET_ERRORS, 403, 404),
    ),
)
async def one_permissions(card_id: CardId, user_id: AuthUserId, db: WalletDb) -> Response:
    """The user's record on the card (application, the holder or that user)."""
    return data(
        await db.run(wallet_permissions.list_one_permissions, db.session, db.caller, card_id, user_id)
    )


# ------------------------------------------------------------------------------------------- cards


@router.get(
    "/cards/{cardId}",
    **route(
        "Card details (checkCard)",
        auth="wallet",
        answer=Card,
        envelope=True,
        errors=only(WALLET_ERRORS, 403, 404),
    ),
)
async def get_card(card_id: CardId, db: WalletDb) -> Response:
    """The card with its balance, available balance and pending amounts."""
    return data(await db.run(cards.get_card, db.session, db.caller, card_id))


@router.patch(
    "/cards/{cardId}",
    **route(
        "Rename a card (updateAlias)",
        auth="wallet",
        body=AliasUpdate,
        answer=Card,
        envelope=True,
        errors=_CARD_ERRORS,
    ),
)
async def set_alias(request: Request, card_id: CardId, db: WalletDb) -> Response:
    """Set the card's alias."""
    body = parse_wallet_body(AliasUpdate, await request.body())

    return data(await db.run(cards.set_alias, db.session, db.caller, card_id, body))


@router.post(
    "/cards/{cardId}/block",
    **route("Block a card (updateStatus)", auth="wallet", answer=Card, envelope=True, errors=_CARD_ERRORS),
)
async def block(card_id: CardId, db: WalletDb) -> Response:
    """``active`` -> ``blocked`` (D42)."""
    return data(await db.run(cards.set_status, db.session, db.caller, card_id, True))


@router.post(
    "/cards/{cardId}/unblock",
    **route("Unblock a card (updateStatus)", auth="wallet", answer=Card, envelope=True, errors=_CARD_ERRORS),
)
async def unblock(card_id: CardId, db: WalletDb) -> Response:
    """``blocked`` -> ``active`` (D42)."""
    return data(await db.run(cards.set_status, db.session, db.caller, card_id, False))


@router.post(
    "/cards/{cardId}/activation",
    **route("Activate a card (activation)", auth="wallet", answer=Card, envelope=True, errors=_CARD_ERRORS),
)
async def activation(card_id: CardId, db: WalletDb) -> Response:
    """``inactive`` -> ``active`` (D42)."""
    return data(await db.run(cards.activate, db.session, db.caller, card_id))


@router.put(
    "/cards/{cardId}/pin",
    **route(
        "Set the PIN (assignPIN)",
        auth="wallet",
        body=PinRequest,
        answer=Card,
        envelope=True,
        errors=_CARD_ERRORS,
    ),
)
async def set_pin(request: Request, card_id: CardId, db: WalletDb) -> Response:
    """Set a 4-digit PIN (only its hash is kept)."""
    body = parse_wallet_body(PinRequest, await request.body())

    return data(await db.run(cards.set_pin, db.session, db.caller, card_id, body))


@router.get(
    "/cards/{cardId}/movements",
    **route(
        "A card's movements (getAllTransfersByDate)",
        auth="wallet",
        answer=Movement,
        many=True,
        envelope=True,
        errors=only(WALLET_ERRORS, 400, 403, 404),
    ),
)
async def movements(
    card_id: CardId, db: WalletDb, start_date: StartDate = None, end_date: EndDate = None
) -> Response:
    """Movements oldest first, optionally within ``startDate``..``endDate`` (inclusive)."""
    start = parse_date(start_date, "startDate", required=False)
    end = parse_date(end_date, "endDate", required=False)

    return data(await db.run(cards.list_movements, db.session, db.caller, card_id, start, end))


@router.post(
    "/cards/{cardId}/funds",
    **route(
        "Add or withdraw funds (issuer)",
        auth="wallet",
        body=FundsRequest,
        answer=FundsResult,
        envelope=True,
        errors=only(WALLET_ERRORS, 400, 404, 409, 422),
    ),
)
async def funds(request: Request, card_id: CardId, db: WalletDb) -> Response:
    """Atomic add, or a withdrawal guarded by the available balance (``422 / 7303``).

    \f
    Served by the ledger's fast path (:func:`paysdk.server.services.wallet_ledger.fund`, one conditional
    statement, in batched commits, D256-D258); the ordinary path when it answers ``SLOW``. A route at the
    head of the app's routes (:mod:`paysdk.server.hotpath.lanes`) hands the request to :func:`funds_lane`
    without FastAPI's dependency machinery (D261)."""
    body = parse_wallet_body(FundsRequest, await request.body())
    context = get_context(request)
    fast = await ledger_batches(context).fund(bearer(request), card_id, body)
    if not isinstance(fast, ledger.Slow):
        return data(fast)

    return data(await db.run(wallet_funds.funds, db.session, db.now, db.caller, card_id, body))


async def funds_lane(request: Request) -> Response:
    """:func:`funds` as the parametrized fast lane calls it (the card from the path)."""
    return await funds(request, request.path_params["cardId"], await wallet_db(request))


lane(funds, funds_lane)


@router.post(
    "/cards/{cardId}/transfers",
    **route(
        "Transfer to another card (transferBetweenCards)",
        auth="wallet",
        body=TransferRequest,
        answer=TransferResult,
        envelope=True,
        status=201,
        errors=only(WALLET_ERRORS, 400, 403, 404, 409, 422),
    ),
)
async def transfer(request: Request, card_id: CardId, db: WalletDb) -> Response:
    """Move money between two cards of the same currency: both legs in one transaction."""
    body = parse_wallet_body(TransferRequest, await request.body())

    return data(await db.run(wallet_funds.transfer, db.session, db.now, db.caller, card_id, body), 201)


@router.post(
    "/cards/{cardId}/cvv/view-token",
    **route(
        "Ask for a CVV view token (user session, checkCvv)",
        auth="wallet",
        answer=CvvViewToken,
        envelope=True,
        errors=_CARD_ERRORS,
    ),
)
async def cvv_view_token(card_id: CardId, db: WalletDb) -> Response:
    """A single-use token valid 60 seconds (D44); application tokens get ``403 / 7502``."""
    return data(await db.run(cards.cvv_view_token, db.session, db.now, db.caller, card_id))


@router.get(
    "/cards/{cardId}/cvv",
    **route(
        "Read the CVV once (X-View-Token)", auth="wallet", answer=Cvv, envelope=True, errors=_CARD_ERRORS
    ),
)
async def read_cvv(request: Request, card_id: CardId, db: WalletDb) -> Response:
    """The CVV, with the same user's bearer and the view token in ``X-View-Token`` (D44)."""
    view_token = header(request, "x-view-token")

    response = data(await db.run(cards.read_cvv, db.session, db.now, db.caller, card_id, view_token))
    response.headers["Cache-Control"] = "no-store"
    return response
