"""Fixtures of the CLI tests: an isolated config dir, keyring backends, a mock API, a CLI runner."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail
from keyring.errors import PasswordDeleteError
from typer.testing import CliRunner, Result

from openapi_conformance import checked_server_recorder as server_recorder
from paysdk_cli._context import CLIENT_OPTIONS
from paysdk_cli.main import app

#: A merchant token shaped like the spec's (64 hex). Tests assert it never appears in any output.
TOKEN = "5f2b8c1e9a7d4f3b6c0e1a2d3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e"

__all__ = ["server_recorder"]  # the in-process server's exchanges checked against /openapi.json (D133)

_ENV_VARS = (
    "PAYSDK_MERCHANT_TOKEN",
    "PAYSDK_PROFILE",
    "PAYSDK_BASE_URL",
    "PAYSDK_WEBVIEW_URL",
    "PAYSDK_WALLET_BASE_URL",
    "PAYSDK_CMS_BASE_URL",
    "PAYSDK_IDEMPOTENCY",
    "PAYSDK_LOG",
    "PAYSDK_CALLBACK_HEADER_VALUE",
    "PAYSDK_CONTROL_TOKEN",
    "PYTHON_KEYRING_BACKEND",
)


class MemoryKeyring(KeyringBackend):
    """A working keyring that keeps passwords in a dict."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.passwords.pop((service, username), None) is None:
            raise PasswordDeleteError("not found")


@pytest.fixture(autouse=True)
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every CLI test gets its own config dir, a clean environment and no keyring (like headless Linux)."""
    directory = tmp_path / "paysdk-config"
    monkeypatch.setenv("PAYSDK_CONFIG_DIR", str(directory))
    for var in _ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]
    yield directory
    keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]
    CLIENT_OPTIONS.clear()


@pytest.fixture
def memory_keyring() -> MemoryKeyring:
    """Switch the keyring to a working in-memory backend."""
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    return backend


@pytest.fixture
def terminal_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let hidden prompts run as on a terminal (CliRunner's stdin is not one); input comes from ``input=``."""
    from paysdk_cli import _params

    monkeypatch.setattr(_params, "stdin_is_terminal", lambda: True)


def run_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """Invoke ``paysdk ARGS`` in process; stdout and stderr are kept apart."""
    return CliRunner().invoke(app, list(args), input=input, env=env)


def subprocess_env(config_dir: Path, **extra: str) -> dict[str, str]:
    """The environment for running ``paysdk`` in a subprocess: isolated config, no keyring."""
    env = {k: v for k, v in os.environ.items() if k not in _ENV_VARS}
    env["PAYSDK_CONFIG_DIR"] = str(config_dir)
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    env.update(extra)
    return env


@dataclass
class MockAPI:
    """An httpx mock transport answering every request with ``status`` and ``body``; records requests."""

    status: int = 200
    body: Any = field(default_factory=dict)
    raise_error: Exception | None = None
    requests: list[httpx.Request] = field(default_factory=list)
    handler: Callable[[httpx.Request], httpx.Response] | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.raise_error is not None:
            raise self.raise_error
        if self.handler is not None:
            return self.handler(request)
        return httpx.Response(
            self.status, content=json.dumps(self.body).encode(), headers={"Content-Type": "application/json"}
        )

    def json_body(self, index: int = -1) -> Any:
        """The JSON body of a recorded request (Decimal-exact)."""
        from paysdk._json import loads

        return loads(self.requests[index].content)


@pytest.fixture
def mock_api() -> MockAPI:
    """Route every SDK call the CLI makes to a mock transport (no retries, so no sleeping)."""
    api = MockAPI()
    CLIENT_OPTIONS["transport"] = httpx.MockTransport(api)
    CLIENT_OPTIONS["max_retries"] = 0
    return api


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """The CLI is database-agnostic: its end-to-end tests run the reference server on SQLite only
    (this overrides the suite's sqlite/postgresql parametrization; the server tests cover PostgreSQL)."""
    return f"sqlite:///{tmp_path / 'cli-server.db'}"


@pytest.fixture
def cli_server(live_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The suite's ``live_server`` (uvicorn on a real socket), made the CLI's ``PAYSDK_BASE_URL``."""
    monkeypatch.setenv("PAYSDK_BASE_URL", live_server)
    return live_server
