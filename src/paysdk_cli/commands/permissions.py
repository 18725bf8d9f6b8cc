"""``paysdk permissions grant | update | list``: what authorized users may do on a card (spec 2.5, D40)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import emit
from paysdk_cli._wallet import AsUser, wallet_api
from paysdk_cli.commands.cards import wire

__all__ = ["Permission", "app"]

app = new_app(
    "Card permissions of authorized users.\n\nGranted by the application or the card's owner (--as-user)."
)


class Permission(StrEnum):
    """The nine card permissions (spec 2.5; mirrors paysdk.contracts.wallet.CardPermissionType)."""

    checkCard = "checkCard"
    checkCvv = "checkCvv"
    updateAlias = "updateAlias"
    updateStatus = "updateStatus"
    assignPIN = "assignPIN"
    getCards = "getCards"
    getAllTransfersByDate = "getAllTransfersByDate"
    transferBetweenCards = "transferBetweenCards"
    activation = "activation"


_COLUMNS = ["id", "cardId", "userId", "permissions", "createdAt", "updatedAt"]
_PERMISSION = typer.Option("--permission", "-p", help="A card permission, repeatable.", case_sensitive=True)


@app.command("grant")
def grant(
    ctx: typer.Context,
    card_id: Annotated[str, typer.Argument(help="The card's cardId.")],
    user_id: Annotated[str, typer.Option("--user-id", help="The authorized user's userId.")],
    permission: Annotated[list[Permission], _PERMISSION],
    as_user: AsUser = None,
) -> None:
    """Grant permissions on a card to an authorized user."""
    st = state(ctx)
    values = [p.value for p in dict.fromkeys(permission)]
    with wallet_api(st, as_user) as call:
        record = call(lambda w: w.permissions.grant(card_id, user_id, values))
    emit(st.output, wire(record), columns=_COLUMNS, title=f"Permission {record.id}")


@app.command("update")
def update(
    ctx: typer.Context,
    permission_id: Annotated[str, typer.Argument(help="The permission record's id.")],
    permission: Annotated[list[Permission], _PERMISSION],
    as_user: AsUser = None,
) -> None:
    """Replace the permissions of a permission record."""
    st = state(ctx)
    values = [p.value for p in dict.fromkeys(permission)]
    with wallet_api(st, as_user) as call:
        record = call(lambda w: w.permissions.update(permission_id, values))
    emit(st.output, wire(record), columns=_COLUMNS, title=f"Permission {record.id}")


@app.command("list")
def list_permissions(
    ctx: typer.Context,
    card_id: Annotated[str | None, typer.Option("--card-id", help="Permissions on this card.")] = None,
    user_id: Annotated[
        str | None, typer.Option("--user-id", help="Permissions of this authorized user.")
    ] = None,
    as_user: AsUser = None,
) -> None:
    """List permissions on a card, of a user, or of a user on a card (give one or both)."""
    st = state(ctx)
    if card_id is None and user_id is None:
        raise CLIError("pass --card-id, --user-id or both", ExitCode.USAGE)
    with wallet_api(st, as_user) as call:
        if card_id is not None and user_id is not None:
            records = call(lambda w: w.permissions.list(card_id, user_id))
        elif card_id is not None:
            records = call(lambda w: w.permissions.list_for_card(card_id))
        else:
            assert user_id is not None
            records = call(lambda w: w.permissions.list_for_user(user_id))
    emit(st.output, [wire(r) for r in records], columns=_COLUMNS, title="Permissions")
