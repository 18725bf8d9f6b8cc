"""``paysdk serve`` on a database that holds this version's schema answers its readiness probe before the
rest of the server is imported (:mod:`paysdk.server.boot`, D310), and then serves exactly as a server
built at once: the same health answer, the full server loaded on the first other request, right after the
first health answer or a second after the start, its scheduler running, a clean stop even while loading.
The schema check it starts with reads :mod:`paysdk.server.schema_snapshot`, which must equal the tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from server_helpers import JSON_TYPE, auth, dumps, link_body
from sqlalchemy import Table, text

from paysdk.contracts.sandbox import Health, SandboxClient
from paysdk.server import boot, schema_snapshot
from paysdk.server.addresses import ServerAddresses
from paysdk.server.app import create_app
from paysdk.server.boot import BootApp
from paysdk.server.core_tables import Base
from paysdk.server.db import Database
from paysdk.server.families import FAMILIES, reset_order, schema_tables
from paysdk.testing._ready import free_port, wait_ready

ROOT = Path(__file__).resolve().parents[2]
PAYSDK = str(Path(sys.executable).with_name("paysdk"))

# -- the snapshot


def test_the_snapshot_is_the_mapped_tables() -> None:
    expected = {}
    for row in schema_tables(FAMILIES):
        table = row.__table__
        assert isinstance(table, Table)
        expected[table.name] = (
            tuple(column.name for column in table.columns),
            tuple(sorted(str(index.name) for index in table.indexes)),
        )
    assert expected == schema_snapshot.TABLES, "run python scripts/schema_snapshot.py"
    assert tuple(row.__tablename__ for row in reset_order(FAMILIES)) == schema_snapshot.RESET_ORDER
    check = subprocess.run(
        [sys.executable, "scripts/schema_snapshot.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


def test_schema_current_only_for_a_database_holding_every_column_and_index(db_url: str) -> None:
    database = Database(db_url)
    Base.metadata.drop_all(database.engine)  # PostgreSQL's database of the session may hold them
    try:
        assert not database.schema_current()  # nothing created yet
        database.create_schema()
        assert database.schema_current()
        with database.engine.begin() as connection:
            connection.execute(text("DROP INDEX ix_transactions_expiry"))
        assert not database.schema_current()
    finally:
        Base.metadata.drop_all(database.engine)
        database.dispose()
    other = Database(db_url, FAMILIES[:1])  # other families: their tables are in no snapshot
    try:
        assert not other.schema_current()
    finally:
        other.dispose()


# The modules a start on an existing database imports: tests/cli/test_cli_serve.py.


# -- a real paysdk serve


def _serve(db_url: str, port: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PAYSDK, "serve", "--port", str(port), "--db", db_url, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


#: The first request after the probe waits for the full server's load: generous on a loaded machine.
LOAD_WAIT = 60.0


def _wait_healthy(proc: subprocess.Popen[str], base: str) -> httpx.Response:
    answers: list[httpx.Response] = []

    def healthy() -> bool:
        answers.append(httpx.get(f"{base}/_sandbox/health", timeout=2))
        return answers[-1].status_code == 200

    wait_ready(healthy, what="paysdk serve", process=proc, interval=0.01)
    return answers[-1]


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return err


def test_serve_answers_as_a_server_built_at_once(tmp_path: Path, db_url: str) -> None:
    database = Database(db_url)
    database.create_schema()
    database.dispose()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _serve(db_url, port)
    try:
        booted = _wait_healthy(proc, base)
        eager = create_app(db_url, start_ticker=False)
        try:
            built = _in_process_health(eager)
        finally:
            eager.state.paysdk.db.dispose()
        # The same answer: fields, types and format, headers, request id.
        assert booted.json().keys() == built.json().keys()
        assert Health.model_validate(booted.json()).database == Health.model_validate(built.json()).database
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", booted.json()["now"])
        assert [k for k in booted.headers if k not in ("date", "server")] == [
            k for k in built.headers if k not in ("date", "server")
        ]
        assert re.fullmatch(r"req_[0-9a-f]{32}", booted.headers["x-request-id"])
        # What the boot stage does not answer, the full server does, as it would.
        assert httpx.head(f"{base}/_sandbox/health", timeout=LOAD_WAIT).status_code == 405
        assert (
            httpx.get(
                f"{base}/_sandbox/health", headers={"Host": "evil.example"}, timeout=LOAD_WAIT
            ).status_code
            == 421
        )
        created = httpx.post(
            f"{base}/_sandbox/clients", content=dumps({}), headers=JSON_TYPE, timeout=LOAD_WAIT
        )
        assert created.status_code == 201
        merchant = SandboxClient.model_validate(created.json())
        link = httpx.post(
            f"{base}/transactions",
            content=dumps(link_body(merchant)),
            headers=auth(merchant),
            timeout=LOAD_WAIT,
        )
        assert link.status_code == 200, link.text
        assert (
            httpx.get(f"{base}/_sandbox/health", timeout=LOAD_WAIT).json()["database"]
            == booted.json()["database"]
        )
    finally:
        _stop(proc)


def _in_process_health(app: Any) -> httpx.Response:
    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get("/_sandbox/health")

    return asyncio.run(get())


def test_a_stop_right_after_the_probe_while_the_server_loads_is_clean(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'stop.db'}"
    for _ in range(2):  # the first start creates the tables, the second boots
        port = free_port()
        proc = _serve(db_url, port)
        _wait_healthy(proc, f"http://127.0.0.1:{port}")
        _stop(proc)  # the full server is loading (right after the first health answer)


# -- the boot stage in process, on a real socket


@contextlib.asynccontextmanager
async def _boot_server(
    db_url: str, build: Callable[[Database], Any] | None = None
) -> AsyncIterator[tuple[BootApp, str]]:
    prepared = Database(db_url)
    prepared.create_schema()
    prepared.dispose()
    database = Database(db_url)
    assert database.schema_current()

    def full(database: Database) -> Any:
        return create_app(database=database, tick_interval=0.05)

    app = BootApp(database, "sandbox", ServerAddresses(), build or full)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    assert await _until(lambda: server.started, 30)
    try:
        yield app, f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


def _scheduler_running() -> bool:
    return any(task.get_name() == "paysdk-scheduler" for task in asyncio.all_tasks())


async def _until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def test_nobody_calls_and_the_full_server_loads_after_a_second(db_url: str) -> None:
    async with _boot_server(db_url) as (app, _):
        await asyncio.sleep(boot.WARM_UP_AFTER / 2)
        assert app.app is None
        assert not _scheduler_running()
        assert await _until(lambda: app.app is not None, boot.WARM_UP_AFTER + 30)
        assert await _until(_scheduler_running, 5)  # due jobs run without waiting for a request


async def test_the_first_health_answer_starts_the_load(db_url: str) -> None:
    async with _boot_server(db_url) as (app, base):
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            assert (await client.get("/_sandbox/health")).status_code == 200
        assert await _until(lambda: app.app is not None, boot.WARM_UP_AFTER * 0.9)
        assert await _until(_scheduler_running, 5)


async def test_concurrent_first_requests_load_the_server_once_and_all_succeed(db_url: str) -> None:
    builds: list[Database] = []

    def counted(database: Database) -> Any:
        builds.append(database)
        return create_app(database=database, tick_interval=0.05)

    async with _boot_server(db_url, counted) as (app, base):
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            answers = await asyncio.gather(
                *(client.post("/_sandbox/clients", content=dumps({}), headers=JSON_TYPE) for _ in range(20)),
                *(client.get("/_sandbox/health") for _ in range(5)),
            )
        assert [answer.status_code for answer in answers] == [201] * 20 + [200] * 5
        assert len({answer.json()["slug"] for answer in answers[:20]}) == 20
        assert len(builds) == 1
        assert builds[0] is app.database  # the boot stage's database, not a second engine


async def test_a_load_that_fails_is_logged_once_answered_500_and_the_stop_stays_clean(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(database: Database) -> Any:
        raise RuntimeError("an import failed")

    async with (
        _boot_server(db_url, broken) as (_, base),
        httpx.AsyncClient(base_url=base, timeout=60) as client,
    ):
        assert (await client.get("/_sandbox/health")).status_code == 200  # the probe needs nothing else
        await asyncio.sleep(0.1)
        assert (await client.get("/transactions/x")).status_code == 500
        assert (await client.get("/transactions/y")).status_code == 500
    failed = [r for r in caplog.records if r.getMessage() == "the reference server failed to load"]
    assert len(failed) == 1
    assert failed[0].exc_info is not None


@pytest.fixture(autouse=True)
def _no_stray_tables(db_url: str) -> Any:
    yield
    if db_url.startswith("postgresql"):
        database = Database(db_url)
        try:
            Base.metadata.drop_all(database.engine)
        finally:
            database.dispose()
