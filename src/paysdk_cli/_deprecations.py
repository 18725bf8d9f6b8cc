"""Deprecation notices (D196): one line on stderr per deprecated operation per run.

The SDK raises :class:`paysdk.PaysdkDeprecationWarning` once per operation per client, pointing at the
caller, which for the CLI is a ``paysdk_cli`` module. :func:`deprecation_notices` (entered by the root
command for the whole run) shows those warnings whatever Python's filters say, as a notice line, once per
operation even when the run made several clients. paysdk is not imported here: the warning is known by
its class name and attributes.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from paysdk_cli._output import info

__all__ = ["deprecation_notices"]


@contextmanager
def deprecation_notices() -> Iterator[None]:
    """Within the block, a PaysdkDeprecationWarning becomes ``Notice: <operation> is deprecated ...``
    on stderr (the first per operation); other warnings go where they went."""
    seen: set[str] = set()
    with warnings.catch_warnings():
        warnings.filterwarnings("always", category=DeprecationWarning, module=r"paysdk_cli(\.|$)")
        shown = warnings.showwarning

        def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            operation = getattr(message, "operation", None)
            if category.__name__ != "PaysdkDeprecationWarning" or not isinstance(operation, str):
                shown(message, category, *args, **kwargs)
                return
            if operation not in seen:
                seen.add(operation)
                info(f"Notice: {message}")

        warnings.showwarning = show
        yield
