"""Private files on one host: the atomic 0600 write and the exclusive file lock.

Used by the SDK's :class:`~paysdk.FileTokenStore` and the CLI's profile and session files; stdlib only.
Missing parent directories are created with mode 0700 (where the OS has POSIX modes; on Windows the
file lives in the user's profile directory and the modes are ignored).

The lock is chosen once, at import (D400): ``fcntl.flock`` where ``fcntl`` exists (Linux, macOS, the
BSDs), else ``msvcrt.locking`` (Windows), each released by the OS when its holder dies. On a Python with
neither, importing still works; taking a lock raises :class:`FileLockUnavailableError`.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import NoReturn

__all__ = ["LOCK_KIND", "FileLockUnavailableError", "exclusive_lock", "try_lock", "write_private_file"]


class FileLockUnavailableError(OSError):
    """This Python has no file lock (neither ``fcntl`` nor ``msvcrt``)."""


def _optional(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_fcntl = _optional("fcntl")
_msvcrt = _optional("msvcrt") if _fcntl is None else None

#: Which lock this process uses: ``"fcntl"``, ``"msvcrt"`` or ``"none"``.
LOCK_KIND = "fcntl" if _fcntl is not None else "msvcrt" if _msvcrt is not None else "none"

# msvcrt.locking locks bytes from the file's position on. The lock files are empty, and Windows locks
# are mandatory (a locked byte cannot be read through another handle), so the region is one byte far past
# any content: a locked journal stays readable. Locking past the end of a file is allowed on Windows.
_MSVCRT_LOCK_OFFSET = 0x7FFF_FFFE
_MSVCRT_POLL_MAX = 0.05  # the longest pause between two tries of a taken Windows lock (seconds)


def _flock(fd: int, wait: bool) -> bool:
    assert _fcntl is not None
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX if wait else _fcntl.LOCK_EX | _fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _flock_release(fd: int) -> None:
    assert _fcntl is not None
    _fcntl.flock(fd, _fcntl.LOCK_UN)


def _msvcrt_region(fd: int, mode: int) -> None:
    assert _msvcrt is not None
    position = os.lseek(fd, 0, os.SEEK_CUR)
    os.lseek(fd, _MSVCRT_LOCK_OFFSET, os.SEEK_SET)
    try:
        _msvcrt.locking(fd, mode, 1)
    finally:
        os.lseek(fd, position, os.SEEK_SET)  # the caller's reads and writes go on where they were


def _msvcrt_lock(fd: int, wait: bool) -> bool:
    """``LK_NBLCK`` tried until it succeeds (``LK_LOCK`` gives up after 10 s and pauses 1 s per try)."""
    assert _msvcrt is not None
    pause = 0.001
    while True:
        try:
            _msvcrt_region(fd, _msvcrt.LK_NBLCK)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EDEADLOCK):
                raise
            if not wait:
                return False
            time.sleep(pause)
            pause = min(pause * 2, _MSVCRT_POLL_MAX)
        else:
            return True


def _msvcrt_release(fd: int) -> None:
    assert _msvcrt is not None
    _msvcrt_region(fd, _msvcrt.LK_UNLCK)


def _unavailable(*_: object) -> NoReturn:
    raise FileLockUnavailableError(
        "this Python has no file lock (neither fcntl nor msvcrt): use MemoryTokenStore or RedisTokenStore"
    )


_lock: Callable[[int, bool], bool]
_release: Callable[[int], None]
if _fcntl is not None:
    _lock, _release = _flock, _flock_release
elif _msvcrt is not None:
    _lock, _release = _msvcrt_lock, _msvcrt_release
else:
    _lock, _release = _unavailable, _unavailable


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
    """Hold an exclusive lock on ``path`` (created 0600) across threads and processes of this host;
    released when the block ends or the process dies. Not reentrant. Each call opens its own handle, so
    two threads of one process exclude each other as two processes do."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd, True)
        try:
            yield
        finally:
            _release(fd)
    finally:
        os.close(fd)


def try_lock(fd: int) -> bool:
    """Take an exclusive lock on the open file ``fd`` without waiting: ``False`` when another open file
    (another process, or another ``open`` here) holds it. Released when ``fd`` is closed."""
    return _lock(fd, False)
