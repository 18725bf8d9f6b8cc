"""One streaming ``multipart/form-data`` reader for every upload route of the reference server.

The body is parsed while it streams by python-multipart's ``MultipartParser`` (the parser FastAPI itself
uses; Starlette's form reading would spool each file to a temporary file first). Each part is handed to a
:class:`PartSink` as it arrives (its name, filename and content type, then its bytes), so a route decides
what to keep: the upload sink (:mod:`paysdk.server.services.uploads`) only hashes; the routes that take
one file (batch charges, cardholder files, reconciliation) call :func:`receive_file_part`, which keeps
the part named ``file`` in a spooled temporary file with its name, SHA-256 and size.

Malformed framing (no boundary, broken framing, a part without a ``form-data`` ``Content-Disposition``
or a name, a body that ends before its closing boundary, too many parts, too many header bytes) is the
route's ``400`` (``bad(message, field)``, the field ``body`` or ``Content-Type``): never a 500. The
epilogue after the closing boundary is ignored (RFC 2046).
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import IO, Protocol

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from paysdk.server.errors import APIProblem

__all__ = ["Bad", "PartSink", "ReceivedFile", "read_multipart", "receive_file_part", "text"]

#: ``bad(message, field)``: the route's ``400`` for malformed multipart.
Bad = Callable[[str, str], APIProblem]

# python-multipart logs a warning for each malformed body before raising: the 400 says it already.
logging.getLogger("python_multipart.multipart").setLevel(logging.ERROR)


class PartSink(Protocol):
    """What a route does with the parts of a multipart body, in order."""

    def begin(self, number: int, name: str, filename: str | None, content_type: str | None) -> None:
        """Part ``number`` (1-based) starts; raising an :class:`APIProblem` refuses the body."""

    def data(self, chunk: bytes) -> None:
        """Bytes of the current part."""

    def end(self) -> None:
        """The current part is complete."""


def text(value: bytes) -> str:
    """A name from a multipart header: UTF-8 as browsers send it, latin-1 as a last resort."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


class _Reader:
    """The parser's callbacks: headers gathered and checked, bounds kept, each part given to the sink."""

    def __init__(self, sink: PartSink, bad: Bad, max_parts: int, max_header_bytes: int) -> None:
        self.sink = sink
        self.bad = bad
        self.max_parts = max_parts
        self.max_header_bytes = max_header_bytes
        self.parts = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.name = b""
        self.value = b""
        self.header_bytes = 0
        self.ended = False
        self.failure: APIProblem | None = None

    def _fail(self, problem: APIProblem) -> None:
        # python-multipart may wrap what a callback raises: the problem is kept to be raised as it is.
        if self.failure is None:
            self.failure = problem
        raise problem

    def on_part_begin(self) -> None:
        if self.parts >= self.max_parts:
            self._fail(self.bad(f"holds more than {self.max_parts} parts", "body"))
        self.parts += 1
        self.headers, self.name, self.value, self.header_bytes = [], b"", b"", 0

    def _count_header(self, size: int) -> None:
        self.header_bytes += size
        if self.header_bytes > self.max_header_bytes:
            self._fail(
                self.bad(f"part {self.parts} has more than {self.max_header_bytes} bytes of headers", "body")
            )

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self.name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self.value += data[start:end]

    def on_header_end(self) -> None:
        self.headers.append((self.name.strip().lower(), self.value.strip()))
        self.name = self.value = b""

    def on_headers_finished(self) -> None:
        disposition: dict[bytes, bytes] | None = None
        content_type: str | None = None
        for name, value in self.headers:
            if name == b"content-disposition":
                kind, params = parse_options_header(value)
                if kind.lower() != b"form-data":
                    self._fail(self.bad(f"part {self.parts}'s Content-Disposition is not form-data", "body"))
                disposition = params
            elif name == b"content-type":
                content_type = value.decode("latin-1")
        if disposition is None:
            self._fail(self.bad(f"part {self.parts} has no Content-Disposition header", "body"))
            return
        if not disposition.get(b"name"):
            self._fail(self.bad(f"part {self.parts}'s Content-Disposition has no name", "body"))
        filename = disposition.get(b"filename")
        try:
            self.sink.begin(
                self.parts,
                text(disposition[b"name"]),
                None if filename is None else text(filename),
                content_type,
            )
        except APIProblem as problem:
            self._fail(problem)

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        self.sink.data(data[start:end])

    def on_part_end(self) -> None:
        self.sink.end()

    def on_end(self) -> None:
        self.ended = True


async def read_multipart(
    content_type: str | None,
    chunks: AsyncIterator[bytes],
    sink: PartSink,
    *,
    bad: Bad,
    max_parts: int,
    max_header_bytes: int = 16 * 1024,
) -> int:
    """Read the multipart body ``chunks`` (``content_type`` carries its boundary), handing each part to
    ``sink``; returns how many parts it held (``bad(...)`` raised for malformed framing, see the module
    docstring, and for a body without parts)."""
    _, params = parse_options_header(content_type or "")
    boundary = params.get(b"boundary")
    if not boundary:
        raise bad("multipart/form-data without a boundary parameter", "Content-Type")
    reader = _Reader(sink, bad, max_parts, max_header_bytes)
    try:
        parser = MultipartParser(
            boundary,
            {
                "on_part_begin": reader.on_part_begin,
                "on_part_data": reader.on_part_data,
                "on_part_end": reader.on_part_end,
                "on_header_field": reader.on_header_field,
                "on_header_value": reader.on_header_value,
                "on_header_end": reader.on_header_end,
                "on_headers_finished": reader.on_headers_finished,
                "on_end": reader.on_end,
            },
        )
    except (FormParserError, ValueError) as exc:
        raise bad(f"unusable boundary ({exc})", "Content-Type") from None
    async for chunk in chunks:
        if reader.ended:
            continue  # the epilogue after the closing boundary is ignored (RFC 2046)
        try:
            parser.write(chunk)
        except APIProblem:
            raise
        except (FormParserError, ValueError) as exc:
            raise reader.failure or bad(f"broken multipart framing ({exc})", "body") from None
    if not reader.ended:
        raise bad("the body ends before the closing boundary of its multipart framing", "body")
    if not reader.parts:
        raise bad("the multipart body holds no part", "body")
    return reader.parts


# ------------------------------------------------------------------------------ one file part


@dataclass
class ReceivedFile:
    """The part ``file`` of an upload: its bytes (a spool positioned at 0), name, SHA-256 and size. The
    receiver closes it (:meth:`close`)."""

    spool: IO[bytes]
    file_name: str
    sha256: str
    size: int

    def close(self) -> None:
        """Drop the spooled bytes."""
        self.spool.close()


class _FilePart:
    """The sink of :func:`receive_file_part`: the part named ``file`` is spooled and hashed; other parts
    are dropped; a second ``file`` part is refused."""

    def __init__(self, spool: IO[bytes], problem: Callable[[str], APIProblem]) -> None:
        self.spool = spool
        self.problem = problem
        self.found = False
        self.current = False
        self.file_name = ""
        self.hash = hashlib.sha256()
        self.size = 0

    def begin(self, number: int, name: str, filename: str | None, content_type: str | None) -> None:
        self.current = name == "file"
        if self.current:
            if self.found:
                raise self.problem("appears twice: the multipart body holds two parts named file")
            self.found = True
            self.file_name = filename or ""

    def data(self, chunk: bytes) -> None:
        if self.current:
            self.spool.write(chunk)
            self.hash.update(chunk)
            self.size += len(chunk)

    def end(self) -> None:
        self.current = False


async def receive_file_part(
    content_type: str | None,
    chunks: AsyncIterator[bytes],
    *,
    title: str,
    max_parts: int = 16,
    max_header_bytes: int = 16 * 1024,
    spool_bytes: int = 1 << 20,
) -> ReceivedFile:
    """The part named ``file`` of the multipart body ``chunks``, spooled (in memory up to ``spool_bytes``,
    then on disk) and hashed while it streams; the caller closes it. ``400`` with ``ownCode`` null and the
    message ``"<title>: ..."`` naming ``file`` when the body is not ``multipart/form-data`` (it is read to
    its end first, so the connection stays usable), is malformed, holds no ``file`` part or two of them;
    naming ``Content-Type`` for a missing or unusable boundary."""

    def problem(message: str, field: str = "file") -> APIProblem:
        text = f"{field} {message}" if field == "file" else message
        return APIProblem(400, None, f"{title}: {text}.", [(field, message)])

    def bad(message: str, field: str) -> APIProblem:
        if field == "Content-Type":
            return problem(message, field)
        return problem(f"is in a malformed multipart body: {message}")

    media, _ = parse_options_header(content_type or "")
    if media.lower() != b"multipart/form-data":
        async for _chunk in chunks:  # read (and drop) the body so the connection stays usable
            pass
        raise problem("must be sent as multipart/form-data, in a part named file")
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=spool_bytes)  # noqa: SIM115 - the caller closes
    try:
        sink = _FilePart(spool, problem)
        await read_multipart(
            content_type, chunks, sink, bad=bad, max_parts=max_parts, max_header_bytes=max_header_bytes
        )
        if not sink.found:
            raise problem("is missing: send the file in a multipart part named file")
        spool.seek(0)
        return ReceivedFile(spool, sink.file_name, sink.hash.hexdigest(), sink.size)
    except BaseException:
        spool.close()
        raise
