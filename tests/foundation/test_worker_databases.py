"""The suite's PostgreSQL databases under ``pytest -n`` (D540): one per worker, named by worker and
process, and a database left by a killed run is dropped by the next session, never a live one's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import psycopg
import pytest

from conftest import PG_ADMIN_URL, _drop_leftover_databases

pytestmark = pytest.mark.postgres


def _dead_pid() -> int:
    """The pid of a process that has exited (and was reaped)."""
    process = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    return int(process.stdout)


def _names(admin: psycopg.Connection[tuple[str]]) -> set[str]:
    return {row[0] for row in admin.execute("SELECT datname FROM pg_database").fetchall()}


@pytest.fixture
def admin() -> Iterator[psycopg.Connection[tuple[str]]]:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as connection:
        yield connection


def test_the_session_database_is_named_by_worker_and_pid(
    request: pytest.FixtureRequest, worker_id: str
) -> None:
    url: str = request.getfixturevalue("_postgres_database")
    assert url.rpartition("/")[2] == f"paysdk_test_{worker_id}_{os.getpid()}"


@pytest.mark.heavy
def test_a_killed_runs_database_is_dropped_and_live_ones_are_kept(
    admin: psycopg.Connection[tuple[str]],
) -> None:
    dead = f"paysdk_test_gw7_{_dead_pid()}"
    alive = f"paysdk_test_gw8_{os.getpid()}"
    foreign = f"paysdk_test_{_dead_pid()}_0123abcd"  # another naming: not ours to judge
    for name in (dead, alive, foreign):
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        _drop_leftover_databases(admin)
        names = _names(admin)
        assert dead not in names
        assert {alive, foreign} <= names
    finally:
        for name in (dead, alive, foreign):
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
