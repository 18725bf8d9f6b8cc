"""Payment links: ``POST /transactions`` and ``POST /transactions-hook`` (spec 2.1, 2.2, 4.1; D2, D3, D4,
D14, D19, D22).

A link is created ``pending`` with ``expire_at`` = creation + 24 h (virtual clock, D19) and an ``expire``
job due then. Its ``URL`` is ``{webview_url}/?orderId=<uid>`` (spec 2.2).
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.engine import Connection

from paysdk import _json
from paysdk.contracts.payment_links import PaymentLink, PaymentLinkCreate, PaymentLinkHookCreate
from paysdk.server.auth import (
    Credentials,
    EnvironmentName,
    authenticate_hook_keys_core,
    authenticate_token_core,
)
from paysdk.server.bodies import parse_json_object, validate
from paysdk.server.clock import Clock
from paysdk.server.db import ClientRow
from paysdk.server.services.common import check_against_client, check_phone
from paysdk.server.services.transactions import KIND_LINK, add_job_core, insert_pending, virtual_now

__all__ = ["LINK_LIFETIME", "create", "create_from_hook"]

LINK_LIFETIME = timedelta(hours=24)


def _store(
    connection: Connection, clock: Clock, client: ClientRow, body: PaymentLinkCreate, webview_url: str
) -> PaymentLink:
    checked = check_against_client(
        client,
        slug=body.client,
        channel=body.channel.value,
        currency=body.currency.value if body.currency is not None else None,
        amount=body.amount,
    )
    now = virtual_now(connection, clock)
    uid, reference = insert_pending(
        connection,
        "PL-",
        {
            "kind": KIND_LINK,
            "client_id": client.id,
            "amount_cents": checked.amount_cents,
            "currency": checked.currency,
            "channel": body.channel.value,
            "user_id": body.user_id,
            "external_id": body.external_id,
            "custom_keys_json": _json.dumps(body.custom_keys).decode("utf-8")
            if body.custom_keys is not None
            else None,
            "created_at": now,
            "expire_at": now + LINK_LIFETIME,
            "updated_at": now,
        },
    )
    add_job_core(connection, "expire", uid, now + LINK_LIFETIME, now)
    return PaymentLink(uid=uid, reference=reference, url=f"{webview_url}/?orderId={uid}")


def create(
    connection: Connection,
    clock: Clock,
    environment: EnvironmentName,
    credentials: Credentials,
    raw_body: bytes,
    webview_url: str,
) -> PaymentLink:
    """``POST /transactions``: authenticate (401/2007), parse (400/5000), slug (5004), range (2003).

    Runs on a Core connection (:meth:`ServerContext.run_core`): the hot path of the server.
    """
    client = authenticate_token_core(connection, credentials, environment)
    body = validate(PaymentLinkCreate, parse_json_object(raw_body))
    check_phone(body.user_id)
    return _store(connection, clock, client, body, webview_url)


def create_from_hook(connection: Connection, clock: Clock, raw_body: bytes, webview_url: str) -> PaymentLink:
    """``POST /transactions-hook``: the body's key pair identifies the client (D14); ``client`` optional."""
    data = parse_json_object(raw_body)
    client = authenticate_hook_keys_core(connection, data.get("privateKey"), data.get("publicKey"))
    body = validate(PaymentLinkHookCreate, data)
    check_phone(body.user_id)
    return _store(connection, clock, client, body, webview_url)
