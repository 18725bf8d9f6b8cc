"""The cyclic garbage collector around a server's imports (issue 12, D308). Standard library only, so the
``paysdk serve`` command can turn it off before it imports anything heavy."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["imports_without_collection"]


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
