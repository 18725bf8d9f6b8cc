"""``paysdk sandbox jobs`` against the reference server on a real socket: the jobs, filtered (D129)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from paysdk.testing._ready import free_port

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")


def _json_ok(*args: str) -> Any:
    result = run_cli("-o", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_sandbox_jobs_lists_a_refused_callback_s_next_round() -> None:
    nobody = f"http://127.0.0.1:{free_port()}/callbacks"  # nothing listens: the round fails
    slug = f"cli-j-{uuid.uuid4().hex[:8]}"
    _json_ok("sandbox", "clients", "create", "--slug", slug, "--callback-url", nobody, "--save-profile")
    link = _json_ok("links", "create", "--amount", "10", "--user-id", "+50255555555", "--channel", "wa")
    _json_ok("sandbox", "pay", link["uid"], "--card", "4242424242424242")
    [attempt] = _json_ok("sandbox", "callbacks", "--uid", link["uid"])
    pending = _json_ok("sandbox", "jobs", "--kind", "callback", "--status", "pending")
    assert [(job["ref"], job["attempts"]) for job in pending] == [(attempt["eventId"], 0)]
    assert pending[0]["dueAt"] is not None
    assert _json_ok("sandbox", "jobs", "--status", "failed") == []
    assert len(_json_ok("sandbox", "jobs", "--limit", "1")) == 1
    table = run_cli("-o", "table", "sandbox", "jobs")
    assert table.exit_code == 0, table.stderr
    assert "callback" in table.stdout
    assert run_cli("sandbox", "jobs", "--status", "lost").exit_code == 2
