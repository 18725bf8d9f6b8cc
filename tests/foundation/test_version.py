"""One version everywhere: ``src/paysdk/_version.py`` is the only place it is written (issue 12)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest

import paysdk
from paysdk._pipeline import USER_AGENT

ROOT = Path(__file__).resolve().parents[2]
VERSION_FILE = ROOT / "src" / "paysdk" / "_version.py"


def _written_version() -> str:
    found: list[str] = re.findall(r'^__version__ = "([^"]+)"$', VERSION_FILE.read_text(), flags=re.M)
    assert len(found) == 1
    return found[0]


def test_the_version_is_written_once_and_pyproject_reads_it() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "src/paysdk/_version.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?", _written_version())
    # no other file of the package spells a version out
    for path in (ROOT / "src").rglob("*.py"):
        if path != VERSION_FILE:
            text = path.read_text()
            assert not re.search(r"__version__\s*(:\s*\w+\s*)?=\s*['\"]", text), path
            assert f'"{_written_version()}"' not in text, path


def test_the_package_and_its_user_agent_carry_it() -> None:
    assert paysdk.__version__ == _written_version()
    assert USER_AGENT.startswith(f"paysdk/{_written_version()} ")


def test_paysdk_version_prints_it() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "paysdk_cli", "--version"], capture_output=True, text=True, check=True
    )
    assert proc.stdout == f"paysdk {_written_version()}\n"
    assert proc.stderr == ""


def test_the_changelog_keeps_a_changelog_and_has_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "[Keep a Changelog](https://keepachangelog.com/" in changelog
    sections = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", changelog, flags=re.M)
    assert sections[0] == ("Unreleased", "")
    released = [(version, date) for version, date in sections[1:]]
    assert released, "no released version"
    assert all(date for _, date in released), "a released version without its date"
    assert released[0][0] == _written_version(), "the newest released section is not this version"
    # every entry sits under one of Keep a Changelog's change types
    for heading in re.findall(r"^### (.+)$", changelog, flags=re.M):
        assert heading in ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"), heading


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_the_reference_servers_openapi_document_carries_it(asgi_client: httpx.AsyncClient) -> None:
    answer = await asgi_client.get("/openapi.json")
    assert answer.status_code == 200
    assert answer.json()["info"]["version"] == _written_version()
