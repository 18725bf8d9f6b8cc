"""THE list of the SDK's API families: the one place a family is registered on the clients.

Each :class:`SdkFamily` names a client attribute (``client.payment_links``), the module of its resource
classes, the sync class name (the async one is ``Async`` + it, as ``scripts/unasync.py`` writes it) and a
title for the docs. Everything that lists the families derives from :data:`FAMILIES`:

* ``scripts/sdk_registry.py`` writes the typed ``LazyResource`` declarations of ``AsyncClient`` and of
  ``AsyncClientWithRawResponse`` (``client.with_raw_response``), with their ``TYPE_CHECKING`` imports and
  the attributes' docstrings, into the marked blocks of ``paysdk/_client.py``; ``scripts/unasync.py``
  then writes the sync twins. ``make lint`` runs ``scripts/sdk_registry.py --check``, which fails when a
  block differs from this list (D510);
* the tests: every family on every view (``tests/sdk/test_sdk_registry.py``), the lazy imports, the
  real-server coverage walk (``tests/sdk_coverage.py``), the API reference check and the server
  registrations' ``sdk_resources`` (D511-D512).

This module imports no family (only strings here), so reading it costs nothing and the clients' lazy
families (D460) stay lazy; ``paysdk`` itself does not import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FAMILIES", "SdkFamily", "family"]

_ATTRIBUTE = re.compile(r"[a-z][a-z0-9_]*\Z")
_CLASS = re.compile(r"[A-Z][A-Za-z0-9]*\Z")
_MODULE = re.compile(r"paysdk\.resources\.[a-z][a-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class SdkFamily:
    """One API family on the clients: ``client.<attribute>`` is a ``<class_name>`` of ``<module>``.

    ``attribute``: the attribute on ``Client``, ``AsyncClient`` and their ``with_raw_response`` views.
    ``module``: ``paysdk.resources.<name>``, imported on the attribute's first read (D460).
    ``class_name``: the sync resource class (``PaymentLinks``); the async one is :attr:`async_class_name`.
    ``title``: how the docs name the family (the attribute's docstring in the API reference).
    """

    attribute: str
    module: str
    class_name: str
    title: str

    def __post_init__(self) -> None:
        if not _ATTRIBUTE.match(self.attribute) or self.attribute.startswith("with_"):
            raise ValueError(f"SDK family attribute {self.attribute!r} is not a lower_case name")
        if not _MODULE.match(self.module):
            raise ValueError(
                f"SDK family {self.attribute}: module {self.module!r} is not paysdk.resources.<name>"
            )
        if not _CLASS.match(self.class_name) or self.class_name.startswith("Async"):
            raise ValueError(
                f"SDK family {self.attribute}: class {self.class_name!r} is not the sync CamelCase name"
            )
        if not self.title.strip():
            raise ValueError(f"SDK family {self.attribute}: give a title for the docs")

    @property
    def async_class_name(self) -> str:
        """The resource class of ``AsyncClient`` (``AsyncPaymentLinks``)."""
        return "Async" + self.class_name

    def path(self, *, asynchronous: bool) -> str:
        """``"package.module:ClassName"`` of the sync or async resource class (a ``LazyResource`` path)."""
        return f"{self.module}:{self.async_class_name if asynchronous else self.class_name}"


FAMILIES: tuple[SdkFamily, ...] = (
    SdkFamily("payment_links", "paysdk.resources.payment_links", "PaymentLinks", "Payment links"),
    SdkFamily(
        "alternative_payments",
        "paysdk.resources.alternative_payments",
        "AlternativePayments",
        "Alternative payments",
    ),
    SdkFamily("wallet", "paysdk.resources.wallet", "Wallet", "Wallet"),
    SdkFamily("subscriptions", "paysdk.resources.subscriptions", "Subscriptions", "Subscriptions"),
    SdkFamily("backoffice", "paysdk.resources.backoffice", "Backoffice", "Backoffice"),
    SdkFamily("terminal", "paysdk.resources.terminal", "Terminal", "Terminal payments"),
    SdkFamily("reconciliation", "paysdk.resources.reconciliation", "Reconciliation", "Reconciliation"),
    SdkFamily("onboarding", "paysdk.resources.onboarding", "Onboarding", "Merchant onboarding"),
    SdkFamily("sandbox", "paysdk.resources.sandbox", "Sandbox", "Sandbox control plane"),
)


def family(attribute: str) -> SdkFamily:
    """The registered family of ``client.<attribute>`` (``KeyError`` naming it when there is none)."""
    for entry in FAMILIES:
        if entry.attribute == attribute:
            return entry
    raise KeyError(f"no SDK family is registered as {attribute!r} (paysdk.resources._registry.FAMILIES)")


def _check_unique(families: tuple[SdkFamily, ...]) -> None:
    for field in ("attribute", "title"):
        values = [getattr(entry, field) for entry in families]
        twice = sorted({value for value in values if values.count(value) > 1})
        if twice:
            raise ValueError(f"SDK families registered twice ({field}): {twice}")


_check_unique(FAMILIES)
