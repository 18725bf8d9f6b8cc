"""THE SDK family registry (issue 22 item 5, D510-D512): every family on every view of the clients.

``paysdk.resources._registry.FAMILIES`` is the one place a family is registered on the clients;
``scripts/sdk_registry.py`` writes the typed declarations of ``AsyncClient`` and of its
``with_raw_response`` view from it (``scripts/unasync.py`` the sync twins). Here every registered family
is read on every view, ``Client``, ``AsyncClient``, both ``with_raw_response`` views and the copies
``with_options(...)`` makes, and must be the registered class in the view's mode, bound to that view's
client; a view that lacks a family, or has one the registry does not list, fails.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

import paysdk
from paysdk import _client
from paysdk.resources._base import LazyResource
from paysdk.resources._registry import FAMILIES, SdkFamily, family

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "sdk_registry.py"

#: The view classes and the mode each one's families are in (``True``: raw).
VIEW_CLASSES: dict[str, tuple[bool, bool]] = {  # name -> (asynchronous, raw)
    "Client": (False, False),
    "AsyncClient": (True, False),
    "ClientWithRawResponse": (False, True),
    "AsyncClientWithRawResponse": (True, True),
}

#: Every view a family is read on: name -> (client -> (the view, the client it must be bound to), raw?).
VIEWS: dict[str, tuple[Callable[[Any], tuple[Any, Any]], bool]] = {
    "client": (lambda c: (c, c), False),
    "client.with_raw_response": (lambda c: (c.with_raw_response, c), True),
    "client.with_options(...)": (lambda c: (copy := c.with_options(max_retries=0), copy), False),
    "client.with_options(...).with_raw_response": (
        lambda c: ((copy := c.with_options(timeout=5)).with_raw_response, copy),
        True,
    ),
}


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("paysdk_sdk_registry_script", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["sync", "async"])
def client(request: pytest.FixtureRequest) -> Iterator[paysdk.Client | paysdk.AsyncClient]:
    cls = paysdk.AsyncClient if request.param == "async" else paysdk.Client
    made = cls(
        "0" * 64,
        paysdk.Environment.local("http://registry.invalid"),
        transport=httpx.MockTransport(lambda r: httpx.Response(500)),
    )
    yield made
    if isinstance(made, paysdk.Client):
        made.close()


def _registered_class(entry: SdkFamily, asynchronous: bool) -> type:
    module = importlib.import_module(entry.module)
    cls: type = getattr(module, entry.async_class_name if asynchronous else entry.class_name)
    return cls


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("entry", FAMILIES, ids=[f.attribute for f in FAMILIES])
def test_every_family_resolves_on_every_view(
    client: paysdk.Client | paysdk.AsyncClient, view: str, entry: SdkFamily
) -> None:
    reach, raw = VIEWS[view]
    target, bound_to = reach(client)
    resource: Any = getattr(target, entry.attribute)
    kind = type(resource)  # (not narrowing ``resource`` to the bare ``type`` the lookup returns)
    assert kind is _registered_class(entry, isinstance(client, paysdk.AsyncClient))
    assert resource._raw is raw
    assert resource._client is bound_to
    assert getattr(target, entry.attribute) is resource  # built once, then a plain attribute
    for path, sub in _sub_resources(resource, entry.attribute):  # client.wallet.cards...: the same mode
        assert (sub._raw, sub._client) == (raw, bound_to), path
    if view.startswith("client.with_options"):  # a copy builds its own, bound to the copy
        assert resource is not getattr(client.with_raw_response if raw else client, entry.attribute)
        assert resource._client is not client


def _sub_resources(resource: Any, path: str) -> Iterator[tuple[str, Any]]:
    for name, value in vars(resource).items():
        if not name.startswith("_") and type(value).__module__.startswith("paysdk.resources."):
            yield f"{path}.{name}", value
            yield from _sub_resources(value, f"{path}.{name}")


@pytest.mark.parametrize("owner", sorted(VIEW_CLASSES))
def test_each_view_declares_exactly_the_registered_families_in_order(owner: str) -> None:
    asynchronous, _ = VIEW_CLASSES[owner]
    cls = getattr(_client, owner)
    declared = {name: value for name, value in vars(cls).items() if isinstance(value, LazyResource)}
    assert list(declared) == [entry.attribute for entry in FAMILIES]
    for entry in FAMILIES:
        assert declared[entry.attribute].path == entry.path(asynchronous=asynchronous)
        assert _attribute_doc(cls, entry.attribute).startswith(f"{entry.title} (:class:`~{entry.module}.")


def _attribute_doc(cls: type, attribute: str) -> str:
    """The docstring under ``attribute``'s declaration in the class source (what the API reference shows)."""
    source = inspect.getsource(cls)
    _, _, rest = source.partition(f"\n    {attribute}: LazyResource[")
    assert rest, f"{cls.__name__}.{attribute} is not declared"
    after = rest.split('"""', 2)
    return after[1] if len(after) > 2 else ""


def test_the_view_types_name_the_registered_classes() -> None:
    """What mypy and IDEs see: ``LazyResource[<Class>[Parsed|Raw]]`` for every family on every view."""
    for owner, (asynchronous, raw) in VIEW_CLASSES.items():
        hints = getattr(_client, owner).__annotations__
        for entry in FAMILIES:
            name = entry.async_class_name if asynchronous else entry.class_name
            assert hints[entry.attribute] == f"LazyResource[{name}[{'Raw' if raw else 'Parsed'}]]", owner


def test_a_family_missing_from_a_view_is_found(tmp_path: Path) -> None:
    """A declaration removed from one view (here the async raw view) fails ``--check``, and the
    script puts it back from the registry; ``scripts/unasync.py`` then restores the sync view."""
    copy = tmp_path / "_client.py"
    shutil.copy(ROOT / "src" / "paysdk" / "_client.py", copy)
    text = copy.read_text()
    line = '    onboarding: LazyResource[AsyncOnboarding[Raw]] = LazyResource(\n        "paysdk.resources.onboarding:AsyncOnboarding"\n    )\n'  # noqa: E501
    assert text.count(line) == 1
    copy.write_text(text.replace(line, ""))
    check = [sys.executable, str(SCRIPT), "--check", "--file", str(copy)]
    failed = subprocess.run(check, capture_output=True, text=True, check=False)
    assert failed.returncode == 1
    assert "differs from paysdk.resources._registry.FAMILIES" in failed.stderr
    assert "+    onboarding: LazyResource[AsyncOnboarding[Raw]]" in failed.stderr
    fixed = subprocess.run(check[:2] + check[3:], capture_output=True, text=True, check=False)
    assert fixed.returncode == 0, fixed.stderr
    assert copy.read_text() == text


def test_the_declarations_are_current() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_a_new_registration_is_declared_on_both_views() -> None:
    """Registering a family is all it takes: the generated blocks gain it on the client and on the raw
    view, with its ``TYPE_CHECKING`` import and its docstring."""
    script = _load_script()
    text = (ROOT / "src" / "paysdk" / "_client.py").read_text()
    extra = SdkFamily("payouts", "paysdk.resources.payouts", "Payouts", "Payouts")
    new = script.generate(text, (*FAMILIES, extra), "_client.py")
    async_part = new.partition("# unasync: generated begin")[0]
    assert "    from paysdk.resources.payouts import AsyncPayouts, Payouts\n" in async_part
    for mode in ("Parsed", "Raw"):
        declaration = (
            f"payouts: LazyResource[AsyncPayouts[{mode}]] = "
            'LazyResource("paysdk.resources.payouts:AsyncPayouts")'
        )
        assert async_part.count(declaration) == 1, mode
    assert async_part.count('"""Payouts (:class:`~paysdk.resources.payouts.Payouts`)') == 2


#: A toy family's resource module, as the recipe writes one (docs/architecture.md, step 5).
TOY_MODULE = '''"""A toy family (the registry test adds it to a copy of the tree)."""

from __future__ import annotations

from typing import Any, Unpack

from paysdk._pipeline import CallOptions, Operation, apply_call_options
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource


def get_toy_operation(toy_id: str, **options: Unpack[CallOptions]) -> Operation[Any]:
    """A toy (``GET /toys/{toyId}``)."""
    op: Operation[Any] = Operation(method="GET", path="/toys/" + toy_id, parse=dict)
    return apply_call_options(op, options) if options else op


# unasync: begin
class AsyncToys(AsyncResource[M]):
    """Toys."""

    get = AsyncEndpoint(get_toy_operation)


# unasync: end


# unasync: generated begin
# unasync: generated end
'''

#: Reads the toy family on every view of both clients, calling it through a mock transport.
TOY_PROBE = """
import asyncio, json
import httpx, paysdk

def answer(request):
    return httpx.Response(200, json={"id": request.url.path.rsplit("/", 1)[1]})

def describe(value):
    if isinstance(value, paysdk.APIResponse):
        return ["raw", value.status_code, value.parse()]
    return ["parsed", value]

env = paysdk.Environment.local("http://toys.invalid")
seen = {}
with paysdk.Client("0" * 64, env, transport=httpx.MockTransport(answer)) as client:
    seen["sync"] = describe(client.toys.get("t1"))
    seen["sync raw"] = describe(client.with_raw_response.toys.get("t2"))
    seen["sync copy raw"] = describe(client.with_options(max_retries=0).with_raw_response.toys.get("t3"))

async def main():
    async with paysdk.AsyncClient("0" * 64, env, transport=httpx.MockTransport(answer)) as client:
        seen["async"] = describe(await client.toys.get("a1"))
        seen["async raw"] = describe(await client.with_raw_response.toys.get("a2"))
        seen["async copy"] = describe(await client.with_options(timeout=5).toys.get("a3"))

asyncio.run(main())
print(json.dumps(seen))
"""


def test_registering_a_family_puts_it_on_every_view(tmp_path: Path) -> None:
    """The recipe's trap (issue 22): a new family's resource module plus ONE registry line, then the
    generators (``make unasync``), and the family answers on the client, on ``with_raw_response`` and
    on ``with_options(...)`` copies, sync and async, in the right mode; nothing else was edited."""
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "scripts").mkdir()
    for name in ("sdk_registry.py", "unasync.py"):
        shutil.copy(ROOT / "scripts" / name, tmp_path / "scripts" / name)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    resources = tmp_path / "src" / "paysdk" / "resources"
    (resources / "toys.py").write_text(TOY_MODULE)
    registry = resources / "_registry.py"
    text = registry.read_text()
    last = '    SdkFamily("sandbox", "paysdk.resources.sandbox", "Sandbox", "Sandbox control plane"),\n'
    assert text.count(last) == 1
    registry.write_text(
        text.replace(last, last + '    SdkFamily("toys", "paysdk.resources.toys", "Toys", "Toys"),\n')
    )
    client_module = resources.parent / "_client.py"
    for command in (
        ["scripts/sdk_registry.py"],
        ["scripts/unasync.py", str(client_module), str(resources / "toys.py")],
        ["scripts/sdk_registry.py", "--check"],
        ["scripts/unasync.py", "--check", str(client_module), str(resources / "toys.py")],
    ):
        done = subprocess.run(
            [sys.executable, *command], cwd=tmp_path, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, (command, done.stderr)
    generated = client_module.read_text()
    assert generated.count("toys: LazyResource[Toys[Raw]]") == 1  # the sync raw view, by unasync
    assert generated.count("toys: LazyResource[AsyncToys[Parsed]]") == 1
    probe = subprocess.run(
        [sys.executable, "-c", TOY_PROBE],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "src")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout.splitlines()[-1]) == {
        "sync": ["parsed", {"id": "t1"}],
        "sync raw": ["raw", 200, {"id": "t2"}],
        "sync copy raw": ["raw", 200, {"id": "t3"}],
        "async": ["parsed", {"id": "a1"}],
        "async raw": ["raw", 200, {"id": "a2"}],
        "async copy": ["parsed", {"id": "a3"}],
    }


def test_blocks_must_be_balanced_and_complete() -> None:
    script = _load_script()
    text = (ROOT / "src" / "paysdk" / "_client.py").read_text()
    head = text.partition("# unasync: generated begin")[0]
    without_raw = text.replace("    # sdk-registry: begin Raw\n", "    # sdk-registry: begin Parsed\n", 1)
    with pytest.raises(script.MarkerError, match="one block of each kind"):
        script.generate(without_raw, FAMILIES)
    unclosed = head.replace("    # sdk-registry: end\n", "", 1) + text.partition(head)[2]
    with pytest.raises(script.MarkerError, match="has no '# sdk-registry: end' of its own"):
        script.generate(unclosed, FAMILIES)
    with pytest.raises(script.MarkerError, match="unknown block 'Cooked'"):
        script.generate(text.replace("begin Raw\n", "begin Cooked\n", 1), FAMILIES)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (("Wallet", "paysdk.resources.wallet", "Wallet", "W"), "is not a lower_case name"),
        (("with_raw", "paysdk.resources.wallet", "Wallet", "W"), "is not a lower_case name"),
        (("wallet", "paysdk.wallet", "Wallet", "W"), "is not paysdk.resources.<name>"),
        (("wallet", "paysdk.resources.wallet", "AsyncWallet", "W"), "is not the sync CamelCase name"),
        (("wallet", "paysdk.resources.wallet", "wallet", "W"), "is not the sync CamelCase name"),
        (("wallet", "paysdk.resources.wallet", "Wallet", " "), "give a title"),
    ],
)
def test_a_bad_registration_is_refused_naming_the_field(fields: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SdkFamily(*fields)


def test_a_family_registered_twice_is_refused() -> None:
    from paysdk.resources import _registry

    with pytest.raises(ValueError, match=r"registered twice \(attribute\): \['wallet'\]"):
        _registry._check_unique((*FAMILIES, SdkFamily("wallet", "paysdk.resources.w2", "W2", "Wallet 2")))


def test_family_lookup() -> None:
    assert family("wallet").path(asynchronous=True) == "paysdk.resources.wallet:AsyncWallet"
    assert family("wallet").path(asynchronous=False) == "paysdk.resources.wallet:Wallet"
    with pytest.raises(KeyError, match="no SDK family is registered as 'payouts'"):
        family("payouts")


def test_reading_the_registry_imports_no_family() -> None:
    code = (
        "import json, sys\nimport paysdk.resources._registry\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('paysdk.resources.', "
        "'paysdk.contracts.')))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    assert loaded - {"paysdk.contracts.codes"} == {"paysdk.resources._registry"}
