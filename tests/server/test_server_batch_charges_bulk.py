"""Batch CSV rows are charged in bulk (issue 22 item 7, D515-D517), SQLite and PostgreSQL.

* The bulk path answers, charges and stores exactly what charging the rows one by one did: the same
  results, the same charges and stored rows in the same order, nothing else written (no callback, no
  email, no job, no subscription moved). The one-by-one path is kept below as the oracle
  (:func:`one_by_one`: the service as it was before D515, each row through the single-charge service
  :func:`paysdk.server.services.subscriptions.charge` in its own savepoint); both run on the same
  database, the oracle in a savepoint rolled back.
* A file is charged with a few statements, not several per row.
* A reference another upload stored after this one read the references (a lost race) answers that
  upload's result and charges nothing; the other rows are charged.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import httpx
import pytest
import sqlalchemy
from fastapi import FastAPI
from sqlalchemy import Table, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from test_server_batch_charges import Batch, _batch, _csv, _results
from wallet.kit import bearer, body

from paysdk.contracts.charges_csv import ChargeRow
from paysdk.contracts.subscriptions import BatchChargeResult, BatchChargeRowResult
from paysdk.server.core_tables import CallbackEventRow, JobRow
from paysdk.server.db import to_cents
from paysdk.server.services import batch_charges, subscriptions
from paysdk.server.services.wallet_tokens import Principal
from paysdk.server.subscription_tables import BatchRowRow, PlanRow, SubscriptionChargeRow, SubscriptionRow
from paysdk.server.wallet_tables import WalletOutboxRow

DECLINE = "4000000000000002"
EXPIRED = "4000000000000069"

# ------------------------------------------------------------------------------------ the oracle


def _fingerprint(sub_uid: str, amount_cents: int, currency: str) -> str:
    return hashlib.sha256(f"{sub_uid}\0{amount_cents}\0{currency}".encode()).hexdigest()


def _refused(row: int, reference: str | None, sub_uid: str | None, error: str) -> BatchChargeRowResult:
    return BatchChargeRowResult(
        row=row, status="refused", reference=reference, subscription_id=sub_uid, error=error
    )


def _replay(
    row: ChargeRow, earlier: BatchRowRow, found: tuple[SubscriptionRow, PlanRow] | None, amount_cents: int
) -> BatchChargeRowResult:
    currency = row.currency or (found[1].currency if found is not None else None)
    same = (
        earlier.sub_uid == row.subscription_id
        and currency is not None
        and earlier.fingerprint == _fingerprint(row.subscription_id, amount_cents, currency)
    )
    if not same:
        return _refused(
            row.row,
            row.reference,
            row.subscription_id,
            "reference: already used by an earlier row with other values (subscription, amount or currency)",
        )
    return BatchChargeRowResult(
        row=row.row,
        status="charged" if earlier.status == "charged" else "declined",
        reference=row.reference,
        subscription_id=earlier.sub_uid,
        charge_id=earlier.charge_id,
        error=earlier.error,
        replayed=True,
    )


def _one_row(
    session: Session,
    now: datetime,
    client_id: int,
    row: ChargeRow,
    stored: dict[str, BatchRowRow],
    subs: dict[str, tuple[SubscriptionRow, PlanRow]],
) -> BatchChargeRowResult:
    found = subs.get(row.subscription_id)
    amount_cents = to_cents(row.amount)
    earlier = stored.get(row.reference)
    if earlier is not None:
        return _replay(row, earlier, found, amount_cents)
    if found is None:
        return _refused(row.row, row.reference, row.subscription_id, "subscriptionId: unknown subscription")
    sub, plan = found
    currency = row.currency or plan.currency
    if currency != plan.currency:
        return _refused(
            row.row, row.reference, sub.sub_uid, f"currency: must be the plan's currency {plan.currency}"
        )
    if sub.status != "active":
        return _refused(
            row.row, row.reference, sub.sub_uid, f"subscriptionId: the subscription is {sub.status}"
        )
    record = BatchRowRow(
        client_id=client_id,
        reference=row.reference,
        fingerprint=_fingerprint(sub.sub_uid, amount_cents, currency),
        sub_uid=sub.sub_uid,
        status="pending",
        created_at=now,
    )
    with session.begin_nested():
        session.add(record)
        session.flush()
    charge = subscriptions.charge(
        session,
        sub,
        now=now,
        source="batch",
        amount_cents=amount_cents,
        currency=currency,
        attempt=1,
        reference=row.reference,
    )
    record.status = "charged" if charge.status == "approved" else "declined"
    record.charge_id = charge.charge_id
    record.error = None if charge.status == "approved" else f"declined: {charge.reason}"
    session.flush()
    stored[row.reference] = record
    return BatchChargeRowResult(
        row=row.row,
        status="charged" if record.status == "charged" else "declined",
        reference=row.reference,
        subscription_id=sub.sub_uid,
        charge_id=charge.charge_id,
        error=record.error,
    )


def one_by_one(
    session: Session, now: datetime, client_id: int, scanned: batch_charges.CsvScan
) -> BatchChargeResult:
    """The rows of ``scanned`` charged one by one, as the service did before D515 (the oracle)."""
    results: dict[int, BatchChargeRowResult] = {}
    by_row: dict[int, list[str]] = {}
    for error in scanned.errors:
        by_row.setdefault(error.row, []).append(f"{error.column}: {error.message}")
    for row_number, messages in by_row.items():
        results[row_number] = _refused(row_number, None, None, "; ".join(messages))
    rows = scanned.charges or []
    stored = {
        found.reference: found
        for found in session.scalars(
            select(BatchRowRow).where(
                BatchRowRow.client_id == client_id, BatchRowRow.reference.in_([row.reference for row in rows])
            )
        )
    }
    subs = {
        sub.sub_uid: (sub, plan)
        for sub, plan in session.execute(
            select(SubscriptionRow, PlanRow)
            .join(PlanRow, PlanRow.id == SubscriptionRow.plan_id)
            .where(
                SubscriptionRow.client_id == client_id,
                SubscriptionRow.sub_uid.in_([row.subscription_id for row in rows]),
            )
        ).all()
    }
    for row in sorted(rows, key=lambda item: item.reference):
        results[row.row] = _one_row(session, now, client_id, row, stored, subs)
    ordered = [results[key] for key in sorted(results)]
    return BatchChargeResult(
        rows=len(ordered),
        charged=sum(1 for item in ordered if item.status == "charged"),
        declined=sum(1 for item in ordered if item.status == "declined"),
        refused=sum(1 for item in ordered if item.status == "refused"),
        replayed=sum(1 for item in ordered if item.replayed),
        results=ordered,
    )


# ------------------------------------------------------------------------------------ helpers


def _table(model: Any) -> Table:
    table: Table = model.__table__
    return table


#: What a batch could write: charges, stored rows, subscriptions, callbacks, emails, jobs.
_WATCHED = (SubscriptionChargeRow, BatchRowRow, SubscriptionRow, CallbackEventRow, WalletOutboxRow, JobRow)


def _state(session: Session) -> dict[str, list[dict[str, Any]]]:
    """Every row of the watched tables in insertion order, without the ids a sequence hands out (a
    PostgreSQL sequence does not roll back with the oracle's savepoint)."""
    state: dict[str, list[dict[str, Any]]] = {}
    for model in _WATCHED:
        table = _table(model)
        rows = (
            session.connection().execute(select(table).order_by(*table.primary_key.columns)).mappings().all()
        )
        state[table.name] = [{key: value for key, value in row.items() if key != "id"} for row in rows]
    return state


def _labels(state: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Each charge id of ``state`` named by the reference it charged (unique per client, D157)."""
    return {row["charge_id"]: f"charge of {row['reference']}" for row in state["subscription_charges"]}


def _normalized(
    result: BatchChargeResult, state: dict[str, list[dict[str, Any]]]
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The answer and the state with every charge id replaced by what it charged."""
    labels = _labels(state)
    answer = result.model_dump()
    for item in answer["results"]:
        if item["charge_id"] is not None:
            item["charge_id"] = labels[item["charge_id"]]
    named = {
        name: [
            {**row, "charge_id": labels[row["charge_id"]]} if row.get("charge_id") else row for row in rows
        ]
        for name, rows in state.items()
    }
    return answer, named


def _principal(session: Session, sub_uid: str) -> Principal:
    client_id = session.scalar(select(SubscriptionRow.client_id).where(SubscriptionRow.sub_uid == sub_uid))
    assert client_id is not None
    return Principal("application", client_id, "merchant", None, "session", "family")


# ------------------------------------------------------------------------------------ tests


@pytest.fixture
async def batch(asgi_client: httpx.AsyncClient, app: FastAPI, merchant_factory: Any) -> Batch:
    return await _batch(asgi_client, app, merchant_factory)


async def test_the_bulk_path_answers_charges_and_stores_what_one_by_one_did(
    batch: Batch, asgi_client: httpx.AsyncClient, app: FastAPI, merchant_factory: Any
) -> None:
    other = await _batch(asgi_client, app, merchant_factory)
    (theirs,) = await other.subscriptions()
    good = await batch.subscriptions(3)
    declined = await batch.subscriptions(2, card=DECLINE)
    (expired,) = await batch.subscriptions(1, card=EXPIRED)
    cancelled, inactive = await batch.subscriptions(2)
    assert (
        await asgi_client.delete(f"/v1/subscriptions/{cancelled}", headers=bearer(batch.token))
    ).status_code == 200

    def suspend(session: Session) -> None:
        session.execute(
            update(SubscriptionRow).where(SubscriptionRow.sub_uid == inactive).values(status="inactive")
        )

    batch.db(suspend)
    currency = batch.plan["currency"]
    wrong = "EUR" if currency != "EUR" else "USD"
    earlier = _csv(
        f"{good[0]},1.00,old-1,",
        f"{declined[0]},2.00,old-2,",
        f"{good[1]},3.00,old-3,{currency}",
        header="subscriptionId,amount,reference,currency",
    )
    assert [status for _, status, _ in _results(await batch.upload(earlier))] == [
        "charged",
        "declined",
        "charged",
    ]
    content = _csv(
        f"{good[2]},5.00,new-z,",  # new rows, not in reference order
        f"{good[0]},1,old-1,",  # replays: the same values (1 = 1.00), a currency given or left out
        f"{declined[1]},4.00,new-d,",  # a declined card (generic decline)
        f"{declined[0]},2,old-2,{currency.lower()}",  # a declined row replayed
        f"{good[1]},3.01,old-3,",  # a reference used with other values
        f"{good[0]},7.00,new-a,",
        f"{expired},8.00,new-e,",  # a declined card (expired)
        f"{good[0]},-1,bad-amount,",  # invalid rows
        f"{good[0]},1,=1+1,",
        f"{good[0]},1,new-a,",  # duplicate of row 7
        "",  # a blank line keeps its number
        "sub_unknown,1,unknown,",
        f"{theirs},1,theirs,",
        f"{cancelled},1,cancelled,",
        f"{inactive},1,inactive,",
        f"{good[1]},1,wrong-currency,{wrong}",
        f"{good[1]},9.99,new-b,{currency}",
        f"{good[2]},1,old-1,",  # a reference used for another subscription
        f"{good[2]},0.01,new-c,",
        header="subscriptionId,amount,reference,currency",
    )
    scanned = batch_charges.read_file(io.BytesIO(content))
    assert isinstance(scanned, batch_charges.CsvScan)

    def both(session: Session) -> tuple[Any, Any]:
        now = app.state.paysdk.clock.now(session)
        principal = _principal(session, good[0])
        savepoint = session.begin_nested()
        expected = _normalized(one_by_one(session, now, principal.client_id, scanned), _state(session))
        savepoint.rollback()
        actual = _normalized(batch_charges.charge_rows(session, now, principal, scanned), _state(session))
        return expected, actual

    expected, actual = batch.db(both)
    assert actual[0] == expected[0]
    assert actual[1] == expected[1]
    statuses = [(item["row"], item["status"], item["replayed"]) for item in actual[0]["results"]]
    assert statuses == [
        (2, "charged", False),
        (3, "charged", True),
        (4, "declined", False),
        (5, "declined", True),
        (6, "refused", False),
        (7, "charged", False),
        (8, "declined", False),
        (9, "refused", False),
        (10, "refused", False),
        (11, "refused", False),
        (13, "refused", False),
        (14, "refused", False),
        (15, "refused", False),
        (16, "refused", False),
        (17, "refused", False),
        (18, "charged", False),
        (19, "refused", False),
        (20, "charged", False),
    ]
    # The charges were written in reference order (the payment history's order), as one by one.
    written = [row["reference"] for row in actual[1]["subscription_charges"]]
    assert written == ["old-1", "old-2", "old-3", "new-a", "new-b", "new-c", "new-d", "new-e", "new-z"]
    assert actual[1]["callback_events"] == []
    assert actual[1]["wallet_outbox"] == []


@contextmanager
def _statements(app: FastAPI) -> Iterator[list[str]]:
    """Every statement the server's database runs while the block runs: SQLite's trace of its
    connections (which sees what runs through the DBAPI directly too), else SQLAlchemy's cursor events
    (an ``executemany`` counts once)."""
    seen: list[str] = []
    engine = app.state.paysdk.db.engine
    if engine.dialect.name == "sqlite":
        traced: list[Any] = []

        def trace(dbapi_connection: Any, *_args: Any) -> None:
            dbapi_connection.set_trace_callback(seen.append)
            traced.append(dbapi_connection)

        sqlalchemy.event.listen(engine, "checkout", trace)
        try:
            yield seen
        finally:
            sqlalchemy.event.remove(engine, "checkout", trace)
            for connection in traced:
                connection.set_trace_callback(None)
        return

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    sqlalchemy.event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        sqlalchemy.event.remove(engine, "before_cursor_execute", count)


async def test_a_file_is_charged_with_a_few_statements_not_several_per_row(
    batch: Batch, app: FastAPI
) -> None:
    subs = await batch.subscriptions(100)
    small = _csv(*(f"{subs[index]},1.00,s-{index}" for index in range(10)))
    large = _csv(*(f"{subs[index % 100]},1.00,l-{index}" for index in range(1000)))
    with _statements(app) as seen:
        assert body(await batch.upload(small))["data"]["charged"] == 10
    few = len(seen)
    with _statements(app) as seen:
        assert body(await batch.upload(large))["data"]["charged"] == 1000
    many = len(seen)
    assert few > 0
    # 100 times the rows: a few more chunks of the reads and the multi-row inserts, not ~6 statements a
    # row (savepoint, insert, release, charge, read back, update) as one by one.
    assert many - few < 60, (few, many)
    assert len(batch.charges()) == 1010


async def test_a_reference_stored_by_another_upload_meanwhile_answers_its_result(
    batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    subs = await batch.subscriptions(3)
    first = body(await batch.upload(_csv(f"{subs[0]},1.00,race-1", f"{subs[1]},2.00,race-2")))["data"]
    ids = {item["reference"]: item["chargeId"] for item in first["results"]}
    real = batch_charges._stored
    reads: list[list[str]] = []

    def stale_first(session: Session, client_id: int, references: list[str]) -> Any:
        # The first read misses the rows, as when another upload commits them right after it.
        reads.append(list(references))
        return {} if len(reads) == 1 else real(session, client_id, references)

    monkeypatch.setattr(batch_charges, "_stored", stale_first)
    again = _csv(f"{subs[1]},2.00,race-2", f"{subs[2]},3.00,race-3", f"{subs[0]},1.50,race-1")
    data = body(await batch.upload(again))["data"]
    assert len(reads) == 2
    assert sorted(reads[1]) == ["race-1", "race-2", "race-3"]  # read again after the collision
    results = [(item["row"], item["status"], item.get("replayed", False)) for item in data["results"]]
    assert results == [(2, "charged", True), (3, "charged", False), (4, "refused", False)]
    assert data["results"][0]["chargeId"] == ids["race-2"]
    assert "already used" in data["results"][2]["error"]
    assert batch.charges() == [("race-1", "approved"), ("race-2", "approved"), ("race-3", "approved")]


def test_a_collision_that_answers_no_row_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    """A unique-index failure that no stored reference explains is not swallowed (never a loop)."""

    def fail(*_args: Any, **_kwargs: Any) -> Any:
        raise IntegrityError("INSERT", None, Exception("another index"))

    monkeypatch.setattr(batch_charges, "_stored", lambda *_args: {})
    sub = batch_charges._Sub(1, "sub_x", 1, "active", "visa", "4242", "approve", "generic_decline", "USD")
    monkeypatch.setattr(batch_charges, "_subscriptions", lambda *_args: {"sub_x": sub})
    monkeypatch.setattr(batch_charges, "_charge", fail)
    scanned = batch_charges.read_file(io.BytesIO(_csv("sub_x,1.00,r-1")))
    assert isinstance(scanned, batch_charges.CsvScan)
    principal = Principal("application", 1, "merchant", None, "session", "family")
    with pytest.raises(IntegrityError):
        batch_charges.charge_rows(_NoSavepoint(), datetime.now(), principal, scanned)  # type: ignore[arg-type]


class _NoSavepoint:
    """A session whose savepoints do nothing (the writes are stubbed)."""

    @contextmanager
    def begin_nested(self) -> Iterator[None]:
        yield
