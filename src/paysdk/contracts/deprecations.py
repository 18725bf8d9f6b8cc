"""Deprecation signals (spec 9 shows none; D196, D253-D255): the control plane's models.

``PUT /_sandbox/deprecations`` marks a public operation, named as ``/openapi.json`` names it
(``"POST /leads"``, ``"GET /rest/cards/{cardId}"``); its answers then carry ``Deprecation`` (RFC 9745),
``Sunset`` (RFC 8594) and ``Link: <...>; rel="deprecation"`` headers, and ``Paysdk-Deprecated-Operation``
naming the operation (D253), which the SDK turns into :class:`paysdk.PaysdkDeprecationWarning`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, Field

from paysdk.contracts.common import WireModel

__all__ = ["OPERATION_HEADER", "Deprecation", "DeprecationSet", "DeprecationTarget"]

#: The answer header naming the deprecated operation as ``/openapi.json`` names it (D253).
OPERATION_HEADER = "Paysdk-Deprecated-Operation"


def _link(value: str) -> str:
    if not value.startswith(("https://", "http://")) or any(c in value for c in ' <>"\r\n'):
        raise ValueError("must be an http(s) address without spaces, quotes or angle brackets")
    return value


Operation = Annotated[str, Field(min_length=3, max_length=300)]


class DeprecationTarget(WireModel):
    """Body of ``DELETE /_sandbox/deprecations`` (and the key of a mark): ``"METHOD /path"``."""

    operation: Operation


class DeprecationSet(DeprecationTarget):
    """Body of ``PUT /_sandbox/deprecations``: when the operation was deprecated (default: now, on the
    virtual clock), when it goes away (``sunset``, not before ``deprecatedAt``), and where to read about
    it (``link``). Putting an operation again replaces its mark."""

    deprecated_at: datetime | None = None
    sunset: datetime | None = None
    link: Annotated[str, Field(max_length=500), AfterValidator(_link)] | None = None


class Deprecation(WireModel):
    """One marked operation (``PUT``'s answer; ``GET /_sandbox/deprecations`` lists them)."""

    operation: str
    deprecated_at: datetime
    sunset: datetime | None = None
    link: str | None = None
