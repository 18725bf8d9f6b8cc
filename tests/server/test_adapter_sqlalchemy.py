"""The private SQLAlchemy hook of :mod:`paysdk.server.adapters.sqlalchemy` against the installed SQLAlchemy
(D530): a failure names the hook and the version, so a SQLAlchemy upgrade that moves it is seen at once."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler

from paysdk.server.adapters.sqlalchemy import bind_processors
from paysdk.server.asgi import idempotency as middleware

VERSION = f"SQLAlchemy {sqlalchemy.__version__}"


def _claim(dialect: Dialect) -> SQLCompiler:
    claim = middleware._claim_statement(dialect.name)
    assert claim is not None
    compiled = claim.statement.compile(dialect=dialect, column_keys=list(middleware._NEW_KEY_COLUMNS))
    assert isinstance(compiled, SQLCompiler)
    return compiled


def test_compiled_bind_processors_hook_exists() -> None:
    assert hasattr(SQLCompiler, "_bind_processors"), (
        f"{VERSION}: SQLCompiler._bind_processors is gone (paysdk.server.adapters.sqlalchemy.bind_processors)"
    )


def test_bind_processors_are_the_types_own_by_name() -> None:
    """The hook maps bind names to the processors SQLAlchemy itself applies: on both dialects, the
    idempotency claim's datetime columns are processed exactly as their types' public processors do."""
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    for url in ("postgresql+psycopg://", "sqlite://"):
        dialect = sqlalchemy.create_engine(url).dialect  # no connection is made
        compiled = _claim(dialect)
        processors = bind_processors(compiled)
        where = f"{VERSION} ({dialect.name}): compiled._bind_processors"
        assert isinstance(processors, dict), f"{where} is no mapping: {type(processors)!r}"
        missing = {"created_at", "expires_at"} - set(processors)
        assert not missing, f"{where} lacks the datetime binds {missing}: {processors}"
        for name, process in processors.items():
            assert callable(process), f"{where}[{name!r}] is not callable: {process!r}"
            public = compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
            assert public is not None, f"{where}[{name!r}]: the type has no processor of its own"
            assert process(moment) == public(moment), f"{where}[{name!r}] processes values differently"
