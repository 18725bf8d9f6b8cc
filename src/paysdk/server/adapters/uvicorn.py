"""The server's one reach into uvicorn's private parts (D530, D531).

Written against uvicorn 0.30 to 0.54.0 with its h11 protocol (h11 0.16) (``pyproject.toml``:
``uvicorn>=0.30,<0.55``). ``tests/server/test_adapter_uvicorn.py`` fails, naming the hook and the
installed version, when a private part used here is gone or changed. No other module imports
``uvicorn.protocols`` or reads uvicorn's request cycle (``tests/foundation/test_private_hooks.py``).

Hooks:

- :class:`H11Protocol`: uvicorn's h11 connection protocol (``uvicorn.protocols.http.h11_impl``), which
  :class:`paysdk.server.connections.HeadTimeoutProtocol` extends. It relies on the protocol's ``conn``
  (the ``h11.Connection``), ``transport``, ``loop`` and on the methods it overrides:
  ``connection_made``, ``data_received``, ``on_response_complete``, ``connection_lost``.
- The request cycle (D531): uvicorn gives the app no handle on its connection. The ``receive`` callable
  it passes the app is a bound method of its ``RequestResponseCycle``, which holds the connection's
  ``transport`` and a ``keep_alive`` flag uvicorn clears when it begins a graceful shutdown
  (``H11Protocol.shutdown``). The server's middleware, which receives uvicorn's own ``receive`` (only
  Starlette's error middleware is outside it, and it passes ``receive`` on as it is), keeps it in the
  scope with :func:`remember_connection`; :func:`abort_connection` (the ``drop`` and ``stream_cut``
  faults) and :func:`shutdown_probe` (event streams end when the server stops) read it from there.
  Under any other server, or in process, there is no cycle: nothing is aborted and the probe says no.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope

if TYPE_CHECKING:
    from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "CONNECTION_SCOPE_KEY",
    "H11Protocol",
    "abort_connection",
    "remember_connection",
    "request_cycle",
    "shutdown_probe",
]

#: The scope key the middleware keeps the server's ``receive`` under (:func:`remember_connection`).
CONNECTION_SCOPE_KEY = "paysdk.server_receive"


def __getattr__(name: str) -> Any:
    # H11Protocol is imported when a server starts (connections.py), not by an app served in process.
    if name == "H11Protocol":
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def remember_connection(scope: Scope, receive: Receive) -> None:
    """Keep the server's own ``receive`` callable in ``scope`` (called first thing by the middleware)."""
    scope[CONNECTION_SCOPE_KEY] = receive


def request_cycle(receive: object) -> Any | None:
    """uvicorn's request cycle behind its ``receive`` callable, or ``None`` when ``receive`` is not
    uvicorn's (another server, a wrapper, in process)."""
    cycle = getattr(receive, "__self__", None)
    if cycle is None or not type(cycle).__module__.startswith("uvicorn.protocols.http"):
        return None
    if not hasattr(cycle, "transport") or not hasattr(cycle, "keep_alive"):
        return None
    return cycle


def abort_connection(scope: Scope) -> bool:
    """Abort the socket of the uvicorn connection serving the request of ``scope`` (no answer, no
    close handshake); ``False`` when not under uvicorn."""
    cycle = request_cycle(scope.get(CONNECTION_SCOPE_KEY))
    transport = None if cycle is None else getattr(cycle, "transport", None)
    if transport is None or not hasattr(transport, "abort"):
        return False
    transport.abort()
    return True


def shutdown_probe(scope: Scope) -> Callable[[], bool]:
    """Whether uvicorn began shutting down, for the request of ``scope``: uvicorn tells each running
    request cycle by clearing its ``keep_alive`` (a stream would otherwise hold the shutdown until its
    graceful timeout cancels it). Always ``False`` when not under uvicorn, or for a request that asked
    to close its connection anyway."""
    cycle = request_cycle(scope.get(CONNECTION_SCOPE_KEY))
    if cycle is None or not cycle.keep_alive:
        return lambda: False
    return lambda: not cycle.keep_alive
