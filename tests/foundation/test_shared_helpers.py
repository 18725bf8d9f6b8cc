"""One copy each of the helpers SDK, server and CLI share: the mask and the sensitive words
(``paysdk._redact``), the private-file write and lock (``paysdk._files``) and the Redis lock release
(``paysdk._redis_lock``); and they do what their callers rely on."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from paysdk import _files, _redact
from paysdk._pipeline import redact_headers
from paysdk._secret import Secret
from paysdk.server.asgi.request_log import mask_query
from paysdk_cli._output import mask

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize(
    ("needle", "home"),
    [
        ('"****"', "paysdk/_redact.py"),
        ("redis.call('GET'", "paysdk/_redis_lock.py"),
        ("fcntl.flock(", "paysdk/_files.py"),
        ("tempfile.mkstemp(", "paysdk/_files.py"),
        ('"passw"', "paysdk/_redact.py"),
    ],
)
def test_each_shared_helper_is_written_once(needle: str, home: str) -> None:
    holders = sorted(
        path.relative_to(SRC).as_posix()
        for path in SRC.rglob("*.py")
        if needle in path.read_text(encoding="utf-8")
    )
    assert holders == [home]


def test_sdk_server_and_cli_mask_alike() -> None:
    assert repr(Secret("s3cret")) == f"Secret('{_redact.MASK}')"
    assert mask({"privateKey": "k"}, ["privateKey"]) == {"privateKey": _redact.MASK}
    for word in _redact.SENSITIVE_WORDS:
        header = f"X-My-{word.title()}-Value"
        assert redact_headers({header: "v", "Accept": "a"}) == {header.lower(): _redact.MASK, "accept": "a"}
        assert mask_query(f"/p?my{word}=v&page=2") == f"/p?my{word}={_redact.MASK}&page=2"
    for header in _redact.SENSITIVE_HEADERS:
        assert redact_headers({header: "v"}) == {header: _redact.MASK}
    assert not _redact.is_sensitive_name("Content-Type")
    assert _redact.is_sensitive_name("X-VIEW-TOKEN")


def test_private_file_write_is_0600_in_a_0700_directory_and_replaces_atomically(tmp_path: Path) -> None:
    target = tmp_path / "new" / "dir" / "file.json"
    _files.write_private_file(target, b"one")
    assert target.read_bytes() == b"one"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    inode = target.stat().st_ino
    _files.write_private_file(target, b"two")
    assert target.read_bytes() == b"two"
    assert target.stat().st_ino != inode  # a new file renamed over the old one, not rewritten in place
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.json"]


def test_a_failed_private_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "file.json"
    _files.write_private_file(target, b"old")

    def refuse(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        _files.write_private_file(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.json"]


_TRY_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    print("held")
else:
    print("free")
"""


def _other_process_sees(path: Path) -> str:
    command = [sys.executable, "-c", _TRY_LOCK, str(path)]
    run = subprocess.run(command, capture_output=True, text=True, check=True)
    return run.stdout.strip()


def test_the_exclusive_lock_holds_other_processes_off_until_released(tmp_path: Path) -> None:
    lock = tmp_path / "private" / "store.lock"
    with _files.exclusive_lock(lock):
        assert stat.S_IMODE(lock.stat().st_mode) == 0o600
        assert stat.S_IMODE(lock.parent.stat().st_mode) == 0o700
        assert _other_process_sees(lock) == "held"
    assert _other_process_sees(lock) == "free"
