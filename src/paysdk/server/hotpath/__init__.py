"""The speed machinery of the reference server, behind one seam (issue 22 item 2).

* :mod:`.statements`: compiled statements run on the DBAPI cursor, and the ONE cache of their compiled
  forms (:data:`~.statements.STATEMENTS`, per dialect object);
* :mod:`.driver`: every use of SQLAlchemy's ``driver_connection`` (pragmas, savepoints, ``COPY``);
* :mod:`.batch` and :mod:`.group_commit`: group commits (one transaction for the concurrent requests of a
  turn of the event loop) and the values read once per batch;
* :mod:`.lanes`: the fast lanes, the hot routes served as plain Starlette routes ahead of FastAPI's.

Core machinery: it imports no family module; families pass their statements, lock calls and rules in.
``Database(..., hotpath=False)`` switches it off for one database (each statement through SQLAlchemy's
ordinary execution, each call in a transaction of its own): the plain path of the equivalence tests.
"""

from paysdk.server.hotpath.batch import batch_cached, deferring
from paysdk.server.hotpath.group_commit import GroupCommit, LockingGroupCommit, Sink
from paysdk.server.hotpath.statements import STATEMENTS, Statement

__all__ = [
    "STATEMENTS",
    "GroupCommit",
    "LockingGroupCommit",
    "Sink",
    "Statement",
    "batch_cached",
    "deferring",
]
