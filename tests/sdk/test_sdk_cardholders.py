"""``client.backoffice.cardholders`` against a scripted backoffice (httpx.MockTransport), sync and async:
the requests it makes (D186-D188, D220), a dropped stream resumed with ``Last-Event-ID`` and the affinity
warning logged once (D221), ``wait`` reopening a stream that ended before ``done`` (D222), and the
arguments refused before anything is sent. The real server's tests are ``tests/e2e/test_cardholders_sdk.py``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

import paysdk
from paysdk import _json
from paysdk.resources.cardholders import (
    AFFINITY_WARNING,
    BatchDoneEvent,
    BatchProgressEvent,
    RowFailedEvent,
    progress_operation,
    upload_operation,
)

from .backoffice_fake import EMAIL, PASSWORD, PREFIX, FakeBackoffice
from .conftest import HarnessFactory
from .wallet_fake import MERCHANT

PROGRESS = "/app/partners/ptn_1/cardholders/batch/bat_1/progress"
UPLOAD = "/app/partners/ptn_1/cardholders/upload"

EVENTS = [
    (
        "progress",
        {"batchId": "bat_1", "status": "processing", "total": 3, "processed": 0, "created": 0, "failed": 0},
    ),
    ("row-failed", {"row": 3, "externalId": "e2", "field": "email", "message": "is not an email"}),
    (
        "progress",
        {"batchId": "bat_1", "status": "processing", "total": 3, "processed": 3, "created": 2, "failed": 1},
    ),
    (
        "done",
        {
            "batchId": "bat_1",
            "status": "completed",
            "total": 3,
            "processed": 3,
            "created": 2,
            "failed": 1,
            "cardsIssued": 1,
        },
    ),
]


def _frame(index: int) -> bytes:
    name, data = EVENTS[index]
    return f"id: {index + 1}\nevent: {name}\ndata: {_json.dumps(data).decode()}\n\n".encode()


class _Body(httpx.SyncByteStream, httpx.AsyncByteStream):
    """Frames, then a clean end or a dropped connection."""

    def __init__(self, frames: list[bytes], drop: bool) -> None:
        self.frames, self.drop = frames, drop

    def _chunks(self) -> Iterator[bytes]:
        yield b"retry: 1000\n\n"
        yield from self.frames
        if self.drop:
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks():
            yield chunk


class Scripted(FakeBackoffice):
    """The fake backoffice plus the upload and a progress stream whose connections are scripted:
    ``plan`` lists, per connection, how many events it sends and whether it then drops."""

    def __init__(self, plan: list[tuple[int, bool]]) -> None:
        super().__init__()
        self.plan = plan
        self.last_ids: list[str | None] = []
        self.uploads: list[httpx.Request] = []
        self.bodies: list[bytes] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix(PREFIX)
        if path == UPLOAD:
            refused = self._bearer(request, "user")
            if refused is not None:
                return refused
            self.uploads.append(request)
            self.bodies.append(b"".join(request.stream))  # type: ignore[arg-type]
            answer = {
                "batchId": "bat_1",
                "partnerId": "ptn_1",
                "status": "queued",
                "fileName": "holders.csv",
                "fileSha256": "0" * 64,
                "duplicate": False,
            }
            return httpx.Response(202, json={"data": answer})
        if path == PROGRESS:
            refused = self._bearer(request, "user")
            if refused is not None:
                return refused
            last = request.headers.get("last-event-id")
            self.last_ids.append(last)
            start = int(last) if last else 0
            count, drop = (
                self.plan[len(self.last_ids) - 1] if len(self.last_ids) <= len(self.plan) else (99, False)
            )
            frames = [_frame(i) for i in range(start, min(start + count, len(EVENTS)))]
            return httpx.Response(
                200, headers={"Content-Type": "text/event-stream"}, stream=_Body(frames, drop)
            )
        return super().handler(request)


def _harness(make_harness: HarnessFactory, fake: Scripted) -> Any:
    credentials = paysdk.BackofficeCredentials(
        MERCHANT, fake.private_key_b64, user=paysdk.BackofficeUser(EMAIL, PASSWORD)
    )
    return make_harness(fake.handler, backoffice=credentials)


def _collect(harness: Any, **kwargs: Any) -> tuple[list[Any], Any]:
    def run(client: Any) -> Any:
        stream = client.backoffice.cardholders.progress("ptn_1", "bat_1", **kwargs)
        if isinstance(client, paysdk.AsyncClient):

            async def consume() -> Any:
                async with stream:
                    return [event async for event in stream], stream

            return consume()
        with stream:
            return [event for event in stream], stream

    found: tuple[list[Any], Any] = harness.call(run)
    return found


def test_upload_sends_the_file_as_multipart_with_the_user_token(make_harness: HarnessFactory) -> None:
    fake = Scripted([])
    harness = _harness(make_harness, fake)
    answer = harness.call(
        lambda c: c.backoffice.cardholders.upload("ptn_1", b"externalId\r\n", filename="holders.csv")
    )
    assert answer.batch_id == "bat_1"
    (request,) = fake.uploads
    assert request.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert b'name="file"; filename="holders.csv"' in fake.bodies[0]
    assert fake._kind(request) == "user"  # the backoffice user token (D184)


def test_a_dropped_stream_resumes_after_its_last_id_and_warns_once(
    make_harness: HarnessFactory, caplog: pytest.LogCaptureFixture
) -> None:
    fake = Scripted([(1, True), (2, True), (5, False)])
    harness = _harness(make_harness, fake)
    with caplog.at_level(logging.INFO, logger="paysdk.stream"):
        events, stream = _collect(harness)
    assert [e.id for e in events] == ["1", "2", "3", "4"]
    assert [type(e) for e in events] == [
        BatchProgressEvent,
        RowFailedEvent,
        BatchProgressEvent,
        BatchDoneEvent,
    ]
    assert fake.last_ids == [None, "1", "3"]
    assert stream.reconnects == 2
    assert harness.sleeps == [1.0, 1.0]  # the server's retry: 1000 (each connection delivered events)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [AFFINITY_WARNING]


def test_last_event_id_resumes_a_later_stream(make_harness: HarnessFactory) -> None:
    fake = Scripted([(9, False)])
    events, _ = _collect(_harness(make_harness, fake), last_event_id="2")
    assert [e.id for e in events] == ["3", "4"]
    assert fake.last_ids == ["2"]


def test_wait_reopens_a_stream_that_ended_before_done_and_answers_the_result(
    make_harness: HarnessFactory,
) -> None:
    fake = Scripted([(2, False), (1, True), (9, False)])  # a clean early end, then a drop
    harness = _harness(make_harness, fake)
    result = harness.call(lambda c: c.backoffice.cardholders.wait("ptn_1", "bat_1"))
    assert (result.status, result.created, result.failed, result.cards_issued) == ("completed", 2, 1, 1)
    assert [(row.row, row.field) for row in result.failed_rows] == [(3, "email")]
    assert fake.last_ids == [None, "2", "3"]
    assert result.reconnects == 2
    assert not result.all_created


def test_arguments_are_checked_before_anything_is_sent(tmp_path: Any) -> None:
    with pytest.raises(paysdk.ValidationError) as no_name:
        upload_operation("ptn_1", iter([b"x"]))  # a stream without a name
    assert no_name.value.field == "filename"
    named = upload_operation("ptn_1", b"x").upload
    assert named is not None
    assert named.parts[0].source.filename == "cardholders.csv"
    zipped = upload_operation("ptn_1", b"PK\x03\x04...").upload
    assert zipped is not None
    assert zipped.parts[0].source.filename == "cardholders.xlsx"
    with pytest.raises(paysdk.ValidationError) as kind:
        upload_operation("ptn_1", b"x", filename="holders.xls")
    assert kind.value.field == "filename"
    with pytest.raises(paysdk.ValidationError) as partner:
        upload_operation("", b"x", filename="a.csv")
    assert partner.value.field == "partner_id"
    with pytest.raises(paysdk.ValidationError) as batch:
        progress_operation("ptn_1", "")
    assert batch.value.field == "batch_id"
    with pytest.raises(paysdk.ValidationError):
        progress_operation("ptn_1", "b", read_timeout=0)
    with pytest.raises(paysdk.ValidationError):
        progress_operation("ptn_1", "b", max_reconnects=-1)
    op = upload_operation("ptn/1", b"x", filename="A.XLSX")
    assert op.path == "/app/partners/ptn%2F1/cardholders/upload"
    assert (op.base, op.auth, op.is_idempotent) == ("cms", "backoffice_user", True)


def test_a_stream_refused_for_a_dead_user_token_logs_in_again_once(make_harness: HarnessFactory) -> None:
    fake = Scripted([(9, False)])
    harness = _harness(make_harness, fake)
    harness.call(lambda c: c.backoffice.cardholders.upload("ptn_1", b"x", filename="holders.csv"))
    fake.revoked |= {token for token, found in fake.access.items() if found[0] == "user"}
    events, stream = _collect(harness)
    assert [e.id for e in events] == ["1", "2", "3", "4"]
    assert fake.calls["POST /app/users/login"] == 2  # the stream's 401 (7104) logged the user in again
    assert stream.reconnects == 0
    assert fake.last_ids == [None]  # the refused connection never reached the script
