"""``paysdk serve`` exit codes, as a real process: address in use (3), unsupported --db (2), SIGTERM (0).

docs/cli.md documents each in its exit-code table; a test below reads the table to keep them there.
"""

from __future__ import annotations

import gc
import json
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paysdk.server.collector import SERVING_THRESHOLDS
from paysdk.server.db import Database
from paysdk.testing._ready import http_ok, wait_ready

from .conftest import subprocess_env

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _serve(config_dir: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "paysdk_cli", "serve", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(config_dir),
    )


def _bound_socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def test_port_in_use_exits_3_with_one_line(config_dir: Path, tmp_path: Path) -> None:
    with _bound_socket() as taken:
        port = taken.getsockname()[1]
        proc = _serve(config_dir, "--port", str(port), "--db", f"sqlite:///{tmp_path / 's.db'}")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert err.splitlines() == [
        f"Error: cannot listen on 127.0.0.1:{port}: the address is already in use "
        "(another `paysdk serve`?); pick another port with --port"
    ]
    assert out == ""
    assert not (tmp_path / "s.db").exists()  # nothing was started


@pytest.mark.parametrize(
    "db",
    [
        "mysql://root:hunter2@db/shop",
        "shop.db",
        "postgresql://u:hunter2@h:port/db",
        # D771: in memory, each of the server's connections saw an empty database; it served nothing.
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///file::memory:?cache=shared&uri=true",
    ],
)
def test_unsupported_db_is_a_usage_error_without_a_class_name(config_dir: Path, db: str) -> None:
    proc = _serve(config_dir, "--port", "0", "--db", db)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    last = err.splitlines()[-1]
    assert re.fullmatch(
        r"Error: invalid value for --db: '[^']+' "
        r"(is not (a database the server supports|a valid database URL)|is an in-memory SQLite database: "
        r"the server needs one that all its connections and processes share): "
        r"use sqlite:///FILE or postgresql://USER@HOST/DB",
        last,
    ), last
    assert "Error" not in last.removeprefix("Error")  # no ValueError, ArgumentError, ...
    assert "hunter2" not in err
    assert "Traceback" not in err
    assert out == ""


@pytest.mark.postgres
def test_a_database_that_cannot_be_opened_is_one_line_in_the_drivers_words(config_dir: Path) -> None:
    """Not SQLAlchemy's class name and link: what PostgreSQL said, exit 1, nothing listening."""
    url = "postgresql://postgres:hunter2@127.0.0.1:5432/paysdk_no_such_database"
    proc = _serve(config_dir, "--port", "0", "--db", url)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert err.splitlines()[-1].startswith("Error: cannot open the database of --db: "), err
    assert 'database "paysdk_no_such_database" does not exist' in err
    for hidden in ("Traceback", "OperationalError", "sqlalche.me", "hunter2"):
        assert hidden not in err
    assert out == ""


def test_sigterm_is_a_clean_stop_with_exit_0(config_dir: Path, tmp_path: Path) -> None:
    with _bound_socket() as probe:
        port = probe.getsockname()[1]
    proc = _serve(config_dir, "--port", str(port), "--db", f"sqlite:///{tmp_path / 's.db'}")
    try:
        wait_ready(http_ok(f"http://127.0.0.1:{port}/_sandbox/health"), what="paysdk serve", process=proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "Error" not in err


def test_the_exit_code_table_documents_serve() -> None:
    rows = {
        match.group(1): match.group(2)
        for match in re.finditer(r"^\| (\d+) \| (.+) \|$", DOCS.read_text(encoding="utf-8"), re.MULTILINE)
    }
    assert "--db" in rows["2"]
    assert "serve" in rows["3"]
    assert "in use" in rows["3"]
    assert "SIGTERM" in rows["0"]


#: ``paysdk serve`` run up to the hand-over to uvicorn (``uvicorn.run`` replaced by a probe that prints
#: the modules imported by then and the collector's state, and returns: the command ends with exit 0).
_START_PROBE = """
import json, sys
import uvicorn

def probe(app, **options):
    import gc
    seen = {
        "app": type(app).__name__,
        "modules": sorted(sys.modules),
        "gc": gc.isenabled(),
        "frozen": gc.get_freeze_count(),
        "thresholds": list(gc.get_threshold()),
    }
    print(json.dumps(seen))

uvicorn.run = probe
sys.argv = ["paysdk", "serve", "--port", "0", "--db", sys.argv[1]]
from paysdk_cli._entry import run
try:
    run()
except SystemExit as exit:
    assert not exit.code, exit.code
"""


def _start_probe(config_dir: Path, db_url: str) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-c", _START_PROBE, db_url],
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(config_dir),
        check=True,
    )
    seen: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return seen


def test_a_start_without_seed_imports_no_seed_contracts(config_dir: Path, tmp_path: Path) -> None:
    # issue 12 (D306): what a plain start needs only; the seed's contracts load with a --seed file.
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    seen = _start_probe(config_dir, db_url)
    modules = set(seen["modules"])
    # A new database: its tables are created before anything listens, from the frozen statements, and
    # the boot stage serves it as an existing one (D611): no ORM, no mapped table, no app yet.
    assert seen["app"] == "BootApp"
    assert "paysdk.server.boot" in modules  # the probe ran where the server starts
    assert "paysdk.server.app" not in modules
    assert "sqlalchemy.orm" not in modules
    assert not {m for m in modules if m.startswith("paysdk.server.") and m.endswith("_tables")}
    assert "paysdk.contracts.seed" not in modules
    assert "paysdk.contracts.wallet" not in modules
    assert "sqlalchemy.dialects.postgresql" not in modules  # a server on SQLite (D307)
    assert "alembic" not in modules  # created and stamped without it: only an upgrade imports it (D474)
    database = Database(db_url)
    try:
        assert database.schema_current()  # every table, column and index, stamped with the head
    finally:
        database.dispose()
    assert seen["gc"] is True  # the imports ran with the collector off; it is on when the server serves
    assert tuple(seen["thresholds"]) == SERVING_THRESHOLDS  # and set for serving (D769)


def test_a_start_on_an_existing_database_imports_no_table_and_no_orm(
    config_dir: Path, tmp_path: Path
) -> None:
    # issue 12 (D310): the boot stage answers the probe; the ORM, the tables and the app load after.
    db_url = f"sqlite:///{tmp_path / 'existing.db'}"
    _start_probe(config_dir, db_url)  # creates the tables
    seen = _start_probe(config_dir, db_url)
    modules = set(seen["modules"])
    assert seen["app"] == "BootApp"
    assert "sqlalchemy.orm" not in modules
    assert "alembic" not in modules  # the schema is current: no migration machinery (D474)
    assert not {m for m in modules if m.startswith("paysdk.server.") and m.endswith("_tables")}
    for module in ("app", "families", "middleware", "scheduler", "context", "routers", "services"):
        assert f"paysdk.server.{module}" not in modules
    assert "paysdk.contracts.sandbox" not in modules
    assert "fastapi" in modules  # what a bare FastAPI app imports too
    assert seen["gc"] is True


def _failing_import() -> None:
    from paysdk.server.collector import imports_without_collection

    with imports_without_collection():
        assert not gc.isenabled()
        raise RuntimeError("an import failed")


def test_the_collector_is_on_again_however_the_imports_end() -> None:
    from paysdk.server.collector import imports_without_collection

    assert gc.isenabled()
    try:
        with pytest.raises(RuntimeError, match="an import failed"):
            _failing_import()
        assert gc.isenabled()
        gc.disable()  # a process that runs without the collector keeps it off
        with imports_without_collection():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()  # what the blocks froze stays frozen, as the test process's own objects (D769)


def test_the_serving_thresholds_are_undone_however_serving_ends() -> None:
    """:func:`paysdk.server.collector.thresholds_for_serving` (D769) sets the collector for serving and
    puts back what the process had, after a failure too."""
    from paysdk.server.collector import thresholds_for_serving

    kept = gc.get_threshold()  # the test process's own (tests/conftest.py)
    gc.set_threshold(700, 10, 10)  # Python's defaults
    try:
        seen: list[tuple[int, int, int]] = []

        def serving() -> None:
            with thresholds_for_serving():
                seen.append(gc.get_threshold())
                raise RuntimeError("the server stopped")

        with pytest.raises(RuntimeError, match="the server stopped"):
            serving()
        assert seen == [SERVING_THRESHOLDS]
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*kept)
