"""A database that records this version's revision but lacks a column or index of it (changed outside
paysdk) is refused on start, naming them, and left as it was; a current one opens again and again (D471;
upgrades of earlier versions: test_server_migrations.py). Both databases."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from sqlalchemy import text

from paysdk.server import create_app
from paysdk.server.core_tables import Base
from paysdk.server.db import Database, SchemaMismatch
from paysdk.server.schema_snapshot import REVISION


def test_a_current_database_opens_again(app: FastAPI, db_url: str) -> None:
    again = Database(db_url)
    try:
        again.create_schema()
        again.create_schema()
    finally:
        again.dispose()


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("ALTER TABLE request_log DROP COLUMN request_id", "table request_log lacks column request_id"),
        ("DROP INDEX ix_transactions_expiry", "table transactions lacks index ix_transactions_expiry"),
    ],
)
def test_a_database_changed_outside_paysdk_is_refused(
    app: FastAPI, db_url: str, statement: str, named: str
) -> None:
    engine = app.state.paysdk.db.engine
    with engine.begin() as connection:
        connection.execute(text(statement))
    try:
        with pytest.raises(SchemaMismatch, match=named) as refused:
            create_app(db_url, start_ticker=False)
        assert f"records revision {REVISION} but its tables differ from it" in str(refused.value)
        assert "delete" not in str(refused.value)
    finally:
        Base.metadata.drop_all(engine)  # the next test on this PostgreSQL database starts afresh


def test_the_schema_check_reads_what_the_inspector_reads(app: FastAPI) -> None:
    # The check reads every table's columns and indexes in two queries (issue 12); on both databases it
    # finds what SQLAlchemy's inspector finds (plus the indexes the database made for its keys).
    from sqlalchemy import inspect

    from paysdk.server.db import _existing_schema

    database = app.state.paysdk.db
    tables = database._tables()
    with database.engine.connect() as connection:
        found = _existing_schema(connection)
        inspector = inspect(connection)
        for table in tables:
            columns, indexes = found[table.name]
            assert columns == {column["name"] for column in inspector.get_columns(table.name)}
            assert columns == {column.name for column in table.columns}
            reflected = {str(index["name"]) for index in inspector.get_indexes(table.name)}
            assert reflected <= indexes  # plus the database's own (SQLite's autoindexes, PostgreSQL's keys)
            assert {str(index.name) for index in table.indexes} <= indexes
