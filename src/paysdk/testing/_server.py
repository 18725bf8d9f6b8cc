""":class:`SandboxServer`: the reference server started once for a test suite, in process or on a port."""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import paysdk
from paysdk._transport import install_deadlines
from paysdk._version import install_hint
from paysdk.contracts.sandbox import ClockState, SandboxClient
from paysdk.contracts.seed import SeedFile, parse_seed, read_seed
from paysdk.testing._portal import ASGIPortal
from paysdk.testing._ready import wait_ready

if TYPE_CHECKING:
    from paysdk.resources._base import Parsed
    from paysdk.resources.sandbox import Sandbox

__all__ = [
    "INSTALL_HINT",
    "InProcessServerError",
    "Mode",
    "SandboxServer",
    "ServerDependenciesMissing",
    "VirtualClock",
]

Mode = Literal["inprocess", "socket"]
MODES: tuple[Mode, ...] = ("inprocess", "socket")

#: What to install for the server's dependencies (the distribution's name, D420).
INSTALL_HINT = install_hint("testing")

#: The address in-process clients use (no socket: the portal hands requests to the app).
INPROCESS_URL = "http://testserver"


class ServerDependenciesMissing(ImportError):
    """The reference server's dependencies (FastAPI, SQLAlchemy, uvicorn...) are not installed."""


class InProcessServerError(RuntimeError):
    """A network address was asked of a server that runs in process (it has none)."""


def _server_modules() -> Any:
    try:
        from paysdk import server
        from paysdk.server import app as _app  # noqa: F401 (the package imports its dependencies lazily)
        from paysdk.server import seed as seed_module
    except ImportError as exc:
        raise ServerDependenciesMissing(
            f"the paysdk test server needs its dependencies ({exc.name or exc} is missing): {INSTALL_HINT}"
        ) from None
    return server, seed_module


class SandboxServer:
    """The reference server for a test suite: started once, reset between tests, stopped at the end.

    ``mode``: ``"inprocess"`` (default; the app runs in this process behind :class:`ASGIPortal`, no
    port, no ticker: time moves only with :meth:`advance_clock`) or ``"socket"`` (uvicorn on a free
    loopback port in a thread, with its ticker, as ``paysdk serve`` runs). ``database_url``: default a
    fresh SQLite file in a temporary directory, removed by :meth:`stop`. ``seed``: a seed file's path,
    a parsed mapping or a :class:`~paysdk.contracts.seed.SeedFile` (loaded at start, restored by every
    :meth:`reset`).

    ::

        with SandboxServer() as server:
            merchant = server.create_merchant()
            with server.client(merchant.sandbox_token) as client:
                link = client.payment_links.create(...)
            server.sandbox.pay(link.uid, "4242424242424242")

    Raises :class:`ServerDependenciesMissing` (one line naming ``paysdk-toolkit[testing]``) at :meth:`start`
    when the server's dependencies are absent.
    """

    def __init__(
        self,
        mode: Mode = "inprocess",
        *,
        database_url: str | None = None,
        seed: str | Path | Mapping[str, Any] | SeedFile | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be 'inprocess' or 'socket', not {mode!r}")
        self.mode: Mode = mode
        self._database_url = database_url
        if seed is None or isinstance(seed, SeedFile):
            self.seed_file = seed
        elif isinstance(seed, Mapping):
            self.seed_file = parse_seed(seed)
        else:
            self.seed_file = read_seed(seed)
        #: The expanded seed (``paysdk.server.seed.SeededState``: every token and id), once started.
        self.seeded: Any = None
        self._app: Any = None
        self._portal: ASGIPortal | None = None
        self._uvicorn: Any = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._tmp: str | None = None
        self._control: paysdk.Client | None = None
        self._ssl_context: Any = None
        self.url = ""

    def __enter__(self) -> SandboxServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"SandboxServer(mode={self.mode!r}, url={self.url!r})"

    # ---------------------------------------------------------------------------------- lifecycle

    def start(self) -> SandboxServer:
        """Build the app and start serving (idempotent)."""
        if self._app is not None:
            return self
        server, seed_module = _server_modules()
        url = self._database_url
        if url is None:
            self._tmp = tempfile.mkdtemp(prefix="paysdk-sandbox-")
            url = f"sqlite:///{Path(self._tmp) / 'sandbox.db'}"
        socket_mode = self.mode == "socket"
        app = server.create_app(url, start_ticker=socket_mode, tick_interval=0.2)
        try:
            if self.seed_file is not None:
                self.seeded = seed_module.install_seed(app, self.seed_file)
        except BaseException:
            app.state.paysdk.db.dispose()
            self._remove_tmp()
            raise
        self._app = app
        if socket_mode:
            self._serve_socket(app)
        else:
            self._portal = ASGIPortal(app)
            self.url = INPROCESS_URL
        self._control = self.client()
        return self

    def _serve_socket(self, app: Any) -> None:
        import uvicorn

        # Named TCP (IPPROTO_TCP), so asyncio sets TCP_NODELAY on every accepted connection, as for
        # the sockets uvicorn makes itself: otherwise an answer's body waits ~40 ms for the client's
        # delayed ACK (Nagle), on every request (D401).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        from paysdk.server.connections import KEEP_ALIVE_TIMEOUT, uvicorn_connection_options

        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",
            access_log=False,
            **uvicorn_connection_options(KEEP_ALIVE_TIMEOUT),  # as paysdk serve: the lingering close
        )
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._uvicorn.run, kwargs={"sockets": [sock]}, daemon=True, name="paysdk-sandbox-server"
        )
        self._socket = sock
        self._thread.start()
        uvicorn_server = self._uvicorn
        wait_ready(
            lambda: uvicorn_server.started, what="the paysdk sandbox server", alive=self._thread.is_alive
        )
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        """Stop serving, close the clients, remove the temporary database."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._portal is not None:
            self._portal.close()
            self._portal = None
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
            if self._thread is not None:
                self._thread.join(timeout=15)
            self._uvicorn = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if self._app is not None:
            self._app.state.paysdk.db.dispose()
            self._app = None
        self._remove_tmp()

    def _remove_tmp(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # ------------------------------------------------------------------------------------ clients

    @property
    def app(self) -> Any:
        """The FastAPI app (started servers only)."""
        if self._app is None:
            raise RuntimeError("the sandbox server is not started")
        return self._app

    @property
    def environment(self) -> paysdk.Environment:
        """The :class:`paysdk.Environment` of this server's address (socket mode).

        In process there is no address (``url`` is a placeholder no client can reach), so this raises
        :class:`InProcessServerError` naming what to use instead: :meth:`client` / :meth:`async_client`
        (the ``paysdk_client`` / ``paysdk_async_client`` fixtures), or socket mode (D403).
        """
        self.app  # noqa: B018 - started servers only
        if self._portal is not None:
            raise InProcessServerError(
                "the paysdk test server runs in process and has no network address, so a client built "
                "from its environment cannot reach it: use paysdk_server.client(token, ...) or "
                ".async_client(token, ...) (the paysdk_client / paysdk_async_client fixtures), or run "
                "the server on a socket (--paysdk-server=socket, or paysdk_server = socket in the ini "
                "file; SandboxServer(mode='socket'))"
            )
        return self._environment()

    def _environment(self) -> paysdk.Environment:
        return paysdk.Environment.local(self.url, name="paysdk-testing")

    def transport(self) -> Any:
        """A sync httpx transport reaching the server (``None`` in socket mode: use the network)."""
        return self._portal.transport() if self._portal is not None else None

    def async_transport(self) -> Any:
        """An async httpx transport reaching the server (``None`` in socket mode)."""
        return self._portal.async_transport() if self._portal is not None else None

    def _client_options(self, options: dict[str, Any], *, asynchronous: bool) -> bool:
        """Complete a client's ``options`` with the way to reach this server: the portal's transport in
        process; in socket mode, unless the caller brings a transport or an ``http_client``, a transport
        sharing this server's one SSL context, so making a client loads no certificates (~20-80 ms each,
        D402). ``True`` when the SDK's attempt deadlines must then be installed, as
        for a client that makes its own pool."""
        if self._portal is not None:
            portal = self._portal.async_transport() if asynchronous else self._portal.transport()
            options.setdefault("transport", portal)
            return False
        if "transport" in options or "http_client" in options:
            return False
        import httpx

        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context()
        transport = httpx.AsyncHTTPTransport if asynchronous else httpx.HTTPTransport
        options["transport"] = transport(verify=self._ssl_context)
        return True

    def client(self, merchant_token: str | None = None, **options: Any) -> paysdk.Client:
        """A :class:`paysdk.Client` on this server (``options``: the client's other keyword arguments)."""
        deadlines = self._client_options(options, asynchronous=False)
        client = paysdk.Client(merchant_token, self._environment(), **options)
        if deadlines:
            install_deadlines(client._http)
        return client

    def async_client(self, merchant_token: str | None = None, **options: Any) -> paysdk.AsyncClient:
        """A :class:`paysdk.AsyncClient` on this server (usable on any event loop)."""
        deadlines = self._client_options(options, asynchronous=True)
        client = paysdk.AsyncClient(merchant_token, self._environment(), **options)
        if deadlines:
            install_deadlines(client._http)
        return client

    # ------------------------------------------------------------------------------ control plane

    @property
    def sandbox(self) -> Sandbox[Parsed]:
        """The control plane (``client.sandbox`` of a client of this server): pay, simulate, users..."""
        if self._control is None:
            raise RuntimeError("the sandbox server is not started")
        return self._control.sandbox

    def reset(self) -> None:
        """``POST /_sandbox/reset``: back to the seed (or empty), the clock back to the wall clock."""
        self.sandbox.reset()

    def create_merchant(self, **fields: Any) -> SandboxClient:
        """A new sandbox client (the fields of ``client.sandbox.create_client``), with its tokens."""
        return self.sandbox.create_client(**fields)

    def seeded_merchant(self, slug: str) -> SandboxClient:
        """The seeded merchant ``slug`` as the control plane shows it, with the seed's tokens."""
        return self.sandbox.get_client(slug)

    @property
    def clock(self) -> VirtualClock:
        """The virtual clock (:class:`VirtualClock`)."""
        return VirtualClock(self)


class VirtualClock:
    """The server's virtual clock: :meth:`advance` runs every timed job that falls due (expiries,
    callback retries, renewals) before it returns; :meth:`now` reads it."""

    def __init__(self, server: SandboxServer) -> None:
        self._server = server

    def __repr__(self) -> str:
        return f"VirtualClock(server={self._server!r})"

    def advance(self, seconds: int | Decimal | timedelta) -> ClockState:
        """Move forward by ``seconds`` (an ``int``, ``Decimal`` or ``timedelta``; never ``float``)."""
        if isinstance(seconds, timedelta):
            seconds = Decimal(seconds.days * 86400 + seconds.seconds) + Decimal(seconds.microseconds) / 10**6
        return self._server.sandbox.advance_clock(seconds)

    def now(self) -> datetime:
        """The virtual time (aware)."""
        return self._server.sandbox.clock().now

    def state(self) -> ClockState:
        """The virtual time and its offset from the wall clock."""
        return self._server.sandbox.clock()
