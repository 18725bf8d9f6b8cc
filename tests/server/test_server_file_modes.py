"""An explicit SQLite database (``--db sqlite:///path``, ``create_app("sqlite:///...")``) holds merchant
tokens and secrets as the default one does (issue 20 item 12, D362): the server creates its file ``0600``
(SQLite gives the ``-wal``/``-shm`` files the same mode) and the directories it makes ``0700``, whatever
the umask; an existing file other users can read is warned about, logged once at start and shown by
``paysdk serve``, and left as it is."""

from __future__ import annotations

import logging
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from server_helpers import JSON_TYPE, dumps

from paysdk.server import create_app
from paysdk.testing._ready import free_port, http_ok, wait_ready

PAYSDK = str(Path(sys.executable).with_name("paysdk"))


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """umask 022 meanwhile (files 0644 and directories 0755 unless the server says otherwise); the
    ``paysdk serve`` processes inherit it."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _siblings(database: Path) -> list[Path]:
    return [database.with_name(database.name + suffix) for suffix in ("-wal", "-shm")]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "paysdk.server" and r.levelno == logging.WARNING
    ]


async def test_create_app_makes_the_file_0600_and_its_new_directories_0700(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    os.chmod(tmp_path, 0o755)
    database = tmp_path / "made" / "here" / "shop.db"
    app = create_app(f"sqlite:///{database}", start_ticker=False)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            assert (
                await client.post("/_sandbox/clients", content=dumps({}), headers=JSON_TYPE)
            ).status_code == 201
        assert _mode(database) == 0o600
        assert all(path.exists() for path in _siblings(database))  # written through the WAL
        assert [_mode(path) for path in _siblings(database)] == [0o600, 0o600]
        assert [_mode(tmp_path / "made"), _mode(database.parent)] == [0o700, 0o700]
        assert _mode(tmp_path) == 0o755  # a directory that existed is not the server's to change
        assert _warnings(caplog) == []
    finally:
        app.state.paysdk.db.dispose()


def test_an_existing_file_readable_by_others_is_warned_about_once_and_left_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = tmp_path / "shared.db"
    database.write_bytes(b"")  # an empty file is a valid SQLite database
    database.chmod(0o644)
    caplog.set_level(logging.WARNING, logger="paysdk.server")
    app = create_app(f"sqlite:///{database}", start_ticker=False)
    try:
        [warning] = _warnings(caplog)
        assert f"{database} (mode 0644)" in warning
        assert "chmod 600" in warning
        assert app.state.paysdk.db.file_warning == warning
        assert _mode(database) == 0o644  # the user's file: said, not changed
    finally:
        app.state.paysdk.db.dispose()
    database.chmod(0o600)
    caplog.clear()
    quiet = create_app(f"sqlite:///{database}", start_ticker=False)
    quiet.state.paysdk.db.dispose()
    assert _warnings(caplog) == []


def _serve(database: Path, port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PAYSDK, "serve", "--port", str(port), "--db", f"sqlite:///{database}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _serving(proc: subprocess.Popen[str], port: int, check: Callable[[], None] = lambda: None) -> str:
    """Wait for the readiness probe, create a client (the full server writes), ``check()`` while it
    still serves (a clean stop removes the WAL), stop; returns stderr."""
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(http_ok(f"{base}/_sandbox/health"), what="paysdk serve", process=proc)
        created = httpx.post(f"{base}/_sandbox/clients", content=dumps({}), headers=JSON_TYPE, timeout=30)
        assert created.status_code == 201, created.text
        check()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return err


def test_paysdk_serve_makes_an_explicit_database_private(tmp_path: Path) -> None:
    database = tmp_path / "new" / "shop.db"
    port = free_port()

    def private() -> None:
        assert _mode(database.parent) == 0o700
        assert [_mode(path) for path in [database, *_siblings(database)]] == [0o600, 0o600, 0o600]

    err = _serving(_serve(database, port), port, private)
    assert _mode(database) == 0o600
    assert "other users" not in err


def test_paysdk_serve_shows_the_warning_of_a_database_readable_by_others(tmp_path: Path) -> None:
    database = tmp_path / "shared.db"
    database.write_bytes(b"")
    database.chmod(0o644)
    port = free_port()
    err = _serving(_serve(database, port), port)
    lines = [line for line in err.splitlines() if "other users" in line]
    assert len(lines) == 1, err
    assert f"{database} (mode 0644)" in lines[0]
    assert "warning" in lines[0]
    assert _mode(database) == 0o644
