"""Subscriptions on ``{base_url}/v1/subscriptions`` (spec 4.2; decisions D138-D165): HTTP only, the logic
is in :mod:`paysdk.server.services.subscription_api` (on top of :mod:`paysdk.server.services.subscriptions`;
``batch_charges`` for the CSV upload).

Every call takes the wallet application access token as bearer (D138: a user token is ``401 / 7106``).
Answers are ``{"success": true, "message", "data"}`` (spec 2.6, D139); errors D1's body: ``400`` with
``ownCode`` null naming the field, ``404`` for an unknown (or another client's) subscription or plan,
``409`` for a state conflict.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from paysdk.contracts.subscriptions import (
    Subscription,
    SubscriptionCharge,
    SubscriptionEmailUpdate,
    VerifyCard,
    VerifyCardRequest,
)
from paysdk.server.routers._bearer import WalletApplicationDb
from paysdk.server.routers._common import enveloped, only, route, webview_url
from paysdk.server.services import subscription_api

__all__ = ["SUBSCRIPTION_ERRORS", "router"]

router = APIRouter(tags=["subscriptions"])

#: D1 error answers of the subscription routes (D139).
SUBSCRIPTION_ERRORS: dict[int, str] = {
    400: "Malformed body or invalid field (ownCode null, naming it; a body that is not a JSON object "
    "names body).",
    404: "Unknown subscription or plan, or another client's (ownCode null, naming subscriptionId or planId).",
    409: "State conflict (ownCode null): the subscription is inactive or expired.",
}

_BASE_PATH = "/v1/subscriptions"


def _shown(subscription: Subscription) -> dict[str, Any]:
    """A subscription as answered (D153): unset optionals left out, but ``nextRenewalDate`` always there
    (``null`` unless active)."""
    return {**subscription.to_wire(), "nextRenewalDate": subscription.next_renewal_date}


@router.post(
    f"{_BASE_PATH}/verify-card",
    **route(
        "Verify a card on the hosted checkout (and create the subscription)",
        auth="wallet-application",
        body=VerifyCardRequest,
        answer=VerifyCard,
        envelope="subscription",
        status=201,
        errors=only(SUBSCRIPTION_ERRORS, 400, 404),
    ),
)
async def verify_card(request: Request, db: WalletApplicationDb) -> Response:
    """A card-verification transaction (``0.00``, 24 h) whose hosted checkout is ``URL`` (D140); with
    ``shouldCreateSubscription`` true the subscription ``subUid`` is created ``active`` once the card
    verifies."""
    body = subscription_api.parse_body(VerifyCardRequest, await request.body())
    checkout = webview_url(request)

    result = await db.run(subscription_api.verify_card, db.session, db.now, db.caller, body, checkout)
    return enveloped(result, "Card verification created: complete it on the hosted checkout.", 201)


@router.delete(
    f"{_BASE_PATH}/{{subUid}}",
    **route(
        "Cancel a subscription at once",
        auth="wallet-application",
        answer=Subscription,
        envelope="subscription",
        errors=only(SUBSCRIPTION_ERRORS, 404, 409),
    ),
)
async def cancel(subUid: str, db: WalletApplicationDb) -> Response:
    """``active`` becomes ``cancelled`` at once; a ``cancelled`` one answers unchanged (D152)."""
    return enveloped(
        _shown(await db.run(subscription_api.cancel, db.session, db.now, db.caller, subUid)),
        "Subscription cancelled.",
    )


@router.put(
    _BASE_PATH,
    **route(
        "Change a subscription's notification email",
        auth="wallet-application",
        body=SubscriptionEmailUpdate,
        answer=Subscription,
        envelope="subscription",
        errors=only(SUBSCRIPTION_ERRORS, 400, 404),
    ),
)
async def update_email(request: Request, db: WalletApplicationDb) -> Response:
    """Body exactly ``{subscriptionId, email}``: any other field is ``400`` naming it (D151)."""
    body = subscription_api.parse_body(
        SubscriptionEmailUpdate, await request.body(), allowed=subscription_api.EMAIL_UPDATE_FIELDS
    )

    subscription = await db.run(subscription_api.update_email, db.session, db.now, db.caller, body)
    return enveloped(_shown(subscription), "Notification email updated.")


@router.get(
    f"{_BASE_PATH}/payment-history",
    **route(
        "A subscription's payment history",
        auth="wallet-application",
        answer=SubscriptionCharge,
        many=True,
        envelope="subscription",
        errors=only(SUBSCRIPTION_ERRORS, 400, 404),
    ),
)
async def payment_history(
    db: WalletApplicationDb,
    subscriptionId: str | None = Query(default=None, description="The subscription (its subUid)."),
) -> Response:
    """Every charge of the subscription, oldest first, a flat array without paging (D150)."""
    return enveloped(
        await db.run(subscription_api.payment_history, db.session, db.caller, subscriptionId),
        "Payment history.",
    )
