"""``client.sandbox.resend_callback`` against the real reference server (async in process, sync over a
socket; SQLite and PostgreSQL): a delivered event is delivered once more, the same body and ``eventId``,
recorded as its next attempt (D724); an unknown event is ``NotFoundError``, an event whose retry is
still queued ``ConflictError``."""

from __future__ import annotations

from typing import Any

import pytest

import paysdk

from .conftest import Maker, call

PHONE = "+50255550123"


@pytest.mark.covers("sandbox.resend_callback")
async def test_resend_callback(make: Maker, callback_sink: Any) -> None:
    sandbox = make()
    shop = await call(sandbox.sandbox.create_client(callback_url=callback_sink.url))
    client = make(merchant_token=shop.sandbox_token)
    link = await call(client.payment_links.create(amount=10, user_id=PHONE, channel="wa", client=shop.slug))
    await call(sandbox.sandbox.pay(link.uid, "4242424242424242"))
    (first,) = await call(sandbox.sandbox.callbacks(link.uid))
    again = await call(sandbox.sandbox.resend_callback(first.event_id))
    assert (again.event_id, again.attempt, again.status_code) == (first.event_id, 2, 200)
    one, two = callback_sink.received
    assert one.body == two.body
    assert one.headers["x-event-id"] == two.headers["x-event-id"] == first.event_id
    with pytest.raises(paysdk.NotFoundError):
        await call(sandbox.sandbox.resend_callback("evt_000000000000000000000000"))

    callback_sink.respond_with([500])
    other = await call(client.payment_links.create(amount=11, user_id=PHONE, channel="wa", client=shop.slug))
    await call(sandbox.sandbox.pay(other.uid, "4242424242424242"))
    (failed,) = await call(sandbox.sandbox.callbacks(other.uid))
    assert failed.status_code == 500
    assert failed.next_attempt_at is not None
    with pytest.raises(paysdk.ConflictError):
        await call(sandbox.sandbox.resend_callback(failed.event_id))
