"""How ``paysdk serve`` starts: the readiness probe first, the rest of the server right after (D310).

Most of a start is imports: FastAPI, SQLAlchemy and uvicorn (which any FastAPI + SQLAlchemy app pays),
then SQLAlchemy's ORM, the 44 mapped tables, the families' registrations, the ASGI layers and the
scheduler. :func:`serve` pays only the first part before it listens. On a database that already holds this
version's schema (checked against :mod:`paysdk.server.schema_snapshot` with two Core queries,
:meth:`paysdk.server.db.Database.schema_current`) it serves a :class:`BootApp`:

* ``GET /_sandbox/health`` is answered by the :class:`BootApp` itself, the same answer the server's own
  route gives (``status``, ``environment``, ``database``, the virtual ``now`` read from the ``clock`` row,
  an ``X-Request-Id``), after the same host check (``421``, D91). The probe is open on every address
  (D270), so no control token is involved.
* Everything else (any other request, a health request with a body or from another host) waits for the
  full server: :func:`paysdk.server.app.create_app` on the same :class:`~paysdk.server.db.Database`,
  its lifespan started (the scheduler's ticker), then every request is handed to it unchanged. The load
  starts at the first such request, right after the first health answer (a probe that said "ready" is
  followed by traffic), or :data:`WARM_UP_AFTER` seconds after the start, whichever comes first: a
  restarted server runs its due jobs without waiting for a request.

A database that needs its tables created (a new file) or upgraded gets them before anything listens
(:meth:`~paysdk.server.db.Database.create_schema`: a new one from the frozen statements of
:data:`paysdk.server.schema_snapshot.DDL`, without importing a mapped table), then the same
:class:`BootApp` (D611); one refused (:class:`~paysdk.server.db.SchemaMismatch`) starts nothing. A
``--seed`` file gets the full server at start, before anything listens, as before. The full server is
itself started with ``lazy_routers=True`` and includes a family's routers on the first request under its
prefixes (D303, D610).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from paysdk import _json
from paysdk.server.addresses import ServerAddresses
from paysdk.server.bodies import BODY_TIMEOUT, MAX_UPLOAD_BYTES
from paysdk.server.collector import imports_without_collection, thresholds_for_serving
from paysdk.server.connections import (
    KEEP_ALIVE_TIMEOUT,
    STREAMS_SHUTDOWN_TIMEOUT,
    uvicorn_connection_options,
)
from paysdk.server.control_token import control_token_digest, is_loopback_host
from paysdk.server.db import Database, DatabaseUnavailable
from paysdk.server.errors import REQUEST_ID_HEADER, new_request_id

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["WARM_UP_AFTER", "BootApp", "serve"]

log = logging.getLogger("paysdk.server")

#: Seconds after the start at which a :class:`BootApp` nobody has called loads the full server.
WARM_UP_AFTER = 1.0

#: The virtual clock's offset (the ``clock`` row of :class:`paysdk.server.core_tables.ClockRow`).
_CLOCK_OFFSET = "SELECT offset_us FROM clock WHERE id = 1"
_HEALTH = "/_sandbox/health"
_BODY_HEADERS = (b"content-length", b"transfer-encoding")


class BootApp:
    """The ASGI app :func:`serve` hands to uvicorn on an existing database (see the module docstring).

    ``build(database)`` makes the full server on the already opened ``database``; it runs once, on the
    event loop, when the first request needs it (or the warm-up timer fires).
    """

    def __init__(
        self,
        database: Database,
        environment: Literal["sandbox", "production"],
        addresses: ServerAddresses,
        build: Callable[[Database], ASGIApp],
    ) -> None:
        self.database = database
        self._environment = environment
        self._addresses = addresses
        self._build = build
        #: The full server, once loaded (then every request goes straight to it).
        self.app: ASGIApp | None = None
        self._loading: asyncio.Task[ASGIApp] | None = None
        self._lifespan: _Lifespan | None = None
        self._state: dict[str, Any] = {}
        self._timer: asyncio.TimerHandle | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is not None:
            await self.app(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._serve_lifespan(scope, receive, send)
        elif scope["type"] == "http" and self._answers(scope):
            await self._health(send)
            self._start_loading()  # the probe said "ready": the traffic follows
        else:
            app = await self.loaded()
            await app(scope, receive, send)

    def _answers(self, scope: Scope) -> bool:
        """Whether this is the readiness probe the boot stage answers as the server's route would."""
        if scope["method"] != "GET" or scope["path"] != _HEALTH:
            return False
        if any(key in _BODY_HEADERS for key, _ in scope["headers"]):
            return False  # the full server's body checks apply
        return self._addresses.refusal(scope) is None

    async def _health(self, send: Send) -> None:
        loop = asyncio.get_running_loop()
        offset = await loop.run_in_executor(self.database.executor, self._clock_offset)
        now = datetime.now(UTC) + timedelta(microseconds=offset)
        body = _json.dumps(
            {
                "status": "ok",
                "environment": self._environment,
                "database": self.database.describe(),
                "now": now,
            }
        )
        headers = [
            (b"content-length", str(len(body)).encode("ascii")),
            (b"content-type", b"application/json"),
            (REQUEST_ID_HEADER, new_request_id().encode("ascii")),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _clock_offset(self) -> int:
        with self.database.engine.connect() as connection:
            offset = connection.exec_driver_sql(_CLOCK_OFFSET).scalar()
        return int(offset or 0)

    # -- loading the full server

    async def loaded(self) -> ASGIApp:
        """The full server, loaded (and its lifespan started) on the first call."""
        self._start_loading()
        assert self._loading is not None
        return await asyncio.shield(self._loading)

    def _start_loading(self) -> None:
        if self._loading is None:
            if self._timer is not None:
                self._timer.cancel()
            self._loading = asyncio.get_running_loop().create_task(self._load(), name="paysdk-load")

    async def _load(self) -> ASGIApp:
        try:
            with imports_without_collection():
                app = self._build(self.database)
            lifespan = _Lifespan(app, self._state)
            await lifespan.startup()
        except Exception:  # a bug of the server: every request that needs it is answered 500
            log.exception("the reference server failed to load")
            raise
        self._lifespan = lifespan
        self.app = app
        log.debug("the full server is loaded")
        return app

    # -- the lifespan uvicorn runs

    async def _serve_lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._state = scope.get("state", self._state)
        await receive()  # lifespan.startup
        self._timer = asyncio.get_running_loop().call_later(WARM_UP_AFTER, self._start_loading)
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        if self._timer is not None:
            self._timer.cancel()
        if self._loading is not None:
            with contextlib.suppress(Exception):  # a failed load was logged
                await self._loading
        if self._lifespan is not None:
            await self._lifespan.shutdown()  # the full server's: it disposes of the database
        else:
            self.database.dispose()
        await send({"type": "lifespan.shutdown.complete"})


class _Lifespan:
    """The full server's ASGI lifespan, driven by :class:`BootApp` from inside uvicorn's."""

    def __init__(self, app: ASGIApp, state: dict[str, Any]) -> None:
        self._to_app: asyncio.Queue[Message] = asyncio.Queue()
        self._from_app: asyncio.Queue[Message] = asyncio.Queue()
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": state}
        self._task = asyncio.get_running_loop().create_task(self._run(app, scope))

    async def _run(self, app: ASGIApp, scope: Scope) -> None:
        try:
            await app(scope, self._to_app.get, self._from_app.put)
        except Exception as exc:  # told to whoever waits for the next step (Starlette logged it)
            await self._from_app.put({"type": "lifespan.failed", "message": repr(exc)})

    async def _step(self, step: str) -> None:
        await self._to_app.put({"type": f"lifespan.{step}"})
        answer = await self._from_app.get()
        if answer["type"] != f"lifespan.{step}.complete":
            raise RuntimeError(f"the server's lifespan {step} failed: {answer.get('message', '')}")

    async def startup(self) -> None:
        """Start the full server's lifespan (its scheduler)."""
        await self._step("startup")

    async def shutdown(self) -> None:
        """Stop it (its scheduler, its database)."""
        await self._step("shutdown")
        with contextlib.suppress(Exception):
            await self._task


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    database_url: str | None = None,
    environment: Literal["sandbox", "production"] = "sandbox",
    public_url: str | None = None,
    allowed_hosts: Iterable[str] = (),
    *,
    seed: str | None = None,
    body_timeout: float = BODY_TIMEOUT,
    keep_alive_timeout: float = KEEP_ALIVE_TIMEOUT,
    upload_limit: int = MAX_UPLOAD_BYTES,
    control_token: str | None = None,
) -> None:
    """Run the server with uvicorn until interrupted (``python -m paysdk.server``, ``paysdk serve``).

    ``seed``: a seed file loaded at start and restored by every reset (:mod:`paysdk.server.seed`; a bad
    one raises :class:`~paysdk.contracts.seed.SeedError` before anything listens).

    ``public_url`` and ``allowed_hosts``: as :func:`~paysdk.server.app.create_app` (default: URLs on the
    address a request reached, i.e. ``http://<host>:<port>`` it listens on). ``body_timeout``: seconds a
    request body may take (``408`` after, D85). ``keep_alive_timeout``: seconds a connection may wait for
    a request head, before its first request or after an answer, however many bytes trickle in meanwhile;
    then it is closed (D86). ``upload_limit``: bytes an upload route's body may hold (``413`` past it,
    D110). ``control_token``: the control plane's token (only its digest is kept); a non-loopback ``host``
    exposes the control plane (masked re-reads, D270). ``paysdk serve`` refuses an exposed start without a
    token unless told otherwise; this function does not.

    Without ``seed``, the schema is made current (or refused) first, then the readiness probe is answered
    before the rest of the server is imported (:class:`BootApp`, D310, D611). A database that cannot be
    opened raises :class:`~paysdk.server.db.DatabaseUnavailable` (the driver's words) before anything
    listens. While it serves, the process's garbage collector runs at serving thresholds, put back when it
    returns (:func:`paysdk.server.collector.thresholds_for_serving`, D769).
    """
    import uvicorn

    addresses = ServerAddresses(public_url, allowed_hosts)  # a malformed one: ValueError, nothing started
    database = Database(database_url)

    def build(database: Database) -> FastAPI:
        from paysdk.server.app import create_app

        return create_app(
            database=database,
            environment=environment,
            public_url=public_url,
            allowed_hosts=allowed_hosts,
            body_timeout=body_timeout,
            upload_limit=upload_limit,
            control_token_digest=None if control_token is None else control_token_digest(control_token),
            control_plane_exposed=not is_loopback_host(host),
            lazy_routers=True,  # the families' routers load on their first request (D303)
        )

    from sqlalchemy.exc import OperationalError

    app: ASGIApp
    try:
        if seed is None:
            if not database.schema_current():
                # A new database is created (frozen statements, no mapped table imported, D611), an
                # earlier version's upgraded, a foreign one refused, before anything listens.
                database.create_schema()
            app = BootApp(database, environment, addresses, build)
        else:
            with imports_without_collection():  # D308
                app = build(database)  # creates or refuses the schema before anything listens
            if seed is not None:  # before uvicorn binds: a seed the server refuses starts nothing
                from paysdk.server.families import hook  # the core's registry: no family (D552)

                for install in hook("seed", database.families):
                    install(app, seed)
    except OperationalError as exc:  # before anything listens: the driver's words (DatabaseUnavailable)
        database.dispose()
        raise DatabaseUnavailable.from_driver(exc) from None
    except BaseException:
        database.dispose()
        raise
    log.info("paysdk reference server (%s) on http://%s:%s", environment, host, port)
    with thresholds_for_serving():  # this call owns the process while it serves (D769)
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level="info",
            proxy_headers=False,
            **uvicorn_connection_options(keep_alive_timeout),
            # Open event streams (/_sandbox/events) never end by themselves: cancelled after this on Ctrl-C.
            timeout_graceful_shutdown=STREAMS_SHUTDOWN_TIMEOUT,
        )
