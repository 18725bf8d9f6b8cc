"""The host guard (D91, D92, D270): a request for a host the server does not answer is ``421``; on the
control plane, a cross-site ``Origin`` is ``403``, a body that is not JSON ``415``
(:meth:`paysdk.server.addresses.ServerAddresses.refusal`), and a missing or wrong control token
``401``/``403`` when the control plane is guarded
(:meth:`paysdk.server.control_token.ControlPlaneAccess.refusal`). Synchronous checks: a request that
passes awaits nothing here.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from paysdk.server.addresses import ServerAddresses
from paysdk.server.control_token import ControlPlaneAccess

__all__ = ["HostGuard"]


class HostGuard:
    """Answers the refusals of :mod:`paysdk.server.addresses` and :mod:`paysdk.server.control_token`
    before anything inside it runs; ``addresses`` and ``access`` are the server's (its context's)."""

    def __init__(self, app: ASGIApp, addresses: ServerAddresses, access: ControlPlaneAccess) -> None:
        self.app = app
        self.addresses = addresses
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = self.addresses.refusal(scope)
            if refused is None and self.access.guarded:
                refused = self.access.refusal(scope)
            if refused is not None:
                await refused.response()(scope, receive, send)
                return
        await self.app(scope, receive, send)
