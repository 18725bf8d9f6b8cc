"""Shared fixtures: databases, the reference server in process and over a socket, a callback receiver.

Fixtures (other test packages use these names):

* ``db_url`` -- parametrized ``sqlite`` / ``postgresql``: the SQLite file or the PostgreSQL database
  (``paysdk_test_<worker>_<pid>``, dropped at the end; one left by a killed run is dropped by the next)
  of this test session or xdist worker, whose tables are emptied before each test, as a merchant's suite
  resets the plugin's server between tests. PostgreSQL down is a failure, never a skip.
* ``app`` -- ``create_app(db_url, start_ticker=False)`` over the worker's kept engine (its pool and
  compiled statements stay warm; a database object and an app of its own per test); its wall clock is
  the real one unless the test parametrizes ``wall_clock`` with an aware ``datetime``
  (``@pytest.mark.parametrize("wall_clock", [...])``): then the server's wall clock starts at that
  instant and runs on at the real pace (:class:`PinnedWall`), so a verdict that depends on the time of
  day is the same whenever the suite runs.
* ``asgi_client`` -- ``httpx.AsyncClient`` over ``httpx.ASGITransport(app)``, base URL ``http://testserver``.
* ``merchant`` -- a :class:`~paysdk.contracts.sandbox.SandboxClient` created through the control plane
  with the defaults; ``merchant_factory`` -- ``await merchant_factory(**fields)`` for custom ones
  (snake_case or camelCase field names of ``SandboxClientCreate``).
* ``live_server`` -- uvicorn on 127.0.0.1 (free port) in a thread, with its lifespan (the ticker runs);
  yields the base URL. It is its own app instance over the same ``db_url`` as ``app``.
* ``server_recorder`` -- ``None`` here; where a suite overrides it with a
  :class:`openapi_conformance.Recorder`, ``app`` and ``live_server`` record their public exchanges into it.
* ``callback_sink`` -- a real HTTP receiver (:class:`CallbackSink`): ``.url``, ``.received``,
  ``.respond_with([500, 500, 200])``, ``.down()``/``.up()`` (its port stays its own while it is down),
  ``.wait_for(n)``.
* ``hold_first_request`` -- ``hold(path)`` makes the server (in process or live) keep the first public
  request to ``path`` inside its handler, after the idempotency record was written, until
  ``.release`` is set; ``.finished`` is set once that request was answered (:class:`HeldRequest`).

The test processes run with the collector set as a serving server's (D769): the serving thresholds from
the session's start, and what the collection made frozen.

Password and PIN hashes are made at scrypt's lowest cost in the test processes (:func:`cheap_hashes`,
D763): the suite makes thousands, and the cost is not what it tests (a hash carries its cost, and
tests/server/test_server_passwords.py checks the default one).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import re
import signal
import socket
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from openapi_conformance import Recorder
from paysdk import _json
from paysdk.contracts.sandbox import SandboxClient, SandboxClientCreate
from paysdk.server import create_app, passwords
from paysdk.server.clock import Clock
from paysdk.server.collector import SERVING_THRESHOLDS
from paysdk.server.connections import KEEP_ALIVE_TIMEOUT, uvicorn_connection_options
from paysdk.server.db import Database, run_reset_hooks
from paysdk.testing._ready import serve_in_thread
from sdk_coverage import covers_check, report_collected  # the covers marker's checks (tests/sdk_coverage.py)

#: The control plane takes JSON bodies only (D92).
JSON_TYPE = {"Content-Type": "application/json"}

PG_ADMIN_URL = os.environ.get("PAYSDK_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture(autouse=True, scope="session")
def cheap_hashes() -> Iterator[None]:
    """Every hash of the session at scrypt's cost 2 (module docstring)."""
    previous = passwords.set_cost(2)
    yield
    passwords.set_cost(previous)


def _pg_url_for(database: str) -> str:
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    return f"{base}/{database}"


#: The test sessions' PostgreSQL databases: ``paysdk_test_<worker>_<pid>`` (worker: ``master`` or ``gwN``).
_PG_NAME = re.compile(r"paysdk_test_(?:master|gw\d+)_(?P<pid>\d+)")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _drop_leftover_databases(admin: psycopg.Connection[Any]) -> None:
    """Drop the databases of test sessions on this machine that were killed before their clean-up
    (their process is gone); other live sessions (other workers, other checkouts) keep theirs."""
    for (name,) in admin.execute("SELECT datname FROM pg_database").fetchall():
        match = _PG_NAME.fullmatch(name)
        if match is not None and not _pid_alive(int(match["pid"])):
            with contextlib.suppress(psycopg.Error):  # another session may be dropping it too
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def _postgres_database(worker_id: str) -> Iterator[str]:
    """The PostgreSQL database of this test session, or of this xdist worker under ``pytest -n``
    (``paysdk_test_<worker>_<pid>``: created once, dropped at the end; databases left by killed runs
    are dropped first)."""
    name = f"paysdk_test_{worker_id}_{os.getpid()}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN_URL}: {exc}", pytrace=False)
    with admin:
        _drop_leftover_databases(admin)
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
        # A commit does not wait for its WAL to reach the disk: a test never outlives a crash of the
        # server, and several thousand commits each waiting on an fsync made the PostgreSQL tests wait.
        admin.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
        url = _pg_url_for(name)
        try:
            yield url
        finally:
            _release(url)
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


#: One statement that empties every table of the public schema but the schema's revision (``alembic_version``,
#: as :meth:`~paysdk.server.db.Database.reset` leaves it; the foreign-key triggers off for it:
#: every row of every table goes, so no order is needed) and puts back every sequence used since the last
#: time (``setval``, not ``ALTER SEQUENCE ... RESTART``: no catalog change, ~0.5 ms each where the 23
#: ``ALTER`` s cost ~12 ms of the server's CPU); then the schema's signature (tables, indexes, columns).
_EMPTY_POSTGRES = """
DO $$
DECLARE item record;
BEGIN
  SET LOCAL session_replication_role = replica;
  FOR item IN SELECT tablename FROM pg_tables
      WHERE schemaname = 'public' AND tablename <> 'alembic_version' LOOP
    EXECUTE format('DELETE FROM public.%I', item.tablename);
  END LOOP;
  FOR item IN SELECT sequencename, start_value FROM pg_sequences
      WHERE schemaname = 'public' AND last_value IS NOT NULL LOOP
    PERFORM setval(format('public.%I', item.sequencename), item.start_value, false);
  END LOOP;
END $$;
SELECT md5(coalesce(string_agg(c.relname || ':' || a.attname || ':' || a.atttypid::text, ','
    ORDER BY c.relname, a.attnum), ''))
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
  WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') AND a.attnum > 0 AND NOT a.attisdropped
"""

#: The schema signature the emptying found before the test (``db_url``; both databases).
_SCHEMA_SIGNATURE = pytest.StashKey[str]()

#: The worker's kept connection per PostgreSQL database, for emptying it between tests.
_EMPTYING: dict[str, psycopg.Connection[Any]] = {}


def _empty_postgres_tables(url: str) -> str:
    """Every table of ``url`` emptied and its used sequences restarted, in one round trip on a kept
    connection (~2 ms of the server's CPU; a new connection costs ~6 ms of it, ``TRUNCATE`` ~0.3 s of
    wall time on a few dozen tables). Returns the schema's signature (:data:`_EMPTY_POSTGRES`). A role
    that may not set the replication role falls back to ``TRUNCATE``."""
    connection = _EMPTYING.get(url)
    if connection is None or connection.closed or connection.broken:
        connection = _EMPTYING[url] = psycopg.connect(url, autocommit=True)
    try:
        for attempt in itertools.count(1):
            try:
                with connection.cursor() as cursor:
                    cursor.execute(_EMPTY_POSTGRES)
                    cursor.nextset()  # past the DO block's result: the signature
                    signature = cursor.fetchone()
                break
            except psycopg.errors.DeadlockDetected:
                # The previous test's server may still finish a job (a batch) as it stops: its rows are
                # locked in another order. The emptying was rolled back: once that work is done, again.
                if attempt == 50:
                    raise
                time.sleep(0.2)
    except psycopg.errors.InsufficientPrivilege:
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        ]
        if tables:
            names = ", ".join(f'"{table}"' for table in tables)
            connection.execute(f"TRUNCATE {names} RESTART IDENTITY CASCADE")
        return ""
    assert signature is not None
    return str(signature[0])


@pytest.fixture(scope="session")
def _sqlite_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The SQLite database file of this test session or xdist worker, emptied before each test as the
    PostgreSQL one is (``db_url``)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'server.db'}"
    yield url
    _release(url)


#: The worker's kept connection per SQLite file, for emptying it between tests (foreign keys off).
_EMPTYING_SQLITE: dict[str, sqlite3.Connection] = {}


def _empty_sqlite_tables(url: str) -> str:
    """Every table of the SQLite file of ``url`` that holds a row, but the schema's revision, emptied
    (``AUTOINCREMENT`` counters too) in one transaction on a kept connection, and its WAL folded back into
    the file (each test starts on a short log, as on a new file); returns the schema's signature (every
    table and index as created). Empty tables are left alone: a ``DELETE`` rewrites their pages even so
    (D491)."""
    connection = _EMPTYING_SQLITE.get(url)
    if connection is None:
        connection = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30, isolation_level=None)
        connection.execute("PRAGMA foreign_keys=OFF")
        _EMPTYING_SQLITE[url] = connection
    tables = [
        row[0]
        for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_stat%' "
            "AND name <> 'alembic_version'"
        )
    ]
    if tables:
        occupied = " UNION ALL ".join(
            f"SELECT '{name}' WHERE EXISTS (SELECT 1 FROM \"{name}\")" for name in tables
        )
        connection.execute("BEGIN IMMEDIATE")
        try:
            for (table,) in connection.execute(occupied).fetchall():
                connection.execute(f'DELETE FROM "{table}"')
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    signature = connection.execute(
        "SELECT group_concat(type || ':' || name || ':' || coalesce(sql, ''), '|') FROM "
        "(SELECT type, name, sql FROM sqlite_master ORDER BY type, name)"
    ).fetchone()
    return str(signature[0] if signature else "")


def _release(url: str) -> None:
    """Close what the worker kept for the database of ``url``: its app engine and its emptying connection."""
    kept = _SHARED_ENGINES.pop(url, None)
    if kept is not None:
        kept[0].dispose()
    postgres, sqlite = _EMPTYING.pop(url, None), _EMPTYING_SQLITE.pop(url, None)
    for emptying in (postgres, sqlite):
        if emptying is not None:
            emptying.close()


#: The app fixtures' engine per database of the worker (PostgreSQL or SQLite), kept from test to test with
#: the schema signature its last app found current: its pool and compiled statements stay warm (a new engine
#: compiled every statement again, and each new PostgreSQL connection cost its server ~6 ms of CPU). Each
#: test still gets an app and a :class:`~paysdk.server.db.Database` of its own over it.
_SHARED_ENGINES: dict[str, tuple[Engine, str]] = {}


def _app_database(url: str, signature: str) -> Database:
    """A database over the worker's kept engine of ``url`` for an app fixture. Its schema is taken as
    current when the signature is the one the previous app found current; else (a test dropped or altered
    a table) it is checked again."""
    kept = _SHARED_ENGINES.get(url)
    if kept is None:
        database = Database(url)
    else:
        database = Database(url, engine=kept[0])
        database.schema_made = kept[1] == signature
    if database.schema_made or database.schema_current():
        _SHARED_ENGINES[url] = (database.engine, signature)  # what a current schema looks like
    else:
        database.create_schema()
        _SHARED_ENGINES[url] = (database.engine, "")  # the next test looks again
    return database


@pytest.fixture(params=["sqlite", "postgresql"], ids=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest) -> str:
    """A database URL for the reference server (see the module docstring)."""
    if request.param == "sqlite":
        url: str = request.getfixturevalue("_sqlite_database")
        request.node.stash[_SCHEMA_SIGNATURE] = _empty_sqlite_tables(url)
    else:
        url = request.getfixturevalue("_postgres_database")
        request.node.stash[_SCHEMA_SIGNATURE] = _empty_postgres_tables(url)
    run_reset_hooks()  # the process-wide caches of rows just deleted (the deprecation marks) forget them
    return url


@pytest.fixture
def server_recorder() -> Recorder | None:
    """Where ``app`` and ``live_server`` record their public exchanges: nowhere here; the e2e and CLI
    suites override it with a :class:`~openapi_conformance.Recorder` checked against ``/openapi.json``."""
    return None


class PinnedWall:
    """A wall clock that reads ``start`` when made and runs on at the real (monotonic) pace."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self._started = time.monotonic()

    def __call__(self) -> datetime:
        return self.start + timedelta(seconds=time.monotonic() - self._started)


@pytest.fixture
def wall_clock() -> datetime | None:
    """The instant the server's wall clock starts at: ``None`` (the real clock) unless a test
    parametrizes ``wall_clock`` directly (see the module docstring)."""
    return None


@pytest.fixture
def app(
    db_url: str,
    server_recorder: Recorder | None,
    wall_clock: datetime | None,
    request: pytest.FixtureRequest,
) -> Iterator[FastAPI]:
    """The reference server app (no ticker: drive time with ``/_sandbox/clock/advance``); its wall clock
    pinned to ``wall_clock`` when a test gives one. On PostgreSQL its database is over the worker's kept
    engine (:data:`_SHARED_ENGINES`); the tables are emptied before each test."""
    clock = Clock(PinnedWall(wall_clock)) if wall_clock is not None else None
    database = _app_database(db_url, request.node.stash.get(_SCHEMA_SIGNATURE, ""))
    application = create_app(db_url, start_ticker=False, clock=clock, database=database)
    if server_recorder is not None:
        server_recorder.install(application)
    try:
        yield application
    finally:
        application.state.paysdk.db.dispose()  # a kept engine stays open


@pytest.fixture
async def asgi_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An async HTTP client talking to ``app`` in process."""
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as client:
        yield client


MerchantFactory = Callable[..., Awaitable[SandboxClient]]


@pytest.fixture
def merchant_factory(asgi_client: httpx.AsyncClient) -> MerchantFactory:
    """``await merchant_factory(callback_url=..., three_ds=True, ...)`` creates a client."""

    async def make(**fields: Any) -> SandboxClient:
        spec = SandboxClientCreate.model_validate(fields)
        response = await asgi_client.post(
            "/_sandbox/clients",
            content=_json.dumps(spec.model_dump(by_alias=True, exclude_none=True)),
            headers=JSON_TYPE,
        )
        assert response.status_code == 201, response.text
        return SandboxClient.model_validate(_json.loads(response.content))

    return make


@pytest.fixture
async def merchant(merchant_factory: MerchantFactory) -> SandboxClient:
    """A client with the default settings (no callback URL)."""
    return await merchant_factory()


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@pytest.fixture
def live_server(db_url: str, server_recorder: Recorder | None) -> Iterator[str]:
    """The reference server over a real socket (uvicorn in a thread, lifespan and ticker on)."""
    application = create_app(db_url, start_ticker=True, tick_interval=0.2)
    if server_recorder is not None:
        server_recorder.install(application)
    # The connection settings of paysdk serve (head timeout, lingering close), as served.
    options = uvicorn_connection_options(KEEP_ALIVE_TIMEOUT)
    with serve_in_thread(
        application, lifespan="on", what="the live server", stop_timeout=15, **options
    ) as served:
        yield served.url


@dataclass
class ReceivedCallback:
    """One request the sink received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)

    def json(self) -> Any:
        """The body parsed with :func:`paysdk._json.loads` (Decimal-exact)."""
        return _json.loads(self.body)


#: ``socket.SO_REUSEPORT`` where the platform has it (not on Windows).
_REUSE_PORT: int | None = getattr(socket, "SO_REUSEPORT", None)


class _ReusePortServer(ThreadingHTTPServer):
    allow_reuse_port = _REUSE_PORT is not None  # binds beside the sink's reservation of its port


class CallbackSink:
    """A small real HTTP server that records callbacks and answers scripted statuses (200 by default)."""

    def __init__(self) -> None:
        self.received: list[ReceivedCallback] = []
        self._statuses: list[int] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # The port is held from here to :meth:`close` by a bound socket that never listens (both it and
        # the server's set SO_REUSEPORT): while the sink is down, deliveries are refused, and no other
        # test's sink, in this worker or another, can be given the port and receive them.
        # Where the platform has no SO_REUSEPORT (Windows), the reservation only picks the port.
        self._reservation = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if _REUSE_PORT is not None:
            self._reservation.setsockopt(socket.SOL_SOCKET, _REUSE_PORT, 1)
        self._reservation.bind(("127.0.0.1", 0))
        self.port: int = self._reservation.getsockname()[1]
        if _REUSE_PORT is None:
            self._reservation.close()
        self.up()

    @property
    def url(self) -> str:
        """Where to send callbacks."""
        return f"http://127.0.0.1:{self.port}/callbacks"

    def respond_with(self, statuses: list[int]) -> None:
        """Answer the next requests with these statuses, in order (then 200 again)."""
        with self._lock:
            self._statuses = list(statuses)

    def _next_status(self) -> int:
        with self._lock:
            return self._statuses.pop(0) if self._statuses else 200

    def _record(self, item: ReceivedCallback) -> None:
        with self._lock:
            self.received.append(item)

    def up(self) -> None:
        """Start listening (again) on the same port."""
        if self._server is not None:
            return
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {key.lower(): value for key, value in self.headers.items()}
                sink._record(ReceivedCallback("POST", self.path, headers, body))
                status = sink._next_status()
                payload = b'{"ok":true}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return

        server = _ReusePortServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def down(self) -> None:
        """Stop listening: deliveries get 'connection refused'."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def close(self) -> None:
        """Stop listening and give the port back."""
        self.down()
        self._reservation.close()

    def wait_for(self, count: int, timeout: float = 60.0) -> list[ReceivedCallback]:
        """Block until ``count`` callbacks arrived (for tests against the live server's ticker)."""
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} callbacks, got {len(self.received)}")
            time.sleep(0.02)
        return list(self.received)


@pytest.fixture
def callback_sink() -> Iterator[CallbackSink]:
    """A running :class:`CallbackSink`."""
    sink = CallbackSink()
    try:
        yield sink
    finally:
        sink.close()


@dataclass
class HeldRequest:
    """The first request to ``path``, held in the server's handler (thread-safe events)."""

    path: str
    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def hold_first_request(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], HeldRequest]:
    """See the module docstring: a request still in progress, for the idempotency tests (D17)."""
    import asyncio

    from paysdk.server.asgi.idempotency import Idempotency

    original = Idempotency.forward

    def hold(path: str) -> HeldRequest:
        held = HeldRequest(path)

        async def dispatch(self: Idempotency, scope: Any, receive: Any, send: Any) -> None:
            if scope["path"] != path or held.entered.is_set():
                await original(self, scope, receive, send)
                return
            held.entered.set()
            await asyncio.to_thread(held.release.wait, 20)  # the test may release it from another thread
            try:
                await original(self, scope, receive, send)
            finally:
                held.finished.set()

        monkeypatch.setattr(Idempotency, "forward", dispatch)
        return held

    return hold


__all__ = ["covers_check"]  # an autouse fixture of every test (a no-op without the covers marker)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``heavy`` tests first (a stable sort, the same on every xdist worker): started last, one of
    them would keep its worker busy after the others are done, and the run waits on it."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """With ``$PAYSDK_COVERAGE_REPORT`` set, write which SDK methods the collected tests cover; then freeze
    what the process made so far."""
    report_collected(session)
    # What the imports and the collection made lives as long as the process: frozen, it is left out of
    # every later collection (D769), as ``paysdk serve`` freezes the server's imports (D308).
    gc.collect()
    gc.freeze()


def pytest_sessionstart(session: pytest.Session) -> None:
    """The test processes collect garbage as a serving server does (D769): a test makes hundreds of
    requests to in-process and live servers, and Python's default young-generation threshold collects
    every few of them (the whole suite: ~7% less CPU, D769)."""
    gc.set_threshold(*SERVING_THRESHOLDS)
    _interruptible_children()


def _interruptible_children() -> None:
    """Let the commands the tests start be stopped as Ctrl-C stops them (``SIGINT``), however pytest was
    started. A shell starts a background command (``make test &``, ``nohup``, a script's ``cmd &``) with
    ``SIGINT`` ignored; every process inherits that through ``exec``, and a Python process that starts with
    it ignored never raises ``KeyboardInterrupt``: ``paysdk callbacks listen`` and ``paysdk sandbox tail``
    would then run past every test's Ctrl-C. A handler (unlike an ignored signal) is reset to the default at
    ``exec``, so the children start as they would from a terminal."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
