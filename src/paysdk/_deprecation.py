"""Deprecation signals in answers (D196, D253): ``Deprecation`` (RFC 9745), ``Sunset`` (RFC 8594), ``Link``
with ``rel="deprecation"``, turned into one :class:`PaysdkDeprecationWarning` per operation per client.

:func:`deprecation_from` is pure (an answer's headers in, the warning or ``None`` out); :func:`warn_once`
is what the client shell calls for every answer it handles: it warns at most once per operation (the set
``seen`` belongs to the client) and points the warning at the first frame outside :mod:`paysdk` (the line
of your code that made the call, sync or async), as ``warnings.warn``'s ``stacklevel`` would if the SDK's
own depth were fixed.

Python hides :class:`DeprecationWarning` outside ``__main__`` by default; show them everywhere with
``warnings.simplefilter("default", paysdk.PaysdkDeprecationWarning)`` or make them errors in tests with
``-W error::paysdk.PaysdkDeprecationWarning``.
"""

from __future__ import annotations

import email.utils
import os
import re
import sys
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = ["OPERATION_HEADER", "PaysdkDeprecationWarning", "deprecation_from", "warn_once"]

#: The answer header naming the deprecated operation as ``/openapi.json`` names it (D253); without it
#: (another server) the operation is the call's method and path.
OPERATION_HEADER = "paysdk-deprecated-operation"
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_LINK = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]*)*)")


class PaysdkDeprecationWarning(DeprecationWarning):
    """An API operation this client called is deprecated (the answer's ``Deprecation`` header).

    ``operation``: ``"METHOD /path"`` as the API's ``/openapi.json`` names it; ``deprecated_at`` and
    ``sunset`` (when it stops working; ``None`` when the server named no date) are aware UTC datetimes;
    ``link``: where the deprecation is explained, if the server said.
    """

    def __init__(
        self,
        operation: str,
        deprecated_at: datetime | None = None,
        sunset: datetime | None = None,
        link: str | None = None,
    ) -> None:
        self.operation = operation
        self.deprecated_at = deprecated_at
        self.sunset = sunset
        self.link = link
        super().__init__(self._message())

    def _message(self) -> str:
        text = f"{self.operation} is deprecated"
        if self.deprecated_at is not None:
            text += f" since {self.deprecated_at:%Y-%m-%d}"
        text += f"; it will be removed on {self.sunset:%Y-%m-%d}" if self.sunset else "; no sunset date yet"
        if self.link:
            text += f" (see {self.link})"
        return text

    def __reduce__(self) -> Any:
        return (type(self), (self.operation, self.deprecated_at, self.sunset, self.link))


def _deprecated_at(value: str) -> tuple[bool, datetime | None]:
    """RFC 9745's ``@<unix seconds>`` (a structured-field date); the draft's ``true`` (no date)."""
    text = value.strip()
    if text.startswith("@"):
        try:
            return True, datetime.fromtimestamp(int(text[1:]), UTC)
        except (ValueError, OverflowError, OSError):
            return True, None
    return text.lower() not in ("", "false", "?0"), None


def _sunset(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _link(value: str | None) -> str | None:
    for match in _LINK.finditer(value or ""):
        params = match.group(2).lower().replace(" ", "")
        if 'rel="deprecation"' in params or "rel=deprecation" in params:
            return match.group(1)
    return None


def deprecation_from(method: str, path: str, headers: Mapping[str, str]) -> PaysdkDeprecationWarning | None:
    """The warning an answer's ``headers`` (lower-case names, as httpx gives them) call for, ``None``
    when it carries no ``Deprecation`` header (pure)."""
    value = headers.get("deprecation")
    if value is None:
        return None
    deprecated, at = _deprecated_at(value)
    if not deprecated:
        return None
    operation = (headers.get(OPERATION_HEADER) or "").strip() or f"{method.upper()} {path}"
    return PaysdkDeprecationWarning(operation, at, _sunset(headers.get("sunset")), _link(headers.get("link")))


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside the paysdk package (its tests excluded)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def warn_once(seen: set[str], method: str, path: str, headers: Mapping[str, str]) -> None:
    """Warn about a deprecated operation the first time this client (``seen``) meets its answer."""
    if "deprecation" not in headers:
        return
    warning = deprecation_from(method, path, headers)
    if warning is None or warning.operation in seen:
        return
    seen.add(warning.operation)
    warnings.warn(warning, stacklevel=_caller_level())
