"""``client.sandbox.jobs`` against the real reference server (async in process, sync over a socket;
SQLite and PostgreSQL): the rounds of a refused callback are listed as jobs (D129)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import paysdk

from .conftest import Maker, call

PHONE = "+50255550123"


@pytest.mark.covers("sandbox.jobs")
async def test_sandbox_jobs_lists_the_rounds_of_a_callback(make: Maker, callback_sink: Any) -> None:
    sandbox = make()
    shop = await call(sandbox.sandbox.create_client(callback_url=callback_sink.url))
    callback_sink.respond_with([500])  # round 1 refused: round 2 is queued one minute later
    client = make(merchant_token=shop.sandbox_token)
    link = await call(client.payment_links.create(amount=10, user_id=PHONE, channel="wa", client=shop.slug))
    await call(sandbox.sandbox.pay(link.uid, "4242424242424242"))
    (attempt,) = await call(sandbox.sandbox.callbacks(link.uid))

    second, first = await call(sandbox.sandbox.jobs(kind="callback"))  # newest first
    assert (first.kind, first.ref, first.status, first.attempts) == ("callback", attempt.event_id, "done", 1)
    assert (second.ref, second.status, second.attempts, second.last_error) == (
        attempt.event_id,
        "pending",
        0,
        None,
    )
    assert second.due_at - first.due_at == timedelta(minutes=1)
    assert first.lease_owner  # the runner that ran it
    assert [job.id for job in await call(sandbox.sandbox.jobs(status="pending"))] == [second.id]
    assert [job.id for job in await call(sandbox.sandbox.jobs(limit=1))] == [second.id]
    assert await call(sandbox.sandbox.jobs(status="failed")) == []
    with pytest.raises(paysdk.ValidationError) as refused:
        await call(sandbox.sandbox.jobs(limit=0))
    assert refused.value.field == "limit"
