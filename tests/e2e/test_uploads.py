"""File uploads with the SDK against the real reference server's upload sink (``POST /_sandbox/uploads``):
every body kind, in process and over a socket, sync and async; a 64 MB file over a socket within a
16 MB traced-memory peak; retries after an injected 503 re-send the whole file (re-opened or rewound);
a one-shot stream is sent once and never retried."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import os
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

import paysdk
from paysdk._pipeline import Operation
from paysdk.contracts.sandbox import UploadReceipt
from paysdk.testing._ready import free_port, http_ok, wait_ready

from .conftest import Maker, call

covers = pytest.mark.covers
MB = 1 << 20


def attempts(client: paysdk.Client | paysdk.AsyncClient) -> int:
    info = client.last_response
    assert info is not None
    return info.attempts


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def generate_file(path: Path, megabytes: int) -> str:
    """Write ``megabytes`` MiB of pseudo-random bytes to ``path`` one MiB at a time; its SHA-256."""
    digest = hashlib.sha256()
    block = os.urandom(MB)
    with path.open("wb") as out:
        for index in range(megabytes):
            chunk = block[index:] + block[:index]
            out.write(chunk)
            digest.update(chunk)
    return digest.hexdigest()


@covers("sandbox.uploads.create")
async def test_every_body_kind_reaches_the_sink(make: Maker, tmp_path: Path) -> None:
    client = make()
    data = os.urandom(300_000)
    path = tmp_path / "charges.csv"
    path.write_bytes(data)

    from_path = await call(client.sandbox.uploads.create(path))
    (part,) = from_path.parts
    assert (part.name, part.filename, part.content_type, part.size, part.sha256) == (
        "file",
        "charges.csv",
        "text/csv",
        len(data),
        sha(data),
    )
    assert (from_path.size, from_path.sha256) == (len(data), sha(data))

    with path.open("rb") as handle:
        handle.seek(1000)
        from_object = await call(client.sandbox.uploads.create(handle, content_type="application/x-test"))
    assert (from_object.sha256, from_object.parts[0].content_type) == (sha(data[1000:]), "application/x-test")

    several = await call(
        client.sandbox.uploads.create(
            files=[
                ("first", path),
                ("second", paysdk.FileUpload(b"a,b\n1,2\n", filename="rows.csv")),
                ("third", io.BytesIO(b"in memory")),
            ]
        )
    )
    assert [(p.name, p.filename, p.size, p.sha256) for p in several.parts] == [
        ("first", "charges.csv", len(data), sha(data)),
        ("second", "rows.csv", 8, sha(b"a,b\n1,2\n")),
        ("third", None, 9, sha(b"in memory")),
    ]
    assert several.sha256 is None
    assert several.size == len(data) + 17

    raw = await call(client.sandbox.uploads.create(content=data[:5000]))
    (raw_part,) = raw.parts
    assert (raw_part.name, raw_part.content_type, raw_part.sha256) == (
        None,
        "application/octet-stream",
        sha(data[:5000]),
    )

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(data), 70_000):
            yield data[start : start + 70_000]

    streamed = await call(client.sandbox.uploads.create(content=chunks()))
    assert (streamed.sha256, streamed.parts[0].content_type) == (sha(data), "application/octet-stream")
    assert attempts(client) == 1

    # A raw body is application/octet-stream on the control plane (D111): a web page could send text/csv.
    with pytest.raises(paysdk.APIError) as refused:
        await call(client.sandbox.uploads.create(content=b"a,b", content_type="text/csv"))
    assert refused.value.status_code == 415
    assert refused.value.body["details"][0]["field"] == "Content-Type"


# ----------------------------------------------------------------------------- a large file, socket


class Served(NamedTuple):
    url: str
    pid: int


@contextlib.contextmanager
def server_in_a_process(folder: Path, *options: str) -> Iterator[Served]:
    """``python -m paysdk.server`` on a free port, while it runs."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "paysdk.server",
        "--port",
        str(port),
        "--db",
        f"sqlite:///{folder / 's.db'}",
    ]
    process = subprocess.Popen([*command, *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(http_ok(url + "/_sandbox/health"), what="the server process", process=process)
        yield Served(url, process.pid)
    finally:
        process.terminate()
        process.wait(timeout=15)


def memory_kb(pid: int, field: str) -> int:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of process ``pid``, in KiB, from ``/proc``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.fixture(scope="module")
def server_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The reference server in its own process, so the test process traces only the SDK's memory."""
    with server_in_a_process(tmp_path_factory.mktemp("upload-server")) as served:
        yield served


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("big") / "big.bin"
    return path, generate_file(path, 64)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_64_mb_file_streams_with_a_small_memory_peak(
    kind: str, server_process: Served, big_file: tuple[Path, str]
) -> None:
    path, digest = big_file
    url, pid = server_process
    environment = paysdk.Environment.local(url)
    server_before = memory_kb(pid, "VmRSS")

    def upload_sync() -> UploadReceipt:
        with paysdk.Client(environment=environment) as client:
            return client.sandbox.uploads.create(path)

    async def upload_async() -> UploadReceipt:
        async with paysdk.AsyncClient(environment=environment) as client:
            return await client.sandbox.uploads.create(path)

    tracemalloc.start()
    try:
        receipt = upload_sync() if kind == "sync" else asyncio.run(upload_async())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (receipt.size, receipt.sha256) == (64 * MB, digest)
    assert peak < 16 * MB, f"traced peak {peak / MB:.1f} MB"
    # The server streams too: its peak RSS stays within 32 MB of what it held before the upload.
    assert (memory_kb(pid, "VmHWM") - server_before) * 1024 < 32 * MB


# --------------------------------------------------------------------------------------- retries


FAULT = "POST /_sandbox/uploads"


def test_a_retry_after_503_re_sends_the_whole_file(live_server: str, tmp_path: Path) -> None:
    data = os.urandom(3 * MB + 17)
    path = tmp_path / "file.bin"
    path.write_bytes(data)
    with paysdk.Client(environment=paysdk.Environment.local(live_server)) as client:
        client.sandbox.add_fault("error", route=FAULT, count=1, status=503)
        receipt = client.sandbox.uploads.create(path)  # re-opened
        assert (receipt.sha256, attempts(client)) == (sha(data), 2)

        client.sandbox.add_fault("error", route=FAULT, count=1, status=503)
        with path.open("rb") as handle:
            handle.seek(5)
            receipt = client.sandbox.uploads.create(handle)  # rewound to 5, not 0
        assert (receipt.sha256, attempts(client)) == (sha(data[5:]), 2)
        assert [fault.remaining for fault in client.sandbox.faults()] == [0, 0]

        # A fault on every route ("*") leaves the control plane alone, the sink included.
        client.sandbox.add_fault("error", route="*", count=1, status=503)
        assert client.sandbox.uploads.create(content=b"x").sha256 == sha(b"x")
        assert attempts(client) == 1


async def test_async_retry_rewinds_a_seekable_object_over_a_socket(live_server: str) -> None:
    data = os.urandom(MB + 3)
    async with paysdk.AsyncClient(environment=paysdk.Environment.local(live_server)) as client:
        await client.sandbox.add_fault("error", route=FAULT, count=2, status=503)
        receipt = await client.sandbox.uploads.create(files={"data": io.BytesIO(data)})
        assert (receipt.sha256, attempts(client)) == (sha(data), 3)


def test_a_one_shot_stream_is_sent_once_and_never_retried(live_server: str) -> None:
    data = os.urandom(MB)
    pulls: list[int] = []

    def generated() -> Iterator[bytes]:
        pulls.append(1)
        yield data

    with paysdk.Client(environment=paysdk.Environment.local(live_server)) as client:
        client.sandbox.add_fault("error", route=FAULT, count=1, status=503)
        with pytest.raises(paysdk.APIError) as refused:
            client.sandbox.uploads.create(generated())
        assert (refused.value.status_code, refused.value.attempts, len(pulls)) == (503, 1, 1)

        read_end, write_end = os.pipe()

        def feed() -> None:
            # The reader may stop early (the dropped connection): the pipe then breaks, as it should.
            with contextlib.suppress(BrokenPipeError), os.fdopen(write_end, "wb") as pipe:
                pipe.write(data)

        writer = threading.Thread(target=feed)
        writer.start()
        client.sandbox.add_fault("drop", route=FAULT, count=1)
        with os.fdopen(read_end, "rb") as pipe, pytest.raises(paysdk.APIConnectionError) as dropped:
            client.sandbox.uploads.create(pipe)
        writer.join()
        assert dropped.value.attempts == 1
        assert [fault.remaining for fault in client.sandbox.faults()] == [0, 0]

        read_end, write_end = os.pipe()
        writer = threading.Thread(target=feed)
        writer.start()
        with os.fdopen(read_end, "rb") as pipe:
            receipt = client.sandbox.uploads.create(pipe)  # no fault left: sent once, chunked
        writer.join()
        assert (receipt.sha256, attempts(client)) == (sha(data), 1)


# ------------------------------------------------------------------------------ answers as bytes


async def test_bytes_answers_from_the_real_server(make: Maker) -> None:
    client = make()
    op = Operation("GET", "/openapi.json", bytes, response_kind="bytes")
    raw = await call(client._request(op))
    assert raw.startswith(b"{")
    assert b'"openapi"' in raw
    assert b"/_sandbox/uploads" not in raw  # the sink is control plane: not documented
    small = make(max_response_bytes=1000)
    with pytest.raises(paysdk.ResponseTooLargeError):
        await call(small._request(op))


def test_the_attempt_deadline_bounds_an_upload_the_server_does_not_read(
    live_server: str, tmp_path: Path
) -> None:
    # The sink stalls 5 s before reading (a latency fault): a 32 MB body fills the socket buffers, the
    # SDK's writes block, and the attempt's deadline (D61) ends them at `timeout`, not at the stall's end.
    path = tmp_path / "stalled.bin"
    generate_file(path, 32)
    with paysdk.Client(environment=paysdk.Environment.local(live_server), max_retries=0) as client:
        client.sandbox.add_fault("latency", route=FAULT, count=1, latency_ms=5000)
        started = time.monotonic()
        with pytest.raises(paysdk.APITimeoutError) as stalled:
            client.sandbox.uploads.create(path, timeout=1)
        assert time.monotonic() - started < 4.0
        assert stalled.value.attempts == 1


def test_the_upload_limit_is_a_server_option(tmp_path: Path) -> None:
    with (
        server_in_a_process(tmp_path, "--upload-limit", "1") as served,
        paysdk.Client(environment=paysdk.Environment.local(served.url)) as client,
    ):
        assert client.sandbox.uploads.create(content=b"a" * (MB - 1000)).size == MB - 1000
        with pytest.raises(paysdk.APIError) as refused:
            client.sandbox.uploads.create(content=b"a" * (MB + 1))
        assert refused.value.status_code == 413
        assert refused.value.body["details"][0]["field"] == "body"
    for command in (["paysdk.server"], ["paysdk_cli", "serve"]):
        wrong = subprocess.run(
            [sys.executable, "-m", *command, "--upload-limit", "0"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert wrong.returncode == 2
        assert "--upload-limit" in wrong.stderr + wrong.stdout
