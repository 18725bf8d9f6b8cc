"""``paysdk links``: payment links (``POST /transactions``, spec 2.1, 2.2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, cast

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, require_client_slug, state
from paysdk_cli._output import emit, info
from paysdk_cli._params import parse_amount, parse_key_values

if TYPE_CHECKING:
    from paysdk.contracts.common import ChannelName, CurrencyCode

__all__ = ["app"]

app = new_app("Payment links: hosted checkout pages.\n\nThe customer opens the link and pays by card there.")


@app.command("create")
def create(
    ctx: typer.Context,
    amount: Annotated[str, typer.Option("--amount", help="Amount as a decimal, e.g. 10.50 (exact).")],
    user_id: Annotated[
        str, typer.Option("--user-id", help="Customer phone in E.164 form, e.g. +50255555555.")
    ],
    channel: Annotated[str, typer.Option("--channel", help="wa, sms, email, web or app.")],
    client: Annotated[
        str | None, typer.Option("--client", help="Client slug (default: the profile's client).")
    ] = None,
    currency: Annotated[
        str | None, typer.Option("--currency", help="GTQ, USD, ... (default: the client's first currency).")
    ] = None,
    external_id: Annotated[
        str | None, typer.Option("--external-id", help="Your reference, echoed in the callback.")
    ] = None,
    custom_key: Annotated[
        list[str] | None, typer.Option("--custom-key", help="KEY=VALUE, repeatable.", metavar="KEY=VALUE")
    ] = None,
    idempotency_key: Annotated[
        str | None, typer.Option("--idempotency-key", help="Reuse to make a retried create safe.")
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the checkout page in a browser.")
    ] = False,
) -> None:
    """Create a payment link and print its uid, reference and checkout URL."""
    st = state(ctx)
    value = parse_amount(amount)
    custom_keys = parse_key_values(custom_key)
    slug = require_client_slug(st, client)
    with open_client(st) as sdk:
        link = sdk.payment_links.create(
            amount=value,
            user_id=user_id,
            channel=cast("ChannelName", channel),  # checked by the SDK, naming the option
            client=slug,
            currency=cast("CurrencyCode | None", currency),
            external_id=external_id,
            custom_keys=custom_keys,
            idempotency_key=idempotency_key,
        )
    emit(st.output, link.to_wire(), columns=["uid", "reference", "URL"], title="Payment link")
    if open_browser:
        import webbrowser

        if webbrowser.open(link.url):
            info(f"Opened {link.url}")
        else:
            info(f"Could not open a browser; the link is {link.url}")
