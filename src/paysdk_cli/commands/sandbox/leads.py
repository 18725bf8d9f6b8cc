"""``paysdk sandbox lead``: onboarding leads on the control plane (D195): show, approve, reject."""

from __future__ import annotations

from typing import Annotated

import typer

from paysdk_cli import _config
from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit, info
from paysdk_cli.commands.sandbox.clients import save_signing_key, show_client

__all__ = ["app"]

app = new_app("Onboarding leads: show one, approve it (a new client) or reject it.")

_LEAD = typer.Argument(help="The lead's leadId.", metavar="LEAD_ID")


@app.command("show")
def show(ctx: typer.Context, lead_id: Annotated[str, _LEAD]) -> None:
    """Show a lead, its documents (name, type, size, SHA-256) and its decision."""
    from paysdk_cli.commands.onboarding import LEAD_COLUMNS, lead_record

    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        lead = sdk.sandbox.leads.get(lead_id)
    emit(
        st.output, lead_record(lead), columns=[*LEAD_COLUMNS, "clientSlug", "reason"], title=f"Lead {lead_id}"
    )


@app.command("approve")
def approve(
    ctx: typer.Context,
    lead_id: Annotated[str, _LEAD],
    slug: Annotated[
        str | None, typer.Option("--slug", help="The new client's slug (default: generated).")
    ] = None,
    callback_url: Annotated[
        str | None, typer.Option("--callback-url", help="Where the server POSTs the new client's callbacks.")
    ] = None,
    save_profile: Annotated[
        bool,
        typer.Option(
            "--save-profile",
            help="Store the new client's sandbox token, wallet signing key, slug and base URL in the "
            "current profile (as `sandbox clients create --save-profile` does).",
        ),
    ] = False,
    show_secrets: Annotated[
        bool, typer.Option("--show-secrets", help="With -o json, print the new client's tokens and keys.")
    ] = False,
) -> None:
    """Approve a lead: the server creates a client with sandbox credentials (as `sandbox clients create`)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        client = sdk.sandbox.leads.approve(lead_id, slug=slug, callback_url=callback_url)
    if save_profile:
        from paysdk_cli.commands.auth import save_token

        where = save_token(st.profile, client.sandbox_token)
        _config.update_profile(st.profile, base_url=st.base_url, client=client.slug, merchant=client.slug)
        info(f"Saved client {client.slug!r} and its sandbox token ({where}) in profile {st.profile!r}.")
        if client.signing_private_key:
            save_signing_key(st, client.signing_private_key)
    show_client(st, client, show_secrets)


@app.command("reject")
def reject(
    ctx: typer.Context,
    lead_id: Annotated[str, _LEAD],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept with the lead).")],
) -> None:
    """Reject a lead."""
    from paysdk_cli.commands.onboarding import LEAD_COLUMNS, lead_record

    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        lead = sdk.sandbox.leads.reject(lead_id, reason)
    emit(st.output, lead_record(lead), columns=[*LEAD_COLUMNS, "reason"], title=f"Lead {lead_id}")
