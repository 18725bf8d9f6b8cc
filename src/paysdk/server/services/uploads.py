"""The upload sink (``POST /_sandbox/uploads``): read an upload as a stream, keep only sizes and hashes.

A ``multipart/form-data`` body is parsed while it streams by python-multipart's ``MultipartParser`` (the
parser FastAPI itself uses; Starlette's form reading would spool each file to a temporary file first);
each part's bytes go into a SHA-256 and a counter, then are dropped. Any other body is one part, the raw
body. Nothing is stored, so the answer depends only on the bytes received: sending the same upload
again gets the same answer (the SDK may retry it).

Malformed multipart (no boundary, broken framing, a part without ``Content-Disposition`` or a name, a
body that ends before its closing boundary, too many parts or headers) is ``400`` with the D1 body whose
``details`` name ``body`` (or ``Content-Type``) and say what is wrong: never a 500. Size and time are
bounded by the upload route bounds (D110) while the body streams.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from paysdk.contracts.sandbox import UploadPart
from paysdk.server.errors import APIProblem

__all__ = ["MAX_PARTS", "digest_upload"]

#: The most parts one multipart upload may hold.
MAX_PARTS = 1000
#: The most bytes of headers one part may carry.
MAX_PART_HEADER_BYTES = 16 * 1024

# python-multipart logs a warning for each malformed body before raising: the 400 says it already.
logging.getLogger("python_multipart.multipart").setLevel(logging.ERROR)


def _bad(message: str, field_name: str = "body") -> APIProblem:
    return APIProblem(400, None, f"Malformed upload: {message}.", [(field_name, message)])


@dataclass(slots=True)
class _Part:
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    name: bytes = b""
    value: bytes = b""
    header_bytes: int = 0
    size: int = 0
    digest: hashlib._Hash = field(default_factory=hashlib.sha256)
    disposition: dict[bytes, bytes] | None = None
    content_type: str | None = None


class _MultipartDigest:
    """The parser's callbacks: one :class:`UploadPart` per part, the content only hashed."""

    def __init__(self) -> None:
        self.parts: list[UploadPart] = []
        self.current: _Part | None = None
        self.ended = False
        self.failure: APIProblem | None = None

    def _fail(self, problem: APIProblem) -> None:
        if self.failure is None:
            self.failure = problem
        raise problem

    def on_part_begin(self) -> None:
        if len(self.parts) >= MAX_PARTS:
            self._fail(_bad(f"holds more than {MAX_PARTS} parts"))
        self.current = _Part()

    def _part(self) -> _Part:
        assert self.current is not None
        return self.current

    def _count_header(self, size: int) -> None:
        part = self._part()
        part.header_bytes += size
        if part.header_bytes > MAX_PART_HEADER_BYTES:
            self._fail(
                _bad(f"part {len(self.parts) + 1} has more than {MAX_PART_HEADER_BYTES} bytes of headers")
            )

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self._part().name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self._part().value += data[start:end]

    def on_header_end(self) -> None:
        part = self._part()
        part.headers.append((part.name.strip().lower(), part.value.strip()))
        part.name = part.value = b""

    def on_headers_finished(self) -> None:
        part = self._part()
        number = len(self.parts) + 1
        for name, value in part.headers:
            if name == b"content-disposition":
                kind, params = parse_options_header(value)
                if kind.lower() != b"form-data":
                    self._fail(_bad(f"part {number}'s Content-Disposition is not form-data"))
                part.disposition = params
            elif name == b"content-type":
                part.content_type = value.decode("latin-1")
        if part.disposition is None:
            self._fail(_bad(f"part {number} has no Content-Disposition header"))
        elif not part.disposition.get(b"name"):
            self._fail(_bad(f"part {number}'s Content-Disposition has no name"))

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        part = self._part()
        part.digest.update(data[start:end])
        part.size += end - start

    def on_part_end(self) -> None:
        part = self._part()
        params = part.disposition or {}
        filename = params.get(b"filename")
        self.parts.append(
            UploadPart(
                name=_text(params.get(b"name", b"")),
                filename=None if filename is None else _text(filename),
                content_type=part.content_type,
                size=part.size,
                sha256=part.digest.hexdigest(),
            )
        )
        self.current = None

    def on_end(self) -> None:
        self.ended = True


def _text(value: bytes) -> str:
    """A name from a multipart header: UTF-8 as browsers send it, latin-1 as a last resort."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


async def digest_upload(content_type: str | None, chunks: AsyncIterator[bytes]) -> list[UploadPart]:
    """Read the body ``chunks`` of a request with ``content_type``: the parts it holds, each with its
    size and SHA-256 (the module docstring says what is refused)."""
    media, params = parse_options_header(content_type or "")
    if media.lower() != b"multipart/form-data":
        digest = hashlib.sha256()
        size = 0
        async for chunk in chunks:
            digest.update(chunk)
            size += len(chunk)
        kind = (content_type or "application/octet-stream").strip()
        return [UploadPart(name=None, filename=None, content_type=kind, size=size, sha256=digest.hexdigest())]
    boundary = params.get(b"boundary")
    if not boundary:
        raise _bad("multipart/form-data without a boundary parameter", "Content-Type")
    state = _MultipartDigest()
    try:
        parser = MultipartParser(
            boundary,
            {
                "on_part_begin": state.on_part_begin,
                "on_part_data": state.on_part_data,
                "on_part_end": state.on_part_end,
                "on_header_field": state.on_header_field,
                "on_header_value": state.on_header_value,
                "on_header_end": state.on_header_end,
                "on_headers_finished": state.on_headers_finished,
                "on_end": state.on_end,
            },
        )
    except (FormParserError, ValueError) as exc:
        raise _bad(f"unusable boundary ({exc})", "Content-Type") from None
    async for chunk in chunks:
        if state.ended:
            continue  # the epilogue after the closing boundary is ignored (RFC 2046)
        try:
            parser.write(chunk)
        except APIProblem:
            raise
        except (FormParserError, ValueError) as exc:
            raise state.failure or _bad(f"broken multipart framing ({exc})") from None
    if not state.ended:
        raise _bad("the body ends before the closing boundary of its multipart framing")
    if not state.parts:
        raise _bad("the multipart body holds no part")
    return state.parts
