"""What an upload argument may be: :class:`FileUpload` and :data:`FileInput` (kept apart from
:mod:`paysdk._uploads`, which ``import paysdk`` does not load until the first upload)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import IO, Any, TypeAlias

__all__ = ["FileInput", "FileUpload"]


class FileUpload:
    """A file to upload, with the name and content type its part carries.

    ``source``: a path (``str`` or ``os.PathLike``; ``~`` is expanded), a binary file object (``open(p,
    "rb")``, ``io.BytesIO``, a pipe...), ``bytes``, or an iterable of ``bytes`` chunks (a generator).
    ``filename`` defaults to the path's (or the file object's) base name, ``content_type`` to a guess
    from the file name, else ``application/octet-stream``. A bare path, file object or ``bytes`` may be
    passed wherever a ``FileUpload`` is accepted.
    """

    __slots__ = ("content_type", "filename", "source")

    def __init__(self, source: Any, *, filename: str | None = None, content_type: str | None = None) -> None:
        self.source = source
        self.filename = filename
        self.content_type = content_type

    def __repr__(self) -> str:
        return f"FileUpload(filename={self.filename!r}, content_type={self.content_type!r})"


#: What an upload argument may be (see :class:`FileUpload`).
FileInput: TypeAlias = (
    "str | os.PathLike[str] | IO[bytes] | bytes | bytearray | memoryview | Iterable[bytes] | FileUpload"
)
