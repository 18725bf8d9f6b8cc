"""Every kind of callback the reference server emits is accepted by every receiver we ship (D340).

The server, on SQLite and PostgreSQL, drives each kind for real: payments that end approved, declined,
dismissed and expired (the payment callback) and a subscription the scheduled charge process suspends
(the ``subsCallback``). Three merchants each register one receiver: ``paysdk.callbacks.CallbackReceiver``
behind a stdlib HTTP server, ``paysdk callbacks listen`` (a real process) and the pytest plugin's
``CallbackInbox``. Every attempt the server records must be a final 2xx (nothing retried), and each
receiver must hand over each event once, as its kind's model.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from paysdk import _json
from paysdk.callbacks import (
    Callback,
    CallbackReceiver,
    CallbackResult,
    PaymentCallback,
    SubscriptionCallback,
    UnknownCallback,
    read_http1_body,
)
from paysdk.contracts.sandbox import CallbackAttempt, SandboxClient
from paysdk.testing import CallbackInbox

from .test_cli_charges import BOTH_DATABASES, db_url
from .test_cli_listen import HEADER_VALUE, start_listener

__all__ = ["db_url"]  # the server runs on SQLite and on PostgreSQL here (the CLI suite's is SQLite)

JSON = {"Content-Type": "application/json"}
APPROVE = "4242424242424242"
DECLINE = "4000000000000002"
DECLINE_ALWAYS = "4000000000000341"  # a renewal card that always declines
#: Each payment status the server ends a transaction in, and the subscription's event.
PAYMENT_STATUSES = {"approved", "declined", "dismissed", "expired"}


class ReceiverServer:
    """``CallbackReceiver`` behind a stdlib HTTP server, one handler per kind, recording what it saw."""

    def __init__(self, header_value: str) -> None:
        self.header_value = header_value
        self.receiver = CallbackReceiver("X-Callback-Token", [header_value])
        self.handled: list[Callback] = []
        self.results: list[CallbackResult] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = read_http1_body(self.headers.items(), self.rfile)
                result = outer.receiver.handle(
                    dict(self.headers.items()),
                    body,
                    outer.record,
                    on_subscription=outer.record,
                    on_unknown=outer.record,
                )
                with outer.lock:
                    outer.results.append(result)
                self.send_response(result.status_code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def record(self, callback: Callback) -> None:
        with self.lock:
            self.handled.append(callback)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/callbacks"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver_server() -> Iterator[ReceiverServer]:
    server = ReceiverServer(secrets.token_hex(16))
    try:
        yield server
    finally:
        server.close()


async def _post(client: httpx.AsyncClient, path: str, body: Any, **headers: str) -> Any:
    response = await client.post(path, content=_json.dumps(body), headers={**JSON, **headers})
    assert response.status_code in (200, 201), response.text
    return _json.loads(response.content)


async def _start_every_kind(client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    """Payments to approve, decline, dismiss and leave to expire; a subscription whose one attempt
    declines (suspended at the charge process's first run). The clock advance ends the last two."""
    token = merchant.sandbox_token

    async def link() -> str:
        body = {
            "amount": Decimal("10.50"),
            "userId": "+50212345678",
            "channel": "wa",
            "client": merchant.slug,
        }
        uid: str = (await _post(client, "/transactions", body, Authorization=token))["uid"]
        return uid

    for card in (APPROVE, DECLINE):
        await _post(client, f"/_sandbox/transactions/{await link()}/pay", {"cardNumber": card})
    alternative = await _post(
        client,
        "/api/v1/integrations/transactions",
        {"amount": Decimal("25.00"), "userId": "+50212345678", "channel": "web", "client": merchant.slug},
        Authorization=f"Bearer {token}",
    )
    dismissed = await client.post(
        f"/api/v1/integrations/transactions/{alternative['data']['uid']}/dismiss",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert dismissed.status_code == 200, dismissed.text
    await link()  # expires after 24 hours
    plan = await _post(
        client, "/_sandbox/plans", {"client": merchant.slug, "amount": Decimal("9.99"), "dailyAttempts": 1}
    )
    await _post(
        client,
        "/_sandbox/subscriptions",
        {"planId": plan["planId"], "cardNumber": DECLINE_ALWAYS, "email": f"{merchant.slug}@example.com"},
    )


def _kinds(callbacks: list[Callback]) -> list[str]:
    """``payment:<status>`` or the subscription event of each callback, sorted."""
    return sorted(f"payment:{c.status}" if isinstance(c, PaymentCallback) else str(c.kind) for c in callbacks)


EXPECTED = sorted([f"payment:{status}" for status in PAYMENT_STATUSES] + ["subscriptionSuspended"])


@BOTH_DATABASES
async def test_every_kind_the_server_emits_is_accepted_by_every_receiver(
    asgi_client: httpx.AsyncClient,
    merchant_factory: Any,
    receiver_server: ReceiverServer,
    config_dir: Path,
) -> None:
    with CallbackInbox() as inbox, start_listener(config_dir, global_args=("-o", "json")) as listener:
        merchants = {
            "receiver": await merchant_factory(
                callback_url=receiver_server.url,
                callback_header_value=receiver_server.header_value,
            ),
            "listen": await merchant_factory(callback_url=listener.url, callback_header_value=HEADER_VALUE),
            "inbox": await merchant_factory(callback_url=inbox.url, callback_header_value=inbox.header_value),
        }
        for merchant in merchants.values():
            await _start_every_kind(asgi_client, merchant)
        await _post(asgi_client, "/_sandbox/clock/advance", {"seconds": 24 * 3600 + 60})
        payments = inbox.wait_for(len(PAYMENT_STATUSES))
        [suspended] = inbox.wait_for(1, kind=SubscriptionCallback)
        code, out, err = listener.stop()

    # The server: every event delivered at its first attempt, with a 2xx, for every receiver.
    response = await asgi_client.get("/_sandbox/callbacks")
    attempts = [CallbackAttempt.model_validate(item) for item in _json.loads(response.content)]
    assert len(attempts) == 3 * len(EXPECTED)
    assert all(a.status_code == 200 and a.final and a.attempt == 1 for a in attempts), attempts

    # CallbackReceiver: one handler call per event, each its kind's model.
    assert _kinds(receiver_server.handled) == EXPECTED
    assert all(result.status_code == 200 and result.processed for result in receiver_server.results)
    [subs] = [c for c in receiver_server.handled if isinstance(c, SubscriptionCallback)]
    assert (subs.status, subs.client, subs.attempts) == ("inactive", merchants["receiver"].slug, 1)
    assert not any(isinstance(c, UnknownCallback) for c in receiver_server.handled)

    # paysdk callbacks listen: one JSON line per event, the body as the server sent it.
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert sorted(line.get("event") or f"payment:{line['status']}" for line in lines) == EXPECTED
    assert "Warning" not in err

    # The pytest plugin's inbox: every kind accepted, typed.
    assert {p.status for p in payments} == PAYMENT_STATUSES
    assert suspended.client == merchants["inbox"].slug
    assert _kinds(inbox.callbacks) == EXPECTED
    assert all(200 <= d.status_code < 300 for d in inbox.deliveries)


@pytest.mark.parametrize(
    "body",
    [
        b'{"eventId": "evt_new_1", "event": "subscriptionRenewed", "subUid": "sub_1"}',
        b'{"eventId": "evt_new_2", "kind": "refund", "amount": 1.10}',
    ],
)
def test_an_unknown_kind_is_accepted_once_by_the_listener(config_dir: Path, body: bytes) -> None:
    with start_listener(config_dir, global_args=("-o", "json")) as listener:
        assert listener.post(body).status_code == 200
        assert listener.post(body).status_code == 200  # a redelivery: acknowledged, not printed again
        code, out, err = listener.stop()
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == [json.loads(body)]
