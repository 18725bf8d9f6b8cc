"""The paysdk pytest plugin: the reference server and its helpers as fixtures (``docs/testing.md``).

Registered as the ``pytest11`` entry point ``paysdk``, so pytest loads it wherever paysdk is installed.
Loading it imports only the SDK; the server's dependencies are imported by the first test that uses a
fixture (without them that test fails with one line naming ``pip install 'paysdk-toolkit[testing]'``). Every
fixture is named ``paysdk_*``; nothing here is autouse except a name check that resets the server
before each test that uses it.

Fixtures:

* ``paysdk_server`` (session): a started :class:`~paysdk.testing.SandboxServer`; mode from
  ``--paysdk-server=inprocess|socket`` or the ``paysdk_server`` ini option (default ``inprocess``), seed
  from ``--paysdk-seed FILE`` or the ``paysdk_seed`` ini option (relative to the ini file).
* each test that uses any ``paysdk_*`` fixture starts from a reset server (``POST /_sandbox/reset``:
  empty, or the seed).
* ``paysdk_callbacks``: a :class:`~paysdk.testing.CallbackInbox` for this test.
* ``paysdk_merchant``: a fresh merchant (:class:`~paysdk.contracts.sandbox.SandboxClient`, with its
  tokens) whose callbacks go to ``paysdk_callbacks``.
* ``paysdk_client`` / ``paysdk_async_client``: a :class:`paysdk.Client` / :class:`paysdk.AsyncClient`
  with ``paysdk_merchant``'s sandbox token (``.sandbox`` reaches the control plane). The async one needs
  pytest-asyncio (auto or strict mode).
* ``paysdk_clock``: the server's :class:`~paysdk.testing.VirtualClock` (``advance``, ``now``).
* ``paysdk_trigger``: runs a scenario (``paysdk_trigger("subscription-suspended")``, or your own
  scenario document) on the server with its callbacks sent to ``paysdk_callbacks``; answers the
  :class:`~paysdk.contracts.scenarios.ScenarioReport` and fails the test naming the step when the run
  failed (``check=False`` answers the failed report instead).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import paysdk
from paysdk.contracts.sandbox import SandboxClient
from paysdk.contracts.seed import SeedError
from paysdk.testing._inbox import CallbackInbox
from paysdk.testing._server import MODES, SandboxServer, ServerDependenciesMissing, VirtualClock

__all__ = [
    "ScenarioTrigger",
    "paysdk_async_client",
    "paysdk_callbacks",
    "paysdk_client",
    "paysdk_clock",
    "paysdk_merchant",
    "paysdk_reset",
    "paysdk_server",
    "paysdk_trigger",
    "pytest_addoption",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--paysdk-server``, ``--paysdk-seed`` and their ini options."""
    group = parser.getgroup("paysdk", "paysdk reference server fixtures")
    group.addoption(
        "--paysdk-server",
        choices=MODES,
        default=None,
        help="Where the paysdk_server fixture runs the reference server: inprocess (default) or socket.",
    )
    group.addoption(
        "--paysdk-seed",
        metavar="FILE",
        default=None,
        help="A seed file (JSON or YAML) the paysdk_server fixture loads and every reset restores.",
    )
    parser.addini("paysdk_server", "paysdk_server fixture mode: inprocess or socket", default="inprocess")
    parser.addini("paysdk_seed", "paysdk_server fixture seed file (relative to the ini file)", default="")


def _seed_path(config: pytest.Config) -> Path | None:
    given = config.getoption("paysdk_seed")
    if given:
        return Path(config.invocation_params.dir, given)
    ini = str(config.getini("paysdk_seed") or "").strip()
    if not ini:
        return None
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    return base / ini


def _mode(config: pytest.Config) -> Any:
    mode = config.getoption("paysdk_server") or str(config.getini("paysdk_server") or "inprocess").strip()
    if mode not in MODES:
        raise pytest.UsageError(f"paysdk_server ini option: must be inprocess or socket, not {mode!r}")
    return mode


@pytest.fixture(scope="session")
def paysdk_server(pytestconfig: pytest.Config) -> Iterator[SandboxServer]:
    """The reference server, started once for the session (see the module docstring)."""
    problem = None
    try:
        server = SandboxServer(_mode(pytestconfig), seed=_seed_path(pytestconfig)).start()
    except (ServerDependenciesMissing, SeedError) as exc:
        problem = str(exc)
    if problem is not None:  # outside the except block: one line, no chained traceback
        pytest.fail(problem, pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def paysdk_reset(request: pytest.FixtureRequest) -> None:
    """Reset the server before each test that uses ``paysdk_server`` (directly or through another
    ``paysdk_*`` fixture); tests that use none of them are left alone."""
    if "paysdk_server" in request.fixturenames:
        server: SandboxServer = request.getfixturevalue("paysdk_server")
        server.reset()


@pytest.fixture
def paysdk_callbacks() -> Iterator[CallbackInbox]:
    """A callback inbox for this test (``paysdk_merchant`` delivers to it)."""
    with CallbackInbox() as inbox:
        yield inbox


@pytest.fixture
def paysdk_merchant(paysdk_server: SandboxServer, paysdk_callbacks: CallbackInbox) -> SandboxClient:
    """A fresh merchant with its tokens, its callbacks sent to ``paysdk_callbacks``."""
    return paysdk_server.create_merchant(
        callback_url=paysdk_callbacks.url,
        callback_header_name=paysdk_callbacks.header_name,
        callback_header_value=paysdk_callbacks.header_value,
    )


@pytest.fixture
def paysdk_client(paysdk_server: SandboxServer, paysdk_merchant: SandboxClient) -> Iterator[paysdk.Client]:
    """A :class:`paysdk.Client` with ``paysdk_merchant``'s sandbox token."""
    with paysdk_server.client(paysdk_merchant.sandbox_token) as client:
        yield client


@pytest.fixture
def paysdk_clock(paysdk_server: SandboxServer) -> VirtualClock:
    """The virtual clock of the server."""
    return paysdk_server.clock


class ScenarioTrigger:
    """What ``paysdk_trigger`` is: call it with a built-in's name or a scenario document (a mapping or a
    :class:`~paysdk.contracts.scenarios.Scenario`) and the scenario's parameters as keywords."""

    def __init__(self, server: SandboxServer, inbox: CallbackInbox) -> None:
        self._server = server
        self._inbox = inbox

    def __call__(self, scenario: Any, /, *, check: bool = True, **parameters: str) -> Any:
        """Run ``scenario``; its ``callbackUrl`` (and ``callbackHeaderValue``) default to the test's
        ``paysdk_callbacks`` inbox when it declares them. A failed run fails the test naming the step,
        unless ``check`` is false."""
        from paysdk.contracts.scenarios import Scenario

        sandbox = self._server.sandbox
        if isinstance(scenario, str):
            declared = next((s.parameters for s in sandbox.scenarios() if s.name == scenario), [])
        else:
            document = scenario if isinstance(scenario, Scenario) else Scenario.model_validate(scenario)
            declared = document.parameters
        names = {parameter.name for parameter in declared}
        if "callbackUrl" in names:
            parameters.setdefault("callbackUrl", self._inbox.url)
        if "callbackHeaderValue" in names:
            parameters.setdefault("callbackHeaderValue", self._inbox.header_value)
        report = sandbox.trigger(scenario, parameters=parameters)
        if check and not report.ok:
            pytest.fail(f"scenario {report.scenario}: {report.error}", pytrace=False)
        return report


@pytest.fixture
def paysdk_trigger(paysdk_server: SandboxServer, paysdk_callbacks: CallbackInbox) -> ScenarioTrigger:
    """Run a scenario on the server, its callbacks delivered to ``paysdk_callbacks`` (the module
    docstring)."""
    return ScenarioTrigger(paysdk_server, paysdk_callbacks)


def _async_client_fixture() -> Any:
    """``paysdk_async_client`` as a pytest-asyncio fixture (strict or auto mode), or, without
    pytest-asyncio, a fixture that says it is missing."""
    try:
        import pytest_asyncio
    except ImportError:  # pragma: no cover - exercised only where pytest-asyncio is absent

        def missing(paysdk_server: SandboxServer) -> None:
            """Needs pytest-asyncio."""
            pytest.fail("paysdk_async_client needs pytest-asyncio: pip install pytest-asyncio", pytrace=False)

        return pytest.fixture(name="paysdk_async_client")(missing)

    async def async_client(
        paysdk_server: SandboxServer, paysdk_merchant: SandboxClient
    ) -> AsyncIterator[paysdk.AsyncClient]:
        """A :class:`paysdk.AsyncClient` with ``paysdk_merchant``'s sandbox token."""
        async with paysdk_server.async_client(paysdk_merchant.sandbox_token) as client:
            yield client

    return pytest_asyncio.fixture(name="paysdk_async_client")(async_client)


paysdk_async_client = _async_client_fixture()
