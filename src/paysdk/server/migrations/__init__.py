"""Upgrades of databases made by earlier versions: alembic revisions shipped in the package (D470-D474).

The revisions are in ``versions/`` (``v0001_baseline``: paysdk at the end of issue 19; each later one a
schema change). They run through alembic's API with a :class:`~alembic.config.Config` built in code: no
``alembic.ini`` and no ``env.py``. :func:`prepare` is what :meth:`paysdk.server.db.Database.create_schema`
runs, under the schema's lock (D360), on one connection in ONE transaction: whatever fails leaves the
database as it was. It reads the database with Core queries and decides:

* no table of ours: the head's tables are created from the mapped tables and stamped with the head
  revision (no migration runs, alembic is not imported);
* an ``alembic_version`` row naming the head: nothing to do (the tables must then match the head's
  snapshot, else :class:`~paysdk.server.db.SchemaMismatch` says what differs);
* an older known revision: alembic upgrades it to the head (alembic imported only then);
* no ``alembic_version`` row (a database made before the migrations existed): its column and index names
  are compared with the snapshot of each revision (:mod:`.snapshots`, and the head's
  :data:`paysdk.server.schema_snapshot.TABLES`); the revision it matches exactly is stamped, then
  upgraded from;
* a revision this version does not know (a newer paysdk made it), or tables that match no revision:
  refused with :class:`~paysdk.server.db.SchemaMismatch`, nothing changed, nothing deleted.

On SQLite foreign keys are off on that connection while it migrates (alembic's batch mode copies a table
to change its columns; dropping the old one must not cascade), and ``PRAGMA foreign_key_check`` runs
before the commit.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import Column, MetaData, PrimaryKeyConstraint, String, Table, delete, insert, select
from sqlalchemy.exc import DBAPIError

from paysdk.server.hotpath.driver import dbapi

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory
    from sqlalchemy.engine import Connection

    from paysdk.server.db import Database

__all__ = ["VERSION_TABLE", "Step", "plan", "prepare", "read_version", "script_directory"]

log = logging.getLogger("paysdk.server")

#: Where alembic records a database's revision (its default name and layout).
VERSION_TABLE = "alembic_version"
_VERSION = Table(
    VERSION_TABLE,
    MetaData(),
    Column("version_num", String(32), nullable=False),
    PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"),
)

#: The folder of ``versions/`` (alembic's script directory).
SCRIPTS = Path(__file__).resolve().parent

Schema = Mapping[str, tuple[set[str], set[str]]]


@dataclass(frozen=True)
class Step:
    """What :func:`prepare` does with a database: ``action`` and the revision it found (``None``: none)."""

    action: Literal["current", "create", "stamp", "upgrade", "refuse"]
    found: str | None = None
    #: Why a database is refused (``action == "refuse"``).
    reason: str = ""


def read_version(connection: Connection, found: Schema) -> str | None:
    """The revision ``alembic_version`` records (``None``: no table, or no row), in one query."""
    if VERSION_TABLE not in found:
        return None
    versions = [row[0] for row in connection.execute(select(_VERSION.c.version_num))]
    if len(versions) > 1:
        return ",".join(sorted(versions))  # branches: no revision of ours
    return versions[0] if versions else None


def _snapshots() -> dict[str, Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]]:
    from paysdk.server.migrations.snapshots import SNAPSHOTS
    from paysdk.server.schema_snapshot import REVISION, TABLES

    return {**SNAPSHOTS, REVISION: TABLES}


def _signature(
    tables: Mapping[str, tuple[Iterable[str], Iterable[str]]],
    known_tables: set[str],
    known_indexes: set[str],
) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """The tables of ours (``known_tables``) with their column names and the index names of ours."""
    return {
        name: (frozenset(columns), frozenset(indexes) & known_indexes)
        for name, (columns, indexes) in tables.items()
        if name in known_tables
    }


def plan(found: Schema, version: str | None) -> Step:
    """What to do with a database holding the tables ``found`` (``name -> (columns, indexes)``, as
    :func:`paysdk.server.db._existing_schema` reads them) and the revision ``version`` (D471)."""
    from paysdk.server.db import _lacking
    from paysdk.server.schema_snapshot import REVISION, TABLES

    snapshots = _snapshots()
    known_tables = {name for tables in snapshots.values() for name in tables}
    known_indexes = {
        index for tables in snapshots.values() for _, indexes in tables.values() for index in indexes
    }
    ours = known_tables & set(found)
    if not ours:
        return Step("create", version)  # a new database (or one whose tables were all dropped)
    if version is not None:
        if version not in snapshots:
            return Step(
                "refuse",
                version,
                f"the database is at revision {version}, which this version of paysdk does not know (a "
                f"newer paysdk made it; this one reaches {REVISION}): run it with that paysdk, or pass "
                "another --db",
            )
        if version != REVISION:
            return Step("upgrade", version)
        lacking = _lacking(TABLES, found)
        if lacking is not None:
            return Step(
                "refuse",
                version,
                f"the database records revision {version} but its tables differ from it: {lacking} (changed "
                "outside paysdk?); restore it, or pass another --db",
            )
        return Step("current", version)
    existing = _signature(found, known_tables, known_indexes)
    for revision, tables in snapshots.items():
        if existing == _signature(tables, known_tables, known_indexes):
            return Step("stamp" if revision == REVISION else "upgrade", revision)
    closest = _lacking(TABLES, found) or "it holds tables, columns or indexes no paysdk made"
    return Step(
        "refuse",
        None,
        f"the database matches no schema of a paysdk version ({closest}); nothing was changed: restore it, "
        "or pass another --db",
    )


def prepare(database: Database) -> Step:
    """Create, stamp or upgrade ``database``'s schema to the head revision, or refuse it
    (:class:`~paysdk.server.db.SchemaMismatch`), in one transaction (see the module docstring). The caller
    holds the schema's lock. Returns what was done (``found``: the revision found)."""
    from paysdk.server.db import SchemaMismatch, _existing_schema

    engine = database.engine
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        driver = dbapi(connection)
        if sqlite:  # outside any transaction (the pragma is a no-op inside one)
            driver.execute("PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                found = _existing_schema(connection)
                step = plan(found, read_version(connection, found))
                if step.action == "refuse":
                    raise SchemaMismatch(step.reason)
                if step.action == "create":
                    _create(database, connection)
                elif step.action == "stamp":
                    _stamp(connection, step.found)
                elif step.action == "upgrade":
                    assert step.found is not None
                    try:
                        _upgrade(connection, step.found)
                    except DBAPIError as exc:  # rows the new schema refuses: the transaction rolls back
                        raise SchemaMismatch(
                            f"the upgrade from revision {step.found} failed, nothing was changed: "
                            f"{type(exc.orig).__name__}: {str(exc.orig).splitlines()[0]}"
                        ) from exc
                    if sqlite:
                        broken = driver.execute("PRAGMA foreign_key_check").fetchall()
                        if broken:
                            raise SchemaMismatch(
                                f"the upgrade from revision {step.found} left rows whose foreign keys point "
                                f"nowhere (table {broken[0][0]}); nothing was changed"
                            )
        finally:
            if sqlite:
                driver.execute("PRAGMA foreign_keys=ON")
    if step.action == "upgrade":
        from paysdk.server.schema_snapshot import REVISION

        log.warning("upgraded the database from revision %s to %s", step.found, REVISION)
    return step


def _create(database: Database, connection: Connection) -> None:
    """The head's tables, stamped with the head revision: the statements ``metadata.create_all`` runs for
    the mapped tables, frozen in :data:`paysdk.server.schema_snapshot.DDL` (``make lint`` keeps them
    current), so a new database is made without importing a mapped table or reading the catalogue once
    per table (D611)."""
    from paysdk.server.schema_snapshot import DDL

    for statement in DDL[database.dialect]:
        connection.exec_driver_sql(statement)
    _stamp(connection, None)


def _stamp(connection: Connection, revision: str | None) -> None:
    """Record ``revision`` (``None``: the head) as the database's one revision."""
    from paysdk.server.schema_snapshot import REVISION

    _VERSION.create(connection, checkfirst=True)
    connection.execute(delete(_VERSION))
    connection.execute(insert(_VERSION).values(version_num=revision or REVISION))


def _upgrade(connection: Connection, found: str) -> None:
    """Stamp ``found`` (a database made before the migrations has no row yet), then run every revision
    after it up to the head, inside the caller's transaction (alembic then opens none of its own)."""
    from alembic.config import Config
    from alembic.runtime.environment import EnvironmentContext
    from alembic.script import ScriptDirectory

    from paysdk.server.adapters.alembic import upgrade_steps
    from paysdk.server.schema_snapshot import REVISION

    _stamp(connection, found)
    script = ScriptDirectory(str(SCRIPTS))

    def revisions(heads: Any, context: Any) -> Any:
        return upgrade_steps(script, REVISION, heads)  # what alembic's `upgrade` command runs

    with EnvironmentContext(Config(), script, fn=revisions, destination_rev=REVISION) as environment:
        environment.configure(connection=connection, target_metadata=None)
        environment.run_migrations()


def script_directory() -> ScriptDirectory:
    """Alembic's :class:`~alembic.script.ScriptDirectory` of the shipped revisions (for tests and tools)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(SCRIPTS))
