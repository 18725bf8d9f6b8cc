"""CallbackInbox: a real HTTP receiver that verifies deliveries with paysdk.callbacks and collects them."""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from typing import Any

import httpx
import pytest

from paysdk import _json
from paysdk.contracts.callbacks import UnknownCallback
from paysdk.contracts.sandbox import SandboxClient
from paysdk.testing import CallbackInbox, SandboxServer


def _body(event_id: str = "evt-1", uid: str = "uid-1", status: str = "approved") -> bytes:
    payload: dict[str, Any] = {
        "eventId": event_id,
        "reference": "REF-1",
        "uid": uid,
        "country": "GT",
        "currency": "GTQ",
        "channel": "wa",
        "status": status,
        "amount": Decimal("10.50"),
        "createdAt": "23/11/2026 10:00:00",
        "transactionId": "tx-1",
    }
    return _json.dumps(payload)


def _post(inbox: CallbackInbox, body: bytes, value: str | None = None) -> httpx.Response:
    headers = {"Content-Type": "application/json", inbox.header_name: value or inbox.header_value}
    return httpx.post(inbox.url, content=body, headers=headers, timeout=5)


@pytest.fixture
def inbox() -> Any:
    with CallbackInbox() as receiver:
        yield receiver


def test_a_verified_delivery_is_collected(inbox: CallbackInbox) -> None:
    assert _post(inbox, _body()).status_code == 200
    [payload] = inbox.wait_for(1)
    assert (payload.event_id, payload.uid, payload.amount) == ("evt-1", "uid-1", Decimal("10.50"))
    assert inbox.deliveries[0].accepted


def test_a_wrong_header_value_is_refused_and_not_collected(inbox: CallbackInbox) -> None:
    assert _post(inbox, _body(), value="not-the-token").status_code == 401
    [delivery] = inbox.deliveries
    assert delivery.payload is None
    assert delivery.error
    assert inbox.header_value not in repr(delivery)
    assert inbox.payloads == []


def test_a_bad_body_is_refused(inbox: CallbackInbox) -> None:
    # A payment callback (it has transactionId) without its uid, and a body that is no JSON object.
    assert _post(inbox, _body().replace(b'"uid":"uid-1",', b"")).status_code == 400
    assert _post(inbox, b"[1]").status_code == 400
    assert inbox.payloads == []
    assert inbox.callbacks == []


def test_an_unknown_kind_is_accepted_raw_and_deduplicated(inbox: CallbackInbox) -> None:
    body = b'{"eventId": "evt-new", "event": "somethingNew", "amount": 1.10}'
    assert _post(inbox, body).status_code == 200
    assert _post(inbox, body).status_code == 200  # a redelivery: acknowledged, collected once
    assert _post(inbox, b'{"eventId": 5}').status_code == 200  # no usable id: accepted, not deduplicated
    [unknown] = inbox.wait_for(1, kind=UnknownCallback, where=lambda c: c.kind == "somethingNew")
    assert unknown.event_id == "evt-new"
    assert unknown.data["amount"] == Decimal("1.10")
    assert [d.duplicate for d in inbox.deliveries] == [False, True, False]
    assert inbox.payloads == []
    assert len(inbox.callbacks) == 2


def test_a_duplicate_is_answered_200_and_collected_once(inbox: CallbackInbox) -> None:
    assert _post(inbox, _body()).status_code == 200
    assert _post(inbox, _body()).status_code == 200
    assert [d.duplicate for d in inbox.deliveries] == [False, True]
    assert len(inbox.payloads) == 1


def test_scripted_failures_then_the_retry_is_collected(inbox: CallbackInbox) -> None:
    inbox.respond_with([500, 503])
    assert _post(inbox, _body()).status_code == 500
    assert _post(inbox, _body()).status_code == 503
    assert inbox.payloads == []
    assert _post(inbox, _body()).status_code == 200  # the retry is processed, not a duplicate
    assert [p.event_id for p in inbox.payloads] == ["evt-1"]


def test_wait_for_blocks_until_the_delivery_and_filters(inbox: CallbackInbox) -> None:
    timer = threading.Timer(0.2, lambda: _post(inbox, _body("evt-2", uid="wanted")))
    _post(inbox, _body("evt-1", uid="other"))
    started = time.monotonic()
    timer.start()
    payload = inbox.wait_for_uid("wanted", timeout=5)
    assert payload.event_id == "evt-2"
    assert time.monotonic() - started >= 0.1


def test_wait_for_times_out_saying_how_many_arrived(inbox: CallbackInbox) -> None:
    _post(inbox, _body())
    with pytest.raises(AssertionError, match=r"expected 2 callback\(s\), got 1"):
        inbox.wait_for(2, timeout=0.2)


def test_down_refuses_connections_and_up_listens_again_on_the_same_port(inbox: CallbackInbox) -> None:
    url = inbox.url
    inbox.down()
    with pytest.raises(httpx.ConnectError):
        _post(inbox, _body())
    inbox.up()
    assert inbox.url == url
    assert _post(inbox, _body()).status_code == 200


def test_clear_forgets_deliveries_and_seen_events(inbox: CallbackInbox) -> None:
    _post(inbox, _body())
    inbox.clear()
    assert inbox.deliveries == []
    assert _post(inbox, _body()).status_code == 200
    assert not inbox.deliveries[0].duplicate


def test_the_server_retries_into_the_inbox(
    paysdk_server: SandboxServer, paysdk_merchant: SandboxClient, paysdk_callbacks: CallbackInbox
) -> None:
    """The reference server's first attempt is refused (scripted 500); the retry, due on the virtual
    clock, is delivered when the clock moves, and collected."""
    paysdk_callbacks.respond_with([500])
    with paysdk_server.client(paysdk_merchant.sandbox_token) as client:
        link = client.payment_links.create(
            amount=Decimal("7.00"), user_id="+50255550123", channel="wa", client=paysdk_merchant.slug
        )
    paysdk_server.sandbox.pay(link.uid, "4242424242424242")
    assert paysdk_callbacks.payloads == []
    paysdk_server.clock.advance(3600)
    payload = paysdk_callbacks.wait_for_uid(link.uid)
    assert payload.status == "approved"
    assert [d.status_code for d in paysdk_callbacks.deliveries] == [500, 200]


def test_a_chunked_delivery_is_collected_and_content_length_with_chunked_is_400(inbox: CallbackInbox) -> None:
    import socket

    body = _body("evt-chunked")
    head = (
        f"POST /callbacks HTTP/1.1\r\nHost: 127.0.0.1\r\n{inbox.header_name}: {inbox.header_value}\r\n"
        "Transfer-Encoding: chunked\r\n"
    ).encode()
    framed = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"

    def exchange(data: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", inbox.port), timeout=5) as sock:
            sock.sendall(data)
            return sock.makefile("rb").read()

    assert exchange(head + b"\r\n" + framed).split(b"\r\n", 1)[0].endswith(b"200 OK")
    assert [p.event_id for p in inbox.wait_for(1)] == ["evt-chunked"]
    both = exchange(head + f"Content-Length: {len(framed)}\r\n\r\n".encode() + framed)
    assert both.split(b"\r\n", 1)[0].endswith(b"400 Bad Request")
    assert "RFC 9112" in str(inbox.deliveries[-1].error)
