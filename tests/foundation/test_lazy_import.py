"""``import paysdk`` is cheap (the clients load on first use) and every public name still imports.

The cost itself is measured by ``make bench`` (``import paysdk`` vs ``import httpx, pydantic``); these
tests check what is loaded, which does not depend on the machine's speed.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import paysdk

HEAVY = ("httpx", "pydantic", "nacl", "paysdk._client", "paysdk.contracts.wallet", "paysdk.contracts.sandbox")


def _loaded_after(statement: str) -> set[str]:
    code = f"{statement}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(out.split())


def test_import_paysdk_loads_no_client_httpx_or_pydantic() -> None:
    loaded = _loaded_after("import paysdk")
    assert not loaded & set(HEAVY)
    assert "paysdk._errors" in loaded  # the exception tree is there at once


def test_the_contracts_package_and_the_code_table_do_not_load_the_clients() -> None:
    loaded = _loaded_after("from paysdk.contracts.codes import OWN_CODES")
    assert not loaded & set(HEAVY)


def test_a_client_loads_on_first_use() -> None:
    loaded = _loaded_after("from paysdk import Client")
    assert {"httpx", "pydantic", "paysdk._client"} <= loaded
    assert "nacl" not in loaded  # pynacl loads with the first wallet signing key


@pytest.mark.parametrize("name", sorted(paysdk.__all__))
def test_every_public_name_imports_from_the_package(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from paysdk import {name} as value", namespace)
    assert namespace["value"] is getattr(paysdk, name)
    assert name in dir(paysdk)


def test_the_lazy_names_are_the_public_names_not_imported_at_once() -> None:
    eager = {name for name in paysdk.__all__ if name in vars(importlib.import_module("paysdk._errors"))}
    assert set(paysdk._LAZY) | eager == set(paysdk.__all__)
    for name, module in paysdk._LAZY.items():
        assert getattr(importlib.import_module(module), name) is getattr(paysdk, name)


def test_submodules_are_attributes_and_unknown_names_are_attribute_errors() -> None:
    loaded = _loaded_after("import paysdk\nassert paysdk._client.Client is paysdk.Client")
    assert "paysdk._client" in loaded
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(paysdk, "no_such_name")  # noqa: B009
    with pytest.raises(AttributeError):
        getattr(paysdk, "__no_such_dunder__")  # noqa: B009
