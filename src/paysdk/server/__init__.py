"""The paysdk reference server: a stateful, offline emulator of the payment-link and alternative-payment API.

``create_app(database_url=None, environment="sandbox", *, start_ticker=True, http_transport=None,
public_url=None, allowed_hosts=())`` builds the FastAPI app; ``serve(host, port, database_url, environment,
public_url, allowed_hosts)`` runs it with uvicorn
(``python -m paysdk.server`` and ``paysdk serve``). See ``docs/architecture.md`` and the module docstrings
for the decisions (``docs/spec-decisions.md``) each part implements.

Both are imported from :mod:`paysdk.server.app` when first asked for (PEP 562), so importing one module
of the package (a table module, the database) does not import every family's routers (D303).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paysdk.server.app import create_app, serve

__all__ = ["create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from paysdk.server import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
