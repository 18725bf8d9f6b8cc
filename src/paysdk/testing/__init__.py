"""Test helpers for merchants' own suites: the reference server in process, a callback inbox, a pytest plugin.

* :class:`SandboxServer`: the reference server started once (in process or on a free port), with
  configured clients, control-plane helpers and :meth:`~SandboxServer.reset`.
* :class:`ASGIPortal`: httpx transports (sync and async) that run an ASGI app in process on a
  background event loop, streaming answers included: the blocking :class:`paysdk.Client` works in process.
* :class:`CallbackInbox`: a small HTTP server on a free port that receives, verifies and collects
  callbacks (:mod:`paysdk.callbacks`), with ``wait_for`` helpers.
* The pytest plugin (:mod:`paysdk.testing.pytest_plugin`, loaded wherever paysdk is installed): the
  ``paysdk_*`` fixtures. See ``docs/testing.md``.

Importing this package loads only the SDK; the server's dependencies
(``pip install 'paysdk-toolkit[testing]'``) are imported when a server starts.
"""

from paysdk.testing._inbox import CallbackInbox, Delivery
from paysdk.testing._portal import ASGIPortal
from paysdk.testing._server import (
    INSTALL_HINT,
    InProcessServerError,
    SandboxServer,
    ServerDependenciesMissing,
    VirtualClock,
)

__all__ = [
    "INSTALL_HINT",
    "ASGIPortal",
    "CallbackInbox",
    "Delivery",
    "InProcessServerError",
    "SandboxServer",
    "ServerDependenciesMissing",
    "VirtualClock",
]
