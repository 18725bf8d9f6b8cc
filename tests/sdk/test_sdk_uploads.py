"""Request bodies that stream (multipart files, raw bytes) and answers as bytes, without a server: the
pure pieces (framing, lengths, the retry rule for one-shot streams, the call's total timeout) and the
stream's reading (re-open, rewind, send once). Real-server tests: ``tests/e2e/test_uploads.py``."""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from python_multipart.multipart import MultipartParser, parse_options_header

import paysdk
from paysdk._pipeline import (
    ClientConfig,
    Operation,
    Outcome,
    attempt_budget,
    build_request,
    call_total_timeout,
    no_result,
    retry_decision,
    upload_retry_rule,
)
from paysdk._uploads import CHUNK_SIZE, FileUpload, UploadStream, file_source, multipart_body, raw_body
from paysdk.resources.sandbox import upload_operation

from .support import plain_environment

REQUEST = httpx.Request("POST", "http://testserver/_sandbox/uploads")


def config(**fields: Any) -> ClientConfig:
    return ClientConfig(environment=plain_environment(), **fields)


def sent(stream: UploadStream) -> bytes:
    return b"".join(stream)


async def asent(stream: UploadStream) -> bytes:
    return b"".join([chunk async for chunk in stream])


def parse_multipart(content_type: str, body: bytes) -> list[tuple[dict[bytes, bytes], bytes]]:
    """(disposition params, content) per part, with the parser the server uses."""
    _, params = parse_options_header(content_type)
    parts: list[tuple[dict[bytes, bytes], bytes]] = []
    state: dict[str, Any] = {}

    def on_header_field(data: bytes, start: int, end: int) -> None:
        state["field"] = state.get("field", b"") + data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        state["value"] = state.get("value", b"") + data[start:end]

    def on_header_end() -> None:
        if state.pop("field", b"").lower() == b"content-disposition":
            state["disposition"] = parse_options_header(state["value"])[1]
        state.pop("value", None)

    def on_part_data(data: bytes, start: int, end: int) -> None:
        state["data"] = state.get("data", b"") + data[start:end]

    def on_part_end() -> None:
        parts.append((state.pop("disposition"), state.pop("data", b"")))

    parser = MultipartParser(
        params[b"boundary"],
        {
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
        },
    )
    parser.write(body)
    return parts


@pytest.fixture
def data_file(tmp_path: Path) -> tuple[Path, bytes]:
    data = os.urandom(3 * CHUNK_SIZE + 123)
    path = tmp_path / "report.csv"
    path.write_bytes(data)
    return path, data


# -------------------------------------------------------------------------------------- describing


def test_a_path_is_described_without_reading_it(data_file: tuple[Path, bytes], monkeypatch: Any) -> None:
    path, data = data_file
    monkeypatch.setenv("HOME", str(path.parent))
    source = file_source("~/report.csv", "file")
    assert (source.kind, source.path, source.size) == ("path", path, len(data))
    assert (source.filename, source.content_type) == ("report.csv", "text/csv")
    named = file_source(FileUpload(path, filename="x.bin", content_type="application/x-thing"), "file")
    assert (named.filename, named.content_type) == ("x.bin", "application/x-thing")


def test_a_seekable_object_is_read_from_its_position_at_call_start(data_file: tuple[Path, bytes]) -> None:
    path, data = data_file
    with path.open("rb") as handle:
        handle.seek(100)
        source = file_source(handle, "file")
        assert (source.kind, source.start, source.size) == ("seekable", 100, len(data) - 100)
        body = raw_body(source)
        assert sent(UploadStream(body)) == data[100:]
        handle.seek(7)  # moved by someone in between: the next attempt still starts at 100
        assert sent(UploadStream(body)) == data[100:]
    memory = io.BytesIO(b"0123456789")
    memory.seek(4)
    assert sent(UploadStream(raw_body(file_source(memory, "content")))) == b"456789"


def test_pipes_generators_and_bad_arguments(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as pipe:
        assert file_source(pipe, "file").kind == "once"
        os.close(write_end)
    generated = file_source((chunk for chunk in [b"a", b"b"]), "file")
    assert (generated.kind, generated.size) == ("once", None)
    with pytest.raises(paysdk.ValidationError) as missing:
        file_source(tmp_path / "nope.csv", "file")
    assert missing.value.field == "file"
    with pytest.raises(paysdk.ValidationError, match="binary mode"), (tmp_path / "t.txt").open("w") as text:
        file_source(text, "file")
    with pytest.raises(paysdk.ValidationError) as directory:
        file_source(tmp_path, "files[a]")
    assert directory.value.field == "files[a]"
    for wrong in (42, {"a": b"b"}, "a string is a path, not content"):
        with pytest.raises(paysdk.ValidationError):
            file_source(wrong, "file")
    with pytest.raises(paysdk.ValidationError):
        upload_operation(b"x", content=b"y")
    with pytest.raises(paysdk.ValidationError):
        upload_operation()
    with pytest.raises(paysdk.ValidationError, match="FileUpload"):
        upload_operation(files={"a": b"x"}, filename="a.csv")


# ------------------------------------------------------------------------------ framing and lengths


def test_multipart_framing_round_trips_and_its_length_is_exact(data_file: tuple[Path, bytes]) -> None:
    path, data = data_file
    body = multipart_body(
        [
            ("report", file_source(path, "files[report]")),
            ("note", file_source(FileUpload(b"hi", filename='we"ird\r\nname.txt'), "files[note]")),
        ],
        fields=[("purpose", "test")],
    )
    request = build_request(Operation("POST", "/_sandbox/uploads", no_result, upload=body), config(), None)
    content_type = request.headers["content-type"]
    assert content_type.startswith("multipart/form-data; boundary=paysdk-")
    assert request.headers["host"] == "api.example"  # httpx adds Host to a streamed request too
    wire = sent(request.stream)  # type: ignore[arg-type]
    assert int(request.headers["content-length"]) == len(wire) == body.content_length
    parts = parse_multipart(content_type, wire)
    assert [(p[b"name"], p.get(b"filename"), content) for p, content in parts] == [
        (b"purpose", None, b"test"),
        (b"report", b"report.csv", data),
        (b"note", b"we%22ird%0D%0Aname.txt", b"hi"),
    ]


def test_a_stream_of_unknown_length_goes_chunked() -> None:
    body = multipart_body([("file", file_source(iter([b"ab", b"cd"]), "file"))])
    request = build_request(Operation("POST", "/_sandbox/uploads", no_result, upload=body), config(), None)
    assert request.headers["transfer-encoding"] == "chunked"
    assert "content-length" not in request.headers
    assert parse_multipart(request.headers["content-type"], sent(request.stream))[0][1] == b"abcd"  # type: ignore[arg-type]


def test_the_stream_reads_chunk_by_chunk(data_file: tuple[Path, bytes]) -> None:
    path, data = data_file
    chunks = list(UploadStream(raw_body(file_source(path, "content"))))
    assert max(len(chunk) for chunk in chunks) == CHUNK_SIZE
    assert len(chunks) == 4
    assert b"".join(chunks) == data


async def test_async_iteration_reads_on_a_worker_thread(data_file: tuple[Path, bytes]) -> None:
    path, data = data_file
    readers: set[int] = set()

    class Spy(io.FileIO):
        def read(self, size: int | None = -1, /) -> bytes:
            readers.add(threading.get_ident())
            return super().read(size)

    with Spy(str(path), "rb") as handle:
        body = raw_body(file_source(handle, "content"))
        assert await asent(UploadStream(body)) == data
    assert readers
    assert threading.get_ident() not in readers  # never on the event loop's thread


def test_reopen_and_changed_files(data_file: tuple[Path, bytes]) -> None:
    path, data = data_file
    body = raw_body(file_source(path, "content"))
    assert sent(UploadStream(body)) == data
    assert sent(UploadStream(body)) == data  # a retry re-opens the path
    path.write_bytes(data[:10])
    with pytest.raises(paysdk.ValidationError, match="changed size") as changed:
        sent(UploadStream(body))
    assert changed.value.field == "content"


def test_a_one_shot_stream_is_read_once() -> None:
    def generate() -> Iterator[bytes]:
        yield b"one"
        yield b""  # an empty chunk is not the end
        yield b"two"

    body = raw_body(file_source(generate(), "content"))
    assert sent(UploadStream(body)) == b"onetwo"
    with pytest.raises(paysdk.ValidationError, match="only once"):
        sent(UploadStream(body))


# ------------------------------------------------------------------------------------ retry rules


def test_upload_retry_rule_refuses_one_shot_bodies_only(data_file: tuple[Path, bytes]) -> None:
    path, _ = data_file
    once = Operation(
        "POST", "/u", no_result, idempotent=True, upload=raw_body(file_source(iter([b"x"]), "c"))
    )
    reopen = Operation("POST", "/u", no_result, idempotent=True, upload=raw_body(file_source(path, "c")))
    json_op = Operation("POST", "/u", no_result, idempotent=True, json={"a": 1})
    assert once.upload is not None
    assert once.upload.replay == "once"
    assert reopen.upload is not None
    assert reopen.upload.replay == "reopen"
    decision = upload_retry_rule(once)
    assert decision is not None
    assert not decision.retry
    assert upload_retry_rule(reopen) is None
    assert upload_retry_rule(json_op) is None
    failures: list[Outcome] = [
        httpx.Response(503, request=REQUEST),
        httpx.ConnectError("refused", request=REQUEST),
        httpx.ReadTimeout("slow", request=REQUEST),
    ]
    for outcome in failures:
        kwargs: dict[str, Any] = {"rng": lambda: 0.0, "now": lambda: 0.0}
        assert not retry_decision(once, 1, outcome, config(), None, **kwargs).retry
        assert retry_decision(reopen, 1, outcome, config(), None, **kwargs).retry


def test_a_per_call_timeout_longer_than_total_timeout_gets_one_whole_attempt() -> None:
    settings = config(total_timeout=60.0)
    long_op = Operation("POST", "/u", no_result, timeout=httpx.Timeout(600.0))
    short_op = Operation("POST", "/u", no_result, timeout=httpx.Timeout(5.0))
    assert call_total_timeout(long_op, settings) == 600.0
    assert attempt_budget(long_op, settings, elapsed=0.0) == 600.0
    assert call_total_timeout(short_op, settings) == 60.0
    assert attempt_budget(short_op, settings, elapsed=58.0) == pytest.approx(2.0)
    plain = Operation("POST", "/u", no_result)
    assert call_total_timeout(plain, settings) == 60.0


# ------------------------------------------------------------------------------- answers as bytes


def test_bytes_answers_are_parsed_raw_and_bounded() -> None:
    payload = bytes(range(256)) * 10

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept"] == "*/*"
        return httpx.Response(200, content=payload, headers={"content-type": "application/pdf"})

    op = Operation("GET", "/file", lambda raw: hashlib.sha256(raw).hexdigest(), response_kind="bytes")
    environment = paysdk.Environment.local("http://testserver")
    with paysdk.Client(environment=environment, transport=httpx.MockTransport(handler)) as client:
        assert client._request(op) == hashlib.sha256(payload).hexdigest()
    small = paysdk.Client(
        environment=environment, transport=httpx.MockTransport(handler), max_response_bytes=100
    )
    with small, pytest.raises(paysdk.ResponseTooLargeError):
        small._request(op)
