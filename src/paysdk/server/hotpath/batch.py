"""The scope of one group-commit batch on the thread running it: which connection is the batch's, the
inserts collected for its end, and the values read once per batch (:func:`batch_cached`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.engine import Connection

__all__ = ["batch_cached", "deferring"]

T = TypeVar("T")

#: ``connection``: the running batch's connection (or ``None``); ``cache``: its :func:`batch_cached`
#: values; ``writes``: the inserts collected from the call running now (or ``None``).
scope = threading.local()


def deferring(connection: Connection) -> bool:
    """Whether inserts on ``connection`` are collected for the end of a batch (see
    :mod:`paysdk.server.hotpath.group_commit`); checks that an insert's constraint already makes (a
    reference drawn twice) may then be left to it."""
    return getattr(scope, "writes", None) is not None and scope.connection is connection


def batch_cached(connection: Connection, key: Any, compute: Callable[[], T]) -> T:
    """``compute()``, made once per group-commit batch when ``connection`` is a batch's connection (only
    for values no batched call changes: the clock offset, the client of a token, the callback header
    names); otherwise every time."""
    if getattr(scope, "connection", None) is not connection:
        return compute()
    cache: dict[Any, Any] = scope.cache
    if key in cache:
        value: T = cache[key]
        return value
    value = cache[key] = compute()
    return value
