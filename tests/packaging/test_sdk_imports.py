"""The SDK imports none of the server's or the command line's libraries (issue 12, packaging).

Each check runs in a fresh interpreter where those libraries cannot be imported at all: a meta path
finder refuses them, as if ``pip install paysdk-toolkit`` had been run with no extras. Every SDK module is
then imported (``pkgutil.walk_packages`` over ``paysdk``, less ``paysdk.server`` and ``paysdk.testing``, the
two that need an extra).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

#: The top-level modules the ``cli``, ``server``, ``redis`` and ``testing`` extras bring (and theirs).
EXTRA_ONLY = (
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "psycopg",
    "segno",
    "multipart",
    "python_multipart",
    "python_calamine",
    "phonenumbers",
    "platformdirs",
    "typer",
    "click",
    "rich",
    "keyring",
    "redis",
    "pytest",
)

#: The packages that need an extra, left out of the walk.
NEEDS_AN_EXTRA = ("paysdk.server", "paysdk.testing")

BLOCKER = """
import importlib.abc, sys

BLOCKED = set({blocked!r})


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is not installed (blocked by the test)", name=name)
        return None


for name in list(sys.modules):
    if name.partition(".")[0] in BLOCKED:
        del sys.modules[name]
sys.meta_path.insert(0, Blocker())
"""

WALK = """
import importlib, json, pkgutil
import paysdk

skipped = {skipped!r}
imported, failed = [], {{}}
for info in pkgutil.walk_packages(paysdk.__path__, "paysdk.", onerror=lambda name: None):
    if any(info.name == s or info.name.startswith(s + ".") for s in skipped):
        continue
    try:
        importlib.import_module(info.name)
    except ImportError as exc:
        failed[info.name] = str(exc)
    else:
        imported.append(info.name)
# every public name resolves too (the lazy ones import their module on first use)
for name in paysdk.__all__:
    getattr(paysdk, name)
loaded = sorted(name for name in sys.modules if name.partition(".")[0] in BLOCKED)
print(json.dumps({{"imported": imported, "failed": failed, "loaded": loaded}}))
"""


def _run_blocked(code: str) -> dict[str, object]:
    script = BLOCKER.format(blocked=sorted(EXTRA_ONLY)) + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


def test_every_sdk_module_imports_without_the_server_or_cli_libraries() -> None:
    result = _run_blocked(WALK.format(skipped=list(NEEDS_AN_EXTRA)))
    assert result["failed"] == {}
    assert result["loaded"] == []
    imported = result["imported"]
    assert isinstance(imported, list)
    # the walk did reach the SDK's parts: clients, resources, contracts, callbacks
    for module in (
        "paysdk._client",
        "paysdk.resources.wallet",
        "paysdk.contracts.sandbox",
        "paysdk.callbacks",
    ):
        assert module in imported
    assert not [name for name in imported if name.startswith(NEEDS_AN_EXTRA)]


def test_the_blocker_really_blocks() -> None:
    """The test above proves something only if the blocked libraries cannot be imported."""
    result = _run_blocked(
        """
        import json
        outcome = {}
        for name in ("fastapi", "typer", "sqlalchemy", "redis"):
            try:
                __import__(name)
            except ImportError:
                outcome[name] = "refused"
            else:
                outcome[name] = "imported"
        print(json.dumps(outcome))
        """
    )
    assert set(result.values()) == {"refused"}


# ``paysdk.server`` itself imports its app factory on first use (D310): its app module needs the extra.
@pytest.mark.parametrize("statement", ["import paysdk.server.app", "import paysdk_cli.main"])
def test_the_server_and_the_cli_do_need_their_libraries(statement: str) -> None:
    """The other side: the walk's exclusions are the modules that really need an extra."""
    script = BLOCKER.format(blocked=sorted(EXTRA_ONLY)) + statement
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "is not installed (blocked by the test)" in proc.stderr


def test_the_command_without_the_cli_extra_says_so_in_one_line() -> None:
    script = BLOCKER.format(blocked=sorted(EXTRA_ONLY)) + (
        "import sys\nsys.argv = ['paysdk', '--help']\nfrom paysdk_cli._entry import run\nrun()\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "pip install 'paysdk-toolkit[cli]'" in lines[0]  # the distribution's name (D420)
    assert "typer" in lines[0]


def test_serve_without_the_server_extra_says_so_in_one_line() -> None:
    blocked = sorted(set(EXTRA_ONLY) - {"typer", "click", "rich", "keyring", "platformdirs"})
    script = BLOCKER.format(blocked=blocked) + (
        "import sys\nsys.argv = ['paysdk', 'serve', '--port', '0']\n"
        "from paysdk_cli._entry import run\nrun()\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "pip install 'paysdk-toolkit[server]'" in lines[0]
    assert "Traceback" not in proc.stderr
