"""Small shared types: the :data:`NOT_GIVEN` sentinel and the timeout alias.

``NOT_GIVEN`` tells "the caller did not pass this argument" apart from ``None`` (which can be a real
value, e.g. "no currency, use the client's default").
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

import httpx

__all__ = ["NOT_GIVEN", "NotGiven", "TimeoutTypes"]


class NotGiven:
    """The type of :data:`NOT_GIVEN`: an argument the caller left out.

    It is falsy and has a single instance, so ``if timeout is NOT_GIVEN`` and ``if not timeout`` both work.
    """

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __reduce__(self) -> str:
        return "NOT_GIVEN"


#: "Not passed": use the client's setting.
NOT_GIVEN: Final = NotGiven()

#: What a ``timeout=`` argument accepts: seconds (all four phases) or an :class:`httpx.Timeout`.
TimeoutTypes: TypeAlias = float | httpx.Timeout
