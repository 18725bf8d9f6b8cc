"""The default database (``paysdk serve`` without ``--db``) is private: directory 0700, files 0600 (8.10)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from paysdk.server import create_app
from paysdk.server.db import default_database_url


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """HOME and the XDG directories under ``tmp_path``, and a permissive umask (022) meanwhile."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    previous = os.umask(0o022)
    try:
        yield tmp_path
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_default_database_and_directory_are_private(home: Path) -> None:
    app = create_app(None, start_ticker=False)
    try:
        database = Path(app.state.paysdk.db.engine.url.database)
        assert database == home / "data" / "paysdk" / "sandbox.db"
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        ) as c:
            assert (await c.post("/_sandbox/clients", json={})).status_code == 201
        assert _mode(database.parent) == 0o700
        assert _mode(database) == 0o600
        siblings = [database.with_name(database.name + suffix) for suffix in ("-wal", "-shm")]
        assert all(path.exists() for path in siblings)  # written through the WAL
        assert [_mode(path) for path in siblings] == [0o600, 0o600]
    finally:
        app.state.paysdk.db.dispose()


def test_an_existing_default_database_left_readable_is_tightened(home: Path) -> None:
    directory = home / "data" / "paysdk"
    directory.mkdir(parents=True, mode=0o755)
    database = directory / "sandbox.db"
    database.write_bytes(b"")
    database.chmod(0o644)
    assert default_database_url() == f"sqlite:///{database}"
    assert _mode(directory) == 0o700
    assert _mode(database) == 0o600
