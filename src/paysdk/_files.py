"""Private files on one host: the atomic 0600 write and the exclusive ``fcntl`` lock.

Used by the SDK's :class:`~paysdk.FileTokenStore` and the CLI's profile and session files; stdlib only.
Missing parent directories are created with mode 0700.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["exclusive_lock", "try_lock", "write_private_file"]


def write_private_file(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, readable by the owner only (0600).

    A temporary file in the same directory (``mkstemp`` creates it 0600) is written, ``fsync``-ed (durable
    before it replaces the old file: rotated tokens must not be lost) and renamed over ``path``, so a
    reader sees the old file or the new one, never half a file. On any failure the temporary file is
    removed and ``path`` is unchanged.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``fcntl.flock`` on ``path`` (created 0600) across threads and processes of this
    host; released when the block ends or the process dies. Not reentrant."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def try_lock(fd: int) -> bool:
    """Take an exclusive ``fcntl.flock`` on the open file ``fd`` without waiting: ``False`` when another
    open file (another process, or another ``open`` here) holds it. Released when ``fd`` is closed."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
