"""ONE statement cache serves every compiled statement, per dialect object, so per engine (D591).

The cache (:data:`paysdk.server.hotpath.STATEMENTS`) replaced four: :class:`Statement`'s own, the
ledger's two (its guarded updates' SQL and result processors) and the idempotency claim's on PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import cast

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from server_helpers import auth, dumps, link_body
from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from wallet.kit import Kit

from paysdk.contracts.sandbox import SandboxClient, SandboxClientCreate
from paysdk.server import create_app
from paysdk.server.asgi import idempotency
from paysdk.server.clock import Clock
from paysdk.server.core_tables import ClientRow
from paysdk.server.db import Database
from paysdk.server.hotpath import STATEMENTS, Statement
from paysdk.server.hotpath.statements import _compile
from paysdk.server.services import sandbox, wallet_ledger
from paysdk.server.sqltypes import UTCDateTime

_CLIENTS = cast(Table, ClientRow.__table__)
_SLUG = Statement(select(_CLIENTS.c.slug, _CLIENTS.c.created_at).where(_CLIENTS.c.slug == bindparam("slug")))
_RENAME = Statement(
    update(_CLIENTS)
    .where(_CLIENTS.c.slug == bindparam("old"))
    .values(slug=bindparam("new"))
    .returning(_CLIENTS.c.slug, _CLIENTS.c.created_at)
)


def _second_url(db_url: str, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'second.db'}" if db_url.startswith("sqlite") else db_url


async def _merchant(client: httpx.AsyncClient) -> SandboxClient:
    made = await client.post("/_sandbox/clients", content=b"{}", headers={"Content-Type": "application/json"})
    assert made.status_code == 201, made.text
    return SandboxClient.model_validate(made.json())


def test_a_statement_keeps_no_cache_and_each_engine_gets_its_own_entry(db_url: str, tmp_path: Path) -> None:
    first, second = Database(db_url), Database(_second_url(db_url, tmp_path))
    try:
        for database in (first, second):
            database.create_schema()
        assert first.engine.dialect is not second.engine.dialect
        assert not hasattr(_SLUG, "__dict__")  # slots: statement and columns, nothing compiled
        with first.transaction() as connection:
            assert _RENAME.first(connection, {"old": "nobody", "new": "x"}) is None
        assert STATEMENTS.holds(_RENAME, first.engine.dialect) is not None
        assert STATEMENTS.holds(_RENAME, second.engine.dialect) is None  # never another engine's entry
        with second.transaction() as connection:
            assert _RENAME.first(connection, {"old": "nobody", "new": "x"}) is None
        one, other = (
            STATEMENTS.holds(_RENAME, first.engine.dialect),
            STATEMENTS.holds(_RENAME, second.engine.dialect),
        )
        assert one is not None
        assert other is not None
        assert one is not other
        assert one.sql == other.sql
        if first.dialect == "sqlite":
            assert one.positional
            assert "?" in one.sql
        else:  # psycopg's named style, the literal binds of the statement carried as defaults
            assert not one.positional
            assert "%(old)s" in one.sql
        before = len(STATEMENTS)
        with first.transaction() as connection:
            _RENAME.first(connection, {"old": "nobody", "new": "x"})
        assert len(STATEMENTS) == before  # compiled once
    finally:
        first.dispose()
        second.dispose()


async def test_every_hot_statement_of_a_request_comes_from_the_one_cache(db_url: str) -> None:
    database = Database(db_url)
    app = create_app(start_ticker=False, database=database)
    dialect = database.engine.dialect
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        ) as client:
            merchant = await _merchant(client)
            keyed = {**auth(merchant), "Idempotency-Key": "cache-1"}
            made = await client.post("/transactions", content=dumps(link_body(merchant)), headers=keyed)
            assert made.status_code == 200, made.text
            kit = Kit(client, merchant)
            card = await kit.virtual_card((await kit.user())["authUserId"])
            assert (await kit.fund(card["cardId"], "10")).status_code == 200
            withdrawn = await kit.fund(card["cardId"], "4", "withdraw")
            assert withdrawn.status_code == 200, withdrawn.text
            assert withdrawn.json()["data"]["card"]["balance"] == 6
        claim = idempotency._claim_statement(dialect.name)
        assert claim is not None
        for statement in (claim, wallet_ledger._CREDIT_STATEMENT, wallet_ledger._DEBIT_STATEMENT):
            assert STATEMENTS.holds(statement, dialect) is not None
    finally:
        database.dispose()


def test_a_database_with_the_hot_path_off_compiles_nothing_and_answers_alike(
    db_url: str, tmp_path: Path
) -> None:
    hot, plain = Database(db_url), Database(_second_url(db_url, tmp_path), hotpath=False)
    try:
        answers = []
        for name, database in (("hot", hot), ("plain", plain)):
            database.create_schema()
            with database.session() as session:
                sandbox.create_client(
                    session, SandboxClientCreate(slug=f"probe-{name}"), Clock().now(session)
                )
            with database.transaction() as connection:
                renamed = _RENAME.first(connection, {"old": f"probe-{name}", "new": f"probe-{name}-2"})
                rows = _SLUG.rows(connection, {"slug": f"probe-{name}-2"})
            answers.append((renamed, rows))
        assert STATEMENTS.switched_off(plain.engine.dialect)
        assert not STATEMENTS.switched_off(hot.engine.dialect)
        assert STATEMENTS.holds(_RENAME, plain.engine.dialect) is None
        assert STATEMENTS.holds(_RENAME, hot.engine.dialect) is not None
        (hot_renamed, hot_rows), (plain_renamed, plain_rows) = answers
        assert hot_renamed is not None
        assert plain_renamed is not None
        assert (hot_renamed[0], plain_renamed[0]) == ("probe-hot-2", "probe-plain-2")
        assert hot_renamed[1].tzinfo is not None
        assert plain_renamed[1].tzinfo is not None
        assert [row[0] for row in hot_rows] == ["probe-hot-2"]
        assert [row[0] for row in plain_rows] == ["probe-plain-2"]
        assert hot_rows[0][1] == hot_renamed[1]
        assert plain_rows[0][1] == plain_renamed[1]
    finally:
        hot.dispose()
        plain.dispose()


_STAMPED = Statement(select(_CLIENTS.c.slug).where(_CLIENTS.c.created_at == bindparam("at")))


@given(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from(
            [UTC, timezone(timedelta(hours=-6)), timezone(timedelta(hours=5, minutes=30))]
        ),
    )
)
def test_a_utc_datetime_is_bound_on_sqlite_as_sqlalchemy_binds_it(value: datetime) -> None:
    """The hot path binds ``UTCDateTime`` on SQLite with the type's fused processor (D770): the very text
    SQLAlchemy's own processing stores, for any aware datetime."""
    dialect = sqlite.dialect()
    compiled = _compile(_STAMPED, dialect)
    ordinary = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert ordinary is not None
    fused = compiled.binds[compiled.names.index("at")]
    assert fused is not None
    assert fused.__module__ == "paysdk.server.sqltypes"  # the fused one, not SQLAlchemy's
    assert fused(value) == ordinary(value)


def test_the_fused_datetime_processor_is_sqlite_only_and_refuses_naive_values() -> None:
    assert UTCDateTime().fast_bind_processor(postgresql.dialect()) is None  # type: ignore[no-untyped-call]
    fused = UTCDateTime().fast_bind_processor(sqlite.dialect())
    assert fused is not None
    with pytest.raises(ValueError, match="naive datetime"):
        fused(datetime(2026, 1, 1))
