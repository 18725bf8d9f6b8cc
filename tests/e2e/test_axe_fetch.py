"""How the browser tests get axe-core (``tests/e2e/axe.py``, D740): from the cache when it is there; from
the npm registry otherwise, checked against the pinned integrity; and with no way to get it, a test
FAILURE that names what to do (never a skip, never a check that silently did not run)."""

from __future__ import annotations

import io
import stat
import tarfile
from pathlib import Path

import pytest

from . import axe


def _fake_npm(folder: Path, script: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    npm = folder / "npm"
    npm.write_text("#!/bin/sh\n" + script)
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)


def _tarball(content: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("package/axe.min.js")
        info.size = len(content)
        archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def test_a_cached_copy_is_used_without_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cached = tmp_path / "cache" / axe.AXE_VERSION / "axe.min.js"
    cached.parent.mkdir(parents=True)
    cached.write_text("window.axe = 'cached';")
    monkeypatch.setenv("PAYSDK_AXE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert axe.axe_source() == "window.axe = 'cached';"


def test_no_cache_and_no_npm_fails_naming_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYSDK_AXE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(pytest.fail.Exception, match="npm is not installed") as failed:
        axe.axe_source()
    assert f"axe-core@{axe.AXE_VERSION}" in str(failed.value)


def test_an_offline_npm_fails_naming_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_npm(tmp_path / "bin", "echo 'npm error code ECONNREFUSED' >&2\nexit 1\n")
    monkeypatch.setenv("PAYSDK_AXE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(pytest.fail.Exception, match="offline") as failed:
        axe.axe_source()
    assert "ECONNREFUSED" in str(failed.value)
    assert f"npm pack axe-core@{axe.AXE_VERSION}" in str(failed.value)
    assert not (tmp_path / "cache" / axe.AXE_VERSION / "axe.min.js").exists()


def test_a_tarball_that_is_not_the_pinned_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forged = tmp_path / "forged.tgz"
    forged.write_bytes(_tarball(b"window.axe = 'forged';"))
    # npm pack ... --pack-destination DIR: the fake copies the forged tarball there.
    _fake_npm(tmp_path / "bin", f'cp {forged} "$4/axe-core-{axe.AXE_VERSION}.tgz"\n')
    monkeypatch.setenv("PAYSDK_AXE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + ":/usr/bin:/bin")
    with pytest.raises(pytest.fail.Exception, match="integrity"):
        axe.axe_source()
    assert not (tmp_path / "cache" / axe.AXE_VERSION / "axe.min.js").exists()


def test_the_real_package_is_fetched_checked_and_cached() -> None:
    """The default cache (the browser tests use it): filled from the registry on a first run."""
    source = axe.axe_source()
    assert source.startswith(f"/*! axe v{axe.AXE_VERSION}\n")
    assert len(source) > 100_000
