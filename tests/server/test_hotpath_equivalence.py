"""The hot path and the plain path answer and store alike (issue 22 item 2, D593).

Each accelerated route gets the same requests twice, on a fresh database each time: through the hot path
(compiled statements on the DBAPI cursor, group commits, the ledger's fast path) and through the plain
path (``Database(..., hotpath=False)``: every statement through SQLAlchemy's ordinary execution, every
call in a transaction of its own, the ledger's requests served by the ORM service). The answers and every
stored row must be equal once the values that differ by nature between two runs (random ids, secrets,
tokens, wall-clock instants, integer keys PostgreSQL draws from sequences) are replaced by their kind.
On SQLite and PostgreSQL (``db_url``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Awaitable, Callable
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import psycopg
from cardholder_kit import Backoffice, csv_file, person, xlsx_file
from fastapi import FastAPI
from server_helpers import auth, dumps, link_body
from sqlalchemy import MetaData, select
from test_server_batch_charges import _batch, _csv
from wallet.kit import Kit

from paysdk.contracts.sandbox import SandboxClient, SandboxClientCreate
from paysdk.server import create_app
from paysdk.server.db import Database
from paysdk.server.hotpath import STATEMENTS

Scenario = Callable[[httpx.AsyncClient, FastAPI], Awaitable[list[Any]]]

_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$")
#: Drawn at random or from the clock: ids (``txn_...``, uuids), references (``PL-...``), hex strings.
_DRAWN = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|\bop-[0-9a-f]{8}@|\b[A-Z]{2,4}-[A-Z0-9]{8,}\b|\b[A-Za-z]{2,10}_[A-Za-z0-9_-]{6,}|\b[0-9a-f]{16,}\b"
)
_VOLATILE = (
    "token",
    "hash",
    "sha",
    "secret",
    "key",
    "signature",
    "jwt",
    "jti",
    "request_id",
    "requestid",
    "pan",
    "owner",
    "cvv",
)
#: Integer keys (PostgreSQL's sequences run on across the two runs).
_INT_KEY = re.compile(r"(^|_)(id|pk|seq)$|Id$")


def _norm(value: Any, key: str = "") -> Any:
    lowered = key.lower()
    if isinstance(value, dict):
        return {k: _norm(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_norm(item, key) for item in value]
    if isinstance(value, datetime | date):
        return "<time>"
    if "duration" in lowered:
        return "<duration>"
    if isinstance(value, int) and not isinstance(value, bool) and _INT_KEY.search(key):
        return "<key>"
    if isinstance(value, int) and (key.endswith("At") or lowered.endswith("_at")):
        return "<time>"
    if isinstance(value, str | bytes):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if any(part in lowered for part in _VOLATILE) or "*" in text or text.startswith("eyJ"):
            return "<volatile>"
        if _TIME.match(text):
            return "<time>"
        if _INT_KEY.search(key) and text.isdigit():
            return "<id>"
        if text.startswith(("{", "[")):
            try:
                return _norm(json.loads(text), key)
            except ValueError:
                pass
        return _DRAWN.sub("<id>", text)
    return value


def _tables(database: Database) -> MetaData:
    """The tables of ``database`` as they are (reflected once per run: the rows are read many times)."""
    metadata = MetaData()
    metadata.reflect(database.engine)
    return metadata


def _rows(database: Database, metadata: MetaData) -> dict[str, list[str]]:
    """Every table's rows, normalized and sorted (row order is not part of what is compared)."""
    found: dict[str, list[str]] = {}
    with database.engine.connect() as connection:
        for name, table in sorted(metadata.tables.items()):
            if name in ("alembic_version", "paysdk_schema_version") or name.endswith("_keys"):
                continue
            rows = [
                json.dumps(_norm({c: v for c, v in row._mapping.items()}), sort_keys=True, default=str)
                for row in connection.execute(select(table))
                # A cardholder batch runs in chunks bounded by time: how many progress events it writes
                # depends on the machine's load, not on the path.
                if not (name == "cardholder_events" and row._mapping["event"] == "progress")
            ]
            found[name] = sorted(rows)
    return found


def _answer(response: httpx.Response) -> Any:
    content: Any = response.content
    if response.headers.get("content-type", "").startswith("application/json"):
        content = json.loads(response.content, parse_float=Decimal)
    return (response.status_code, _norm(content))


def _empty(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        tables = [
            r[0] for r in connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
        if tables:
            connection.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


async def _run(
    db_url: str, tmp_path: Path, scenario: Scenario, hot: bool
) -> tuple[list[Any], dict[str, list[str]]]:
    if db_url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / ('hot.db' if hot else 'plain.db')}"
    else:
        url = db_url
        _empty(url)
    database = Database(url, hotpath=hot)
    assert STATEMENTS.switched_off(database.engine.dialect) is not hot
    app = create_app(start_ticker=False, database=database)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        ) as client:
            answers = await scenario(client, app)
            # The server's own background work (a batch's kicked jobs) may still be writing when the
            # scenario's last answer came: the rows are read once they stay the same for a whole second
            # (ten reads; the app's event loop runs between them). One unchanged read 0.1 s later was
            # seen to catch a batch between two of its writes on a loaded machine.
            tables = _tables(database)
            rows = _rows(database, tables)
            same = 0
            for _ in range(1200):
                await asyncio.sleep(0.1)
                again = _rows(database, tables)
                same = same + 1 if again == rows else 0
                if same == 10:
                    break
                rows = again
        return answers, rows
    finally:
        database.dispose()


async def _equivalent(db_url: str, tmp_path: Path, scenario: Scenario) -> list[Any]:
    hot_answers, hot_rows = await _run(db_url, tmp_path, scenario, hot=True)
    plain_answers, plain_rows = await _run(db_url, tmp_path, scenario, hot=False)
    assert hot_answers == plain_answers
    differing = {
        table: (sorted(set(rows) - set(plain_rows[table])), sorted(set(plain_rows[table]) - set(rows)))
        for table, rows in hot_rows.items()
        if rows != plain_rows.get(table)
    }
    # table: (rows only the hot path stored, rows only the plain path stored), whole (a str message is
    # not cut short as a repr is)
    assert not differing, json.dumps(differing, indent=1)
    assert hot_rows == plain_rows
    return hot_answers


async def _merchant(client: httpx.AsyncClient, slug: str) -> SandboxClient:
    spec = SandboxClientCreate(slug=slug)
    made = await client.post(
        "/_sandbox/clients",
        content=dumps(spec.model_dump(by_alias=True, exclude_none=True)),
        headers={"Content-Type": "application/json"},
    )
    assert made.status_code == 201, made.text
    return SandboxClient.model_validate(made.json())


# ----------------------------------------------------------------------------------- the routes


async def _transactions(client: httpx.AsyncClient, _app: FastAPI) -> list[Any]:
    merchant = await _merchant(client, "equivalence-store")
    answers = []
    # Together (one group commit on the hot path), each its own amount; then errors and replays.
    together = await asyncio.gather(
        *(
            client.post(
                "/transactions",
                content=dumps(link_body(merchant, amount=Decimal(f"{10 + index}.25"))),
                headers=auth(merchant),
            )
            for index in range(8)
        )
    )
    answers += sorted((_answer(a) for a in together), key=lambda answer: json.dumps(answer, default=str))
    for payload, headers in (
        (link_body(merchant, amount=Decimal("-1")), auth(merchant)),
        (link_body(merchant), {"Authorization": "not-a-token"}),
        ({**link_body(merchant), "amount": "abc"}, auth(merchant)),
    ):
        answers.append(_answer(await client.post("/transactions", content=dumps(payload), headers=headers)))
    keyed = {**auth(merchant), "Idempotency-Key": "equivalence-1"}
    for amount in ("5.00", "5.00", "6.00"):  # a replay, then the same key with another body
        response = await client.post(
            "/transactions", content=dumps(link_body(merchant, amount=Decimal(amount))), headers=keyed
        )
        answers.append(_answer(response))
    payload = {
        "amount": Decimal("25.00"),
        "userId": "+5215512345678",
        "channel": "web",
        "client": merchant.slug,
    }
    for _ in range(2):
        response = await client.post(
            "/api/v1/integrations/transactions", content=dumps(payload), headers=auth(merchant, bearer=True)
        )
        answers.append(_answer(response))
    return answers


async def _funds(client: httpx.AsyncClient, _app: FastAPI) -> list[Any]:
    kit = Kit(client, await _merchant(client, "equivalence-wallet"))
    user = await kit.user("equivalence-holder")
    card = await kit.virtual_card(user["authUserId"])
    card_id = card["cardId"]
    answers = [_answer(await kit.fund(card_id, "100.00"))]
    together = await asyncio.gather(*(kit.fund(card_id, "1.0001") for _ in range(6)))
    answers += sorted((_answer(a) for a in together), key=lambda answer: json.dumps(answer, default=str))
    for amount, operation in (("30.50", "withdraw"), ("1000", "withdraw"), ("99999999999999", "add")):
        answers.append(_answer(await kit.fund(card_id, amount, operation)))
    answers.append(_answer(await kit.fund("card_doesnotexist000000000", "1.00")))
    user_token = (await kit.user_login("equivalence-holder"))["accessToken"]
    payload = {"operation": "add", "amount": Decimal("1.00")}
    answers.append(_answer(await kit.post(f"/cards/{card_id}/funds", payload, user_token)))
    answers.append(_answer(await kit.call("GET", f"/cards/{card_id}", await kit.app())))
    answers.append(_answer(await kit.call("GET", f"/cards/{card_id}/movements", await kit.app())))
    return answers


async def _batch_charges(client: httpx.AsyncClient, app: FastAPI) -> list[Any]:
    made = iter(range(100))

    async def merchant_factory() -> SandboxClient:
        return await _merchant(client, f"equivalence-batch-{next(made)}")

    batch = await _batch(client, app, merchant_factory)
    subs = await batch.subscriptions(4)
    declined = await batch.subscriptions(1, card="4000000000000002")
    content = _csv(
        f"{subs[0]},1.00,ref-1",
        f"{subs[1]},2.50,ref-2",
        f"{subs[2]},x,ref-3",
        f"{declined[0]},3.00,ref-4",
        f"{subs[3]},4.00,ref-1",
    )
    return [
        _answer(await batch.upload(content)),
        _answer(await batch.upload(content, key="k-1")),
        _answer(await batch.upload(content, key="k-1")),
    ]


@functools.cache
def _cardholder_files() -> tuple[tuple[bytes, str], ...]:
    """The two files, made once: both paths get the same bytes (an xlsx made again a second later
    differs by its creation time, and so by its size)."""
    rows = [person(index, card=index % 2 == 0) for index in range(1, 41)]
    rows[5][2] = rows[4][2]  # an email twice: that row fails
    return ((csv_file(rows), "people.csv"), (xlsx_file([*rows, person(41)]), "more.xlsx"))


async def _cardholders(client: httpx.AsyncClient, _app: FastAPI) -> list[Any]:
    office = Backoffice(client, await _merchant(client, "equivalence-cardholders"))
    partner = await office.partner("ptn_equivalence")
    answers = []
    for content, name in _cardholder_files():
        answer = await office.upload(partner, content, name)
        answers.append(_answer(answer))
        events = await office.progress(partner, answer.json()["data"]["batchId"])
        answers.append([(event.event, _norm(event.data)) for event in events if event.event != "progress"])
    return answers


async def _renewals(client: httpx.AsyncClient, app: FastAPI) -> list[Any]:
    merchant = await _merchant(client, "equivalence-renewals")
    plan = await client.post(
        "/_sandbox/plans",
        content=dumps(
            {"client": merchant.slug, "amount": Decimal("4.99"), "interval": "day", "name": "Daily"}
        ),
        headers={"Content-Type": "application/json"},
    )
    assert plan.status_code in (200, 201), plan.text
    answers = [_answer(plan)]
    for card in ("4242424242424242", "4000000000000002"):
        made = await client.post(
            "/_sandbox/subscriptions",
            content=dumps({"planId": plan.json()["planId"], "count": 30, "cardNumber": card}),
            headers={"Content-Type": "application/json"},
        )
        answers.append(_answer(made))
    for _ in range(3):
        answers.append(
            _answer(
                await client.post(
                    "/_sandbox/clock/advance",
                    content=dumps({"seconds": 86400}),
                    headers={"Content-Type": "application/json"},
                )
            )
        )
    return answers


async def test_post_transactions_and_integrations_answer_and_store_alike(db_url: str, tmp_path: Path) -> None:
    answers = await _equivalent(db_url, tmp_path, _transactions)
    assert [status for status, _ in answers] == [200] * 8 + [400, 401, 409, 200, 200, 422, 201, 201]


async def test_wallet_funds_answer_and_store_alike(db_url: str, tmp_path: Path) -> None:
    answers = await _equivalent(db_url, tmp_path, _funds)
    assert [status for status, _ in answers] == [200] * 8 + [422, 400, 404, 401, 200, 200]
    assert [answer["data"]["card"]["balance"] for _, answer in answers[:8]] == [
        Decimal(100) + Decimal("1.0001") * n for n in range(7)
    ] + [Decimal("75.5006")]
    assert answers[-2][1]["data"]["balance"] == Decimal("75.5006")
    assert len(answers[-1][1]["data"]) == 8


async def test_batch_charges_answer_and_store_alike(db_url: str, tmp_path: Path) -> None:
    answers = await _equivalent(db_url, tmp_path, _batch_charges)
    assert [status for status, _ in answers] == [200, 200, 200]


async def test_renewals_answer_and_store_alike(db_url: str, tmp_path: Path) -> None:
    answers = await _equivalent(db_url, tmp_path, _renewals)
    assert [status for status, _ in answers][:3] == [201, 201, 201]


async def test_cardholder_uploads_answer_and_store_alike(db_url: str, tmp_path: Path) -> None:
    answers = await _equivalent(db_url, tmp_path, _cardholders)
    assert [answers[0][0], answers[2][0]] == [202, 202]
    assert answers[1][-1][0] == "done"
    assert answers[1][-1][1]["created"] == 39
