"""The cardholder progress stream over real sockets (D188): read live while the batch runs, cut by a
``stream_cut`` fault and resumed with ``Last-Event-ID`` with nothing lost or repeated, and the
two-instance test: two server processes on one PostgreSQL database (``jobs_worker.py``), the upload
through one, the stream from the other (then resumed on the first), every event seen once."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from cardholder_kit import (
    JSON_TYPE,
    Backoffice,
    cardholders,
    check_complete,
    csv_file,
    person,
    progress_path,
    read_stream,
    xlsx_file,
)

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server.db import Database
from paysdk.testing._ready import free_port, http_ok, wait_ready

WORKER = Path(__file__).with_name("jobs_worker.py")
PG_ADMIN_URL = os.environ.get("PAYSDK_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


async def _merchant(client: httpx.AsyncClient) -> SandboxClient:
    made = await client.post("/_sandbox/clients", content=b"{}", headers=JSON_TYPE)
    assert made.status_code == 201, made.text
    return SandboxClient.model_validate(made.json())


def _rows(count: int) -> list[list[object]]:
    # Every 50th row fails (no email), so row-failed events interleave with progress.
    return [
        person(i) if i % 50 else [f"E{i}", f"u{i}", "", "A", "B", "", "", ""] for i in range(1, count + 1)
    ]


async def test_live_stream_while_processing_then_cut_and_resumed(live_server: str, db_url: str) -> None:
    async with httpx.AsyncClient(base_url=live_server, timeout=60) as client:
        bo = Backoffice(client, await _merchant(client))
        partner = await bo.partner()
        token = await bo.token()
        fault = await client.post(
            "/_sandbox/faults",
            content=json.dumps(
                {"kind": "stream_cut", "route": "GET /cms/rest/app/partners/*", "count": 1, "afterEvents": 3}
            ),
            headers=JSON_TYPE,
        )
        assert fault.status_code == 201, fault.text
        rows = 3000
        answer = await bo.upload(partner, xlsx_file(_rows(rows)), "people.xlsx")
        assert answer.status_code == 202
        batch = answer.json()["data"]["batchId"]
        first, clean, _ = await read_stream(client, progress_path(partner, batch), token)
        assert not clean
        assert [e.id for e in first] == [1, 2, 3]
        rest, clean, _ = await read_stream(client, progress_path(partner, batch), token, first[-1].id)
        assert clean
        check_complete(first + rest, rows)
        # Live: at least one event arrived before the batch had finished.
        assert any(e.event == "progress" and 0 < e.data["processed"] < rows for e in first + rest)
        # Finished: a new connection replays everything and closes.
        replay, clean, _ = await read_stream(client, progress_path(partner, batch), token)
        assert clean
        assert replay == first + rest
    assert len(cardholders(db_url, bo.merchant.slug)) == rows - rows // 50


class _Process:
    """A reference-server process (``jobs_worker.py``: the real app under uvicorn, ticker on)."""

    def __init__(self, url: str) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), url, str(self.port), "30"], cwd=WORKER.parent
        )
        self.url = f"http://127.0.0.1:{self.port}"
        wait_ready(http_ok(self.url + "/_sandbox/health"), what="the server process", process=self.process)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def pg_database() -> Iterator[str]:
    """A PostgreSQL database of this test only, with the server's schema; its URL."""
    name = f"paysdk_chs_{os.getpid()}_{secrets.token_hex(4)}"
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        db = Database(f"{base}/{name}")
        try:
            db.create_schema()
            db.dispose()
            yield f"{base}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.postgres
async def test_two_instances_upload_through_one_stream_from_the_other(pg_database: str) -> None:
    one, two = _Process(pg_database), _Process(pg_database)
    try:
        async with (
            httpx.AsyncClient(base_url=one.url, timeout=60) as first,
            httpx.AsyncClient(base_url=two.url, timeout=60) as second,
        ):
            merchant = await _merchant(first)
            uploader, streamer = Backoffice(first, merchant), Backoffice(second, merchant)
            partner = await uploader.partner()
            token = await uploader.token()
            rows = 4000
            answer = await uploader.upload(partner, csv_file(_rows(rows)), "people.csv", token)
            assert answer.status_code == 202
            batch = answer.json()["data"]["batchId"]
            # The other instance streams it live; a cut there, the resume on the first instance.
            cut = await second.post(
                "/_sandbox/faults",
                content=json.dumps(
                    {"kind": "stream_cut", "route": "GET /cms/rest/app/*", "count": 1, "afterEvents": 4}
                ),
                headers=JSON_TYPE,
            )
            assert cut.status_code == 201, cut.text
            seen, clean, _ = await read_stream(second, progress_path(partner, batch), token)
            assert not clean
            assert len(seen) == 4
            rest, clean, _ = await read_stream(first, progress_path(partner, batch), token, seen[-1].id)
            assert clean
            check_complete(seen + rest, rows)
            # And the whole stream again from the second instance: the same events.
            again, clean, _ = await read_stream(second, progress_path(partner, batch), token)
            assert clean
            assert again == seen + rest
            del streamer
    finally:
        one.stop()
        two.stop()
    assert len(cardholders(pg_database, merchant.slug)) == rows - rows // 50
