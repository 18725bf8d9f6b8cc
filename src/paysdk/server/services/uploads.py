"""The upload sink (``POST /_sandbox/uploads``): read an upload as a stream, keep only sizes and hashes.

A ``multipart/form-data`` body is parsed while it streams (:func:`paysdk.server.multipart.read_multipart`,
the reader every upload route shares); each part's bytes go into a SHA-256 and a counter, then are
dropped. Any other body is one part, the raw
body. Nothing is stored, so the answer depends only on the bytes received: sending the same upload
again gets the same answer (the SDK may retry it).

Malformed multipart (no boundary, broken framing, a part without ``Content-Disposition`` or a name, a
body that ends before its closing boundary, too many parts or headers) is ``400`` with the D1 body whose
``details`` name ``body`` (or ``Content-Type``) and say what is wrong: never a 500. Size and time are
bounded by the upload route bounds (D110) while the body streams.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

from python_multipart.multipart import parse_options_header

from paysdk.contracts.sandbox import UploadPart
from paysdk.server.errors import APIProblem
from paysdk.server.multipart import read_multipart

__all__ = ["MAX_PARTS", "digest_upload"]

#: The most parts one multipart upload may hold.
MAX_PARTS = 1000
#: The most bytes of headers one part may carry.
MAX_PART_HEADER_BYTES = 16 * 1024


def _bad(message: str, field_name: str = "body") -> APIProblem:
    return APIProblem(400, None, f"Malformed upload: {message}.", [(field_name, message)])


class _Digests:
    """The upload sink's :class:`~paysdk.server.multipart.PartSink`: one :class:`UploadPart` per part, its
    content only hashed."""

    def __init__(self) -> None:
        self.parts: list[UploadPart] = []
        self._head: tuple[str, str | None, str | None] = ("", None, None)
        self._digest = hashlib.sha256()
        self._size = 0

    def begin(self, number: int, name: str, filename: str | None, content_type: str | None) -> None:
        self._head = (name, filename, content_type)
        self._digest = hashlib.sha256()
        self._size = 0

    def data(self, chunk: bytes) -> None:
        self._digest.update(chunk)
        self._size += len(chunk)

    def end(self) -> None:
        name, filename, content_type = self._head
        self.parts.append(
            UploadPart(
                name=name,
                filename=filename,
                content_type=content_type,
                size=self._size,
                sha256=self._digest.hexdigest(),
            )
        )


async def digest_upload(content_type: str | None, chunks: AsyncIterator[bytes]) -> list[UploadPart]:
    """Read the body ``chunks`` of a request with ``content_type``: the parts it holds, each with its
    size and SHA-256 (the module docstring says what is refused)."""
    media, _ = parse_options_header(content_type or "")
    if media.lower() != b"multipart/form-data":
        digest = hashlib.sha256()
        size = 0
        async for chunk in chunks:
            digest.update(chunk)
            size += len(chunk)
        kind = (content_type or "application/octet-stream").strip()
        return [UploadPart(name=None, filename=None, content_type=kind, size=size, sha256=digest.hexdigest())]
    sink = _Digests()
    await read_multipart(
        content_type, chunks, sink, bad=_bad, max_parts=MAX_PARTS, max_header_bytes=MAX_PART_HEADER_BYTES
    )
    return sink.parts
