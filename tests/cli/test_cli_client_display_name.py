"""``paysdk sandbox clients create/update --display-name`` against the reference server (D413): the name
the hosted checkout shows, removed with ``--clear-display-name``; a bad name is an error naming the field,
never a traceback."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from paysdk._json import loads

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")


def _run(*args: str, code: int = 0, output: str = "json") -> Any:
    result = run_cli("-o", output, *args)
    assert result.exit_code == code, (args, result.exit_code, result.stderr)
    if code == 0 and output == "json" and result.stdout.strip():
        return loads(result.stdout)
    return result


def test_display_name_create_update_clear(cli_server: str) -> None:
    slug = f"cli-dn-{uuid.uuid4().hex[:8]}"
    created = _run("sandbox", "clients", "create", "--slug", slug, "--display-name", "Tienda Ana")
    assert created["displayName"] == "Tienda Ana"
    assert _run("sandbox", "clients", "show", slug)["displayName"] == "Tienda Ana"

    updated = _run("sandbox", "clients", "update", slug, "--display-name", "Ana's Shop")
    assert updated["displayName"] == "Ana's Shop"
    assert updated["sandboxToken"] == "****"  # the update never prints a secret
    table = _run("sandbox", "clients", "update", slug, "--display-name", "Ana's Shop", output="table")
    assert "Ana's Shop" in table.stdout

    cleared = _run("sandbox", "clients", "update", slug, "--clear-display-name")
    assert cleared.get("displayName") is None
    assert _run("sandbox", "clients", "show", slug).get("displayName") is None


def test_display_name_errors(cli_server: str) -> None:
    slug = f"cli-dn-{uuid.uuid4().hex[:8]}"
    _run("sandbox", "clients", "create", "--slug", slug)
    bad = _run("sandbox", "clients", "update", slug, "--display-name", "x" * 81, code=2)
    assert "display" in bad.stderr.lower()
    assert "Traceback" not in bad.stderr
    neither = _run("sandbox", "clients", "update", slug, code=2)
    assert "--display-name" in neither.stderr
    both = _run("sandbox", "clients", "update", slug, "--display-name", "A", "--clear-display-name", code=2)
    assert "--clear-display-name" in both.stderr
    missing = _run("sandbox", "clients", "update", "nobody-" + slug, "--display-name", "A", code=6)
    assert "not found" in missing.stderr
    blank = _run("sandbox", "clients", "update", slug, "--display-name", "   ", code=6)
    assert "displayName" in blank.stderr  # the server's 409 names the field
    assert "Traceback" not in missing.stderr + blank.stderr
    assert httpx.get(f"{cli_server}/_sandbox/clients/{slug}", timeout=60).json().get("displayName") is None
