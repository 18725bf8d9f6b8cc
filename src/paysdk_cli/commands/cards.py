"""``paysdk cards``: a user's cards, issuing and linking, status, PIN and movements (spec 2.5, 4.3).

Every command acts as the application (``paysdk wallet login``) or, with ``--as-user USERNAME``, as a
user session stored by ``paysdk users login`` (then ``--user-id`` defaults to that user).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import require_merchant, state
from paysdk_cli._output import emit
from paysdk_cli._params import parse_date, read_secret
from paysdk_cli._wallet import AsUser, wallet_api

__all__ = [
    "CARD_COLUMNS",
    "CARD_LIST_COLUMNS",
    "CARD_LIST_KEEP",
    "MOVEMENT_COLUMNS",
    "MOVEMENT_KEEP",
    "app",
    "wire",
]

app = new_app(
    "Wallet cards: list, issue, link, block, movements.\n\n"
    "Acts as the application, or as a stored user session with --as-user USERNAME."
)

CARD_COLUMNS = [
    "cardId",
    "maskedPan",
    "type",
    "status",
    "currency",
    "balance",
    "availableBalance",
    "pendingDebits",
    "pendingCredits",
    "alias",
    "holderId",
]
#: A list of cards in a table: what fits 80 columns (JSON always has every field).
CARD_LIST_COLUMNS = [
    "cardId",
    "maskedPan",
    "type",
    "status",
    "currency",
    "balance",
    "availableBalance",
    "alias",
]
#: What a narrow terminal never hides of a card list (D430): its state and its money (cardId, an ID, stays).
CARD_LIST_KEEP = ["status", "currency", "balance"]
MOVEMENT_COLUMNS = [
    "createdAt",
    "type",
    "direction",
    "amount",
    "balanceAfter",
    "reference",
    "counterpartCardId",
]

#: What a narrow terminal never hides of a movement (D430): a debit and a credit must look different.
MOVEMENT_KEEP = ["type", "direction", "amount"]

_USER_ID = typer.Option("--user-id", help="The cardholder's userId (default: the --as-user user).")
_CARD_ID = typer.Argument(help="The card's cardId.")


def wire(model: Any) -> dict[str, Any]:
    """A contract model as its camelCase wire mapping (Decimals stay exact).

    One rename: a user's id is printed as ``userId``, the value ``--user-id`` takes (the SDK's
    ``user_id``), where the wire says ``authUserId`` (cardholders and permission records).
    """
    data: dict[str, Any] = _user_id_named(model.to_wire())
    return data


def _user_id_named(value: Any) -> Any:
    if isinstance(value, dict):
        return {("userId" if k == "authUserId" else k): _user_id_named(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_user_id_named(item) for item in value]
    return value


def _card(st: Any, card: Any) -> None:
    emit(st.output, wire(card), columns=CARD_COLUMNS, title=f"Card {card.card_id}")


@app.command("list")
def list_cards(
    ctx: typer.Context, user_id: Annotated[str | None, _USER_ID] = None, as_user: AsUser = None
) -> None:
    """List a user's cards with their balances."""
    st = state(ctx)
    with wallet_api(st, as_user) as call:
        uid = call.default_user_id(user_id)
        cards = call(lambda w: w.cards.list(uid))
    emit(
        st.output,
        [wire(card) for card in cards],
        columns=CARD_LIST_COLUMNS,
        keep=CARD_LIST_KEEP,
        title="Cards",
    )


@app.command("summary")
def summary(
    ctx: typer.Context,
    start_date: Annotated[str, typer.Option("--start-date", help="First day, YYYY-MM-DD.")],
    end_date: Annotated[str, typer.Option("--end-date", help="Last day (inclusive), YYYY-MM-DD.")],
    user_id: Annotated[str | None, _USER_ID] = None,
    as_user: AsUser = None,
) -> None:
    """Aggregate figures of a user's cards for a period (opening, credits, debits, closing)."""
    st = state(ctx)
    start = parse_date(start_date, "--start-date")
    end = parse_date(end_date, "--end-date")
    with wallet_api(st, as_user) as call:
        uid = call.default_user_id(user_id)
        result = call(lambda w: w.cards.summary(uid, start, end))
    data = wire(result)
    if st.output.value == "json":
        emit(st.output, data)
    else:
        emit(
            st.output,
            data["cards"],
            columns=[
                "cardId",
                "currency",
                "openingBalance",
                "credits",
                "debits",
                "closingBalance",
                "movements",
            ],
            title=f"Summary {data['startDate']} .. {data['endDate']}",
        )


@app.command("issue")
def issue(
    ctx: typer.Context,
    user_id: Annotated[str | None, _USER_ID] = None,
    currency: Annotated[
        str | None, typer.Option("--currency", help="GTQ, USD, ... (default: the merchant's first).")
    ] = None,
    alias: Annotated[str | None, typer.Option("--alias", help="A name for the card.")] = None,
    as_user: AsUser = None,
) -> None:
    """Issue a virtual card to a user (balance 0, active)."""
    st = state(ctx)
    with wallet_api(st, as_user) as call:
        uid = call.default_user_id(user_id)
        card = call(lambda w: w.cards.issue_virtual(uid, currency=currency, alias=alias))
    _card(st, card)


@app.command("link")
def link(
    ctx: typer.Context,
    card_id: Annotated[str, _CARD_ID],
    user_id: Annotated[str | None, _USER_ID] = None,
    client_id: Annotated[
        str | None, typer.Option("--client-id", help="Merchant slug (default: the profile's merchant).")
    ] = None,
    as_user: AsUser = None,
) -> None:
    """Link an issued physical card that has no holder yet to a user (it starts inactive)."""
    st = state(ctx)
    slug = require_merchant(st, client_id)
    with wallet_api(st, as_user) as call:
        uid = call.default_user_id(user_id)
        card = call(lambda w: w.cards.link(uid, card_id, slug))
    _card(st, card)


@app.command("link-external")
def link_external(
    ctx: typer.Context,
    user_id: Annotated[str | None, _USER_ID] = None,
    token_stdin: Annotated[
        bool,
        typer.Option(
            "--token-stdin", help="Read the temporary linking token from standard input, not a prompt."
        ),
    ] = False,
    alias: Annotated[str | None, typer.Option("--alias", help="A name for the card.")] = None,
    as_user: AsUser = None,
) -> None:
    """Link a third-party card through its temporary linking token (never an argument)."""
    st = state(ctx)
    token = read_secret("Linking token", from_stdin=token_stdin, instead="--token-stdin").strip()
    with wallet_api(st, as_user) as call:
        uid = call.default_user_id(user_id)
        card = call(lambda w: w.cards.link_external(uid, token, alias=alias))
    _card(st, card)


@app.command("show")
def show(ctx: typer.Context, card_id: Annotated[str, _CARD_ID], as_user: AsUser = None) -> None:
    """Show one card (needs checkCard as a user)."""
    st = state(ctx)
    with wallet_api(st, as_user) as call:
        card = call(lambda w: w.cards.get(card_id))
    _card(st, card)


@app.command("alias")
def alias(
    ctx: typer.Context,
    card_id: Annotated[str, _CARD_ID],
    new_alias: Annotated[str, typer.Option("--alias", help="The new name (1-64 characters).")],
    as_user: AsUser = None,
) -> None:
    """Rename a card (needs updateAlias as a user)."""
    st = state(ctx)
    with wallet_api(st, as_user) as call:
        card = call(lambda w: w.cards.update_alias(card_id, new_alias))
    _card(st, card)


@app.command("block")
def block(ctx: typer.Context, card_id: Annotated[str, _CARD_ID], as_user: AsUser = None) -> None:
    """Block a card: it refuses debits and transfers until unblocked (updateStatus)."""
    st = state(ctx)
    with wallet_api(st, as_user) as call:
        card = call(lambda w: w.cards.block(card_id))
    _card(st, card)


@app.command("unblock")
def unblock(ctx: typer.Context, card_id: Annotated[str, _CARD_ID], as_user: AsUser = None) -> None:
    """Unblock a blocked card (updateStatus)."""
    st = state(ctx)
    with wallet_api(st, as_user) as call:
        card = call(lambda w: w.cards.unblock(card_id))
    _card(st, card)


@app.command("activate")
def activate(ctx: typer.Context, card_id: Annotated[str, _CARD_ID], as_user: AsUser = None) -> None:
    """Activate a linked physical card (activation)."""
    st = state(ctx)
    with wallet_api(st, as_user) as call:
        card = call(lambda w: w.cards.activate(card_id))
    _card(st, card)


@app.command("set-pin")
def set_pin(
    ctx: typer.Context,
    card_id: Annotated[str, _CARD_ID],
    pin_stdin: Annotated[
        bool, typer.Option("--pin-stdin", help="Read the 4-digit PIN from standard input, not a prompt.")
    ] = False,
    as_user: AsUser = None,
) -> None:
    """Set a card's 4-digit PIN, read from a hidden prompt or standard input (assignPIN)."""
    st = state(ctx)
    pin = read_secret("PIN", from_stdin=pin_stdin, confirm=not pin_stdin, instead="--pin-stdin").strip()
    with wallet_api(st, as_user) as call:
        card = call(lambda w: w.cards.set_pin(card_id, pin))
    _card(st, card)


@app.command("movements")
def movements(
    ctx: typer.Context,
    card_id: Annotated[str, _CARD_ID],
    start_date: Annotated[str | None, typer.Option("--start-date", help="First day, YYYY-MM-DD.")] = None,
    end_date: Annotated[
        str | None, typer.Option("--end-date", help="Last day (inclusive), YYYY-MM-DD.")
    ] = None,
    as_user: AsUser = None,
) -> None:
    """List a card's movements: funds, withdrawals, transfers, captures, refunds."""
    st = state(ctx)
    start = parse_date(start_date, "--start-date")
    end = parse_date(end_date, "--end-date")
    with wallet_api(st, as_user) as call:
        result = call(lambda w: w.cards.movements(card_id, start_date=start, end_date=end))
    emit(
        st.output,
        [wire(m) for m in result],
        columns=MOVEMENT_COLUMNS,
        keep=MOVEMENT_KEEP,
        title=f"Movements of {card_id}",
    )
