"""No stack-frame walks, and private parts of the libraries under the SDK and the server only in their
adapters (D530, D532): ``paysdk._adapters.httpcore`` (httpx, httpcore), ``paysdk.server.adapters.uvicorn``,
``paysdk.server.adapters.sqlalchemy``, ``paysdk.server.adapters.alembic``,
``paysdk.server.adapters.sse_starlette`` (D630) and ``paysdk_cli._adapters.typer`` (typer and its vendored
click). Each adapter has its own test against the installed library (``tests/sdk/test_adapter_httpcore.py``,
``tests/server/test_adapter_*.py``, ``tests/cli/test_adapter_typer.py``); this scan keeps new private reads
from appearing anywhere else, and private methods defined on a direct subclass of a library's class (an
override of a private hook; the scan cannot tell one from a new helper, so such a class keeps none).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

#: The libraries whose private parts only adapters touch.
LIBRARIES = (
    "uvicorn",
    "httpcore",
    "httpx",
    "sqlalchemy",
    "starlette",
    "fastapi",
    "h11",
    "alembic",
    "click",
    "typer",
    "sse_starlette",
)
ADAPTERS = {
    "paysdk/_adapters/httpcore.py",
    "paysdk/server/adapters/uvicorn.py",
    "paysdk/server/adapters/sqlalchemy.py",
    "paysdk/server/adapters/alembic.py",
    "paysdk/server/adapters/sse_starlette.py",
    "paysdk_cli/_adapters/typer.py",
}
#: Frame access: the stdlib ``warnings`` stacklevel idiom of the SDK's deprecation warnings only.
FRAME_NAMES = {"_getframe", "currentframe", "f_back", "f_locals", "f_globals", "stack"}
FRAME_ALLOWED = {"paysdk/_deprecation.py": {"_getframe", "f_back"}}
#: Private attributes of those libraries' objects the adapters read, and uvicorn's request cycle parts.
KNOWN_PRIVATE = {
    "_bind_processors",
    "_network_backend",
    "_pool",
    "_mounts",
    "_content",
    "__self__",
    "_upgrade_revs",
    "_custom_shell_complete",
}
CYCLE_PARTS = {"keep_alive"}


def _sources() -> list[tuple[str, ast.Module]]:
    files = sorted([*(SRC / "paysdk").rglob("*.py"), *(SRC / "paysdk_cli").rglob("*.py")])
    return [(path.relative_to(SRC).as_posix(), ast.parse(path.read_text(), str(path))) for path in files]


def _library(module: str) -> bool:
    return module.split(".")[0] in LIBRARIES


def _private_module(module: str) -> bool:
    """``uvicorn.protocols...`` or any dotted part with a leading underscore (``httpcore._async``)."""
    parts = module.split(".")
    return module.startswith("uvicorn.protocols") or any(part.startswith("_") for part in parts[1:])


def _private_name(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _offences(name: str, tree: ast.Module) -> list[str]:
    found: list[str] = []
    library_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _library(alias.name):
                    library_names.add((alias.asname or alias.name).split(".")[0])
                    if _private_module(alias.name):
                        found.append(f"{name}:{node.lineno}: imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and _library(node.module):
            if _private_module(node.module):
                found.append(f"{name}:{node.lineno}: imports from {node.module}")
            for alias in node.names:
                library_names.add(alias.asname or alias.name)
                if alias.name.startswith("_"):
                    found.append(f"{name}:{node.lineno}: imports {node.module}.{alias.name}")
    for node in ast.walk(tree):
        receiver: ast.expr | None = None
        attribute = None
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute):
            receiver, attribute = node.value, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr", "setattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            receiver, attribute = node.args[0], node.args[1].value
        if attribute is None:
            continue
        own = isinstance(receiver, ast.Name) and receiver.id in {"self", "cls"}
        frame = attribute != "stack" or (isinstance(receiver, ast.Name) and receiver.id == "inspect")
        if frame and attribute in FRAME_NAMES and attribute not in FRAME_ALLOWED.get(name, set()):
            found.append(f"{name}:{line}: frame access .{attribute}")
        if name in ADAPTERS or own:
            continue
        if attribute in KNOWN_PRIVATE or attribute in CYCLE_PARTS:
            found.append(f"{name}:{line}: .{attribute} (a library's private part)")
        elif (
            isinstance(receiver, ast.Name)
            and receiver.id in library_names
            and attribute.startswith("_")
            and not attribute.startswith("__")
        ):
            found.append(f"{name}:{line}: {receiver.id}.{attribute}")
    for node in ast.walk(tree):  # a subclass of a library's class that overrides its private methods
        if not isinstance(node, ast.ClassDef) or name in ADAPTERS:
            continue
        bases = [base.value if isinstance(base, ast.Attribute) else base for base in node.bases]
        if not any(isinstance(base, ast.Name) and base.id in library_names for base in bases):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private_name(item.name):
                found.append(f"{name}:{item.lineno}: {node.name} overrides {item.name}")
    if name in ADAPTERS:  # their imports are what they are for
        found = [offence for offence in found if ": imports" not in offence]
    return found


def test_no_frame_walks_and_library_privates_only_in_adapters() -> None:
    offences = [offence for name, tree in _sources() for offence in _offences(name, tree)]
    assert not offences, "move these into an adapter (docs/architecture.md, D530):\n" + "\n".join(offences)


def test_the_scan_sees_what_it_forbids() -> None:
    """The checks above catch the patterns they name (a scan that matches nothing proves nothing)."""
    sample = ast.parse(
        "import sys\n"
        "import httpcore\n"
        "from uvicorn.protocols.http.h11_impl import H11Protocol\n"
        "frame = sys._getframe(1).f_back\n"
        "processors = compiled._bind_processors\n"
        "backend = getattr(pool, '_network_backend', None)\n"
        "cycle = receive.__self__\n"
        "stopping = not cycle.keep_alive\n"
        "x = httpcore._async\n"
        "steps = script._upgrade_revs(head, heads)\n"
        "param._custom_shell_complete = completer\n"
        "from typer._click.exceptions import UsageError\n"
        "from sse_starlette import EventSourceResponse\n"
        "class Stream(EventSourceResponse):\n"
        "    async def _listen_for_exit_signal(self): ...\n"
    )
    offences = _offences("paysdk/server/example.py", sample)
    for expected in (
        "imports from uvicorn.protocols.http.h11_impl",
        "frame access ._getframe",
        "frame access .f_back",
        "._bind_processors",
        "._network_backend",
        ".__self__",
        ".keep_alive",
        "httpcore._async",
        "._upgrade_revs",
        "._custom_shell_complete",
        "imports from typer._click.exceptions",
        "Stream overrides _listen_for_exit_signal",
    ):
        assert any(expected in offence for offence in offences), (expected, offences)
    adapter = "from uvicorn.protocols.http.h11_impl import H11Protocol\ncycle = receive.__self__\n"
    assert not _offences("paysdk/server/adapters/uvicorn.py", ast.parse(adapter))
