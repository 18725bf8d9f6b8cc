"""Reading a callback body with a cap while it streams, after the header check (D88).

A receiver that reads the whole body before it checks the header lets anyone make it hold a gigabyte.
:func:`read_verified_body` (Starlette, FastAPI) checks the header first and refuses a declared
``Content-Length`` over the cap unread; :func:`read_body` reads any byte iterator, sync or async, and
stops at the first chunk that crosses the cap. :func:`read_http1_body` frames the body of a request read
off a raw HTTP/1.1 connection (the standard library's ``http.server``, as ``paysdk callbacks listen`` and
the pytest plugin's inbox use): ``Content-Length`` or ``Transfer-Encoding: chunked``, both together
refused (RFC 9112 section 6.1; D341).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, Awaitable, Iterable, Mapping
from typing import Protocol, overload

from paysdk._errors import CallbackBodyTooLargeError, CallbackPayloadError
from paysdk.callbacks._payload import MAX_BODY_BYTES
from paysdk.callbacks._receiver import CallbackOutcome, CallbackReceiver, CallbackResult

__all__ = ["StreamingRequest", "read_body", "read_http1_body", "read_verified_body"]

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

    def check(self, more: int) -> None:
        """Refuse now when ``more`` bytes would pass the limit (before they are read)."""
        if self._size + more > self._limit:
            self._chunks.clear()
            raise _too_large(self._limit)

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


class ByteReader(Protocol):
    """What :func:`read_http1_body` reads from: a buffered binary stream (``handler.rfile``)."""

    def read(self, size: int, /) -> bytes:
        """Up to ``size`` bytes (fewer only at the end of the stream)."""
        ...

    def readline(self, size: int, /) -> bytes:
        """One line, at most ``size`` bytes."""
        ...


#: The longest chunk-size line (with its extensions) and trailer line :func:`read_http1_body` reads.
_MAX_LINE = 1024
#: The most trailer lines after the last chunk.
_MAX_TRAILERS = 32


def _framing_error(problem: str) -> CallbackPayloadError:
    return CallbackPayloadError(f"body: {problem}")


def _line(rfile: ByteReader, what: str) -> bytes:
    line = rfile.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise _framing_error(f"{what} longer than {_MAX_LINE} bytes")
    if not line.endswith(b"\r\n"):
        raise _framing_error(f"{what} not ended by CRLF (or the body ended early)")
    return line[:-2]


def _exactly(rfile: ByteReader, size: int) -> bytes:
    data = rfile.read(size)
    if len(data) != size:
        raise _framing_error(f"ended after {len(data)} of {size} bytes")
    return data


def _chunked(rfile: ByteReader, limit: int) -> bytes:
    capped = _Capped(limit, None)
    while True:
        text = _line(rfile, "a chunk-size line").split(b";", 1)[0].strip()
        if not text or len(text) > 16 or not all(c in b"0123456789abcdefABCDEF" for c in text):
            raise _framing_error("a chunk size that is not a hexadecimal number")
        size = int(text, 16)
        if size == 0:
            break
        capped.check(size)  # a chunk over the limit is refused unread
        capped.add(_exactly(rfile, size))
        if rfile.read(2) != b"\r\n":
            raise _framing_error("a chunk not followed by CRLF")
    for _ in range(_MAX_TRAILERS + 1):
        if not _line(rfile, "a trailer line"):
            return capped.body()
    raise _framing_error(f"more than {_MAX_TRAILERS} trailer lines")


def read_http1_body(
    headers: Iterable[tuple[str, str]], rfile: ByteReader, *, limit: int = MAX_BODY_BYTES
) -> bytes:
    """The body of an HTTP/1.1 request whose head was read off ``rfile``, at most ``limit`` bytes.

    ``headers``: every header line as a ``(name, value)`` pair, repeats included (``handler.headers.items()``
    of :mod:`http.server`). The body is framed by ``Transfer-Encoding: chunked`` (chunk extensions and
    trailers read and dropped) or ``Content-Length``, neither meaning an empty body. Raises
    :class:`~paysdk.CallbackBodyTooLargeError` (answer ``413``) when the declared length or the chunks
    pass ``limit`` (a declared length or chunk over it is not read), and
    :class:`~paysdk.CallbackPayloadError` (answer ``400``) for framing that cannot be trusted: both
    headers at once (RFC 9112 section 6.1: a request smuggled behind a proxy that reads the other one),
    a transfer coding other than ``chunked``, several differing or non-numeric lengths, a malformed chunk
    or a body that ends early. After either error the connection's framing is lost: close it.
    """
    lengths: list[str] = []
    codings: list[str] = []
    for name, value in headers:
        key = name.strip().lower()
        if key == "content-length":
            lengths.extend(part.strip() for part in value.split(","))
        elif key == "transfer-encoding":
            codings.extend(part.strip().lower() for part in value.split(",") if part.strip())
    if lengths and codings:
        raise _framing_error("Content-Length and Transfer-Encoding together are refused (RFC 9112 6.1)")
    if codings:
        if codings != ["chunked"]:
            raise _framing_error("the only transfer coding accepted is chunked")
        return _chunked(rfile, limit)
    if not lengths:
        return b""
    if len(set(lengths)) > 1 or not lengths[0].isdigit() or not lengths[0].isascii():
        raise _framing_error("Content-Length is not one whole number")
    length = int(lengths[0])
    if length > limit:
        raise _too_large(limit)
    return _exactly(rfile, length)
