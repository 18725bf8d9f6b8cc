"""The paysdk reference server: a stateful, offline emulator of the payment-link and alternative-payment API.

``create_app(database_url=None, environment="sandbox", *, start_ticker=True, http_transport=None,
public_url=None, allowed_hosts=())`` builds the FastAPI app; ``serve(host, port, database_url, environment,
public_url, allowed_hosts)`` runs it with uvicorn
(``python -m paysdk.server`` and ``paysdk serve``). See ``docs/architecture.md`` and the module docstrings
for the decisions (``docs/spec-decisions.md``) each part implements.
"""

from __future__ import annotations

from paysdk.server.app import create_app, serve

__all__ = ["create_app", "serve"]
