"""``Database(url, engine=other.engine)``: instances over one engine (what the suite's app fixture does
from test to test): the engine outlives each instance, and no connection with settings of its own (the
SQLite reset connection's foreign keys off) goes back into the shared pool."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from paysdk.server.db import Database


def test_instances_over_one_engine_leave_it_open_and_clean(db_url: str) -> None:
    first = Database(db_url)
    first.create_schema()
    try:
        second = Database(db_url, engine=first.engine)
        assert second.engine is first.engine
        second.reset()  # SQLite: on a kept connection with foreign keys off
        with second.session() as session:
            assert session.execute(text("SELECT 1")).scalar_one() == 1
        second.dispose()
        third = Database(db_url, engine=first.engine)
        # The engine still serves, and every connection of its pool (three at once: each one it holds)
        # has foreign keys on.
        connections = [third.engine.raw_connection() for _ in range(3)]  # no transaction begun
        try:
            for connection in connections:
                cursor = connection.cursor()
                cursor.execute("PRAGMA foreign_keys" if third.dialect == "sqlite" else "SELECT 1")
                assert cursor.fetchone() == (1,)
                cursor.close()
        finally:
            for connection in connections:
                connection.close()
        third.dispose()
    finally:
        first.dispose()


def test_an_engine_of_another_database_is_refused(db_url: str, tmp_path: Path) -> None:
    other = Database(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        with pytest.raises(ValueError, match="same database"):
            Database(db_url, engine=other.engine)
    finally:
        other.dispose()


def test_an_in_memory_database_takes_no_engine() -> None:
    first = Database("sqlite://")
    try:
        with pytest.raises(ValueError, match="in-memory"):
            Database("sqlite://", engine=first.engine)
    finally:
        first.dispose()
