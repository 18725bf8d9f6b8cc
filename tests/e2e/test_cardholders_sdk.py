"""Bulk cardholder upload and its progress stream through the SDK against the REAL reference server
(D186-D188, D220-D222): async in process (ASGITransport), sync and async over a uvicorn socket.

An operator and a partner come from the control plane (D185); the batch is processed by the server's
leased job (in process the test drives it with the virtual clock; over a socket the server's ticker runs
it). A stream cut by the ``stream_cut`` fault (D118) is resumed with ``Last-Event-ID``: the events are
exactly those of an uncut replay, none lost or repeated, and the affinity warning is logged once (D221).
"""

from __future__ import annotations

import io
import logging
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest

import paysdk
from paysdk._tls import verification_context
from paysdk.contracts.cardholders import CardholderUpload
from paysdk.resources.cardholders import (
    AFFINITY_WARNING,
    BatchDoneEvent,
    BatchProgressEvent,
    CardholderBatchResult,
    RowFailedEvent,
)

from .conftest import Maker, call

HEADER = "externalId,username,email,firstName,lastName,issueCard"


@pytest.fixture(params=["async-asgi", "sync-socket", "async-socket"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def environment(kind: str, db_url: str, request: pytest.FixtureRequest) -> paysdk.Environment:
    if kind == "async-asgi":
        return paysdk.Environment.local("http://testserver")
    return paysdk.Environment.local(request.getfixturevalue("live_server"))


class SocketMaker(Maker):
    """The e2e ``make``, with an async client over a socket for ``async-socket``."""

    def __call__(self, **options: Any) -> Any:
        if self.kind == "async-socket":
            client = paysdk.AsyncClient(environment=self.environment, **options)
            self.made.append(client)
            return client
        return super().__call__(**options)


@pytest.fixture
async def make(kind: str, request: pytest.FixtureRequest, environment: paysdk.Environment) -> Any:
    maker = SocketMaker(kind, request, environment)
    yield maker
    for client in maker.made:
        if isinstance(client, paysdk.AsyncClient):
            await client.aclose()
        else:
            client.close()


async def control(make: Maker, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """A control-plane request (no SDK method for the backoffice's, D185) on the kind's transport."""
    if make.kind == "async-asgi":
        app = make.request.getfixturevalue("app")
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    else:
        base = make.environment.base_url
        http = httpx.AsyncClient(base_url=base, timeout=30, verify=verification_context())
    async with http:
        answer = await http.request(method, path, json=body)
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


class Setup:
    def __init__(self, sandbox: Any, client: Any, merchant: Any, partner_id: str) -> None:
        self.sandbox, self.client, self.merchant, self.partner_id = sandbox, client, merchant, partner_id


async def _setup(make: Maker, **options: Any) -> Setup:
    sandbox = make()
    merchant = await call(sandbox.sandbox.create_client())
    password = "operator-" + secrets.token_hex(8)
    email = f"op-{secrets.token_hex(4)}@example.com"
    await control(
        make,
        "POST",
        "/_sandbox/backoffice/operators",
        {"merchant": merchant.slug, "email": email, "password": password},
    )
    partner = await control(
        make, "POST", "/_sandbox/backoffice/partners", {"merchant": merchant.slug, "name": "Acme payroll"}
    )
    credentials = paysdk.BackofficeCredentials(
        merchant.slug, merchant.signing_private_key, user=paysdk.BackofficeUser(email, password)
    )
    client = make(backoffice=credentials, **options)
    return Setup(sandbox, client, merchant, partner["partnerId"])


def _csv(rows: int, *, bad: tuple[int, ...] = (), tag: str = "") -> bytes:
    """``rows`` data rows; the data rows numbered in ``bad`` (from 1) have an invalid email."""
    tag = tag or secrets.token_hex(3)
    lines = [HEADER]
    for number in range(1, rows + 1):
        email = "not-an-email" if number in bad else f"holder{number}-{tag}@example.com"
        issue = "yes" if number % 2 else ""
        lines.append(f"ext-{tag}-{number},holder{number}{tag},{email},Ana,Holder{number},{issue}")
    return ("\r\n".join(lines) + "\r\n").encode()


async def _drive(make: Maker, sandbox: Any) -> None:
    """In process (no ticker) the batch job runs when the virtual clock moves; over a socket the
    server's ticker runs it (moving the clock there is harmless)."""
    if make.kind == "async-asgi":
        await call(sandbox.sandbox.advance_clock(1))


async def _events(stream: Any) -> list[Any]:
    found = []
    if hasattr(stream, "__aiter__"):
        async with stream:
            async for event in stream:
                found.append(event)
    else:
        with stream:
            for event in stream:
                found.append(event)
    return found


@pytest.mark.covers(
    "backoffice.cardholders.upload", "backoffice.cardholders.progress", "backoffice.cardholders.wait"
)
async def test_upload_then_progress_and_wait_give_every_row_and_a_second_upload_creates_nothing(
    make: Maker, tmp_path: Path
) -> None:
    setup = await _setup(make)
    cardholders = setup.client.backoffice.cardholders
    path = tmp_path / "holders.csv"
    path.write_bytes(_csv(6, bad=(3,)))

    answer = await call(cardholders.upload(setup.partner_id, path))
    assert isinstance(answer, CardholderUpload)
    assert answer.partner_id == setup.partner_id
    assert answer.file_name == "holders.csv"
    assert answer.duplicate is False
    await _drive(make, setup.sandbox)

    result = await call(cardholders.wait(setup.partner_id, answer.batch_id))
    assert isinstance(result, CardholderBatchResult)
    assert (result.status, result.total, result.processed, result.created, result.failed) == (
        "completed",
        6,
        6,
        5,
        1,
    )
    assert result.cards_issued == 2  # rows 1, 3, 5 ask for a card; row 3 failed (data rows 2, 4, 6)
    assert [(row.row, row.field) for row in result.failed_rows] == [(4, "email")]  # the header is row 1
    assert not result.all_created

    events = await _events(cardholders.progress(setup.partner_id, answer.batch_id))
    ids = [int(event.id) for event in events]
    assert ids == list(range(1, len(ids) + 1))  # every event, each once, in order (D188)
    assert isinstance(events[-1], BatchDoneEvent)
    assert events[-1].data.created == 5
    assert [e.data.row for e in events if isinstance(e, RowFailedEvent)] == [4]
    assert all(isinstance(e, BatchProgressEvent | RowFailedEvent) for e in events[:-1])

    # Resuming after an id gives the rest only.
    rest = await _events(cardholders.progress(setup.partner_id, answer.batch_id, last_event_id=str(ids[1])))
    assert [event.id for event in rest] == [event.id for event in events[2:]]

    again = await call(cardholders.upload(setup.partner_id, path.read_bytes(), filename="holders.csv"))
    assert (again.batch_id, again.duplicate) == (answer.batch_id, True)  # D187: nothing created twice


async def test_upload_takes_a_file_object_and_checks_its_arguments_before_sending(
    make: Maker, tmp_path: Path
) -> None:
    setup = await _setup(make)
    cardholders = setup.client.backoffice.cardholders
    data = _csv(2)
    handle = io.BytesIO(b"ignored prefix" + data)
    handle.seek(len(b"ignored prefix"))
    handle.name = "from-object.csv"
    answer = await call(cardholders.upload(setup.partner_id, handle))
    assert answer.file_name == "from-object.csv"
    await _drive(make, setup.sandbox)
    result = await call(cardholders.wait(setup.partner_id, answer.batch_id))
    assert (result.created, result.failed, result.all_created) == (2, 0, True)

    unnamed = await call(cardholders.upload(setup.partner_id, data))  # bytes: named cardholders.csv (D220)
    assert (unnamed.batch_id, unnamed.duplicate) == (
        answer.batch_id,
        True,
    )  # the same content: the first batch
    other = await call(cardholders.upload(setup.partner_id, _csv(1)))
    assert (other.file_name, other.duplicate) == ("cardholders.csv", False)
    with pytest.raises(paysdk.ValidationError) as no_name:
        await call(cardholders.upload(setup.partner_id, iter([data])))
    assert no_name.value.field == "filename"
    with pytest.raises(paysdk.ValidationError) as wrong_kind:
        await call(cardholders.upload(setup.partner_id, data, filename="holders.txt"))
    assert wrong_kind.value.field == "filename"
    with pytest.raises(paysdk.ValidationError) as missing:
        await call(cardholders.upload(setup.partner_id, tmp_path / "missing.csv"))
    assert missing.value.field == "file"


async def test_another_merchants_partner_and_an_unknown_batch_are_404(make: Maker, tmp_path: Path) -> None:
    setup = await _setup(make)
    other = await _setup(make)
    cardholders = setup.client.backoffice.cardholders
    with pytest.raises(paysdk.APIError) as foreign:
        await call(cardholders.upload(other.partner_id, _csv(1), filename="holders.csv"))
    assert foreign.value.status_code == 404
    with pytest.raises(paysdk.APIError) as unknown:
        await call(cardholders.wait(setup.partner_id, "bat_unknown"))
    assert unknown.value.status_code == 404
    answer = await call(
        other.client.backoffice.cardholders.upload(other.partner_id, _csv(1), filename="a.csv")
    )
    with pytest.raises(paysdk.APIError) as not_yours:  # another partner's batch: a progress stream refused
        await _events(cardholders.progress(setup.partner_id, answer.batch_id))
    assert not_yours.value.status_code == 404


@pytest.mark.parametrize("kind", ["sync-socket", "async-socket"], indirect=True)
async def test_a_cut_stream_resumes_with_nothing_lost_or_repeated_and_warns_about_affinity_once(
    make: Maker, caplog: pytest.LogCaptureFixture
) -> None:
    setup = await _setup(make)
    cardholders = setup.client.backoffice.cardholders
    answer = await call(cardholders.upload(setup.partner_id, _csv(8, bad=(2, 5)), filename="cut.csv"))
    clean = await call(cardholders.wait(setup.partner_id, answer.batch_id))  # let it finish first
    reference = await _events(cardholders.progress(setup.partner_id, answer.batch_id))
    assert len(reference) >= 4

    # Cut the next two streams after 1 and 2 events: the stream reconnects twice.
    await call(
        setup.sandbox.sandbox.add_fault("stream_cut", route="/cms/rest/app/partners/*", after_events=1)
    )
    await call(
        setup.sandbox.sandbox.add_fault("stream_cut", route="/cms/rest/app/partners/*", after_events=2)
    )
    with caplog.at_level(logging.INFO, logger="paysdk.stream"):
        stream = cardholders.progress(setup.partner_id, answer.batch_id)
        events = await _events(stream)
    assert [(e.event, e.id, e.data) for e in events] == [(e.event, e.id, e.data) for e in reference]
    assert stream.reconnects == 2
    warnings = [r for r in caplog.records if r.getMessage() == AFFINITY_WARNING]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING

    await call(
        setup.sandbox.sandbox.add_fault("stream_cut", route="/cms/rest/app/partners/*", after_events=2)
    )
    waited = await call(cardholders.wait(setup.partner_id, answer.batch_id))
    assert waited.reconnects == 1
    assert (waited.created, waited.failed_rows) == (clean.created, clean.failed_rows)


@pytest.mark.parametrize("kind", ["sync-socket", "async-socket"], indirect=True)
async def test_progress_follows_a_running_batch_live_to_done(make: Maker) -> None:
    setup = await _setup(make)
    cardholders = setup.client.backoffice.cardholders
    answer = await call(cardholders.upload(setup.partner_id, _csv(1200, bad=(7,)), filename="big.csv"))
    events = await _events(cardholders.progress(setup.partner_id, answer.batch_id))
    assert isinstance(events[-1], BatchDoneEvent)
    assert (events[-1].data.created, events[-1].data.failed) == (1199, 1)
    processed = [e.data.processed for e in events if isinstance(e, BatchProgressEvent)]
    assert processed == sorted(processed)


@pytest.mark.parametrize("kind", ["sync-socket", "async-socket"], indirect=True)  # a real connection drops
async def test_an_upload_whose_connection_dropped_is_sent_again_whole(make: Maker, tmp_path: Path) -> None:
    setup = await _setup(make)
    path = tmp_path / "retried.csv"
    path.write_bytes(_csv(3))
    await call(setup.sandbox.sandbox.add_fault("drop", route="POST /cms/rest/app/partners/*", count=1))
    raw = setup.client.with_raw_response.backoffice.cardholders
    answer = await call(raw.upload(setup.partner_id, path))  # the path is opened again (D113, D220)
    assert answer.attempts == 2
    assert answer.status_code == 202
    batch = answer.parse()
    await _drive(make, setup.sandbox)
    result = await call(setup.client.backoffice.cardholders.wait(setup.partner_id, batch.batch_id))
    assert (result.created, result.failed) == (3, 0)


@pytest.mark.covers(
    "backoffice.cardholders.results",
    "backoffice.cardholders.results_page",
    "backoffice.cardholders.lookup",
    "backoffice.associate_card",
)
async def test_a_batchs_created_ids_are_read_in_pages_and_a_cardholder_found_by_external_id_or_email(
    make: Maker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D450-D452: each created row's cardholder and card ids, paged as D331's report (2 a page here), and
    the lookup by externalId or email; the id found is the one card association takes."""
    from paysdk.server.services import cardholders as service

    monkeypatch.setattr(service, "RESULTS_PAGE_ENTRIES", 2)
    setup = await _setup(make)
    cardholders = setup.client.backoffice.cardholders
    tag = secrets.token_hex(3)
    answer = await call(cardholders.upload(setup.partner_id, _csv(6, bad=(3,), tag=tag), filename="h.csv"))
    await _drive(make, setup.sandbox)
    await call(cardholders.wait(setup.partner_id, answer.batch_id))

    first = await call(cardholders.results_page(setup.partner_id, answer.batch_id))
    assert (first.status, first.created, first.page, first.pages) == ("completed", 5, 1, 3)
    assert [entry.row for entry in first.entries] == [2, 3]
    created = await call(cardholders.results(setup.partner_id, answer.batch_id))
    assert [(entry.row, entry.external_id) for entry in created] == [
        (2, f"ext-{tag}-1"),
        (3, f"ext-{tag}-2"),
        (5, f"ext-{tag}-4"),
        (6, f"ext-{tag}-5"),
        (7, f"ext-{tag}-6"),
    ]
    assert len({entry.cardholder_id for entry in created}) == 5
    assert [entry.card_id is not None for entry in created] == [True, False, False, True, False]

    found = await call(cardholders.lookup(setup.partner_id, external_id=f"ext-{tag}-5"))
    assert (found.cardholder_id, found.card_id, found.row) == (
        created[3].cardholder_id,
        created[3].card_id,
        6,
    )
    assert (found.batch_id, found.partner_id, found.email) == (
        answer.batch_id,
        setup.partner_id,
        f"holder5-{tag}@example.com",
    )
    by_email = await call(cardholders.lookup(setup.partner_id, email=f"HOLDER2-{tag}@example.com"))
    assert (by_email.cardholder_id, by_email.external_id) == (created[1].cardholder_id, f"ext-{tag}-2")

    stock = await call(setup.sandbox.sandbox.create_stock_card(setup.merchant.slug))
    card = await call(
        setup.client.backoffice.associate_card(setup.partner_id, found.cardholder_id, stock.card_id)
    )
    assert card.card_id == stock.card_id

    for kwargs, field in (
        ({"external_id": f"ext-{tag}-3"}, "externalId"),
        ({"email": "no@example.com"}, "email"),
    ):
        with pytest.raises(paysdk.NotFoundError) as missing:  # row 4 failed: nothing to find
            await call(cardholders.lookup(setup.partner_id, **kwargs))
        assert field in str(missing.value.body)
    with pytest.raises(paysdk.NotFoundError) as past:
        await call(cardholders.results_page(setup.partner_id, answer.batch_id, 4))
    assert "page" in str(past.value.body)
    other = await _setup(make)
    with pytest.raises(paysdk.NotFoundError):  # another partner's batch
        await call(cardholders.results_page(other.partner_id, answer.batch_id))
    with pytest.raises(paysdk.ValidationError):
        await call(cardholders.lookup(setup.partner_id))
    with pytest.raises(paysdk.ValidationError):
        await call(cardholders.results_page(setup.partner_id, answer.batch_id, 0))
