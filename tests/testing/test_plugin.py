"""The pytest plugin: registered as a pytest11 entry point, imports only the SDK when loaded, fixtures
prefixed ``paysdk_`` beside this repository's own, one line when the server's dependencies are absent,
a reset before each test, the mode and seed options."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from paysdk.contracts.sandbox import SandboxClient
from paysdk.testing import SandboxServer, pytest_plugin

SERVER_MODULES = ("fastapi", "starlette", "sqlalchemy", "uvicorn", "psycopg")


def _pytest(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAYSDK_", "PYTEST_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def _suite(directory: Path, ini: str, **files: str) -> Path:
    (directory / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n" + ini, encoding="utf-8"
    )
    for name, text in files.items():
        (directory / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return directory


def test_the_plugin_is_a_pytest11_entry_point(pytestconfig: pytest.Config) -> None:
    points = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    assert points["paysdk"] == "paysdk.testing.pytest_plugin"
    assert pytestconfig.pluginmanager.get_plugin("paysdk") is pytest_plugin  # loaded in this very run


def test_loading_the_plugin_imports_only_the_sdk() -> None:
    code = (
        "import sys, paysdk.testing.pytest_plugin, paysdk.testing\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {SERVER_MODULES!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_fixtures_are_prefixed_and_leave_this_repository_s_own_alone(request: pytest.FixtureRequest) -> None:
    ours = sorted(
        name
        for name, value in vars(pytest_plugin).items()
        if type(value).__name__ == "FixtureFunctionDefinition"
    )
    assert ours == [
        "paysdk_async_client",
        "paysdk_callbacks",
        "paysdk_client",
        "paysdk_clock",
        "paysdk_merchant",
        "paysdk_reset",
        "paysdk_server",
        "paysdk_trigger",
    ]
    manager = request._fixturemanager
    for name in ours:  # defined once, by the plugin: nothing here shares a name with them
        defs = manager.getfixturedefs(name, request.node) or ()
        assert [d.func.__module__ for d in defs] == [pytest_plugin.__name__], name
    for name in ("app", "merchant", "asgi_client", "live_server", "callback_sink", "db_url"):
        defs = manager.getfixturedefs(name, request.node) or ()
        assert [d.func.__module__ for d in defs] == ["conftest"], name  # still only this repository's


def test_paysdk_fixtures_in_this_repository(
    paysdk_server: SandboxServer, paysdk_merchant: SandboxClient, merchant: SandboxClient
) -> None:
    """The plugin's merchant (its session server) and this repository's (its own app) side by side."""
    assert paysdk_server.mode == "inprocess"
    assert paysdk_server.sandbox.get_client(paysdk_merchant.slug).slug == paysdk_merchant.slug
    assert merchant.slug != paysdk_merchant.slug


def test_without_the_server_dependencies_a_fixture_fails_with_one_line(tmp_path: Path) -> None:
    _suite(
        tmp_path,
        "",
        conftest="""
            import sys
            for name in ("fastapi", "sqlalchemy", "uvicorn"):
                sys.modules[name] = None  # as if paysdk-toolkit[testing] was not installed
        """,
        test_absent="""
            def test_uses_the_server(paysdk_client):
                raise AssertionError("not reached")

            def test_without_fixtures():
                assert True
        """,
    )
    done = _pytest(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed, 1 error" in done.stdout
    errors = done.stdout.split("ERROR at setup of test_uses_the_server", 1)[1].split("short test summary")[0]
    lines = [line for line in errors.splitlines() if line.strip() and not line.strip().startswith(("_", "="))]
    assert lines == [
        "the paysdk test server needs its dependencies (fastapi is missing): "
        "pip install 'paysdk-toolkit[testing]'"
    ]


def test_each_test_starts_from_a_reset_server_in_socket_mode_from_the_ini(tmp_path: Path) -> None:
    seed = {"merchants": [{"slug": "seeded", "sandboxToken": "cd" * 32}]}
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "seed.json").write_text(json.dumps(seed), encoding="utf-8")
    _suite(
        tmp_path,
        "paysdk_server = socket\npaysdk_seed = data/seed.json\n",
        test_order="""
            import pytest
            import paysdk

            def test_first_leaves_a_merchant(paysdk_server):
                assert paysdk_server.mode == "socket"
                assert paysdk_server.url.startswith("http://127.0.0.1:")
                paysdk_server.create_merchant(slug="leftover")

            def test_second_does_not_see_it(paysdk_server):
                with pytest.raises(paysdk.NotFoundError):
                    paysdk_server.sandbox.get_client("leftover")
                assert paysdk_server.seeded_merchant("seeded").sandbox_token == "cd" * 32

            def test_clock_is_back_to_the_wall_clock(paysdk_clock):
                assert paysdk_clock.state().offset_seconds == 0
                paysdk_clock.advance(86400)

            def test_clock_again(paysdk_clock):
                assert paysdk_clock.state().offset_seconds == 0
        """,
    )
    done = _pytest(tmp_path, "-p", "no:randomly")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b4 passed\b", done.stdout), done.stdout


def test_a_bad_seed_option_fails_the_tests_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "seed.json").write_text(
        '{"merchants": [{"slug": "a", "sandboxToken": "nope"}]}', encoding="utf-8"
    )
    _suite(tmp_path, "", test_seeded="def test_uses(paysdk_server):\n    pass\n")
    done = _pytest(tmp_path, "--paysdk-seed", "seed.json")
    assert done.returncode == 1
    assert "seed.json: merchants[0].sandboxToken: String should match pattern" in done.stdout
    assert "Traceback" not in done.stdout


def test_a_bad_mode_is_refused(tmp_path: Path) -> None:
    _suite(tmp_path, "", test_mode="def test_uses(paysdk_server):\n    pass\n")
    done = _pytest(tmp_path, "--paysdk-server", "docker")
    assert done.returncode == 4  # a usage error
    assert "invalid choice: 'docker'" in done.stderr
