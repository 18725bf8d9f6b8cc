"""Request bodies other than JSON: multipart file uploads and raw bytes, streamed from their source.

The SDK never reads a whole file into memory. What a body is made of is described as data when the call
starts (:func:`file_source`, :func:`multipart_body`, :func:`raw_body`: pure but for one ``stat``/``tell``
per source, which fixes each part's size and starting point); every attempt then streams it afresh
through an :class:`UploadStream`, the only code here that reads files:

* a **path** (``str``/``os.PathLike``, ``~`` expanded as every path the SDK takes) is opened by each
  attempt and closed at its end: a retry re-opens it;
* a **seekable binary file object** is read from the position it had when the call started, to its end
  as measured then: a retry seeks back to that position (the caller keeps it open and closes it);
* **bytes** are sent from memory (the caller holds them already);
* a **non-seekable stream** (a pipe, a socket file, a generator or any other iterable of ``bytes``) can be
  read once: it is sent once and never retried (:func:`paysdk._pipeline.upload_retry_rule`), and its
  length being unknown, the body goes out with ``Transfer-Encoding: chunked``.

Every other body has a ``Content-Length`` computed from those sizes without reading a byte. A file that
is not the size it had when the call started (it changed meanwhile) stops the upload with
:class:`~paysdk.ValidationError` naming the argument, rather than sending something else than announced.

Why not httpx's own ``files=``: its multipart encoder computes ``Content-Length`` from ``os.fstat`` of
any object with a ``fileno()``, so a pipe is announced as 0 bytes and the request is malformed; it
rewinds every file object to offset 0 rather than where the caller had it; and its async iteration
reads files on the event loop. :class:`UploadStream` reads on a worker thread in async code (one
``asyncio.to_thread`` per :data:`CHUNK_SIZE` chunk), so a slow disk never stalls other tasks.
"""

from __future__ import annotations

import asyncio
import io
import mimetypes
import os
import secrets
import stat
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

import httpx

from paysdk._errors import ValidationError
from paysdk._file_upload import FileInput, FileUpload
from paysdk._paths import user_path

__all__ = [
    "CHUNK_SIZE",
    "FileInput",
    "FilePart",
    "FileSource",
    "FileUpload",
    "UploadBody",
    "UploadStream",
    "file_source",
    "multipart_body",
    "raw_body",
]

#: Bytes read from a file per chunk sent.
CHUNK_SIZE = 256 * 1024
OCTET_STREAM = "application/octet-stream"

SourceKind: TypeAlias = Literal["path", "seekable", "bytes", "once"]
#: How a body can be sent again: re-open its files, rewind them, from memory, or not at all.
Replay: TypeAlias = Literal["reopen", "rewind", "memory", "once"]


class _Once:
    """The state of a source that can be read once (a pipe, a generator)."""

    __slots__ = ("iterator", "stream", "used")

    def __init__(self, stream: Any = None, iterator: Iterator[Any] | None = None) -> None:
        self.stream = stream
        self.iterator = iterator
        self.used = False


@dataclass(frozen=True, slots=True)
class FileSource:
    """Where one part's bytes come from, fixed when the call started (see the module docstring).

    ``size`` is ``None`` only for a ``once`` source (a stream of unknown length). ``argument`` is the
    argument's name, for errors. A byte range of a file (a batch CSV part, D158) is a ``path`` source
    with ``start`` and ``total`` (the whole file's size, checked when it is opened) or a ``seekable`` one
    with ``start``: ``size`` bytes are read from ``start``.
    """

    kind: SourceKind
    argument: str
    filename: str | None
    content_type: str
    size: int | None
    path: Path | None = None
    stream: Any = field(default=None, repr=False)
    start: int = 0
    data: bytes | memoryview | None = field(default=None, repr=False)
    once: _Once | None = field(default=None, repr=False)
    total: int | None = None


@dataclass(frozen=True, slots=True)
class FilePart:
    """One file part of a multipart body: its form field ``name`` and its source (the ``filename`` and
    ``content_type`` are the source's), then the bytes of ``more`` sources, in order."""

    name: str
    source: FileSource
    more: tuple[FileSource, ...] = ()


@dataclass(frozen=True, slots=True)
class UploadBody:
    """A streamed request body: ``multipart/form-data`` (``parts`` and text ``fields``, split by
    ``boundary``) or, when ``raw`` is set, that one source as the whole body."""

    parts: tuple[FilePart, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()
    raw: FileSource | None = None
    boundary: str = ""

    @property
    def content_type(self) -> str:
        """The body's ``Content-Type``."""
        if self.raw is not None:
            return self.raw.content_type
        return f"multipart/form-data; boundary={self.boundary}"

    def segments(self) -> tuple[bytes | FileSource, ...]:
        """The body in order: framing bytes and the sources between them."""
        if self.raw is not None:
            return (self.raw,)
        dash = b"--" + self.boundary.encode("ascii")
        out: list[bytes | FileSource] = []
        for name, value in self.fields:
            disposition = b'Content-Disposition: form-data; name="' + _quote(name) + b'"'
            out.append(dash + b"\r\n" + disposition + b"\r\n\r\n" + value.encode("utf-8") + b"\r\n")
        for part in self.parts:
            source = part.source
            disposition = b'Content-Disposition: form-data; name="' + _quote(part.name) + b'"'
            if source.filename is not None:
                disposition += b'; filename="' + _quote(source.filename) + b'"'
            head = disposition + b"\r\nContent-Type: " + source.content_type.encode("ascii")
            out.extend((dash + b"\r\n" + head + b"\r\n\r\n", source, *part.more, b"\r\n"))
        out.append(dash + b"--\r\n")
        return tuple(out)

    @property
    def content_length(self) -> int | None:
        """The body's length in bytes, ``None`` when a source's length is unknown (sent chunked)."""
        total = 0
        for segment in self.segments():
            if isinstance(segment, bytes):
                total += len(segment)
            elif segment.size is None:
                return None
            else:
                total += segment.size
        return total

    @property
    def replay(self) -> Replay:
        """How the body can be sent again (``once``: it cannot; the call is never retried)."""
        kinds = {source.kind for part in self.parts for source in (part.source, *part.more)}
        if self.raw is not None:
            kinds.add(self.raw.kind)
        if "once" in kinds:
            return "once"
        if "path" in kinds:
            return "reopen"
        return "rewind" if "seekable" in kinds else "memory"


def _quote(text: str) -> bytes:
    """A name or file name inside a quoted ``Content-Disposition`` parameter (WHATWG form encoding:
    UTF-8, with ``"``, CR and LF percent-encoded)."""
    return text.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A").encode("utf-8")


def _content_type(given: str | None, filename: str | None, field_name: str) -> str:
    if given is not None:
        one_line = isinstance(given, str) and "\n" not in given and "\r" not in given
        if not one_line or not given.isascii() or not given.strip():
            raise ValidationError(field_name, "content_type must be a non-empty ASCII string on one line")
        return given.strip()
    if filename:
        guessed, _ = mimetypes.guess_type(filename, strict=False)
        if guessed:
            return guessed
    return OCTET_STREAM


def _filename(given: str | None, fallback: object, field_name: str) -> str | None:
    if given is not None:
        if not isinstance(given, str) or not given:
            raise ValidationError(field_name, "filename must be a non-empty string")
        return given
    if isinstance(fallback, str | os.PathLike):
        name = Path(os.fsdecode(fallback)).name
        return name or None
    return None


def file_source(
    value: object, field_name: str, *, filename: str | None = None, content_type: str | None = None
) -> FileSource:
    """Describe an upload argument (see :class:`FileUpload`); :class:`~paysdk.ValidationError` naming
    ``field_name`` when it is not one, is a missing path or a text-mode file. Called when the call
    starts: a seekable object's current position is where every attempt reads from."""
    if isinstance(value, FileUpload):
        filename = value.filename if filename is None else filename
        content_type = value.content_type if content_type is None else content_type
        value = value.source
    if isinstance(value, str | os.PathLike):
        path = user_path(value)
        try:
            info = path.stat()
        except OSError as exc:
            raise ValidationError(field_name, f"cannot read {path}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(info.st_mode):
            raise ValidationError(field_name, f"{path} is not a regular file")
        name = _filename(filename, path, field_name)
        return FileSource(
            "path", field_name, name, _content_type(content_type, name, field_name), info.st_size, path=path
        )
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value) if isinstance(value, bytearray) else value
        name = _filename(filename, None, field_name)
        size = len(data) if isinstance(data, bytes) else data.nbytes
        return FileSource(
            "bytes", field_name, name, _content_type(content_type, name, field_name), size, data=data
        )
    if isinstance(value, io.TextIOBase):
        raise ValidationError(field_name, "a file object must be opened in binary mode ('rb'), not text mode")
    if callable(getattr(value, "read", None)):
        name = _filename(filename, getattr(value, "name", None), field_name)
        kind_type = _content_type(content_type, name, field_name)
        start_size = _seekable_span(value)
        if start_size is None:
            return FileSource("once", field_name, name, kind_type, None, once=_Once(stream=value))
        start, size = start_size
        return FileSource("seekable", field_name, name, kind_type, size, stream=value, start=start)
    if isinstance(value, str | Mapping) or not isinstance(value, Iterable):
        raise ValidationError(
            field_name, "must be a path, a binary file object, bytes, or an iterable of bytes chunks"
        )
    name = _filename(filename, None, field_name)
    return FileSource(
        "once",
        field_name,
        name,
        _content_type(content_type, name, field_name),
        None,
        once=_Once(iterator=iter(value)),
    )


def _seekable_span(stream: Any) -> tuple[int, int] | None:
    """``(position, bytes from it to the end)`` of a seekable file object, ``None`` when it is not."""
    try:
        if not stream.seekable():
            return None
        start = int(stream.tell())
    except (AttributeError, OSError, ValueError):
        return None
    try:
        info = os.fstat(stream.fileno())
        if stat.S_ISREG(info.st_mode):
            return start, max(info.st_size - start, 0)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass
    try:
        end = int(stream.seek(0, os.SEEK_END))
        stream.seek(start)
    except (AttributeError, OSError, ValueError):
        return None
    return start, max(end - start, 0)


def multipart_body(
    files: Sequence[tuple[str, FileSource]],
    fields: Sequence[tuple[str, str]] = (),
    *,
    boundary: str | None = None,
) -> UploadBody:
    """A ``multipart/form-data`` body: text ``fields`` first, then one part per file."""
    parts = tuple(FilePart(name, source) for name, source in files)
    return UploadBody(
        parts=parts, fields=tuple(fields), boundary=boundary or "paysdk-" + secrets.token_hex(16)
    )


def raw_body(source: FileSource) -> UploadBody:
    """A body that is ``source`` itself (its content type: the source's, ``application/octet-stream``
    by default)."""
    return UploadBody(raw=source)


# --------------------------------------------------------------------------------------------------
# The I/O: one stream per attempt


def _changed(source: FileSource, detail: str) -> ValidationError:
    message = f"{detail} while being uploaded; nothing else was sent in its place"
    return ValidationError(source.argument, message)


_END = object()


class _Reader:
    """Reads one source for one attempt, in :data:`CHUNK_SIZE` chunks (blocking calls)."""

    __slots__ = ("_file", "_left", "_source")

    def __init__(self, source: FileSource) -> None:
        self._source = source
        self._left = source.size
        self._file: Any = None
        if source.kind == "path":
            assert source.path is not None
            try:
                self._file = open(source.path, "rb")  # noqa: SIM115 - closed by close()
            except OSError as exc:
                raise ValidationError(
                    source.argument, f"cannot read {source.path}: {exc.strerror or exc}"
                ) from None
            expected = source.size if source.total is None else source.total
            if os.fstat(self._file.fileno()).st_size != expected:
                self._file.close()
                raise _changed(source, f"{source.path} changed size")
            if source.start:
                self._file.seek(source.start)
        elif source.kind == "seekable":
            source.stream.seek(source.start)
            self._file = source.stream
        elif source.kind == "once":
            assert source.once is not None
            if source.once.used:
                raise ValidationError(
                    source.argument,
                    "a non-seekable stream can be sent only once; pass a path or a seekable file",
                )
            source.once.used = True

    def read(self) -> bytes:
        """The next chunk, ``b""`` at the end."""
        source = self._source
        if source.kind == "once":
            return self._read_once()
        if source.kind == "bytes":
            assert source.data is not None
            assert self._left is not None
            offset = (source.size or 0) - self._left
            chunk = bytes(source.data[offset : offset + CHUNK_SIZE])
            self._left -= len(chunk)
            return chunk
        assert self._left is not None
        if self._left <= 0:
            return b""
        chunk = self._file.read(min(CHUNK_SIZE, self._left))
        if not chunk:
            raise _changed(source, "the file ended early (it was truncated)")
        if not isinstance(chunk, bytes | bytearray):
            raise ValidationError(source.argument, "the file object must return bytes (open it in 'rb' mode)")
        self._left -= len(chunk)
        return bytes(chunk)

    def _read_once(self) -> bytes:
        once = self._source.once
        assert once is not None
        while True:
            if once.iterator is not None:
                chunk = next(once.iterator, _END)
                if chunk is _END:
                    return b""
            else:
                chunk = once.stream.read(CHUNK_SIZE)
                if chunk is None:
                    raise ValidationError(self._source.argument, "a non-blocking stream cannot be uploaded")
                if not chunk:
                    return b""
            if not isinstance(chunk, bytes | bytearray | memoryview):
                return self._not_bytes()
            if len(chunk):  # an empty chunk from a generator is not the end
                return bytes(chunk)

    def _not_bytes(self) -> bytes:
        raise ValidationError(self._source.argument, "the stream must yield bytes")

    def close(self) -> None:
        if self._source.kind == "path" and self._file is not None:
            self._file.close()


class UploadStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """The body of one attempt: framing bytes and each source read chunk by chunk as it is sent.

    Sync iteration reads on the calling thread; async iteration reads each chunk on a worker thread.
    """

    def __init__(self, body: UploadBody) -> None:
        self._segments = body.segments()

    def __iter__(self) -> Iterator[bytes]:
        for segment in self._segments:
            if isinstance(segment, bytes):
                yield segment
                continue
            reader = _Reader(segment)
            try:
                while chunk := reader.read():
                    yield chunk
            finally:
                reader.close()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for segment in self._segments:
            if isinstance(segment, bytes):
                yield segment
                continue
            if segment.kind == "bytes":  # in memory already: no thread needed
                reader = _Reader(segment)
                while chunk := reader.read():
                    yield chunk
                continue
            reader = await asyncio.to_thread(_Reader, segment)
            try:
                while chunk := await asyncio.to_thread(reader.read):
                    yield chunk
            finally:
                reader.close()

    def close(self) -> None:
        """Nothing to release: each source is closed as soon as it has been read."""

    async def aclose(self) -> None:
        """Nothing to release: each source is closed as soon as it has been read."""
