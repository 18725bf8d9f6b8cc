"""``scripts/new_family.py toy`` on a copy of the repository gives a family that passes lint and its
tests with no hand edit (issue 22 item 6).

The copy holds the files git lists (the working tree's versions) and this checkout's ``.mypy_cache``
(so mypy checks only what changed). In it: the scaffold, then ``ruff check``, ``ruff format --check``,
``mypy``, ``lint-imports`` (the layers, D550), every generator's ``--check``, the docs site
(``mkdocs build --strict``), and pytest on the
scaffold's own tests plus the recipe's checks: every contract module built, every SDK method named in
docs/sdk.md, every CLI command's ``--help`` and real call (the toy's), the coverage of every operation,
the registrations, the API reference, the migration against a new database.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATORS = ("sdk_registry", "unasync", "coverage_table", "cli_overview", "schema_snapshot")
#: The recipe's checks and the scaffold's tests, run in the copy.
TESTS = (
    "tests/e2e/test_toy_sdk.py",
    "tests/cli/test_cli_toy.py",
    "tests/foundation/test_contracts.py::test_every_contract_module_imports_and_builds_its_models",
    "tests/foundation/test_sdk_docs_names.py",
    "tests/foundation/test_coverage.py",
    "tests/foundation/test_docs_site.py",
    "tests/foundation/test_cli_overview.py",
    "tests/server/test_families.py",
    "tests/sdk/test_sdk_registry.py",
    "tests/cli/test_cli_every_command.py::test_every_command_has_an_invocation",
    "tests/cli/test_cli_every_command.py::test_every_command_has_help[toy create]",
    "tests/cli/test_cli_every_command.py::test_every_command_has_help[toy show]",
    "tests/cli/test_cli_every_command.py::test_every_command_makes_a_real_call[toy create]",
    "tests/cli/test_cli_every_command.py::test_every_command_makes_a_real_call[toy show]",
    "tests/server/test_server_migrations.py::test_the_migrated_schema_is_the_schema_of_a_new_database",
    "tests/server/test_server_migrations.py::test_the_snapshots_are_the_revisions",
    "tests/server/test_server_schema_check.py",
    "tests/foundation/test_doc_commands.py::test_every_doc_command_runs_or_parses[docs/cli.md-sqlite]",
)


def _copy(target: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (item.decode() for item in listed)):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", target / ".mypy_cache")


def _run(copy: Path, *args: str, timeout: float = 1200) -> str:
    env = {**os.environ, "PYTHONPATH": str(copy / "src")}
    env.pop("PYTEST_CURRENT_TEST", None)
    result = subprocess.run(
        args, cwd=copy, capture_output=True, text=True, env=env, check=False, timeout=timeout
    )
    assert result.returncode == 0, f"{' '.join(args)}:\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def _own_lines(copy: Path) -> int:
    """Lines the scaffold wrote for the family's own files (what a developer then edits)."""
    files = [
        "src/paysdk/contracts/toy.py",
        "src/paysdk/resources/toy.py",
        "src/paysdk/server/toy_tables.py",
        "src/paysdk/server/services/toy.py",
        "src/paysdk/server/routers/toy.py",
        "src/paysdk_cli/commands/toy.py",
    ]
    return sum(len((copy / name).read_text(encoding="utf-8").splitlines()) for name in files)


@pytest.mark.heavy
@pytest.mark.timeout(2400)  # lint, mypy, the docs site and a few hundred tests, in a copy
def test_a_scaffolded_family_passes_lint_and_its_tests(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    _copy(copy)
    python = sys.executable
    bin_dir = Path(python).parent
    written = _run(copy, python, "scripts/new_family.py", "toy")
    assert "src/paysdk/resources/toy.py" in written
    assert _own_lines(copy) > 100  # the family's files are there, whole
    _run(copy, str(bin_dir / "ruff"), "check", "src", "tests", "benchmarks", "scripts", "examples")
    _run(
        copy, str(bin_dir / "ruff"), "format", "--check", "src", "tests", "benchmarks", "scripts", "examples"
    )
    _run(copy, str(bin_dir / "mypy"))
    _run(copy, str(bin_dir / "lint-imports"), "--no-cache")
    for generator in GENERATORS:
        _run(copy, python, f"scripts/{generator}.py", "--check")
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    _run(copy, str(bin_dir / "mkdocs"), "build", "--strict", "--site-dir", ".site")
    _run(copy, python, "scripts/check_site.py", ".site")
    _run(copy, python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS)
    # A second family by the same name is refused, nothing changed.
    again = subprocess.run(
        [python, "scripts/new_family.py", "toy"], cwd=copy, capture_output=True, text=True, check=False
    )
    assert again.returncode != 0
    assert "exists already" in again.stderr
