"""Each API family loads on first use (issue 21 item 4, D460-D461).

``from paysdk import Client`` (or ``AsyncClient``) imports no family's resource or contract module, nor
asyncio, httpcore or the event-stream code; ``client.wallet`` imports the wallet's modules and no other
family's. Each import check runs in a fresh interpreter, the only place where ``sys.modules`` says what an
import costs. The families come from THE registry (``paysdk.resources._registry``); that every one of them
resolves on every view of the clients is ``test_sdk_registry.py``'s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import paysdk
from paysdk.resources._registry import FAMILIES as REGISTERED

#: Each family attribute of the clients: (module under ``paysdk.resources``, class of the sync client),
#: from THE registry (D510).
FAMILIES: dict[str, tuple[str, str]] = {
    entry.attribute: (entry.module.rpartition(".")[2], entry.class_name) for entry in REGISTERED
}

#: The modules of ``paysdk.resources`` and ``paysdk.contracts`` that are no family's: the resource
#: idiom, and the table of own codes the exception tree is built from (``import paysdk`` loads it).
SHARED_AT_IMPORT = {"paysdk.resources._base", "paysdk.contracts.codes"}
#: Shared helpers a family's first use loads beside its own modules.
SHARED_HELPERS = {"paysdk.contracts.common", "paysdk.contracts.spreadsheet", "paysdk.resources._validation"}

#: Prints the family-looking modules loaded after ``{statement}`` (and after touching ``{touch}``).
PROBE = """
import json, sys

def loaded():
    return sorted(
        name for name in sys.modules
        if name.startswith(("paysdk.resources.", "paysdk.contracts.")) or name in {others!r}
    )

{statement}
after_import = loaded()
import paysdk
client = {client}("0" * 64, paysdk.Environment.local("http://lazy.invalid"), transport={transport})
after_construct = loaded()
for path in {touch!r}:
    obj = client
    for part in path.split("."):
        obj = getattr(obj, part)
after_touch = loaded()
print(json.dumps({{"import": after_import, "construct": after_construct, "touch": after_touch}}))
"""

#: Heavy modules the client's import does not need (D461): the sync client never uses asyncio, httpcore
#: loads with the first pool the client makes (as httpx loads it), the stream parser with a stream.
NOT_AT_IMPORT = ("asyncio", "httpcore", "paysdk._sse", "paysdk._streaming", "paysdk._uploads")


def probe(statement: str, client: str = "Client", touch: tuple[str, ...] = ()) -> dict[str, list[str]]:
    # a mock transport: the pool a client makes itself loads httpcore (as httpx.Client() does)
    code = "import httpx\n" + PROBE.format(
        statement=statement,
        client=client,
        transport="httpx.MockTransport(lambda r: None)",
        touch=list(touch),
        others=list(NOT_AT_IMPORT),
    )
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, list[str]] = json.loads(proc.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("name", ["Client", "AsyncClient"])
def test_importing_a_client_loads_no_family(name: str) -> None:
    result = probe(f"from paysdk import {name}", client=name)
    assert set(result["import"]) - set(NOT_AT_IMPORT) == SHARED_AT_IMPORT
    # building the client (no family used yet) loads none either
    assert set(result["construct"]) - set(NOT_AT_IMPORT) == SHARED_AT_IMPORT


def test_touching_the_wallet_loads_the_wallet_and_no_other_family() -> None:
    result = probe("from paysdk import Client", touch=("wallet",))
    loaded = set(result["touch"]) - SHARED_AT_IMPORT - SHARED_HELPERS
    assert loaded == {"paysdk.resources.wallet", "paysdk.contracts.wallet"}


def test_the_raw_view_loads_only_the_family_it_is_asked_for() -> None:
    result = probe("from paysdk import Client", touch=("with_raw_response.payment_links",))
    loaded = set(result["touch"]) - SHARED_AT_IMPORT - SHARED_HELPERS
    assert loaded == {"paysdk.resources.payment_links", "paysdk.contracts.payment_links"}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_loads_its_own_resource_module_and_no_other_family_resource(family: str) -> None:
    result = probe("from paysdk import AsyncClient", client="AsyncClient", touch=(family,))
    families = {f"paysdk.resources.{module}" for module, _ in FAMILIES.values()}
    own = f"paysdk.resources.{FAMILIES[family][0]}"
    assert own in result["touch"]
    assert families & set(result["touch"]) == {own}


@pytest.mark.parametrize("name", ["Client", "AsyncClient"])
def test_the_client_import_leaves_asyncio_httpcore_and_streams_unloaded(name: str) -> None:
    """D461: what ``from paysdk import Client`` and a client on a given transport do not need (an
    ``AsyncClient`` imports asyncio when it is built, where it runs)."""
    result = probe(f"from paysdk import {name}", client=name)
    assert set(result["import"]) & set(NOT_AT_IMPORT) == set()
    built = {"asyncio"} if name == "AsyncClient" else set()
    assert set(result["construct"]) & set(NOT_AT_IMPORT) == built


def test_the_class_attribute_names_the_resource_class() -> None:
    from paysdk.resources._base import LazyResource

    descriptor = paysdk.Client.wallet
    assert isinstance(descriptor, LazyResource)
    assert descriptor.path == "paysdk.resources.wallet:Wallet"
    assert paysdk.AsyncClient.wallet.path == "paysdk.resources.wallet:AsyncWallet"
    assert repr(descriptor) == "LazyResource('paysdk.resources.wallet:Wallet')"
    with pytest.raises(ValueError, match=r"'package\.module:ClassName'"):
        LazyResource("paysdk.resources.wallet")
