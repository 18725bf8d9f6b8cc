"""The reference server's ASGI middlewares: pure ASGI, one job each, one module each.

:func:`paysdk.server.app.create_app` stacks them around FastAPI, which routes every request. Outermost
first, and why each sits where it does:

1. :class:`~.request_id.RequestId` (D65): mints ``X-Request-Id`` and adds it to every answer, so it is
   outside every layer that may answer (refusals, preflights, replays, faults); only the 500 handler,
   outside all middleware, answers without it and reads the id from the scope.
2. :class:`~.deprecation.Deprecation` (D196, D392): marks every answer of a marked public operation,
   the refusals of the layers inside it included (a marked upload's ``413``).
3. :class:`~.body_bounds.BodyBoundsLayer` (D85, D390): a body framed two ways is refused before anything
   else looks at the request (request smuggling: the answer closes the connection); a declared size over
   the limit is ``413`` before a byte is read; the body is bounded as it streams for every layer inside.
   A client gone mid-body ends here, quietly.
4. :class:`~.host_guard.HostGuard` (D91, D92, D270): unknown hosts, cross-site control calls and the
   control token, before any layer inside touches the database or answers for a route.
5. :class:`~.hook_cors.HookCors` (D14): answers the hook's preflight (never logged, faulted or
   idempotent) and adds the CORS header to every other hook answer, those of the layers inside included.
6. :class:`~.request_log.RequestLog` (D95): sees the final status of every public request, the answers of
   faults and idempotency replays included, and a dropped or abandoned one as ``0``.
7. :class:`~.faults.Faults`: an injected error or drop replaces the request before it is made idempotent,
   so a retry after an injected ``5xx`` runs the request for real.
8. :class:`~.idempotency.Idempotency` (D17): innermost, so it stores exactly what the route answered.

What the layers must know of the API families (the control-plane prefixes, the prefixes whose ``POST``
honours ``Idempotency-Key``, the hook's CORS paths) they are given by the app factory from the families'
registrations (:class:`paysdk.server.families.Family`); no module here imports a family.
"""

from __future__ import annotations

from paysdk.server.asgi._scope import control_forms, is_control_path

__all__ = ["control_forms", "is_control_path"]
