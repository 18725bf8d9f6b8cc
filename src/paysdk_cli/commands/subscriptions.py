"""``paysdk subscriptions``: card verification that creates a subscription, cancel, the notification
email and the payment history (spec 4.2; D138-D154).

Every command sends the wallet application token of the profile's stored wallet login (``paysdk wallet
login``, D138) to ``{base_url}/v1/subscriptions``. There is no on-demand charge (D154).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_wallet_client, state
from paysdk_cli._output import emit

__all__ = ["CHARGE_COLUMNS", "SUBSCRIPTION_COLUMNS", "app", "flat"]

app = new_app(
    "Subscriptions: verify a card to create one, cancel, change its email, payment history.\n\n"
    "Uses the profile's wallet application login (`paysdk wallet login`)."
)

#: The table columns of one subscription.
SUBSCRIPTION_COLUMNS = [
    "subUid",
    "status",
    "planId",
    "email",
    "nextRenewalDate",
    "card",
    "createdAt",
    "cancelledAt",
    "endedAt",
]
#: The table columns of a payment history (JSON has every field).
CHARGE_COLUMNS = [
    "createdAt",
    "chargeId",
    "source",
    "status",
    "amount",
    "currency",
    "period",
    "attempt",
    "renewalDate",
    "reason",
    "card",
]
_VERIFY_COLUMNS = ["uid", "reference", "status", "subUid", "URL", "expireAt"]

_SUB_UID = typer.Argument(help="The subscription's subUid.", metavar="SUB_UID")


def flat(model: Any) -> dict[str, Any]:
    """A subscription or charge as its wire mapping, plus ``card`` (``brand ****last4``) for tables."""
    data: dict[str, Any] = model.to_wire()
    for key in ("defaultPaymentMethod", "paymentMethod"):
        method = data.get(key)
        if isinstance(method, dict):
            data["card"] = f"{method.get('brand', '')} ****{method.get('last4', '')}".strip()
    return data


def _show(ctx: typer.Context, subscription: Any) -> None:
    st = state(ctx)
    data = flat(subscription)
    if st.output.value == "json":
        data.pop("card", None)
    emit(st.output, data, columns=SUBSCRIPTION_COLUMNS, title=f"Subscription {data['subUid']}")


@app.command("verify-card")
def verify_card(
    ctx: typer.Context,
    plan_id: Annotated[
        str | None, typer.Option("--plan-id", help="The plan to subscribe to (required unless --no-create).")
    ] = None,
    email: Annotated[
        str | None,
        typer.Option("--email", help="The subscription's notification email (required unless --no-create)."),
    ] = None,
    create: Annotated[
        bool,
        typer.Option(
            "--create/--no-create",
            help="Create the subscription once the card verifies (default), or only verify the card.",
        ),
    ] = True,
    external_id: Annotated[
        str | None, typer.Option("--external-id", help="Your id, echoed in the verification's callback.")
    ] = None,
) -> None:
    """Start a card verification: prints the hosted checkout URL the customer pays (nothing is
    charged) and the subUid the subscription will have once the card verifies."""
    st = state(ctx)
    with open_wallet_client(st) as client:
        result = client.subscriptions.verify_card(
            should_create_subscription=create,
            plan_id=plan_id,
            email=email,
            external_id=external_id,
        )
    emit(st.output, result.to_wire(), columns=_VERIFY_COLUMNS, title="Card verification")


@app.command("cancel")
def cancel(ctx: typer.Context, sub_uid: Annotated[str, _SUB_UID]) -> None:
    """Cancel a subscription at once (again on a cancelled one: no change)."""
    with open_wallet_client(state(ctx)) as client:
        subscription = client.subscriptions.cancel(sub_uid)
    _show(ctx, subscription)


@app.command("update-email")
def update_email(
    ctx: typer.Context,
    sub_uid: Annotated[str, _SUB_UID],
    email: Annotated[str, typer.Argument(help="The new notification email.", metavar="EMAIL")],
) -> None:
    """Change a subscription's notification email (the only field that can change)."""
    with open_wallet_client(state(ctx)) as client:
        subscription = client.subscriptions.update_email(sub_uid, email)
    _show(ctx, subscription)


@app.command("history")
def history(ctx: typer.Context, sub_uid: Annotated[str, _SUB_UID]) -> None:
    """A subscription's payment history: every charge, oldest first, declined attempts included."""
    st = state(ctx)
    with open_wallet_client(st) as client:
        charges = client.subscriptions.payment_history(sub_uid)
    rows = [flat(charge) for charge in charges]
    if st.output.value == "json":
        for row in rows:
            row.pop("card", None)
    emit(st.output, rows, columns=CHARGE_COLUMNS, title=f"Payment history of {sub_uid}")
