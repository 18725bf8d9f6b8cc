"""Paths the SDK accepts (``FileTokenStore``, ``SQLiteDedupStore``): ``~`` is the home directory, and
a relative path is fixed against the working directory when the store is created."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import paysdk
from paysdk._secret import Secret
from paysdk.callbacks import SQLiteDedupStore


def pair() -> paysdk.StoredTokens:
    now = time.time()
    return paysdk.StoredTokens(Secret("access"), Secret("refresh"), now + 1800, now + 86400, now)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$HOME`` is a fresh directory and the working directory another one."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return home


def test_file_token_store_expands_the_home_directory(home: Path) -> None:
    store = paysdk.FileTokenStore("~/.myapp/tokens.json")
    assert store.path == home / ".myapp" / "tokens.json"
    with store.lock("k"):
        store.save("k", pair())
    assert (home / ".myapp" / "tokens.json").is_file()
    assert paysdk.FileTokenStore(home / ".myapp" / "tokens.json").load("k") is not None
    assert os.listdir(Path.cwd()) == []  # no directory literally named "~"
    assert "~" not in repr(store)


def test_file_token_store_relative_path_is_fixed_at_creation(home: Path, tmp_path: Path) -> None:
    store = paysdk.FileTokenStore("state/tokens.json")
    assert store.path == tmp_path / "work" / "state" / "tokens.json"
    os.chdir(home)
    store.save("k", pair())
    assert (tmp_path / "work" / "state" / "tokens.json").is_file()
    assert not (home / "state").exists()


def test_sqlite_dedup_store_expands_the_home_directory(home: Path, tmp_path: Path) -> None:
    with SQLiteDedupStore("~/callbacks.sqlite3") as store:
        assert store.path == home / "callbacks.sqlite3"
        assert store.claim("event-1") is True
    assert (home / "callbacks.sqlite3").is_file()
    with SQLiteDedupStore("relative.sqlite3") as relative:
        assert relative.path == tmp_path / "work" / "relative.sqlite3"
    assert not (tmp_path / "work" / "~").exists()
