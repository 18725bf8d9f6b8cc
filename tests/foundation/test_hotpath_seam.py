"""The speed machinery stays behind its seam (issue 22 item 2, D590-D591).

* ``driver_connection`` (the DBAPI connection under SQLAlchemy's) is read only in
  :mod:`paysdk.server.hotpath` and in the SQLAlchemy adapter (which holds SQLAlchemy's private hooks);
* the hot path is core machinery: it imports nothing of the server but its own modules (and
  ``paysdk.server.db`` for types only), so no family reaches it; families pass their statements in;
* one statement cache: no module keeps compiled forms of its own (no ``.compile(`` of a statement
  outside the hot path's cache, the migrations' DDL and the tests' SQL dumps excepted).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
HOTPATH = "paysdk/server/hotpath/"
DRIVER_ALLOWED = ("paysdk/server/adapters/sqlalchemy.py",)


def _sources() -> list[tuple[str, str]]:
    files = sorted([*(SRC / "paysdk").rglob("*.py"), *(SRC / "paysdk_cli").rglob("*.py")])
    return [(path.relative_to(SRC).as_posix(), path.read_text()) for path in files]


def _driver_reads(name: str, text: str) -> list[str]:
    tree = ast.parse(text, name)
    found = [
        f"{name}:{node.lineno}"
        for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr == "driver_connection")
        or (isinstance(node, ast.Constant) and node.value == "driver_connection")
    ]
    return found


def test_driver_connection_only_behind_the_seam() -> None:
    offences = [
        hit
        for name, text in _sources()
        if not name.startswith(HOTPATH) and name not in DRIVER_ALLOWED
        for hit in _driver_reads(name, text)
    ]
    assert not offences, (
        "use paysdk.server.hotpath.driver (dbapi, execute_script, savepoint, copy_rows) instead of "
        "driver_connection:\n" + "\n".join(offences)
    )


def test_the_scan_sees_what_it_forbids() -> None:
    assert _driver_reads("x.py", "raw = connection.connection.driver_connection\n") == ["x.py:1"]
    assert _driver_reads("x.py", "raw = getattr(c, 'driver_connection')\n") == ["x.py:1"]
    assert _driver_reads("x.py", "raw = dbapi(connection)\n") == []
    assert any(name.startswith(HOTPATH) and _driver_reads(name, text) for name, text in _sources())


def _imports(text: str, name: str) -> list[str]:
    modules: list[str] = []
    for node in ast.walk(ast.parse(text, name)):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.append(node.module)
    return modules


def test_the_hot_path_imports_no_family_and_no_server_module_but_its_own() -> None:
    offences = [
        f"{name}: imports {module}"
        for name, text in _sources()
        if name.startswith(HOTPATH)
        for module in _imports(text, name)
        if module.startswith("paysdk")
        and not module.startswith("paysdk.server.hotpath")
        and module != "paysdk.server.db"  # for the type of Runner.db only (TYPE_CHECKING)
    ]
    assert not offences, "\n".join(offences)


def test_no_compile_cache_outside_the_seam() -> None:
    """The four compile caches are one (:data:`paysdk.server.hotpath.STATEMENTS`): a statement compiled
    for a dialect (``.compile(dialect=...)``) anywhere else would be a fifth."""
    offences = [
        f"{name}:{node.lineno}"
        for name, text in _sources()
        if not name.startswith(HOTPATH)
        for node in ast.walk(ast.parse(text, name))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "compile"
        and any(keyword.arg == "dialect" for keyword in node.keywords)
    ]
    assert not offences, "compile through paysdk.server.hotpath.Statement:\n" + "\n".join(offences)
