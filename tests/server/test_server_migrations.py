"""Databases made by an earlier version are upgraded in place (D470-D474), on SQLite and PostgreSQL.

* A database of the baseline (paysdk at the end of issue 19: the frozen statements of revision 0001, no
  ``alembic_version`` as that version made none) holding rows in EVERY table, some of them made by the
  real server (a merchant, a payment link, a subscription on a test card), is upgraded by a real
  ``paysdk serve`` (its log line says from which revision to which); the API answers those rows as the
  server that made them did, and every row of every table is still there, the card numbers turned into
  saved cards (D351).
* The migrated schema is the schema a new database gets (columns, types, nullability, indexes, unique
  and foreign keys), and alembic's ``compare_metadata`` finds nothing between it and the mapped tables:
  a table or column added without a migration fails here.
* A database of a newer version (an unknown revision) or one that matches no revision is refused,
  naming why, and left as it was.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from server_helpers import JSON_TYPE, auth, body, dumps, link_body
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, inspect, select, text
from sqlalchemy.engine import Connection, Engine
from table_filler import fill_every_table

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import create_app, schema_snapshot
from paysdk.server.core_tables import Base
from paysdk.server.db import Database, SchemaMismatch, normalize_database_url
from paysdk.server.migrations import Step, plan, prepare
from paysdk.server.migrations.snapshots import SNAPSHOTS
from paysdk.server.migrations.versions import v0001_baseline
from paysdk.server.services.test_cards import TEST_CARDS, saved_card
from paysdk.testing._ready import free_port, http_ok, wait_ready

PAYSDK = str(Path(sys.executable).with_name("paysdk"))
PG_ADMIN_URL = os.environ.get("PAYSDK_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
#: The test card of the transplanted subscription: declines the first attempt of its second renewal.
CARD = "4000000000000333"


def _scratch_database(kind: str, tmp_path: Path, name: str) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / f'{name}.db'}"
        return
    database = f"paysdk_mig_{os.getpid()}_{secrets.token_hex(4)}"
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
        try:
            yield f"{base}/{database}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def old_url(kind: str, tmp_path: Path) -> Iterator[str]:
    """A scratch database for the baseline (nothing in it yet)."""
    yield from _scratch_database(kind, tmp_path, "old")


@pytest.fixture
def new_url(kind: str, tmp_path: Path) -> Iterator[str]:
    """Another scratch database of the same kind."""
    yield from _scratch_database(kind, tmp_path, "new")


def _engine(url: str) -> Engine:
    return create_engine(normalize_database_url(url))


def _create_baseline(engine: Engine) -> None:
    """The baseline's tables, as paysdk at the end of issue 19 made them (no ``alembic_version``)."""
    statements = v0001_baseline.SQLITE if engine.dialect.name == "sqlite" else v0001_baseline.POSTGRESQL
    with engine.begin() as connection:
        for statement in statements:
            connection.exec_driver_sql(statement)


def _reflected(connection: Connection) -> list[Table]:
    metadata = MetaData()
    metadata.reflect(connection)
    return [table for table in metadata.sorted_tables if table.name != "alembic_version"]


def _rows(connection: Connection) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table, each table's rows ordered by their primary key."""
    found = {}
    for table in _reflected(connection):
        order = list(table.primary_key.columns) or list(table.columns)
        found[table.name] = [dict(row._mapping) for row in connection.execute(select(table).order_by(*order))]
    return found


# -- rows made by the real server, moved into a baseline database


async def _made_by_the_server(url: str) -> dict[str, Any]:
    """A merchant, a payment link and a subscription made through the HTTP API of a server on ``url``;
    returns their ids and the control plane's and API's views of them."""
    app = create_app(url, start_ticker=False)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            created = await client.post("/_sandbox/clients", content=dumps({}), headers=JSON_TYPE)
            assert created.status_code == 201, created.text
            merchant = SandboxClient.model_validate(created.json())
            link = await client.post(
                "/transactions", content=dumps(link_body(merchant)), headers=auth(merchant)
            )
            assert link.status_code == 200, link.text
            uid = body(link)["uid"]
            plan_answer = await client.post(
                "/_sandbox/plans",
                content=dumps({"client": merchant.slug, "amount": Decimal("9.99"), "name": "Monthly"}),
                headers=JSON_TYPE,
            )
            assert plan_answer.status_code == 201, plan_answer.text
            plan_id = body(plan_answer)["planId"]
            subs = await client.post(
                "/_sandbox/subscriptions",
                content=dumps({"planId": plan_id, "count": 1, "cardNumber": CARD}),
                headers=JSON_TYPE,
            )
            assert subs.status_code == 201, subs.text
            sub_uid = body(subs)["subUids"][0]
            return {
                "merchant": merchant,
                "uid": uid,
                "sub_uid": sub_uid,
                "plan_id": plan_id,
                "views": await _views(client, merchant, uid, sub_uid, plan_id),
            }
    finally:
        app.state.paysdk.db.dispose()


async def _views(
    client: httpx.AsyncClient, merchant: SandboxClient, uid: str, sub_uid: str, plan_id: str
) -> dict[str, Any]:
    """What the core, payment-link and subscription families answer about the rows (status, body)."""
    answers = {
        "client": await client.get(f"/_sandbox/clients/{merchant.slug}"),
        "transaction": await client.get(f"/_sandbox/transactions/{uid}"),
        "plan": await client.get(f"/_sandbox/plans/{plan_id}"),
        "subscription": await client.get(f"/_sandbox/subscriptions/{sub_uid}"),
    }
    return {name: (answer.status_code, answer.json()) for name, answer in answers.items()}


def _transplant(source: Engine, target: Engine) -> None:
    """Copy every row of ``source`` (this version's schema) into the baseline tables of ``target``: the
    columns both have, the subscriptions' card number as that version kept it."""
    with source.connect() as reading, target.begin() as writing:
        rows = _rows(reading)
        for table in _reflected(writing):
            copied = []
            for row in rows.get(table.name, []):
                kept = {name: value for name, value in row.items() if name in table.columns}
                if table.name == "subscriptions":
                    kept["card_number"] = CARD
                copied.append(kept)
            if copied:
                writing.execute(table.insert(), copied)


def _advance_sequences(engine: Engine) -> None:
    """PostgreSQL: every serial column's sequence past the rows inserted with explicit ids."""
    if engine.dialect.name != "postgresql":
        return
    with engine.begin() as connection:
        for table in _reflected(connection):
            for column in table.primary_key.columns:
                if column.autoincrement is True or (
                    column.autoincrement == "auto" and isinstance(column.type, Integer)
                ):
                    sequence = connection.execute(
                        text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": table.name, "c": column.name}
                    ).scalar()
                    if sequence is not None:
                        connection.execute(
                            text(
                                f'SELECT setval(:s, (SELECT COALESCE(MAX("{column.name}"), 0) + 1 '
                                f'FROM "{table.name}"), false)'
                            ),
                            {"s": sequence},
                        )


def _serve(db_url: str, port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PAYSDK, "serve", "--port", str(port), "--db", db_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _wait_healthy(proc: subprocess.Popen[str], base: str) -> None:
    wait_ready(http_ok(f"{base}/_sandbox/health"), what="paysdk serve", process=proc)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return err


def test_a_baseline_database_with_rows_in_every_table_is_upgraded_by_paysdk_serve(
    old_url: str, new_url: str
) -> None:
    made = asyncio.run(_made_by_the_server(new_url))
    old = _engine(old_url)
    try:
        _create_baseline(old)
        _transplant(_engine(new_url), old)
        with old.begin() as connection:  # rows in every table the server did not fill, ids after its own
            filled = fill_every_table(connection, offset=100, tables=_reflected(connection))
        _advance_sequences(old)
        assert set(filled) == set(SNAPSHOTS["0001"])  # every table of the baseline
        with old.connect() as connection:
            before = _rows(connection)
            assert plan(_existing(connection), None).action == "upgrade"
        assert all(before[name] for name in before), [name for name in before if not before[name]]
    finally:
        old.dispose()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _serve(old_url, port)
    try:
        _wait_healthy(proc, base)

        async def read() -> dict[str, Any]:
            async with httpx.AsyncClient(base_url=base, timeout=60) as client:
                views = await _views(client, made["merchant"], made["uid"], made["sub_uid"], made["plan_id"])
                # The upgraded database takes new rows too (its sequences, its new tables' columns).
                link = await client.post(
                    "/transactions",
                    content=dumps(link_body(made["merchant"])),
                    headers=auth(made["merchant"]),
                )
                assert link.status_code == 200, link.text
                named = await client.patch(
                    f"/_sandbox/clients/{made['merchant'].slug}",
                    content=dumps({"displayName": "Tienda"}),
                    headers=JSON_TYPE,
                )
                assert named.status_code == 200, named.text
                assert named.json()["displayName"] == "Tienda"
                return views

        views = asyncio.run(read())
    finally:
        err = _stop(proc)
    assert f"upgraded the database from revision 0001 to {schema_snapshot.REVISION}" in err
    # The API answers the rows as the server that made them did.
    for name, (status, answer) in made["views"].items():
        assert views[name][0] == status == 200, (name, views[name])
        assert views[name][1] == answer, name

    old = _engine(old_url)
    try:
        with old.connect() as connection:
            after = _rows(connection)
            version = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    finally:
        old.dispose()
    assert version == [schema_snapshot.REVISION]
    for name, rows in before.items():
        if name in ("transactions", "request_log", "clients"):  # the requests above added rows / a name
            assert len(after[name]) >= len(rows), name
            after_by_key = {_key(row): row for row in after[name]}
            for row in rows:
                moved = after_by_key[_key(row)]
                changed = {"display_name"} if name == "clients" else set()
                assert {k: v for k, v in moved.items() if k not in changed} == {**row}, name
            continue
        assert len(after[name]) == len(rows), name
        for was, now in zip(rows, after[name], strict=True):
            if name in ("subscriptions", "subscription_verifications"):
                number = was.pop("card_number")
                card = saved_card(number) if number is not None else None
                if name == "subscriptions":
                    assert card is not None
                    token = now.pop("card_token")
                    assert token.startswith("pm_")
                    assert len(token) == 27
                    assert (now.pop("card_renewal"), now.pop("card_decline_reason")) == (
                        card.renewal,
                        card.decline_reason,
                    )
                else:
                    names = ("card_brand", "card_last4", "card_renewal", "card_decline_reason")
                    kept = tuple(now.pop(column) for column in names)
                    assert kept == (
                        (None,) * 4
                        if card is None
                        else (card.brand, card.last4, card.renewal, card.decline_reason)
                    )
            assert now == was, name
    assert {"wallet_login_failures", "reconciliation_report_pages"} <= set(after)


def _key(row: dict[str, Any]) -> Any:
    return row.get("id", row.get("uid", tuple(sorted(map(str, row.values())))))


def _existing(connection: Connection) -> Any:
    from paysdk.server.db import _existing_schema

    return _existing_schema(connection)


def test_the_upgrade_keeps_what_the_test_cards_do() -> None:
    # The revision's frozen card table says what test_cards.saved_card says today of every test card.
    from paysdk.server.migrations.versions.v0002_issues_20_21 import saved

    for card in TEST_CARDS:
        kept = saved_card(card.number)
        assert saved(card.number) == (kept.brand, kept.last4, kept.renewal, kept.decline_reason)
    for number in ("4111111111111111", "5105105105105100", "371449635398431", "6011111111111117"):
        kept = saved_card(number)
        assert saved(number) == (kept.brand, kept.last4, kept.renewal, kept.decline_reason)


# -- the migrated schema is the new one


def _schema(engine: Engine) -> dict[str, Any]:
    """Every table's columns (type, nullability), indexes, unique and foreign keys, as reflected."""
    found: dict[str, Any] = {}
    with engine.connect() as connection:
        inspector = inspect(connection)
        for name in inspector.get_table_names():
            found[name] = {
                "columns": {
                    column["name"]: (str(column["type"]), column["nullable"])
                    for column in inspector.get_columns(name)
                },
                "primary": inspector.get_pk_constraint(name)["constrained_columns"],
                "indexes": sorted(
                    (index["name"], tuple(index["column_names"]), bool(index["unique"]))
                    for index in inspector.get_indexes(name)
                ),
                "unique": sorted(
                    tuple(unique["column_names"]) for unique in inspector.get_unique_constraints(name)
                ),
                "foreign": sorted(
                    (
                        tuple(key["constrained_columns"]),
                        key["referred_table"],
                        tuple(key["referred_columns"]),
                        key.get("options", {}).get("ondelete"),
                    )
                    for key in inspector.get_foreign_keys(name)
                ),
            }
    return found


def test_the_migrated_schema_is_the_schema_of_a_new_database(old_url: str, new_url: str) -> None:
    old = _engine(old_url)
    _create_baseline(old)
    with old.begin() as connection:  # a database the baseline revision was stamped on
        connection.exec_driver_sql(
            "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
            "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
        )
        connection.exec_driver_sql("INSERT INTO alembic_version (version_num) VALUES ('0001')")
    old.dispose()
    migrated = Database(old_url)
    fresh = Database(new_url)
    try:
        assert not migrated.schema_current()
        migrated.create_schema()
        assert migrated.schema_current()
        fresh.create_schema()
        assert fresh.schema_current()
        assert _schema(migrated.engine) == _schema(fresh.engine)
        # Alembic's own comparison of the migrated database with the mapped tables finds nothing.
        assert _differences(migrated.engine, Base.metadata) == []
    finally:
        migrated.dispose()
        fresh.dispose()


def _differences(engine: Engine, metadata: MetaData) -> list[Any]:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from paysdk.server.families import FAMILIES, schema_tables

    schema_tables(FAMILIES)  # every family's tables on Base.metadata
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return [
            change
            for change in compare_metadata(context, metadata)
            if not (change[0] == "remove_table" and change[1].name == "alembic_version")
        ]


def test_a_new_database_from_the_frozen_statements_is_what_create_all_makes(
    old_url: str, new_url: str
) -> None:
    # D611: a new database is made from schema_snapshot.DDL, without the mapped tables; the same
    # schema as create_all of those tables, and stamped with the head.
    fresh = Database(new_url)
    mapped = _engine(old_url)
    try:
        fresh.create_schema()
        assert fresh.schema_current()
        Base.metadata.create_all(mapped, tables=fresh._tables())
        assert {k: v for k, v in _schema(fresh.engine).items() if k != "alembic_version"} == _schema(mapped)
        assert _differences(fresh.engine, Base.metadata) == []
    finally:
        fresh.dispose()
        mapped.dispose()


def test_a_table_or_column_added_without_a_migration_is_found(tmp_path: Path) -> None:
    # What the comparison above catches: the mapped tables plus one column and one table no revision adds.
    url = f"sqlite:///{tmp_path / 'head.db'}"
    database = Database(url)
    try:
        database.create_schema()
        extended = MetaData()
        for table in Base.metadata.sorted_tables:
            table.to_metadata(extended)
        extended.tables["clients"].append_column(Column("nickname", String(20), nullable=True))
        Table("wallet_badges", extended, Column("id", Integer, primary_key=True))
        found = {
            (change[0], getattr(change[-1], "name", None))
            for change in _differences(database.engine, extended)
        }
        assert ("add_column", "nickname") in found
        assert ("add_table", "wallet_badges") in found
    finally:
        database.dispose()


def test_the_snapshots_are_the_revisions(old_url: str) -> None:
    # The baseline's statements make the baseline's snapshot; the head revision is the generated one.
    from paysdk.server.migrations import script_directory

    old = _engine(old_url)
    try:
        _create_baseline(old)
        with old.connect() as connection:
            step = plan(_existing(connection), None)
        assert (step.action, step.found) == ("upgrade", "0001")
    finally:
        old.dispose()
    script = script_directory()
    assert script.get_heads() == [schema_snapshot.REVISION]
    # Every revision before the head has its snapshot (how a database of it without alembic_version is
    # recognised: docs/start-and-reset.md, "Adding a migration").
    revisions = {revision.revision for revision in script.walk_revisions()}
    assert set(SNAPSHOTS) == revisions - {schema_snapshot.REVISION}


# -- refusals


def test_a_database_of_a_newer_version_is_refused_and_left_as_it_was(
    kind: str, tmp_path: Path, new_url: str
) -> None:
    database = Database(new_url)
    database.create_schema()
    with database.engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0099'")
    database.dispose()
    again = Database(new_url)
    try:
        assert not again.schema_current()
        with pytest.raises(SchemaMismatch, match="revision 0099, which this version of paysdk does not know"):
            again.create_schema()
    finally:
        again.dispose()
    # paysdk serve says so and exits; the database is untouched.
    run = subprocess.run(
        [PAYSDK, "serve", "--port", str(free_port()), "--db", new_url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0
    assert "does not know (a newer paysdk made it" in run.stderr
    assert "Traceback" not in run.stderr
    engine = _engine(new_url)
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all() == [
                "0099"
            ]
            assert "clients" in inspect(connection).get_table_names()
    finally:
        engine.dispose()


def test_a_database_matching_no_revision_is_refused(old_url: str) -> None:
    old = _engine(old_url)
    _create_baseline(old)
    with old.begin() as connection:  # a development version between two revisions
        connection.exec_driver_sql("ALTER TABLE clients ADD COLUMN display_name VARCHAR(80)")
    old.dispose()
    database = Database(old_url)
    try:
        with pytest.raises(SchemaMismatch, match="matches no schema of a paysdk version"):
            database.create_schema()
        with database.engine.connect() as connection:
            assert "alembic_version" not in inspect(connection).get_table_names()
    finally:
        database.dispose()


def test_servers_started_together_upgrade_once(kind: str, old_url: str) -> None:
    # Three at once on one baseline database: one upgrades (under the lock), the others find it current.
    old = _engine(old_url)
    _create_baseline(old)
    old.dispose()
    steps: list[str] = []
    errors: list[BaseException] = []

    def start() -> None:
        database = Database(old_url)
        try:
            with database._schema_lock():
                steps.append(prepare(database).action)
        except BaseException as exc:
            errors.append(exc)
        finally:
            database.dispose()

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert sorted(steps) == ["current", "current", "upgrade"]


# -- emails in the one form of D380


def _baseline_with_rows(url: str) -> Engine:
    engine = _engine(url)
    _create_baseline(engine)
    with engine.begin() as connection:
        fill_every_table(connection, tables=_reflected(connection))
    return engine


def test_the_stored_emails_take_their_one_form(old_url: str) -> None:
    old = _baseline_with_rows(old_url)
    try:
        with old.begin() as connection:
            # As the baseline stored them: lower-cased (users, operators, outbox, leads) or as given.
            connection.execute(
                text("UPDATE wallet_users SET email = 'ana@xn--exmple-qta.com' WHERE id = 'id0'")
            )
            connection.execute(
                text("UPDATE backoffice_operators SET email = 'straße@example.com' WHERE id = 'id0'")
            )
            connection.execute(
                text("UPDATE wallet_outbox SET \"to\" = 'ana@xn--exmple-qta.com' WHERE id = 1")
            )
            connection.execute(text("UPDATE subscriptions SET email = 'Bob@Example.COM' WHERE id = 1"))
            connection.execute(
                text("UPDATE onboarding_leads SET contact = :contact WHERE id = 1"),
                {"contact": '{"name": "Ana", "email": "ANA@ＥＸÁＭＰＬＥ.com"}'},
            )
    finally:
        old.dispose()
    database = Database(old_url)
    try:
        database.create_schema()
        with database.engine.connect() as connection:

            def one(sql: str) -> Any:
                return connection.execute(text(sql)).scalar_one()

            assert one("SELECT email FROM wallet_users WHERE id = 'id0'") == "ana@exámple.com"
            assert one("SELECT email FROM backoffice_operators WHERE id = 'id0'") == "strasse@example.com"
            assert one('SELECT "to" FROM wallet_outbox WHERE id = 1') == "ana@exámple.com"
            assert one("SELECT email FROM subscriptions WHERE id = 1") == "bob@example.com"
            contact = one("SELECT contact FROM onboarding_leads WHERE id = 1")
            contact = contact if isinstance(contact, dict) else json.loads(contact)
            assert contact == {"name": "Ana", "email": "ana@exámple.com"}
            assert one("SELECT email FROM wallet_users WHERE id = 'id1'") == "email1"  # no email: kept
    finally:
        database.dispose()


def test_two_emails_that_become_one_refuse_the_upgrade_and_change_nothing(old_url: str) -> None:
    old = _baseline_with_rows(old_url)
    try:
        with old.begin() as connection:
            connection.execute(text("UPDATE wallet_users SET email = 'straße@example.com' WHERE id = 'id0'"))
            connection.execute(
                text(
                    "UPDATE wallet_users SET email = 'strasse@example.com', "
                    "client_id = (SELECT client_id FROM wallet_users WHERE id = 'id0') WHERE id = 'id1'"
                )
            )
        with old.connect() as connection:
            before = _rows(connection)
    finally:
        old.dispose()
    database = Database(old_url)
    try:
        with pytest.raises(
            SchemaMismatch, match="the upgrade from revision 0001 failed, nothing was changed"
        ):
            database.create_schema()
        with database.engine.connect() as connection:
            assert _rows(connection) == before  # the baseline's tables and rows, no alembic_version
            assert "alembic_version" not in inspect(connection).get_table_names()
    finally:
        database.dispose()


def test_a_database_this_version_made_before_the_migrations_is_stamped(new_url: str) -> None:
    # Made by this schema without alembic_version (this version before D470): recognised, stamped, no
    # migration run, and from then on the fast start's check holds.
    database = Database(new_url)
    try:
        database.create_schema()
        with database.engine.begin() as connection:
            connection.exec_driver_sql("DROP TABLE alembic_version")
            assert plan(_existing(connection), None) == Step("stamp", schema_snapshot.REVISION)
        assert not database.schema_current()
        assert prepare(database).action == "stamp"
        assert database.schema_current()
    finally:
        database.dispose()
