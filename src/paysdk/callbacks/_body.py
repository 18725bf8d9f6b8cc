"""Reading a callback body with a cap while it streams, after the header check (D88).

A receiver that reads the whole body before it checks the header lets anyone make it hold a gigabyte.
:func:`read_verified_body` (Starlette, FastAPI) checks the header first and refuses a declared
``Content-Length`` over the cap unread; :func:`read_body` reads any byte iterator, sync or async, and
stops at the first chunk that crosses the cap.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, Awaitable, Iterable, Mapping
from typing import Protocol, overload

from paysdk._errors import CallbackBodyTooLargeError
from paysdk.callbacks._payload import MAX_BODY_BYTES
from paysdk.callbacks._receiver import CallbackOutcome, CallbackReceiver, CallbackResult

__all__ = ["StreamingRequest", "read_body", "read_verified_body"]

logger = logging.getLogger("paysdk.callbacks")


class _Capped:
    """The chunks read so far, refused past ``limit`` bytes (the logic of both flavours of read_body)."""

    __slots__ = ("_chunks", "_limit", "_size")

    def __init__(self, limit: int, content_length: int | str | None) -> None:
        if limit < 0:
            raise ValueError("limit: must be a number of bytes, 0 or more")
        self._limit = limit
        self._size = 0
        self._chunks: list[bytes] = []
        declared = _declared(content_length)
        if declared is not None and declared > limit:
            raise _too_large(limit)

    def add(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size > self._limit:
            self._chunks.clear()
            raise _too_large(self._limit)
        self._chunks.append(bytes(chunk))

    def body(self) -> bytes:
        return b"".join(self._chunks)


def _declared(content_length: int | str | None) -> int | None:
    if content_length is None:
        return None
    try:
        return int(content_length)
    except ValueError:
        return None  # not a length: the stream decides


def _too_large(limit: int) -> CallbackBodyTooLargeError:
    return CallbackBodyTooLargeError(f"body: larger than {limit} bytes")


@overload
def read_body(
    chunks: AsyncIterable[bytes], *, limit: int = ..., content_length: int | str | None = ...
) -> Awaitable[bytes]: ...
@overload
def read_body(
    chunks: Iterable[bytes], *, limit: int = ..., content_length: int | str | None = ...
) -> bytes: ...
def read_body(
    chunks: Iterable[bytes] | AsyncIterable[bytes],
    *,
    limit: int = MAX_BODY_BYTES,
    content_length: int | str | None = None,
) -> bytes | Awaitable[bytes]:
    """Join the chunks of a body, refusing it once it is larger than ``limit`` bytes.

    ``chunks``: a sync iterable (``bytes`` comes back) or an async one (``await read_body(...)``), e.g.
    ``request.stream()`` of Starlette or ``request.iter_chunked(4096)`` of aiohttp.
    ``content_length``: the request's ``Content-Length`` header, if any; above ``limit`` the body is
    refused before a chunk is read. Raises :class:`~paysdk.CallbackBodyTooLargeError` (answer ``413``):
    reading stops at the chunk that crossed the limit, so at most ``limit`` plus one chunk is held.
    """
    capped = _Capped(limit, content_length)
    if isinstance(chunks, AsyncIterable):
        stream = chunks

        async def collect() -> bytes:
            async for chunk in stream:
                capped.add(chunk)
            return capped.body()

        return collect()
    for chunk in chunks:
        capped.add(chunk)
    return capped.body()


class StreamingRequest(Protocol):
    """What :func:`read_verified_body` needs of a request: Starlette's (FastAPI's) ``Request`` has it."""

    @property
    def headers(self) -> Mapping[str, str]:
        """The request headers."""
        ...

    def stream(self) -> AsyncIterable[bytes]:
        """The body, chunk by chunk."""
        ...


async def read_verified_body(
    request: StreamingRequest, receiver: CallbackReceiver, *, limit: int = MAX_BODY_BYTES
) -> bytes | CallbackResult:
    """The body of a callback request, read only once its header checked out, at most ``limit`` bytes.

    Returns the body (then call ``receiver.ahandle(request.headers, body, handler)``), or a
    :class:`~paysdk.callbacks.CallbackResult` to answer at once: ``401`` (bad or missing header; nothing
    of the body was read) or ``413`` (``Content-Length`` or the stream over ``limit``). ``request`` is
    a Starlette or FastAPI ``Request``, or anything with ``headers`` and an async ``stream()``.
    """
    refused = receiver.verify(request.headers)
    if refused is not None:
        return refused
    declared = request.headers.get("content-length")
    try:
        return await read_body(request.stream(), limit=limit, content_length=declared)
    except CallbackBodyTooLargeError as exc:
        logger.warning("callback refused: %s", exc)
        return CallbackResult(CallbackOutcome.TOO_LARGE, error=exc)
