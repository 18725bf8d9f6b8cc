"""The server's one reach into uvicorn's private parts (D530, D531).

Written against uvicorn 0.30 to 0.54.0 with its h11 protocol (h11 0.16) (``pyproject.toml``:
``uvicorn>=0.30,<0.55``). ``tests/server/test_adapter_uvicorn.py`` fails, naming the hook and the
installed version, when a private part used here is gone or changed. No other module imports
``uvicorn.protocols`` or reads uvicorn's request cycle (``tests/foundation/test_private_hooks.py``).

Hooks:

- :class:`H11Protocol`: uvicorn's h11 connection protocol (``uvicorn.protocols.http.h11_impl``), which
  :class:`paysdk.server.connections.HeadTimeoutProtocol` extends. It relies on the protocol's ``conn``
  (the ``h11.Connection``), ``transport``, ``loop``, ``app`` (the ASGI app each request is run with)
  and on the methods it overrides:
  ``connection_made``, ``data_received``, ``on_response_complete``, ``connection_lost``.
- The request cycle (D531): uvicorn gives the app no handle on its connection. The ``receive`` callable
  it passes the app is a bound method of its ``RequestResponseCycle``, which holds the connection's
  ``transport`` and a ``keep_alive`` flag uvicorn clears when it begins a graceful shutdown
  (``H11Protocol.shutdown``). The scope keeps uvicorn's own ``receive`` under
  :data:`CONNECTION_SCOPE_KEY`: the server's protocol puts it there before any ASGI middleware runs
  (:func:`keep_connection_in_scope` wraps the protocol's ``app``, which uvicorn calls each request with),
  and under plain uvicorn the server's request id layer does (:func:`remember_connection`; there an ASGI
  wrapper outside the app that wraps ``receive`` hides the cycle). :func:`abort_connection` (the
  ``drop`` and ``stream_cut`` faults) and :func:`shutdown_probe` (event streams end when the server
  stops) read it from there. Under any other server, or in process, there is no cycle: nothing is
  aborted and the probe says no.

  A bound method is kept as a :class:`weakref.WeakMethod` (D769): the cycle holds the scope, so the
  method itself in the scope would make a reference cycle of every request (the cycle, its scope, the
  method, FastAPI's exit stack...), about ten objects a request left to the garbage collector, whose
  collections were ~15% of the server's CPU under ``make bench``'s load. Weakly kept, a request's objects
  are freed as it ends (``tests/server/test_adapter_uvicorn.py`` checks that no cycle is left).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "CONNECTION_SCOPE_KEY",
    "H11Protocol",
    "abort_connection",
    "keep_connection_in_scope",
    "remember_connection",
    "request_cycle",
    "shutdown_probe",
]

#: The scope key the request id layer keeps the server's ``receive`` under (:func:`remember_connection`).
CONNECTION_SCOPE_KEY = "paysdk.server_receive"


def __getattr__(name: str) -> Any:
    # H11Protocol is imported when a server starts (connections.py), not by an app served in process.
    if name == "H11Protocol":
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def keep_connection_in_scope(protocol: H11Protocol) -> None:
    """Make ``protocol`` (a connection of the server's own uvicorn protocol, just made) keep uvicorn's
    ``receive`` in the scope of each of its HTTP requests, before any ASGI middleware sees them."""
    app = protocol.app

    async def with_connection(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[CONNECTION_SCOPE_KEY] = _weakly(receive)
        await app(scope, receive, send)

    protocol.app = with_connection


def remember_connection(scope: Scope, receive: Receive) -> None:
    """Keep ``receive`` in ``scope`` unless the server's protocol already kept uvicorn's own there (called
    first thing by the server's request id layer: under plain uvicorn its ``receive`` is uvicorn's)."""
    if CONNECTION_SCOPE_KEY not in scope:
        scope[CONNECTION_SCOPE_KEY] = _weakly(receive)


def _weakly(receive: Receive) -> object:
    # A bound method (uvicorn's) weakly, so the scope it is kept in makes no cycle with its owner (D769).
    return weakref.WeakMethod(receive) if hasattr(receive, "__self__") else receive


def _kept(scope: Scope) -> object:
    kept = scope.get(CONNECTION_SCOPE_KEY)
    return kept() if isinstance(kept, weakref.WeakMethod) else kept


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
    cycle = request_cycle(_kept(scope))
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
    cycle = request_cycle(_kept(scope))
    if cycle is None or not cycle.keep_alive:
        return lambda: False
    return lambda: not cycle.keep_alive
