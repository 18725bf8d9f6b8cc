"""Several ``paysdk serve`` started at the same moment on one new database (issue 20 item 10, D360): the
schema is created and checked under a PostgreSQL advisory lock (SQLite's ``BEGIN IMMEDIATE`` serializes
the creation there), so every process starts, answers its readiness probe and serves."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from server_helpers import JSON_TYPE, auth, dumps, link_body

from paysdk.contracts.sandbox import SandboxClient
from paysdk.testing._ready import free_port, http_ok, wait_ready

pytestmark = pytest.mark.heavy  # minutes of server processes: run first (tests/conftest.py)

PAYSDK = str(Path(sys.executable).with_name("paysdk"))
PG_ADMIN_URL = os.environ.get("PAYSDK_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
PROCESSES = 3


@pytest.fixture(params=["sqlite", "postgresql"])
def new_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a database nothing has created tables in: a new SQLite file, or a scratch PostgreSQL
    database (created here, dropped at the end)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'new.db'}"
        return
    name = f"paysdk_start_{os.getpid()}_{secrets.token_hex(4)}"
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{base}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_three_serves_started_at_once_on_a_new_database_all_serve(new_database: str) -> None:
    ports = [free_port() for _ in range(PROCESSES)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = [
        subprocess.Popen(
            [PAYSDK, "serve", "--port", str(port), "--db", new_database],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for port in ports
    ]
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        for base, proc in zip(bases, procs, strict=True):  # started together, waited on in turn
            wait_ready(http_ok(f"{base}/_sandbox/health"), what=f"paysdk serve at {base}", process=proc)
        for base in bases:  # each one serves: a merchant and a link of its own
            created = httpx.post(f"{base}/_sandbox/clients", content=dumps({}), headers=JSON_TYPE, timeout=30)
            assert created.status_code == 201, created.text
            merchant = SandboxClient.model_validate(created.json())
            link = httpx.post(
                f"{base}/transactions", content=dumps(link_body(merchant)), headers=auth(merchant), timeout=30
            )
            assert link.status_code == 200, link.text
    finally:
        errors = []
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
            errors.append((proc.returncode, err))
    for returncode, err in errors:
        assert returncode == 0, err
        assert "Traceback" not in err, err
