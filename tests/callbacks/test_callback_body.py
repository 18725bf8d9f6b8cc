"""read_body: one function over sync and async chunk iterables, refusing past the cap (D88)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from paysdk import CallbackBodyTooLargeError, CallbackPayloadError
from paysdk.callbacks import MAX_BODY_BYTES, read_body


class Endless:
    """Endless chunks, sync and async, counting how many were pulled."""

    def __init__(self, size: int = 1000) -> None:
        self.size = size
        self.pulled = 0

    def __iter__(self) -> Iterator[bytes]:
        while True:
            self.pulled += 1
            yield b"x" * self.size

    async def chunks(self) -> AsyncIterator[bytes]:
        for chunk in self:
            yield chunk


def test_sync_chunks_are_joined() -> None:
    assert read_body([b"ab", b"", b"cd"]) == b"abcd"
    assert read_body(iter([b"x" * 10]), limit=10) == b"x" * 10


async def test_async_chunks_are_joined() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"ab"
        yield b"cd"

    assert await read_body(chunks(), limit=4) == b"abcd"


def test_sync_stream_is_cut_at_the_cap() -> None:
    endless = Endless()
    with pytest.raises(CallbackBodyTooLargeError, match=f"^body: larger than {MAX_BODY_BYTES} bytes"):
        read_body(endless)
    assert endless.pulled == MAX_BODY_BYTES // 1000 + 1


async def test_async_stream_is_cut_at_the_cap() -> None:
    endless = Endless()
    with pytest.raises(CallbackPayloadError, match="larger than 5000 bytes"):  # a payload error: 4xx
        await read_body(endless.chunks(), limit=5000)
    assert endless.pulled == 6


@pytest.mark.parametrize("length", [MAX_BODY_BYTES + 1, str(1 << 40)])
def test_a_declared_length_over_the_cap_is_refused_unread(length: int | str) -> None:
    endless = Endless()
    with pytest.raises(CallbackBodyTooLargeError):
        read_body(endless, content_length=length)
    assert endless.pulled == 0


def test_a_declared_length_is_not_trusted_when_small_or_garbled() -> None:
    with pytest.raises(CallbackBodyTooLargeError):
        read_body(Endless(), limit=5000, content_length=10)  # the stream decides
    assert read_body([b"abc"], content_length="abc") == b"abc"


def test_a_negative_limit_is_a_usage_error() -> None:
    with pytest.raises(ValueError, match="limit"):
        read_body([b""], limit=-1)
