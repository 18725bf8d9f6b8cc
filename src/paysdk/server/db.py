"""Storage of the reference server: the engine, the session helper, the schema check and the reset.

The mapped tables are declared elsewhere (the core's in :mod:`paysdk.server.core_tables`, each family's
in its ``*_tables`` module); this module imports neither them nor SQLAlchemy's ORM until a session, a
schema creation or a reset of other families needs them, so a server can start and answer its readiness
probe first (:mod:`paysdk.server.boot`, D310).

Decisions kept here:

* Money is stored as scaled integers (``amount_cents`` = amount x 100, D18); never ``REAL``/``float``.
  :func:`to_cents` and :func:`from_cents` convert with ``Decimal`` arithmetic only.
* Times are stored as naive UTC ``DateTime`` and come back as aware UTC datetimes (:class:`UTCDateTime`),
  so SQLite and PostgreSQL behave the same.
* The same schema runs on SQLite and PostgreSQL. On SQLite every transaction starts with
  ``BEGIN IMMEDIATE`` (WAL journal, busy timeout) so concurrent writers queue instead of failing;
  on PostgreSQL state changes are guarded by conditional ``UPDATE ... WHERE status = 'pending'``.
* ``postgresql://`` (and ``postgres://``) URLs are rewritten to the psycopg 3 driver.
* A SQLite file the server creates is ``0600`` and the directories it creates ``0700``; an existing file
  other users can read is warned about (D362). Servers started together create, upgrade and check the
  schema under a PostgreSQL advisory lock (D360); a database of an earlier version is upgraded in place
  by :mod:`paysdk.server.migrations` (D470).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sqlalchemy import Table, create_engine, event, text
from sqlalchemy.engine import Connection, Engine, make_url

from paysdk.server.hotpath.driver import dbapi, execute_script
from paysdk.server.hotpath.statements import STATEMENTS
from paysdk.server.sqltypes import UTCDateTime

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from paysdk.server.families import Family

__all__ = [
    "Database",
    "DatabaseUnavailable",
    "SchemaMismatch",
    "UTCDateTime",
    "default_database_url",
    "from_cents",
    "is_in_memory_sqlite",
    "normalize_database_url",
    "on_reset",
    "run_reset_hooks",
    "to_cents",
]

T = TypeVar("T")
log = logging.getLogger("paysdk.server")

#: Group-commit batches between two WAL checkpoints of :meth:`Database.batch_transaction` (a batch adds
#: some ten pages to the WAL; SQLite's automatic checkpoint runs at 1,000).
CHECKPOINT_EVERY = 100

_CENT = Decimal("0.01")

#: The PostgreSQL advisory lock key under which servers create and check the schema ("paysdk" in ASCII,
#: then 1): a fixed 64-bit key, D360.
SCHEMA_LOCK_KEY = 0x70617973646B_0001
_ADVISORY_LOCK = text("SELECT pg_advisory_lock(:key)")
_ADVISORY_UNLOCK = text("SELECT pg_advisory_unlock(:key)")


def to_cents(amount: Decimal) -> int:
    """``Decimal("10.50")`` -> ``1050``. The amount must have at most 2 decimal places (checked before)."""
    scaled = (amount * 100).to_integral_exact()
    if scaled != amount * 100:
        raise ValueError("amount has more than 2 decimal places")
    return int(scaled)


def from_cents(cents: int) -> Decimal:
    """``1050`` -> ``Decimal("10.50")`` (always two places)."""
    return Decimal(cents).scaleb(-2).quantize(_CENT)


class DatabaseUnavailable(RuntimeError):
    """The database could not be opened before the server listened (a wrong host, port or name, a refused
    login): the message is the driver's own words, never SQLAlchemy's class name or a password."""

    @classmethod
    def from_driver(cls, exc: BaseException) -> DatabaseUnavailable:
        """From SQLAlchemy's ``OperationalError``: its driver's message on one line."""
        orig = getattr(exc, "orig", None)
        return cls(" ".join(str(orig).split()) if orig is not None else "the database is unreachable")


class SchemaMismatch(RuntimeError):
    """The database cannot be brought to this version's schema: a newer version made it, or its tables
    match no revision (see :meth:`Database.create_schema`); the message says which, and nothing was
    changed."""


def default_database_url() -> str:
    """``sqlite:///<user data dir>/sandbox.db``: the directory is made ``0700`` and the file ``0600``.

    The file holds every client's tokens. Both are created with those modes (and tightened when an
    older version left them wider); SQLite gives its ``-wal``/``-shm`` files the mode of the database
    file, so they are ``0600`` too.
    """
    import platformdirs

    directory = Path(platformdirs.user_data_dir("paysdk"))
    _private_directories(directory)
    directory.chmod(0o700)  # our own directory: tightened if an older version left it wider
    path = directory / "sandbox.db"
    _private_sqlite_file(path, tighten=True)
    return f"sqlite:///{path}"


#: The files SQLite keeps next to a database (they hold its pages too).
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def _private_directories(directory: Path) -> None:
    """Create ``directory`` and its missing parents with mode ``0700`` whatever the umask (D362);
    directories that exist are left as they are."""
    missing: list[Path] = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for created in reversed(missing):
        try:
            created.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by someone else: not ours to change
            continue
        created.chmod(0o700)


def _private_sqlite_file(path: Path, *, tighten: bool) -> str | None:
    """Create the SQLite database ``path`` empty with mode ``0600`` (an empty file is a valid SQLite
    database; SQLite gives its ``-wal``/``-shm``/``-journal`` files the database file's mode), D362.

    An existing database (or side file) other users may read or write is tightened to ``0600`` when
    ``tighten`` (the default database, in our own directory), else left as it is and described in the
    warning returned (``None``: nothing to warn about)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        pass
    else:
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
        finally:
            os.close(fd)
        return None
    files = [path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)]
    loose = [
        (file, mode) for file in files if file.exists() and (mode := file.stat().st_mode & 0o777) & 0o077
    ]
    if not loose:
        return None
    if tighten:
        for file, _ in loose:
            file.chmod(0o600)
        return None
    listed = ", ".join(f"{file} (mode {mode:04o})" for file, mode in loose)
    return (
        f"the database file is open to other users of this machine: {listed}; it holds merchant tokens and "
        "secrets: chmod 600 it"
    )


def normalize_database_url(url: str | None) -> str:
    """Default to the per-user SQLite file; expand ``~`` in a SQLite path; PostgreSQL goes to psycopg 3."""
    if url is None or not url.strip():
        return default_database_url()
    url = url.strip()
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    if url.startswith("sqlite:///"):
        path, query, params = url[len("sqlite:///") :].partition("?")
        if path and path != ":memory:":
            file = Path(path).expanduser()  # sqlite:///~/x.db is the home directory's x.db, not ./~/x.db
            _private_directories(file.parent)  # those it makes are 0700 (D362)
            url = f"sqlite:///{file}{query}{params}"
    return url


#: Why an in-memory SQLite database cannot serve (D771): the sentence of the ``ValueError`` and of
#: ``paysdk serve --db``'s usage error.
IN_MEMORY_REFUSED = (
    "is an in-memory SQLite database: the server needs one that all its connections and processes share"
)


def is_in_memory_sqlite(url: str) -> bool:
    """Whether ``url`` names an in-memory SQLite database: ``sqlite://``, ``sqlite:///:memory:``, or a
    ``file:`` URI in memory (``file::memory:``, ``?mode=memory``). The server refuses one (D771)."""
    parsed = make_url(url.strip())
    if parsed.get_backend_name() != "sqlite":
        return False
    database = parsed.database or ""
    return (
        database in ("", ":memory:")
        or database.startswith("file::memory:")
        or (database.startswith("file:") and parsed.query.get("mode") == "memory")
    )


#: SQLite's columns and indexes of every table, in two queries. Quoted names of no input.
_SQLITE_COLUMNS = (
    "SELECT m.name, p.name FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p WHERE m.type = 'table'"
)
_SQLITE_INDEXES = "SELECT tbl_name, name FROM sqlite_master WHERE type = 'index'"


#: PostgreSQL's columns and indexes of the current schema's tables, in two queries (the inspector makes two
#: per table).
_POSTGRESQL_COLUMNS = (
    "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()"
)
_POSTGRESQL_INDEXES = "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = current_schema()"


def _existing_schema(connection: Connection) -> dict[str, tuple[set[str], set[str]]]:
    """``table name -> (column names, index names)`` of every table the database holds, for the schema
    check, in two queries (SQLAlchemy's inspector makes two per table: ~11 ms of a start on 44 SQLite
    tables against ~1 ms; issue 12). The index names include those the database made itself (SQLite's
    ``sqlite_autoindex_*``, PostgreSQL's primary and unique keys)."""
    sqlite = connection.dialect.name == "sqlite"
    found: dict[str, tuple[set[str], set[str]]] = {}
    for table_name, column in connection.exec_driver_sql(_SQLITE_COLUMNS if sqlite else _POSTGRESQL_COLUMNS):
        found.setdefault(table_name, (set(), set()))[0].add(column)
    for table_name, index in connection.exec_driver_sql(_SQLITE_INDEXES if sqlite else _POSTGRESQL_INDEXES):
        found.setdefault(table_name, (set(), set()))[1].add(index)
    return found


def _lacking(
    expected: Mapping[str, tuple[Iterable[str], Iterable[str]]], existing: Mapping[str, Any]
) -> str | None:
    """The first table of ``expected`` (``name -> (columns, indexes)``) the database lacks a column or
    index of, as ``"table t lacks column c, index i"`` (a table missing whole lacks everything); ``None``
    when none does."""
    for name, (columns, indexes) in expected.items():
        present_columns, present_indexes = existing.get(name, (set(), set()))
        missing = [f"column {c}" for c in columns if c not in present_columns]
        missing += [f"index {i}" for i in indexes if i not in present_indexes]
        if missing:
            return f"table {name} lacks {', '.join(missing)}"
    return None


class Database:
    """The engine and session factory of one server instance.

    ``families``: the API families whose tables it creates and resets (default
    :data:`paysdk.server.families.FAMILIES`, read when the schema is created or reset).
    ``engine``: the :attr:`engine` of another instance over the same database to serve with instead of
    making one; this instance never disposes of it (its own SQLite connections with settings of their own,
    the kept ones, are discarded, never returned to the shared pool). A test suite that makes an app per
    test over one database so keeps its pool and its compiled statements warm from app to app (a new
    engine compiles every statement again, and a new PostgreSQL connection costs the server ~6 ms of CPU).
    ``ValueError`` for an engine of another database, or an in-memory SQLite database (D771).
    """

    def __init__(
        self,
        url: str | None,
        families: Sequence[Family] | None = None,
        *,
        hotpath: bool = True,
        engine: Engine | None = None,
    ) -> None:
        self._families = None if families is None else tuple(families)
        #: The default families (:data:`paysdk.server.families.FAMILIES`), whose schema and reset order
        #: :mod:`paysdk.server.schema_snapshot` holds.
        self.default_families = families is None
        self.url = normalize_database_url(url)
        parsed = make_url(self.url)
        self.dialect = parsed.get_backend_name()
        #: Why the SQLite database file is open to other users (``None``: it is not, or there is no file),
        #: logged once, here, as a warning (``paysdk serve`` shows it, D362).
        self.file_warning: str | None = None
        if engine is not None and (
            engine.url.get_backend_name() != self.dialect or engine.url.database != parsed.database
        ):
            raise ValueError("the engine given must be of the same database")
        if self.dialect == "sqlite":
            if is_in_memory_sqlite(self.url):
                raise ValueError(f"{self.url!r} {IN_MEMORY_REFUSED}: use sqlite:///FILE")
            if not str(parsed.database).startswith("file:"):
                self.file_warning = _private_sqlite_file(Path(str(parsed.database)), tighten=False)
                if self.file_warning is not None:
                    log.warning("%s", self.file_warning)
            if engine is not None:
                self.engine: Engine = engine  # made by another instance: configured (see the docstring)
            else:
                self.engine = create_engine(
                    self.url, connect_args={"check_same_thread": False, "timeout": 30}
                )
                _configure_sqlite(self.engine)
        elif engine is not None and self.dialect == "postgresql":
            self.engine = engine  # shared with other instances (see the class docstring)
        elif self.dialect == "postgresql":
            self.engine = create_engine(self.url, pool_pre_ping=True, pool_size=5, max_overflow=10)
        else:
            raise ValueError(f"unsupported database {self.dialect!r}: use sqlite:/// or postgresql://")
        self._owns_engine = engine is None or self.engine is not engine
        self._sessions: sessionmaker[Session] | None = None  # made by the first session (D310)
        #: Whether this instance saw the database hold this version's schema (:meth:`schema_current`
        #: answered ``True``, or :meth:`create_schema` made it so): ``create_app`` then does not check it
        #: again (D622).
        self.schema_made = False
        # SQLite takes one writer at a time, and a waiting writer sleeps in SQLite's busy handler.
        # Running this instance's transactions on one thread queues them in order instead, with
        # one warm connection. Other processes on the same file still meet the busy timeout.
        self.executor: concurrent.futures.ThreadPoolExecutor | None = (
            concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="paysdk-sqlite")
            if self.dialect == "sqlite"
            else None
        )
        #: Held by whoever runs this instance's SQLite work: the worker thread (:meth:`exclusive`), or
        #: the event loop for brief work when the worker is idle (a group-commit batch, the fault look:
        #: :meth:`paysdk.server.context.ServerContext.brief`), so the two never wait on SQLite's lock.
        self.lock = threading.Lock()
        self._batch_connection: Connection | None = None
        self._batches = 0
        self._reset_connection: Connection | None = None
        self._reset_sql: tuple[str, ...] | None = None
        self._occupied: str | None = None
        #: Whether the speed machinery (:mod:`paysdk.server.hotpath`) serves this database: compiled
        #: statements on the DBAPI cursor, group commits, the ledger's fast path. ``False`` runs the plain
        #: path (SQLAlchemy's ordinary execution, a transaction per call): the equivalence tests' other side.
        self.hotpath = hotpath
        if not hotpath:
            STATEMENTS.switch_off(self.engine.dialect)

    def exclusive(self, call: Callable[[], T]) -> T:
        """``call()`` holding :attr:`lock` (what the SQLite worker thread runs)."""
        with self.lock:
            return call()

    @property
    def families(self) -> tuple[Family, ...]:
        """The registrations whose tables this database holds."""
        if self._families is None:
            from paysdk.server.families import FAMILIES

            self._families = FAMILIES
        return self._families

    def _tables(self) -> list[Table]:
        """The registered tables, parents before children."""
        from sqlalchemy.schema import sort_tables

        from paysdk.server.families import schema_tables

        return sort_tables([cast(Table, row.__table__) for row in schema_tables(self.families)])

    def create_schema(self) -> None:
        """Bring the database to this version's schema, under :meth:`_schema_lock` (servers started
        together never create or upgrade a table twice, D360).

        Default families (D470-D474): :func:`paysdk.server.migrations.prepare` creates the tables of a new
        database (stamped with the head revision), upgrades one made by an earlier version in place (the
        shipped alembic revisions, in one transaction), and refuses (:class:`SchemaMismatch`, nothing
        changed) one of a newer version or one that matches no revision. Other families (a server of a
        few families, tests): their missing tables are created and a table lacking a column or index of
        theirs is refused, as before migrations existed."""
        with self._schema_lock():
            if self.default_families:
                from paysdk.server.migrations import prepare

                prepare(self)
                self.schema_made = True
                return
            from paysdk.server.core_tables import Base

            tables = self._tables()
            expected = {
                t.name: ([c.name for c in t.columns], [str(i.name) for i in t.indexes]) for t in tables
            }
            Base.metadata.create_all(self.engine, tables=tables)
            with self.engine.connect() as connection:
                lacking = _lacking(expected, _existing_schema(connection))
        if lacking is not None:
            raise SchemaMismatch(f"the database's tables differ from this server's families: {lacking}")
        self.schema_made = True

    @contextlib.contextmanager
    def _schema_lock(self) -> Iterator[None]:
        """Hold the schema's lock across processes (D360, D473). PostgreSQL: the session advisory lock
        :data:`SCHEMA_LOCK_KEY`, on a connection of its own, released after (or by the server when the
        process dies): one process creates or upgrades, the others then find the schema current. SQLite:
        nothing more is needed: the schema is read, created or upgraded in one transaction, which
        ``BEGIN IMMEDIATE`` makes the file's only writer."""
        if self.dialect != "postgresql":
            yield
            return
        with self.engine.connect() as connection:
            connection.execute(_ADVISORY_LOCK, {"key": SCHEMA_LOCK_KEY})
            connection.commit()  # a session lock: it outlives the transaction
            try:
                yield
            finally:
                try:
                    connection.execute(_ADVISORY_UNLOCK, {"key": SCHEMA_LOCK_KEY})
                    connection.commit()
                except Exception:
                    connection.invalidate()  # closing the connection releases the lock
                    raise

    def schema_current(self) -> bool:
        """Whether the database already holds this version's schema: its ``alembic_version`` row names
        :data:`paysdk.server.schema_snapshot.REVISION` and it holds every table, column and index of
        :data:`~paysdk.server.schema_snapshot.TABLES`, checked with Core queries only: neither a table
        module nor alembic is imported (D310, D474). ``False`` for a server of other families than the
        default ones (their tables are in no snapshot) and for a database :meth:`create_schema` still has
        to create, stamp, upgrade or refuse. A read outside :meth:`_schema_lock`: a schema another process
        is creating or upgrading is seen whole or not at all (one transaction), and ``False`` sends the
        caller to the locked :meth:`create_schema`."""
        if not self.default_families:
            return False
        from paysdk.server.migrations import read_version
        from paysdk.server.schema_snapshot import REVISION, TABLES

        with self.engine.connect() as connection:
            found = _existing_schema(connection)
            current = read_version(connection, found) == REVISION and _lacking(TABLES, found) is None
        self.schema_made = current
        return current

    @contextlib.contextmanager
    def session(self) -> Iterator[Session]:
        """A session inside one transaction: committed on success, rolled back on error."""
        if self._sessions is None:
            from sqlalchemy.orm import sessionmaker

            self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        with self._sessions() as session, session.begin():
            yield session

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A Core connection inside one transaction (no ORM session): committed on success, rolled back on
        error. The hot path of the public endpoints uses it with Core statements, whose compiled forms
        SQLAlchemy caches, so a request costs a few statement executions rather than a unit of work."""
        with self.engine.begin() as connection:
            yield connection

    @contextlib.contextmanager
    def batch_transaction(self) -> Iterator[Connection]:
        """:meth:`transaction` for a group-commit batch or other brief work (the caller holds
        :attr:`lock`; see :meth:`paysdk.server.context.ServerContext.brief`).

        On SQLite it runs on one connection kept for batches: its page cache stays warm from one batch to
        the next (a pooled connection finds it stale whenever another connection wrote), and it never
        checkpoints the WAL itself. Every :data:`CHECKPOINT_EVERY` batches a passive checkpoint is handed
        to the worker thread instead, so the fsyncs of a checkpoint never run inside a batch (which may
        run on the event loop). Other connections keep SQLite's automatic checkpoints.
        """
        if self.executor is None:
            with self.transaction() as pooled:
                yield pooled
            return
        kept = self._batch_connection
        if kept is None or kept.closed or kept.invalidated:
            kept = self._batch_connection = self.engine.connect()
            execute_script(kept, ["PRAGMA wal_autocheckpoint=0"])
        with kept.begin():
            yield kept
        self._batches += 1
        if self._batches % CHECKPOINT_EVERY == 0:
            with contextlib.suppress(RuntimeError):  # the executor is shut down: the server is stopping
                self.executor.submit(self._checkpoint)

    def _checkpoint(self) -> None:
        """Copy the WAL into the database file (``PASSIVE``: never waits for or blocks the writers)."""
        try:
            with self.engine.connect() as connection:
                dbapi(connection).execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except Exception:  # a later checkpoint, or SQLite's automatic one on another connection, catches up
            log.debug("WAL checkpoint failed", exc_info=True)

    def reset(self) -> None:
        """Delete every row of every table the core and the families reset (the control plane's
        ``/_sandbox/reset``, D300-D302), in :func:`paysdk.server.families.reset_order`, in one transaction.

        SQLite: on a connection kept for resets, with foreign keys off on it (a ``DELETE`` without
        ``WHERE`` then empties a table in one step, SQLite's truncate optimization, instead of visiting
        each row for its children) and ``secure_delete=FAST``; one query finds the tables holding rows and
        only those get their prepared ``DELETE`` (an empty table's would still rewrite its pages, D491),
        the statements reused from one reset to the next (the driver's statement cache). PostgreSQL: the
        same ``DELETE`` s on a pooled connection (never ``TRUNCATE``: its exclusive locks would block, and
        could deadlock with, the other server processes' readers). Kept tables (the wallet's and the
        processor's keys) are left alone. The hooks of :func:`on_reset` run before the transaction and
        again after its commit.
        """
        statements = self._reset_statements()
        run_reset_hooks()
        if self.executor is not None:
            self._reset_sqlite(statements)
        else:
            with self.engine.begin() as connection, dbapi(connection).cursor() as cursor:
                for sql in statements:
                    cursor.execute(sql)
        run_reset_hooks()

    def _reset_statements(self) -> tuple[str, ...]:
        if self._reset_sql is None:
            if self.default_families:  # their order is in the snapshot (D310)
                from paysdk.server.schema_snapshot import RESET_ORDER

                names: Sequence[str] = RESET_ORDER
            else:
                from paysdk.server.families import reset_order

                names = [row.__tablename__ for row in reset_order(self.families)]
            quote = self.engine.dialect.identifier_preparer.quote
            # Quoted names of the schema's own tables, never input.
            self._reset_sql = tuple(f"DELETE FROM {quote(name)}" for name in names)  # noqa: S608
        return self._reset_sql

    def _occupied_sql(self, statements: Sequence[str]) -> str:
        """One query answering the positions in ``statements`` (``DELETE FROM x``) whose table has a row."""
        if self._occupied is None:
            self._occupied = " UNION ALL ".join(
                # Quoted names of the schema's own tables (from :meth:`_reset_statements`), never input.
                f"SELECT {index} WHERE EXISTS (SELECT 1 FROM {sql.removeprefix('DELETE FROM ')})"  # noqa: S608
                for index, sql in enumerate(statements)
            )
        return self._occupied

    def _reset_sqlite(self, statements: Sequence[str]) -> None:
        kept = self._reset_connection
        if kept is None or kept.closed or kept.invalidated:
            kept = self._reset_connection = self.engine.connect()
            # Outside any transaction (foreign_keys is a no-op inside one): this connection only resets.
            execute_script(
                kept, ["PRAGMA foreign_keys=OFF", "PRAGMA secure_delete=FAST", "PRAGMA wal_autocheckpoint=0"]
            )
        driver = dbapi(kept)
        driver.execute("BEGIN IMMEDIATE")
        try:
            # Only the tables holding rows: a DELETE rewrites the root page of an empty table and of
            # each of its indexes all the same (~100 WAL frames per reset of a nearly empty database).
            for (index,) in driver.execute(self._occupied_sql(statements)).fetchall():
                driver.execute(statements[index])
        except BaseException:
            driver.execute("ROLLBACK")
            raise
        driver.execute("COMMIT")

    def describe(self) -> str:
        """The backend name (``sqlite`` or ``postgresql``), never the URL (it may hold a password)."""
        return self.dialect

    def dispose(self) -> None:
        """Close every pooled connection (and the SQLite worker thread)."""
        if self.executor is not None:
            self.executor.shutdown(wait=True)
        with self.lock:
            for kept in (self._batch_connection, self._reset_connection):
                if kept is not None:
                    if not self._owns_engine:
                        kept.invalidate()  # its PRAGMAs are its own: never back into the shared pool
                    kept.close()
            self._batch_connection = self._reset_connection = None
        if self._owns_engine:
            self.engine.dispose()


_reset_hooks: list[Callable[[], None]] = []


def on_reset(hook: Callable[[], None]) -> None:
    """Run ``hook()`` before every :meth:`Database.reset` and again after its commit: how a process-wide
    cache of rows a reset deletes (the deprecation marks) learns of it, as the ORM events it would see for
    an ORM ``DELETE`` (a reset runs plain SQL)."""
    _reset_hooks.append(hook)


def run_reset_hooks() -> None:
    """Run the :func:`on_reset` hooks: what :meth:`Database.reset` does around its deletes, for rows
    deleted behind the server's back (a test harness that empties the tables with SQL of its own)."""
    for hook in _reset_hooks:
        hook()


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN IMMEDIATE instead of pysqlite's deferred BEGIN.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a commit survives an application crash; only a power loss can take the last
        # commits back. Right for a sandbox, and it saves an fsync per commit.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Straight on the DBAPI connection: exec_driver_sql would add SQLAlchemy's execution overhead
        # (several times SQLite's own cost) to every transaction.
        dbapi(connection).execute("BEGIN IMMEDIATE")
