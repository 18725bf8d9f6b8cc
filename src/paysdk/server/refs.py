"""References to objects by import path (``"package.module:attribute"``), imported when first resolved.

The API families (:mod:`paysdk.server.families`) name their routers, fast-lane handlers and job handlers
this way, so importing the registrations (and starting a server, D303) does not import every family's
routers, services and contracts; :func:`resolve` imports one when it is needed.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["is_ref", "resolve"]

_REF = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def is_ref(value: object) -> bool:
    """Whether ``value`` is a ``"package.module:attribute"`` reference."""
    return isinstance(value, str) and _REF.fullmatch(value) is not None


def resolve(value: Any) -> Any:
    """The object a reference names (its module imported); any other value as it is."""
    if not isinstance(value, str):
        return value
    if not is_ref(value):
        raise ValueError(f"{value!r} is not a 'package.module:attribute' reference")
    module, _, attribute = value.partition(":")
    return getattr(importlib.import_module(module), attribute)
