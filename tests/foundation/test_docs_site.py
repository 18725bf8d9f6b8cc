"""The docs site (``mkdocs.yml``) covers every page under docs/ and every public name (issue 12).

``make lint`` builds the site with ``--strict`` (a broken link, anchor or reference fails it); these
tests check what a strict build does not: that no page is left out of the navigation and that the API
reference documents every name the package exports.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import pkgutil
import re
from pathlib import Path
from typing import Any

import yaml

import paysdk
import paysdk.callbacks
from paysdk.resources._registry import FAMILIES, SdkFamily

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _nav_pages(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def _config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    return config


def test_every_markdown_page_is_in_the_nav_once() -> None:
    pages = _nav_pages(_config()["nav"])
    assert len(pages) == len(set(pages))
    on_disk = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert set(pages) == on_disk


def test_the_build_is_strict_and_checks_links_and_anchors() -> None:
    config = _config()
    assert config["strict"] is True
    assert config["validation"]["links"]["anchors"] == "warn"  # a warning fails a strict build
    assert config["validation"]["links"]["not_found"] == "warn"
    assert "--strict" in (ROOT / "Makefile").read_text().split("\nlint:", 1)[1].split("\n\n", 1)[0]


def _documented() -> set[str]:
    names: set[str] = set()
    for path in (DOCS / "reference").glob("*.md"):
        names |= set(re.findall(r"^::: ([\w.]+)$", path.read_text(), flags=re.M))
    return names


def test_the_api_reference_documents_every_public_name() -> None:
    documented = _documented()
    missing = [name for name in paysdk.__all__ if f"paysdk.{name}" not in documented]
    assert missing == []
    missing = [name for name in paysdk.callbacks.__all__ if f"paysdk.callbacks.{name}" not in documented]
    assert missing == []


def test_the_api_reference_documents_every_resource_of_the_client() -> None:
    """``client.payment_links``, ``client.wallet.cards``, ...: starting from THE SDK family registry
    (``paysdk.resources._registry``, D511), each family's class and every sub-resource class reached from
    it has its section, and the families come in the registry's order."""
    by_name = _public_resource_classes()
    families = [_registered(entry) for entry in FAMILIES]
    reached: set[str] = set(families)
    pending: list[type] = [by_name[name.rpartition(".")[2]] for name in families]
    while pending:
        owner = pending.pop()
        for hint in _class_annotations(owner):
            cls = by_name.get(re.split(r"\W", hint, maxsplit=1)[0])
            if cls is not None and f"{cls.__module__}.{cls.__name__}" not in reached:
                reached.add(f"{cls.__module__}.{cls.__name__}")
                pending.append(cls)
    assert "paysdk.resources.wallet.Cards" in reached  # two levels down: client.wallet.cards
    assert sorted(reached - _documented()) == []
    page = re.findall(r"^::: ([\w.]+)$", (DOCS / "reference" / "resources.md").read_text(), flags=re.M)
    assert [name for name in page if name in families] == families


def _registered(entry: SdkFamily) -> str:
    """The dotted name of a registered family's sync class (its section in the API reference)."""
    return f"{entry.module}.{entry.class_name}"


def test_the_client_reference_shows_every_family_attribute() -> None:
    """The API reference of ``Client`` lists its family attributes: each declaration carries the
    registry's title as its docstring (written by ``scripts/sdk_registry.py``), which mkdocstrings shows
    (a string right after an annotated assignment is that attribute's docstring)."""
    tree = ast.parse(inspect.getsource(paysdk.Client))
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef)).body
    docs: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if (
            isinstance(target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
        ):
            docs[target.id] = str(after.value.value)
    for entry in FAMILIES:
        assert docs.get(entry.attribute, "").startswith(f"{entry.title} (:class:`~{_registered(entry)}`)"), (
            entry.attribute
        )


def _class_annotations(cls: type) -> list[str]:
    """The generic classes of the sub-resources a resource class declares (``self.cards: Cards[M] = ...``)."""
    pattern = r"^\s+(?:self\.)?[a-z_]+: (\w+)\["
    return re.findall(pattern, inspect.getsource(cls), flags=re.M)


def _public_resource_classes() -> dict[str, type]:
    """The sync resource classes of ``paysdk.resources``, by name."""
    import paysdk.resources

    classes: dict[str, type] = {}
    for info in pkgutil.iter_modules(paysdk.resources.__path__, "paysdk.resources."):
        if info.name.rpartition(".")[2].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == info.name and not name.startswith(("Async", "_")):
                classes[name] = cls
    return classes
