"""``Database(url, engine=other.engine)``: instances over one engine (what the suite's app fixture does
from test to test): the engine outlives each instance, and no connection with settings of its own (the
SQLite reset connection's foreign keys off) goes back into the shared pool."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from paysdk.server import create_app
from paysdk.server.db import Database, is_in_memory_sqlite


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


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///file::memory:?cache=shared&uri=true",
        "sqlite:///file:shop?mode=memory&uri=true",
    ],
)
def test_an_in_memory_database_is_refused(url: str, tmp_path: Path) -> None:
    """D771: each connection of the server (its worker thread, the event loop) saw a database of its own,
    so the first request failed on a missing table; now the database is refused when it is made."""
    with pytest.raises(ValueError, match=r"is an in-memory SQLite database: .* use sqlite:///FILE"):
        Database(url)
    with pytest.raises(ValueError, match="in-memory"):
        create_app(url, start_ticker=False)
    assert not is_in_memory_sqlite(f"sqlite:///{tmp_path / 'shop.db'}")
    assert not is_in_memory_sqlite(f"sqlite:///file:{tmp_path / 'shop.db'}?uri=true")
    assert not is_in_memory_sqlite("postgresql+psycopg://u@h/memory")


def _python_m_paysdk_server(url: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``python -m paysdk.server --db url``, run to its end (each URL here makes it stop before listening)."""
    return subprocess.run(
        [sys.executable, "-m", "paysdk.server", "--port", "0", "--db", url],
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("PAYSDK_")}, "HOME": str(home)},
        timeout=120,
    )


@pytest.mark.parametrize("url", ["sqlite://", "mysql://root:hunter2@db/shop", "not a url"])
def test_python_m_paysdk_server_refuses_a_database_it_cannot_run_on(url: str, tmp_path: Path) -> None:
    """D771: a usage error naming --db, before anything listens; no traceback, no password."""
    done = _python_m_paysdk_server(url, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1].startswith("python -m paysdk.server: error: --db: "), done.stderr
    assert "Traceback" not in done.stderr
    assert "hunter2" not in done.stderr


@pytest.mark.postgres
def test_python_m_paysdk_server_says_in_the_drivers_words_a_database_it_cannot_open(tmp_path: Path) -> None:
    """``serve()`` raises ``DatabaseUnavailable`` before anything listens; the command says it in one line,
    exit 1, as ``paysdk serve`` does: no traceback, no SQLAlchemy class name or link, no password."""
    url = "postgresql://postgres:hunter2@127.0.0.1:5432/paysdk_no_such_database"
    done = _python_m_paysdk_server(url, tmp_path)
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("python -m paysdk.server: error: cannot open the database of --db: "), done.stderr
    assert 'database "paysdk_no_such_database" does not exist' in last
    for hidden in ("Traceback", "OperationalError", "sqlalche.me", "hunter2"):
        assert hidden not in done.stderr
