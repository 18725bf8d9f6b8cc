"""The app factory of the reference server (:func:`~paysdk.server.boot.serve` runs it).

One process serves the four addresses of :class:`paysdk.Environment` under path prefixes: base ``/``
(payment links, alternative payments), webview ``/checkout`` (hosted pages), wallet ``/rest`` and
backoffice ``/cms/rest``, plus the control plane ``/_sandbox`` (absent from ``/openapi.json``). What is
served comes from the API families' registrations (:data:`paysdk.server.families.FAMILIES`): their
routers, tables, job handlers, idempotency and fast lane; :func:`create_app` refuses registrations that
do not hold together before serving anything.

The server runs as ``sandbox`` or ``production``: a client's sandbox token works only on a sandbox server,
its production token only on a production server; the other is ``401 / 2007`` (D9).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, FastAPI
from starlette.convertors import StringConvertor
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from paysdk.server import faults
from paysdk.server.addresses import ServerAddresses
from paysdk.server.asgi import control_forms
from paysdk.server.asgi import is_control_path as _is_control_path
from paysdk.server.asgi.body_bounds import BodyBoundsLayer
from paysdk.server.asgi.deprecation import Deprecation
from paysdk.server.asgi.faults import Faults
from paysdk.server.asgi.hook_cors import HookCors
from paysdk.server.asgi.host_guard import HostGuard
from paysdk.server.asgi.idempotency import Idempotency, idempotent_paths
from paysdk.server.asgi.request_id import RequestId
from paysdk.server.asgi.request_log import RequestLog, install_access_log_filter
from paysdk.server.bodies import BODY_TIMEOUT, MAX_BODY_BYTES, MAX_UPLOAD_BYTES, UPLOAD_TIMEOUT, BodyBounds
from paysdk.server.clock import Clock
from paysdk.server.connections import KEEP_ALIVE_TIMEOUT
from paysdk.server.context import ServerContext
from paysdk.server.control_token import ControlPlaneAccess
from paysdk.server.db import Database
from paysdk.server.errors import install_error_handlers
from paysdk.server.families import (
    FAMILIES,
    LANE_ATTRIBUTE,
    Family,
    check_families,
    fast_lane_of,
    route_paths,
    under,
)
from paysdk.server.families import job_handlers as family_job_handlers
from paysdk.server.hotpath.lanes import Endpoint, install_lanes
from paysdk.server.hotpath.routes import ServerApp, include_shared
from paysdk.server.jobs import LEASE
from paysdk.server.openapi import install_openapi
from paysdk.server.refs import resolve
from paysdk.server.scheduler import JobHandler, Scheduler

if TYPE_CHECKING:
    import httpx

__all__ = ["KEEP_ALIVE_TIMEOUT", "REST_AFTER", "control_prefixes", "create_app", "is_control_path"]

log = logging.getLogger("paysdk.server")

#: Seconds after a lazily started app included the routers its first request needed at which it
#: includes the others (D610).
REST_AFTER = 0.5


#: The sandbox emits no OpenTelemetry data. FastAPI releases with native telemetry otherwise ask the
#: global OpenTelemetry providers on every request (a few microseconds of the hot path).
_NO_TELEMETRY: dict[str, Any] = (
    {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    if "telemetry" in inspect.signature(FastAPI.__init__).parameters
    else {}
)

_DESCRIPTION = """Reference server (stateful emulator) of the payment-link and alternative-payment API.

Errors: `{"ownCode": int|null, "message": str, "details": [{"field", "message"}]}` (spec-decisions D1).
Every public POST honours `Idempotency-Key` (24 h, D17). Money is an exact JSON number.
"""


def create_app(
    database_url: str | None = None,
    environment: Literal["sandbox", "production"] = "sandbox",
    *,
    start_ticker: bool = True,
    http_transport: httpx.AsyncBaseTransport | None = None,
    tick_interval: float = 1.0,
    callback_timeout: float = 10.0,
    clock: Clock | None = None,
    public_url: str | None = None,
    allowed_hosts: Iterable[str] = (),
    body_limit: int = MAX_BODY_BYTES,
    body_timeout: float = BODY_TIMEOUT,
    families: Sequence[Family] = FAMILIES,
    job_handlers: Mapping[str, JobHandler | str] | None = None,
    job_lease: timedelta = LEASE,
    upload_limit: int = MAX_UPLOAD_BYTES,
    upload_timeout: float = UPLOAD_TIMEOUT,
    control_token_digest: bytes | None = None,
    control_plane_exposed: bool = False,
    lazy_routers: bool = False,
    database: Database | None = None,
) -> FastAPI:
    """Build the reference server.

    ``database_url``: ``sqlite:///path`` (default: ``sandbox.db`` in the user data directory) or
    ``postgresql://...`` (driven by psycopg 3). ``environment``: which token of each client
    authenticates. ``start_ticker``: run due jobs every ``tick_interval`` seconds while served with a
    lifespan (uvicorn); in-process tests pass ``False`` and drive time with ``/_sandbox/clock/advance``.
    ``http_transport``: the httpx transport callbacks are delivered with (tests may inject one).
    ``public_url``: the address every URL the server hands out is built on (payment links, rail pages,
    the checkout's forms); default: the address each request reached the server on, never its ``Host``
    header (D90). ``allowed_hosts``: host names answered besides the loopback names and the public
    address's host (``"*"``: any); other ``Host`` values get ``421`` (D91).
    ``body_limit`` (bytes, default 1 MiB) and ``body_timeout`` (seconds, default 30): the bounds of every
    request body, enforced while it streams (``413`` / ``408``, D85). ``upload_limit`` (bytes, default
    256 MiB) and ``upload_timeout`` (seconds, default 600): the same on upload routes (D110,
    :data:`paysdk.server.bodies.UPLOAD_ROUTES`).
    ``control_token_digest``: SHA-256 of the control token
    (:func:`paysdk.server.control_token.control_token_digest`); when set, every control call but
    ``GET /_sandbox/health`` needs it in ``Paysdk-Control-Token`` (``401``/``403``).
    ``control_plane_exposed``: the server binds a non-loopback address, so re-reads of tokens and keys
    are masked (reveal calls answer them) (:mod:`paysdk.server.control_token`, D270-D276).
    ``lazy_routers``: include at start only the routers already imported (the readiness probe's,
    ``/_sandbox/health``); a request no included route answers includes the pending routers of its own
    family up to the one that answers it, and the others follow :data:`REST_AFTER` seconds later (one
    per turn of the event loop; a request for ``/openapi.json``, ``/docs`` or a path no family's routers
    answer includes them all at once) (:func:`~paysdk.server.boot.serve` does, D303, D610); the route
    and table checks run once all are included (D613). Default: everything at once, checked before
    anything is served.
    ``families``: the API families served (default :data:`paysdk.server.families.FAMILIES`; tests add one).
    ``database``: an already opened :class:`~paysdk.server.db.Database` to serve (``database_url`` is
    then not read; :func:`~paysdk.server.boot.serve` opens it first to check the schema, D310); the app
    disposes of it.
    ``job_handlers``: job kinds to run besides the families' (embedding, tests; see
    :mod:`paysdk.server.scheduler`); ``job_lease``: how long (wall clock) a claim holds a job (D125).
    Raises ``ValueError`` naming a malformed ``environment``, ``public_url`` or allowed host, body bounds,
    or each inconsistency of the families' registrations (:func:`paysdk.server.families.check_families`).
    """
    if environment not in ("sandbox", "production"):
        raise ValueError(f"environment must be 'sandbox' or 'production', not {environment!r}")
    families = tuple(families)
    check_families(families, routes=not lazy_routers)
    addresses = ServerAddresses(public_url, allowed_hosts)
    # BodyBounds checks the bounds (ValueError naming the option).
    body_bounds = BodyBounds(
        body_limit, body_timeout, upload_limit=upload_limit, upload_timeout=upload_timeout
    )
    if database is None:
        # The default families' schema and reset order are read from the snapshot (D310).
        database = Database(database_url, None if families == FAMILIES else families)
    elif families != FAMILIES:
        raise ValueError("a database given to create_app serves the default families only")
    if not database.schema_made:  # serve() made it current before it listened: not checked twice (D622)
        database.create_schema()
    context = ServerContext(
        database,
        environment,
        clock=clock,
        http_transport=http_transport,
        callback_timeout=callback_timeout,
        addresses=addresses,
    )
    context.control = ControlPlaneAccess(control_token_digest, control_plane_exposed)
    scheduler = Scheduler(
        context,
        {**family_job_handlers(families), **(job_handlers or {})},
        lease=job_lease,
    )
    context.scheduler = scheduler
    scheduler.recover()

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        install_access_log_filter()  # uvicorn has configured its loggers by now (D95)
        task: asyncio.Task[None] | None = None
        if start_ticker:
            task = asyncio.create_task(scheduler.ticker(tick_interval), name="paysdk-scheduler")
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            database.dispose()

    from paysdk._version import __version__  # the package's one version (D290)

    app = ServerApp(
        title="paysdk reference server",
        version=__version__,
        description=_DESCRIPTION,
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
        **_NO_TELEMETRY,
    )
    app.state.paysdk = context
    install_error_handlers(app)
    routers = _Routers(app, families)
    if lazy_routers:
        routers.include_imported()
        app.add_middleware(_IncludeRouters, routers=routers)  # just outside the routing (D303)
    else:
        routers.include_all()
    install_openapi(app, body_bounds, addresses, families)  # what the layers add, on every operation
    _add_layers(app, context, body_bounds, families)
    return app


def control_prefixes(families: Iterable[Family] = FAMILIES) -> tuple[str, ...]:
    """The prefixes of the families that are not public (the control plane), as ``prefix`` and
    ``prefix/`` (:func:`paysdk.server.asgi.control_forms`)."""
    return control_forms(p for f in families if not f.public for p in f.prefixes)


def is_control_path(path: str, control: tuple[str, ...] | None = None) -> bool:
    """Whether ``path`` is on the control plane of ``control`` (default: the control plane of
    :data:`~paysdk.server.families.FAMILIES`) or the API docs: never logged, faulted or idempotent."""
    return _is_control_path(path, control_prefixes() if control is None else control)


def _add_layers(app: FastAPI, context: ServerContext, bounds: BodyBounds, families: Sequence[Family]) -> None:
    """The middlewares of :mod:`paysdk.server.asgi`, in the order its docstring gives and explains (each
    ``add_middleware`` wraps the ones added before it: the last added is the outermost). What each needs
    to know of the families comes from their registrations (:class:`~paysdk.server.families.Family`)."""
    control = control_prefixes(families)
    idempotent = idempotent_paths(
        [p for f in families if f.public and f.idempotent_posts for p in f.prefixes]
    )
    database_key = faults.database_key(context.db.engine.url)
    app.add_middleware(Idempotency, context=context, paths=idempotent)
    app.add_middleware(Faults, context=context, database_key=database_key, control=control)
    app.add_middleware(RequestLog, context=context, control=control)
    app.add_middleware(HookCors, paths=[p for f in families for p in f.cors_paths])
    app.add_middleware(HostGuard, addresses=context.addresses, access=context.control)
    app.add_middleware(BodyBoundsLayer, bounds=bounds)
    app.add_middleware(Deprecation, context=context, database_key=database_key, control=control)
    app.add_middleware(RequestId)


class _IncludeRouters:
    """The layer of a lazily started app (D303): includes the families' routers not included at start on
    the first request that needs them (:meth:`_Routers.needed`), once, on the event loop."""

    def __init__(self, app: ASGIApp, routers: _Routers) -> None:
        self.app = app
        self.routers: _Routers | None = routers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        routers = self.routers
        if routers is not None and scope["type"] == "http" and routers.needed(scope):
            routers.include_all()
            self.routers = None
        await self.app(scope, receive, send)


class _Routers:
    """Includes the families' routers in ``app``: all at once (:meth:`include_all`), or those already
    imported first (:meth:`include_imported`) and the others when a request needs them (:meth:`needed`,
    called by the :class:`_IncludeRouters` layer, D303). Registration order is kept either way (the
    imported ones are the control plane's first router, which comes before its other routers)."""

    def __init__(self, app: FastAPI, families: Sequence[Family]) -> None:
        self._app = app
        self._families = families
        self._pending = [(family, mount, router) for family in families for mount, router in family.routers]
        self._pages = {p for p in (app.openapi_url, app.docs_url, app.swagger_ui_oauth2_redirect_url) if p}
        #: Whether :meth:`include_all` has run (every router included, the routes checked, the lanes in).
        self._handed = False
        self._rest: asyncio.TimerHandle | None = None

    def _include(self, family: Family, mount: str, router: APIRouter | str) -> None:
        include_shared(self._app, resolve(router), mount, include_in_schema=family.public)  # D762

    def include_imported(self) -> None:
        """Include the routers given as objects (imported with the registrations), and the fast lanes
        (:mod:`paysdk.server.hotpath.lanes`) of the families all of whose routers and lanes are."""
        rest: list[tuple[Family, str, APIRouter | str]] = []
        for family, mount, router in self._pending:
            if isinstance(router, str):
                rest.append((family, mount, router))
            else:
                self._include(family, mount, router)
        self._pending = rest
        ready = [
            family
            for family in self._families
            if not any(isinstance(r, str) for _, r in family.routers)
            and not any(isinstance(h, str) for h in family.fast_lane)
        ]
        install_lanes(self._app.router, _lanes(ready))

    def include_all(self) -> None:
        """Import and include every router not yet included, check the routes (``ValueError`` as
        :func:`check_families`) and install every family's fast lanes."""
        self._include_pending()
        if self._rest is not None:
            self._rest.cancel()
        self._handed = True
        check_families(self._families)
        install_lanes(self._app.router, _lanes(self._families))
        self._app.openapi_schema = None  # a document made before would lack the routes just included

    def needed(self, scope: Scope) -> bool:
        """Whether all the routers not yet included must be before ``scope`` is answered: it asks for the
        API document or its page, or no route answers it fully once the pending routers of the families
        whose prefixes hold its path are included, one at a time in registration order, up to the first
        that answers it (the others of the server stay pending: a first request pays for its own family's
        routers only, D610)."""
        if not self._pending:
            return not self._handed  # all included (REST_AFTER): the checks and lanes are still to come
        if scope["path"] in self._pages:
            return True
        if self._answered(scope):
            return False
        path = scope["path"]
        for family, mount, router in list(self._pending):
            if any(under(path, prefix) for prefix in family.prefixes):
                self._include(family, mount, router)
                self._pending.remove((family, mount, router))
                self._app.openapi_schema = None
                if self._answered(scope):
                    self._include_rest_later()
                    return False
        return True

    def _answered(self, scope: Scope) -> bool:
        return any(route.matches(scope)[0] is Match.FULL for route in self._app.router.routes)

    def _include_pending(self) -> None:
        while self._pending:
            self._include(*self._pending[0])
            del self._pending[0]
        self._app.openapi_schema = None  # a document made before would lack the routes just included

    def _include_rest_later(self) -> None:
        """Include the routers still pending from :data:`REST_AFTER` seconds from now, on the event loop
        (off the first request's path), one per loop turn so requests in between wait for one router's
        import at most; the next request then installs the fast lanes of every family
        (:meth:`needed`, :meth:`include_all`), which runs the route checks."""
        if self._rest is None:
            self._rest = asyncio.get_running_loop().call_later(REST_AFTER, self._include_next)

    def _include_next(self) -> None:
        if not self._pending:
            return
        try:
            self._include(*self._pending[0])
        except Exception:  # a router that does not import: the request that needs it gets the error
            log.exception("the reference server failed to include its routers")
            return
        del self._pending[0]
        self._app.openapi_schema = None
        self._rest = asyncio.get_running_loop().call_later(0, self._include_next)


def _lanes(families: Sequence[Family]) -> list[tuple[str, str, Endpoint]]:
    """``(method, path as served, handler)`` of the fast lanes (:mod:`paysdk.server.hotpath.lanes`): the
    routes the families register in their ``fast_lane`` (the hot public creates, without path
    parameters), then the routes whose handler names a lane (:func:`paysdk.server.routers._common.lane`:
    a hot route with string path parameters, ``POST /rest/cards/{cardId}/funds``, D261)."""
    if not families:
        return []
    exact: list[tuple[str, str, Endpoint]] = []
    parametrized: list[tuple[str, str, Endpoint]] = []
    for family in families:
        hot = fast_lane_of(family)
        for method, path, route in route_paths(family):
            if route.endpoint in hot:
                if route.param_convertors:
                    raise ValueError(f"{family.name}: fast-lane route {method} {path} has path parameters")
                exact.append((method, path, route.endpoint))
            lane = getattr(route.endpoint, LANE_ATTRIBUTE, None)
            if lane is not None:
                if not all(isinstance(c, StringConvertor) for c in route.param_convertors.values()):
                    raise ValueError(f"{family.name}: lane route {route.path} has non-string parameters")
                parametrized.append((method, path, lane))
    return [*exact, *parametrized]
