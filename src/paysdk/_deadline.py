"""The attempt deadline: the monotonic moment the current attempt must be over (no I/O, no httpcore).

The client shells set it around each attempt with :func:`attempt_deadline` (a context variable, so
concurrent calls in threads or tasks each have their own); the network backend wrappers of
:mod:`paysdk._transport` clip every socket operation's timeout to the time left with
:func:`clip_timeout`. This module is apart from them so that ``from paysdk import Client`` does not load
httpcore: :mod:`paysdk._transport` is imported by the first client that makes its own pool, as httpx
itself imports httpcore then (D461).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["attempt_deadline", "clip_timeout"]

#: The monotonic time by which the current attempt must be over (``None``: no deadline).
_DEADLINE: ContextVar[float | None] = ContextVar("paysdk_attempt_deadline", default=None)


@contextlib.contextmanager
def attempt_deadline(at: float) -> Iterator[None]:
    """Within the block, socket operations of the SDK's pools end by ``at`` (``time.monotonic()``)."""
    token = _DEADLINE.set(at)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def clip_timeout(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` shortened to the time left before the attempt's deadline; ``error`` once it passed."""
    at = _DEADLINE.get()
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the attempt's deadline passed")
    return left if timeout is None else min(timeout, left)
