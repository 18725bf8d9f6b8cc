"""The paysdk reference server: a stateful, offline emulator of the payment API.

``create_app(database_url=None, environment="sandbox", *, start_ticker=True, http_transport=None,
public_url=None, allowed_hosts=())`` builds the FastAPI app; ``serve(host, port, database_url, environment,
public_url, allowed_hosts)`` runs it with uvicorn
(``python -m paysdk.server`` and ``paysdk serve``). See ``docs/architecture.md`` and the module docstrings
for the decisions (``docs/spec-decisions.md``) each part implements.

Both names are imported on first use (PEP 562): importing a module of this package (``paysdk serve``
imports :mod:`paysdk.server.boot`) does not import the app factory and, through it, every table (D310).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paysdk.server.app import create_app
    from paysdk.server.boot import serve

__all__ = ["create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from paysdk.server.app import create_app

        return create_app
    if name == "serve":
        from paysdk.server.boot import serve

        return serve
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
