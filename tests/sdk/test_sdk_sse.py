"""The pure parts of event streams (``paysdk._sse``): the WHATWG wire format, ids and dedupe, the
reconnect policy with the clock and randomness injected, and the request of each connection."""

from __future__ import annotations

import httpx
import pytest

import paysdk
from paysdk._pipeline import ClientConfig, Operation, no_result
from paysdk._sse import (
    DEFAULT_RETRY,
    Block,
    EventDecoder,
    EventTooLarge,
    StreamEnded,
    StreamOperation,
    StreamPolicy,
    StreamProgress,
    UnknownEvent,
    final_error,
    parse_event,
    reconnect_decision,
    stream_request,
)
from paysdk.contracts.sandbox_events import EVENT_TYPES, RequestEvent

CONFIG = ClientConfig(environment=paysdk.Environment.local("http://127.0.0.1:9"))
STREAM = StreamOperation(Operation("GET", "/_sandbox/events", no_result), EVENT_TYPES)
REQUEST = httpx.Request("GET", "http://127.0.0.1:9/_sandbox/events")


def blocks(*chunks: bytes) -> list[Block]:
    decoder = EventDecoder()
    return [block for chunk in chunks for block in decoder.feed(chunk)]


def test_fields_comments_and_line_endings_split_anywhere() -> None:
    text = (
        b"\xef\xbb\xbf: a comment\r\nid: 1\r\nevent: tick\rdata: a\ndata:b\n\n:heartbeat\n\nretry: 1500\n\n"
    )
    whole = blocks(text)
    # The same bytes one at a time (a CRLF split between chunks, a UTF-8 BOM split too).
    byte_by_byte = blocks(*(text[i : i + 1] for i in range(len(text))))
    assert whole == byte_by_byte
    assert whole == [
        Block("tick", "a\nb", "1", None),
        Block("message", None),  # the comment's block: no data, nothing to dispatch
        Block("message", None, None, 1500),
    ]


def test_ids_with_nul_and_retry_that_is_not_digits_are_ignored() -> None:
    assert blocks(b"id: a\x00b\nretry: -5\nretry: 1_0\ndata: x\n\n") == [Block("message", "x", None, None)]
    assert blocks(b"data\n\n") == [Block("message", "", None, None)]  # `data` alone: an empty line of data


def test_an_event_cut_by_the_end_of_the_stream_is_discarded() -> None:
    assert blocks(b"data: complete\n\ndata: cut") == [Block("message", "complete")]


def test_an_oversized_event_ends_the_stream() -> None:
    decoder = EventDecoder(max_event_bytes=10)
    with pytest.raises(EventTooLarge):
        decoder.feed(b"data: " + b"x" * 20)
    with pytest.raises(EventTooLarge):
        EventDecoder(max_event_bytes=10).feed(b"data: 123456\ndata: 123456\n")


def test_progress_keeps_the_last_id_and_drops_repeats() -> None:
    progress = StreamProgress()
    first = progress.accept(Block("tick", "{}", "1"))
    assert first is not None
    assert first.id == "1"
    assert progress.accept(Block("tick", "{}", "1")) is None  # seen: a replay, dropped
    # An event without its own id carries the stream's last id and is never taken for a repeat.
    unnamed = progress.accept(Block("tick", "{}", None))
    assert unnamed is not None
    assert unnamed.id == "1"
    assert progress.accept(Block("message", None, "5", 2500)) is None  # id and retry, nothing to dispatch
    assert (progress.last_event_id, progress.retry) == ("5", 2.5)


def test_typed_and_unknown_events() -> None:
    data = '{"method": "GET", "path": "/x", "statusCode": 404, "at": "2026-01-01T00:00:00Z", "extra": 1}'
    event = parse_event(STREAM, Block("request", data, "9"))
    assert isinstance(event, RequestEvent)
    assert (event.data.status_code, event.id) == (404, "9")
    unknown = parse_event(STREAM, Block("brand-new", "not json", "10"))
    assert isinstance(unknown, UnknownEvent)
    assert (unknown.event, unknown.data) == ("brand-new", "not json")


def test_each_connection_asks_for_an_event_stream_after_the_last_id_without_a_read_timeout() -> None:
    progress = StreamProgress()
    first = stream_request(STREAM, CONFIG, progress)
    assert first.headers["accept"] == "text/event-stream"
    assert "last-event-id" not in first.headers
    timeout = first.extensions["timeout"]
    assert timeout["read"] is None
    assert timeout["connect"] == CONFIG.timeout.connect
    progress.accept(Block("request", "{}", "41"))
    progress.reconnects = 1
    again = stream_request(StreamOperation(STREAM.op, {}, read_timeout=2.0), CONFIG, progress)
    assert again.headers["last-event-id"] == "41"
    assert again.extensions["timeout"]["read"] == 2.0


def _decide(outcome: object, progress: StreamProgress, **policy: int) -> tuple[bool, float]:
    decision = reconnect_decision(
        outcome,  # type: ignore[arg-type]
        progress,
        CONFIG,
        StreamPolicy(**policy),
        rng=lambda: 0.0,
        now=lambda: 0.0,
    )
    return decision.reconnect, decision.delay


def test_a_clean_end_and_a_4xx_are_final() -> None:
    opened = StreamProgress(opened=True)
    assert _decide(StreamEnded(), opened) == (False, 0.0)
    assert _decide(httpx.Response(404, request=REQUEST), opened) == (False, 0.0)
    error = final_error(
        STREAM, httpx.Response(404, json={"ownCode": None}, request=REQUEST), attempts=2, secrets=()
    )
    assert isinstance(error, paysdk.NotFoundError)
    odd = final_error(STREAM, httpx.Response(200, text="{}", request=REQUEST), attempts=1, secrets=())
    assert isinstance(odd, paysdk.UnexpectedResponseError)


def test_a_drop_waits_the_servers_retry_exactly_then_backs_off() -> None:
    progress = StreamProgress(opened=True, retry=0.25)
    drop = httpx.RemoteProtocolError("incomplete chunked read", request=REQUEST)
    assert _decide(drop, progress) == (True, 0.25)
    progress.failures = 3
    assert _decide(drop, progress) == (True, 2.0)  # 0.25 * 2**3, no jitter drawn
    progress.failures = 10
    assert _decide(drop, progress)[0] is False  # max_reconnects (10) consecutive failures
    assert _decide(drop, StreamProgress(opened=True)) == (True, DEFAULT_RETRY)
    assert _decide(drop, StreamProgress(opened=True, failures=20, retry=1.0), max_reconnects=50) == (
        True,
        30.0,
    )


def test_retry_after_is_honoured_and_a_stream_never_opened_uses_max_retries() -> None:
    busy = httpx.Response(503, headers={"Retry-After": "7"}, request=REQUEST)
    assert _decide(busy, StreamProgress(opened=True)) == (True, 7.0)
    refused = httpx.ConnectError("refused", request=REQUEST)
    assert _decide(refused, StreamProgress(failures=1))[0] is True
    assert _decide(refused, StreamProgress(failures=CONFIG.max_retries))[0] is False
    assert _decide(EventTooLarge("big", request=REQUEST), StreamProgress(opened=True))[0] is False
