"""The server's one reach into SQLAlchemy's private attributes (D530).

Written against SQLAlchemy 2.0.30 to 2.1.9 (``pyproject.toml``: ``sqlalchemy>=2.0.30,<2.2``).
``tests/server/test_adapter_sqlalchemy.py`` fails, naming the hook and the installed version, when a
private part used here is gone or changed.

Hooks:

- :func:`bind_processors`: a compiled statement's ``_bind_processors`` (the bound value processors of
  its parameters, by name), which SQLAlchemy builds once per compiled statement. The server has no caller
  left (D591): the hot path's one statement cache (:mod:`paysdk.server.hotpath.statements`) takes the
  same processors from the public ``TypeEngine.dialect_impl(...).bind_processor``, which
  ``tests/server/test_adapter_sqlalchemy.py`` shows equal to these.

The public ``driver_connection`` is used in :mod:`paysdk.server.hotpath.driver` only, and a compiled
statement's ``positiontup``/``binds`` in :mod:`paysdk.server.hotpath.statements` (SQLAlchemy 2 API).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.engine import Compiled

__all__ = ["bind_processors"]


def bind_processors(compiled: Compiled) -> dict[str, Callable[[Any], Any]]:
    """The bound value processors of ``compiled``'s parameters, by parameter name (only the parameters
    whose type processes values on this dialect), as a new dict."""
    processors: Mapping[str, Callable[[Any], Any]] = compiled._bind_processors  # type: ignore[attr-defined]
    return dict(processors)
