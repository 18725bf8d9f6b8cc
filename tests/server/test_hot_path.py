"""The fast path of the public endpoints: the process-wide fault registry, the grouped request log and
the Core/DBAPI statements (:class:`paysdk.server.hotpath.Statement`) must not change any behaviour."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from server_helpers import auth, body, create_alternative, create_link, dumps, link_body
from sqlalchemy import insert

from paysdk.contracts.sandbox import SandboxClient, SandboxTransaction
from paysdk.server import create_app, faults
from paysdk.server.core_tables import FaultRow


@pytest.fixture
def second_app(db_url: str) -> Iterator[FastAPI]:
    """Another app instance of this process over the same database as ``app``."""
    application = create_app(db_url, start_ticker=False)
    try:
        yield application
    finally:
        application.state.paysdk.db.dispose()


@pytest.fixture
async def second_client(second_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=second_app), base_url="http://testserver"
    ) as client:
        yield client


async def test_fault_added_through_one_instance_applies_to_another(
    asgi_client: httpx.AsyncClient, second_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    # The second instance has looked already and found no fault: it must not trust that any longer.
    await create_link(second_client, merchant)
    created = await asgi_client.post(
        "/_sandbox/faults", json={"kind": "error", "route": "POST /transactions", "count": 1, "status": 503}
    )
    assert created.status_code == 201
    failed = await second_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
    )
    assert failed.status_code == 503
    await create_link(second_client, merchant)  # the single use is gone, on both instances
    await create_link(asgi_client, merchant)
    listed = body(await asgi_client.get("/_sandbox/faults"))
    assert [fault["remaining"] for fault in listed] == [0]


async def test_cleared_faults_stop_applying_and_new_ones_apply_again(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    await asgi_client.post("/_sandbox/faults", json={"kind": "rate_limit", "route": "*", "count": 5})
    limited = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
    )
    assert limited.status_code == 429
    assert (await asgi_client.delete("/_sandbox/faults")).json() == {"deleted": 1}
    await create_link(asgi_client, merchant)
    await create_link(asgi_client, merchant)  # "no fault" is now known: answered without a look
    await asgi_client.post("/_sandbox/faults", json={"kind": "rate_limit", "route": "*", "count": 1})
    limited = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
    )
    assert limited.status_code == 429


async def test_fault_written_by_another_process_is_seen_after_the_refresh(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await create_link(asgi_client, merchant)  # looked: no fault
    context = app.state.paysdk
    # Another process writes the row: nothing in this process is told about it.
    now = context.call(context.clock.now)
    with context.db.engine.begin() as connection:
        connection.execute(
            insert(FaultRow),
            {
                "id": "flt_otherprocess01",
                "seq": 1,
                "kind": "error",
                "route": "*",
                "count": 1,
                "remaining": 1,
                "status": 502,
                "created_at": now,
            },
        )
    key = faults.database_key(context.db.engine.url)
    assert not faults.request_faults_possible(key)  # trusted for up to REFRESH_SECONDS
    monkeypatch.setattr(faults, "REFRESH_SECONDS", 0.0)
    assert faults.request_faults_possible(key)
    failed = await asgi_client.post(
        "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
    )
    assert failed.status_code == 502


def test_database_key_names_one_sqlite_file_however_spelled(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy.engine import make_url

    monkeypatch.chdir(tmp_path)
    absolute = faults.database_key(make_url(f"sqlite:///{tmp_path / 'a.db'}"))
    assert faults.database_key(make_url("sqlite:///a.db")) == absolute
    assert faults.database_key(make_url("sqlite:///./a.db")) == absolute
    assert faults.database_key(make_url("sqlite:///b.db")) != absolute


async def test_every_answered_request_is_logged_when_its_answer_arrives(
    asgi_client: httpx.AsyncClient, second_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    # Concurrent requests share log transactions; each is readable as soon as its answer is in, from
    # either instance.
    answers = await asyncio.gather(
        *(
            client.post(
                f"/transactions?n={index}", content=dumps(link_body(merchant)), headers=auth(merchant)
            )
            for index in range(12)
            for client in (asgi_client, second_client)
        )
    )
    assert [answer.status_code for answer in answers] == [200] * 24
    for client in (asgi_client, second_client):
        entries = body(await client.get("/_sandbox/requests"))
        paths = sorted(entry["path"] for entry in entries)
        assert paths == sorted(f"/transactions?n={index}" for index in range(12) for _ in range(2))
        assert {entry["statusCode"] for entry in entries} == {200}
        assert all(entry["headers"]["authorization"] == "****" for entry in entries)


async def test_logged_immediately_after_each_answer(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    for count in range(1, 4):
        await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=auth(merchant))
        assert len(body(await asgi_client.get("/_sandbox/requests"))) == count


async def test_client_created_after_an_unknown_token_authenticates(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    unknown = await asgi_client.post(
        "/transactions", content=dumps({"amount": 5}), headers={"Authorization": "f" * 64}
    )
    assert unknown.status_code == 401
    merchant = await merchant_factory()
    await create_link(asgi_client, merchant)
    await asgi_client.post("/_sandbox/reset")
    gone = await asgi_client.post("/transactions", content=dumps(link_body(merchant)), headers=auth(merchant))
    assert gone.status_code == 401


async def test_fast_path_rows_read_back_exactly(
    asgi_client: httpx.AsyncClient, merchant_factory: Any
) -> None:
    merchant = await merchant_factory(currencies=["USD", "GTQ"])
    link = await create_link(
        asgi_client, merchant, amount=Decimal("1234.56"), customKeys={"order": 7, "rate": Decimal("0.10")}
    )
    raw = body(await asgi_client.get(f"/_sandbox/transactions/{link['uid']}"))
    assert raw["customKeys"] == {"order": 7, "rate": Decimal("0.10")}
    stored = SandboxTransaction.model_validate(raw)
    assert stored.amount == Decimal("1234.56")
    assert stored.currency == "USD"  # the client's first currency (D3)
    assert stored.status == "pending"
    assert stored.expire_at - stored.created_at == timedelta(hours=24)
    assert stored.created_at.utcoffset() == timedelta(0)
    assert stored.created_at == stored.updated_at
    payment = await create_alternative(asgi_client, merchant)
    stored_ap = SandboxTransaction.model_validate(
        body(await asgi_client.get(f"/_sandbox/transactions/{payment['uid']}"))
    )
    assert stored_ap.expire_at - stored_ap.created_at == timedelta(minutes=15)
    assert payment["expireAt"] == int(stored_ap.expire_at.timestamp() * 1000)
    # The expiry job was queued: a day later both are expired.
    await asgi_client.post("/_sandbox/clock/advance", json={"seconds": 86400 + 1})
    for uid in (link["uid"], payment["uid"]):
        assert body(await asgi_client.get(f"/_sandbox/transactions/{uid}"))["status"] == "expired"


# ------------------------------------------------------------------------------------- group commit

_FAILING_PHONE = "+50299999999"


# The group commit batches calls on SQLite only (PostgreSQL creates run one transaction each), so the
# batch-failure tests are generated for SQLite alone: nothing is skipped at run time.
sqlite_only = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def _refuse_phone_at_insert(app: FastAPI) -> None:
    """A trigger making the transaction insert of one phone number fail inside the database."""
    with app.state.paysdk.db.engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE TRIGGER refuse_phone BEFORE INSERT ON transactions "
            f"WHEN NEW.user_id = '{_FAILING_PHONE}' BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )


@sqlite_only
async def test_a_call_failing_at_insert_time_does_not_fail_its_batch(
    app: FastAPI, merchant: SandboxClient
) -> None:
    assert app.state.paysdk.db.dialect == "sqlite"
    _refuse_phone_at_insert(app)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)  # the 500 as a client sees it
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as asgi_client:
        await _one_failing_among_fifty(asgi_client, merchant)


async def _one_failing_among_fifty(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> None:
    failing = dumps(link_body(merchant, userId=_FAILING_PHONE))
    alone = await asgi_client.post("/transactions", content=failing, headers=auth(merchant))
    assert alone.status_code == 500
    bodies = [
        failing if index == 17 else dumps(link_body(merchant, externalId=f"ext-{index}"))
        for index in range(50)
    ]
    answers = await asyncio.gather(
        *(
            asgi_client.post(f"/transactions?n={index}", content=content, headers=auth(merchant))
            for index, content in enumerate(bodies)
        )
    )
    assert answers[17].status_code == alone.status_code
    assert answers[17].json() == alone.json()
    ok = [answer for index, answer in enumerate(answers) if index != 17]
    assert [answer.status_code for answer in ok] == [200] * 49
    uids = [body(answer)["uid"] for answer in ok]
    assert len(set(uids)) == 49
    for index, answer in enumerate(answers):  # each got its own transaction
        if index == 17:
            continue
        stored = SandboxTransaction.model_validate(
            body(await asgi_client.get(f"/_sandbox/transactions/{body(answer)['uid']}"))
        )
        assert stored.external_id == f"ext-{index}"
        assert stored.amount == Decimal("10.50")
    logged = body(await asgi_client.get("/_sandbox/requests"))
    assert len(logged) == 51
    assert sorted(entry["statusCode"] for entry in logged).count(500) == 2


async def test_problems_and_successes_mixed_in_one_batch_each_get_their_own_answer(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    cases = [
        (dumps(link_body(merchant)), auth(merchant), 200),
        (dumps(link_body(merchant, amount=Decimal("0.10"))), auth(merchant), 400),
        (b"{not json", auth(merchant), 400),
        (b"{not json", {"Authorization": "0" * 64}, 401),  # the token is checked before the body
        (dumps(link_body(merchant, userId="12")), auth(merchant), 409),
        (dumps(link_body(merchant)), auth(merchant, production=True), 401),
        (dumps(link_body(merchant, client="other")), auth(merchant), 409),
    ]
    alone = [
        await asgi_client.post("/transactions", content=content, headers=headers)
        for content, headers, _ in cases
    ]
    together = await asyncio.gather(
        *(
            asgi_client.post("/transactions", content=content, headers=headers)
            for _ in range(4)
            for content, headers, _ in cases
        )
    )
    for index, answer in enumerate(together):
        expected = alone[index % len(cases)]
        assert answer.status_code == expected.status_code == cases[index % len(cases)][2]
        if answer.status_code != 200:
            assert answer.json() == expected.json()


@sqlite_only
async def test_a_lost_batch_runs_every_call_and_log_entry_again(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert app.state.paysdk.db.dialect == "sqlite"
    from paysdk.server.hotpath import driver, group_commit

    failures = {"left": 2}  # the batch of the 20 creates, then the batch of their 20 log entries
    original = group_commit._run_together

    def broken(connection: Any, calls: Any) -> bool:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise driver.SavepointBroken()  # the batch transaction is lost: nothing of it commits
        return original(connection, calls)

    monkeypatch.setattr(group_commit, "_run_together", broken)
    answers = await asyncio.gather(
        *(
            asgi_client.post(
                f"/transactions?n={index}", content=dumps(link_body(merchant)), headers=auth(merchant)
            )
            for index in range(20)
        )
    )
    assert [answer.status_code for answer in answers] == [200] * 20
    assert failures["left"] == 0
    for answer in answers:
        assert (await asgi_client.get(f"/_sandbox/transactions/{body(answer)['uid']}")).status_code == 200
    paths = sorted(entry["path"] for entry in body(await asgi_client.get("/_sandbox/requests")))
    assert [path for path in paths if path.startswith("/transactions")] == sorted(
        f"/transactions?n={index}" for index in range(20)
    )


async def test_a_log_entry_that_cannot_be_written_loses_no_other(
    app: FastAPI, asgi_client: httpx.AsyncClient, merchant: SandboxClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paysdk.server.asgi import request_log as middleware

    original = middleware.mask_headers

    def mask(raw: list[tuple[bytes, bytes]], extra: set[str]) -> dict[str, str]:
        if any(value == b"poison" for _, value in raw):
            raise RuntimeError("cannot store this entry")
        return original(raw, extra)

    monkeypatch.setattr(middleware, "mask_headers", mask)
    answers = await asyncio.gather(
        *(
            asgi_client.post(
                f"/transactions?n={index}",
                content=dumps(link_body(merchant)),
                headers={**auth(merchant), "X-Trace": "poison" if index == 3 else "fine"},
            )
            for index in range(10)
        )
    )
    assert [answer.status_code for answer in answers] == [200] * 10
    paths = sorted(entry["path"] for entry in body(await asgi_client.get("/_sandbox/requests")))
    assert paths == sorted(f"/transactions?n={index}" for index in range(10) if index != 3)


async def test_idempotent_creates_replay_under_concurrency(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    async def send(index: int) -> httpx.Response:
        return await asgi_client.post(
            "/transactions",
            content=dumps(link_body(merchant, externalId=f"idem-{index}")),
            headers={**auth(merchant), "Idempotency-Key": f"key-{index}"},
        )

    first = await asyncio.gather(*(send(index) for index in range(20)))
    again = await asyncio.gather(*(send(index) for index in range(20)))
    assert [answer.status_code for answer in first] == [200] * 20
    assert len({body(answer)["uid"] for answer in first}) == 20
    for original, replay in zip(first, again, strict=True):
        assert replay.status_code == 200
        assert replay.headers["Idempotent-Replayed"] == "true"
        assert replay.content == original.content


async def test_alternative_payments_are_created_in_batches_too(
    asgi_client: httpx.AsyncClient, merchant: SandboxClient
) -> None:
    created = await asyncio.gather(*(create_alternative(asgi_client, merchant) for _ in range(20)))
    assert len({item["uid"] for item in created}) == 20
    for item in created:
        stored = body(await asgi_client.get(f"/_sandbox/transactions/{item['uid']}"))
        assert stored["kind"] == "alternative_payment"
        assert stored["amount"] == Decimal("25.00")
