"""``paysdk sandbox users``: wallet users (cardholders) of a merchant."""

from __future__ import annotations

from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit
from paysdk_cli.commands.sandbox._common import MERCHANT, merchant_slug

__all__ = ["app"]

app = new_app("Wallet users (cardholders) of a merchant.")


@app.command("create")
def users_create(
    ctx: typer.Context,
    username: Annotated[str, typer.Option("--username", help="Login name.")],
    email: Annotated[str, typer.Option("--email", help="Where one-time codes go (see `sandbox outbox`).")],
    merchant: Annotated[str | None, MERCHANT] = None,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from standard input, not a prompt.")
    ] = False,
) -> None:
    """Create a wallet user of a merchant; prints its userId (for --user-id; authUserId on the wire).

    The password is never an argument.
    """
    from paysdk_cli._params import read_secret
    from paysdk_cli.commands.cards import wire

    st = state(ctx)
    slug = merchant_slug(st, merchant)
    password = read_secret(
        "Password", from_stdin=password_stdin, confirm=not password_stdin, instead="--password-stdin"
    )
    with open_client(st, token_required=False) as sdk:
        user = sdk.sandbox.create_user(slug, username, email, password)
    emit(
        st.output,
        wire(user),
        columns=["userId", "username", "email", "merchant"],
        title=f"User {user.username}",
    )
