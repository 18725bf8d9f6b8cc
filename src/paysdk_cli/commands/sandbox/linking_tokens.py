"""``paysdk sandbox linking-tokens``: single-use linking tokens for external cards (the token is a secret)."""

from __future__ import annotations

from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import OutputFormat, emit, mask, warn
from paysdk_cli.commands.sandbox._common import wire

__all__ = ["LINKING_TOKEN_SECRETS", "app"]

app = new_app("Linking tokens for external cards, as a third party's tokenization hands out.")


#: Wire name of a linking token's secret: never in a table, masked in JSON unless --show-secrets.
LINKING_TOKEN_SECRETS = ("token",)


@app.command("create")
def linking_tokens_create(
    ctx: typer.Context,
    pan: Annotated[str, typer.Option("--pan", help="The external card's number (12-19 digits).")],
    expiry: Annotated[str, typer.Option("--expiry", metavar="MM/YY", help="The card's expiry date.")],
    show_secrets: Annotated[
        bool, typer.Option("--show-secrets", help="With -o json, print the token (for a pipe).")
    ] = False,
) -> None:
    """Create a single-use linking token for an external card (valid 10 minutes).

    The token is a secret: a table never shows it, JSON masks it unless --show-secrets. Hand it to
    `paysdk cards link-external --user-id ID --token-stdin`, e.g.
    `paysdk -o json sandbox linking-tokens create --pan 4111111111111111 --expiry 12/30 --show-secrets
    | jq -r .token | paysdk cards link-external --user-id ID --token-stdin`.
    """
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        token = sdk.sandbox.create_linking_token(pan.replace(" ", ""), expiry.strip())
    if show_secrets and st.output is OutputFormat.table:
        warn("--show-secrets only applies to -o json; tables never show secrets")
    data = mask(wire(token), LINKING_TOKEN_SECRETS, show=show_secrets and st.output is OutputFormat.json)
    emit(st.output, data, columns=["token", "expiresAt"], title="Linking token")
