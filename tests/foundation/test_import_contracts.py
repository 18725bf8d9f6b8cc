"""The layer contracts of ``make lint`` (``[tool.importlinter]`` in pyproject.toml, D550-D555) catch what
they are meant to: each test runs ``lint-imports`` as ``make lint`` does, on a copy of ``src/`` with one
import added, so a contract that matched nothing (a typo in a module name, a layer that moved) fails here
instead of passing silently."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from paysdk.contracts.payment_links import TransactionStatus
from paysdk.server import scheduler

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CORE = "The server's core imports no family"
CORE_CONTRACTS = "The server's core imports no family's contract module"
SDK = "The SDK and the contracts import neither the server nor the CLI"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project's ``src/`` and ``pyproject.toml`` (no caches)."""
    base = tmp_path_factory.mktemp("layers")
    shutil.copytree(ROOT / "src", base / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", base / "pyproject.toml")
    return base


@pytest.fixture
def tree(pristine: Path, tmp_path: Path) -> Path:
    """A fresh copy of :func:`pristine` for one test to change."""
    shutil.copytree(pristine, tmp_path / "p", dirs_exist_ok=True)
    return tmp_path / "p"


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on ``tree`` (its own src/ first on the path, as PYTHONPATH does for make lint)."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={"PYTHONPATH": str(tree / "src"), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def broken(result: subprocess.CompletedProcess[str]) -> set[str]:
    """The names of the contracts the run reports broken."""
    return {
        line.rsplit(" BROKEN", 1)[0].strip()
        for line in result.stdout.splitlines()
        if " BROKEN" in line and not line.startswith("Contracts:")
    }


def add_function(path: Path, body: str) -> None:
    """Append a function holding ``body`` to the module at ``path`` (a function-level import)."""
    code = "\n\ndef _added_by_the_test() -> None:\n" + textwrap.indent(textwrap.dedent(body), "    ")
    path.write_text(path.read_text(encoding="utf-8") + code, encoding="utf-8")


def test_the_project_keeps_every_contract(pristine: Path) -> None:
    result = lint(pristine)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 3 kept, 0 broken." in result.stdout


def test_a_core_module_importing_a_service_inside_a_function_is_caught(tree: Path) -> None:
    add_function(tree / "src/paysdk/server/jobs.py", "from paysdk.server.services import payments  # noqa\n")
    result = lint(tree)
    assert result.returncode == 1
    assert any(name.startswith(CORE) for name in broken(result)), result.stdout
    assert "paysdk.server.jobs -> paysdk.server.services.payments" in result.stdout


def test_a_core_module_reaching_a_family_through_another_module_is_caught(tree: Path) -> None:
    # db.py imports families.py; the chain db -> families -> wallet_tables breaks the layers too.
    add_function(tree / "src/paysdk/server/families.py", "import paysdk.server.wallet_tables  # noqa\n")
    result = lint(tree)
    assert result.returncode == 1
    assert any(name.startswith(CORE) for name in broken(result)), result.stdout
    assert "paysdk.server.wallet_tables" in result.stdout


def test_a_core_module_importing_a_family_contract_is_caught(tree: Path) -> None:
    add_function(tree / "src/paysdk/server/db.py", "from paysdk.contracts.wallet import Card  # noqa\n")
    result = lint(tree)
    assert result.returncode == 1
    assert any(name.startswith(CORE_CONTRACTS) for name in broken(result)), result.stdout
    assert "paysdk.server.db -> paysdk.contracts.wallet" in result.stdout


@pytest.mark.parametrize("package", ["asgi", "hotpath"])
def test_the_new_core_packages_fall_under_the_core_rules(tree: Path, package: str) -> None:
    root = tree / "src/paysdk/server" / package
    assert (root / "__init__.py").is_file()  # the packages exist (D560, D590): a new module of theirs
    (root / "layer.py").write_text('"""A core module."""\n', encoding="utf-8")
    assert lint(tree).returncode == 0  # a core package that imports no family passes
    add_function(root / "layer.py", "from paysdk.server.routers import _common  # noqa\n")
    result = lint(tree)
    assert result.returncode == 1
    assert f"paysdk.server.{package}.layer -> paysdk.server.routers._common" in result.stdout


def test_a_new_server_module_must_be_placed_in_a_layer(tree: Path) -> None:
    (tree / "src/paysdk/server/toy_tables.py").write_text('"""A new family\'s tables."""\n', encoding="utf-8")
    result = lint(tree)
    assert result.returncode == 1
    assert "paysdk.server.toy_tables" in result.stdout
    assert "not listed as layers" in result.stdout


def test_the_sdk_importing_the_server_is_caught(tree: Path) -> None:
    add_function(tree / "src/paysdk/resources/_base.py", "import paysdk.server.app  # noqa\n")
    result = lint(tree)
    assert result.returncode == 1
    assert SDK in broken(result), result.stdout


def test_the_scheduler_names_the_pending_status_as_the_contract_does() -> None:
    # The core writes the status it expires by (it imports no family contract, D553).
    assert scheduler.PENDING == TransactionStatus.PENDING
