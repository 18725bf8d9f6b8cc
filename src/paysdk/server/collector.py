"""The cyclic garbage collector of a server's process: off around its imports (issue 12, D308), and set
for serving while it serves (D769). Standard library only, so the ``paysdk serve`` command can turn it
off before it imports anything heavy."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["SERVING_THRESHOLDS", "imports_without_collection", "thresholds_for_serving"]

#: The collector's thresholds while a server serves (D769); Python's defaults are ``(700, 10, 10)``.
SERVING_THRESHOLDS = (10_000, 10, 10)


@contextlib.contextmanager
def imports_without_collection() -> Iterator[None]:
    """Run the block (imports: FastAPI, SQLAlchemy, the mapped tables, the app) with the cyclic garbage
    collector off, then freeze everything it made.

    Those imports make a few hundred thousand objects that live as long as the process, and no garbage
    worth collecting: the collections their allocations trigger (several full ones) are ~10% of the CPU of
    a start. Frozen (``gc.freeze``), those objects are also left out of every later collection of the
    running server. The collector is on again (if it was) when the block ends, however it ends.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


@contextlib.contextmanager
def thresholds_for_serving() -> Iterator[None]:
    """Run the block (a server serving) with the collector's thresholds at :data:`SERVING_THRESHOLDS`,
    then put back the ones it had.

    A request allocates a few hundred container objects and frees them all as it ends (nothing of it
    lives on in a reference cycle: ``tests/server/test_adapter_uvicorn.py``), but with Python's default
    threshold of 700 the youngest generation is collected every few requests under load, each time over
    the objects of the requests still running; with those collections and the older generations' they
    cost ~4% of the server's CPU under ``make bench``'s load. At 10,000 the young collections come about
    fourteen times less often and find most of what a request made already freed, for at most a few
    thousand more objects waiting (a few hundred KiB at most). Only the code that owns the process sets
    it: :func:`paysdk.server.serve` around ``uvicorn.run`` (``paysdk serve``, ``python -m paysdk.server``).
    """
    before = gc.get_threshold()
    gc.set_threshold(*SERVING_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
