"""The API reference renders the docstrings' reST (issue 21): roles become links or code, ``::`` blocks
code blocks (``scripts/griffe_rest.py``, a griffe extension of ``mkdocs.yml``), and
``scripts/check_site.py`` (``make lint``, after the build) fails when the built site still shows any."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKER = ROOT / "scripts" / "check_site.py"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _check(site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECKER), str(site)], cwd=ROOT, capture_output=True, text=True, check=False
    )


def _page(site: Path, name: str, body: str) -> None:
    path = site / name / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body><article>{body}</article></body></html>", encoding="utf-8")


CLEAN = (
    "<p>Raises <a href='#x'><code>ValidationError</code></a>; a <code>:class:`x`</code> in code is fine.</p>"
    "<p>An example:</p><div class='highlight'><pre><code>text::\n    ``x`` :meth:`y`</code></pre></div>"
    "<p>IPv6 <code>[::1]</code> and a C++-ish a::b in a sentence.</p>"
)


def test_the_checker_passes_a_site_without_rest(tmp_path: Path) -> None:
    _page(tmp_path, "reference", CLEAN)
    result = _check(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("body", "what", "snippet"),
    [
        (
            "<p>Raises :class:<code>~paysdk.ValidationError</code> otherwise.</p>",
            "reST role",
            "Raises :class:",
        ),
        ("<li>see :py:meth:<code>close</code></li>", "reST role", "see :py:meth:"),
        ("<p>A :ref:<code>guide</code> link.</p>", "reST role", "A :ref:"),
        (
            "<p>The API client, for blocking code::</p><pre><code>x = 1</code></pre>",
            "'::' paragraph end",
            "code::",
        ),
        ("<p>An ``unbalanced literal.</p>", "double backtick", "An ``unbalanced"),
    ],
)
def test_the_checker_fails_on_a_leftover_naming_page_and_snippet(
    tmp_path: Path, body: str, what: str, snippet: str
) -> None:
    _page(tmp_path, "reference", CLEAN)
    _page(tmp_path, "reference/client", body)
    result = _check(tmp_path)
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("reference/")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"reference/client/index.html: {what}: ")
    assert snippet in lines[0]


def test_the_checker_refuses_a_site_that_was_not_built(tmp_path: Path) -> None:
    result = _check(tmp_path)
    assert result.returncode == 1
    assert "no built page" in result.stderr


def test_roles_become_optional_references_with_their_titles() -> None:
    rest = _script("griffe_rest")
    text = rest.rest_to_markdown(
        "A :class:`~paysdk.Secret`, :py:func:`paysdk.wallet_store_key`,"
        " :meth:`Env.from_env() <paysdk.E.f>`,\n"
        ":attr:`wallet`, :data:`!NOT_LINKED` and ``literal``; :data:`~paysdk.x.\n    PAGE`.",
        lambda name: "paysdk._client.AsyncClient.wallet" if name == "wallet" else name,
    )
    assert text == (
        'A <autoref identifier="paysdk.Secret" optional><code>Secret</code></autoref>, '
        '<autoref identifier="paysdk.wallet_store_key" optional>'
        "<code>paysdk.wallet_store_key()</code></autoref>, "
        '<autoref identifier="paysdk.E.f" optional><code>Env.from_env()</code></autoref>,\n'
        '<autoref identifier="paysdk._client.AsyncClient.wallet" optional><code>wallet</code></autoref>, '
        "<code>NOT_LINKED</code> and ``literal``; "
        '<autoref identifier="paysdk.x.PAGE" optional><code>PAGE</code></autoref>.'
    )


def test_literal_blocks_become_fenced_code() -> None:
    rest = _script("griffe_rest")
    text = rest.rest_to_markdown(
        "The client::\n\n    with Client() as client:\n        client.x()\n\n"
        "Then ::\n\n    $ paysdk serve\n\n"
        "Alone:\n\n::\n\n    {\n      :class:`kept`\n    }\nEnd."
    )
    assert text == (
        "The client:\n\n```python\nwith Client() as client:\n    client.x()\n```\n\n"
        "Then\n\n```text\n$ paysdk serve\n```\n\n"
        "Alone:\n\n\n```text\n{\n  :class:`kept`\n}\n```\n\nEnd."
    )


def test_the_built_site_renders_the_rest(tmp_path: Path) -> None:
    """The real build: no leftover, and a role of a documented object is a link to its section."""
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    result = _check(site)
    assert result.returncode == 0, result.stderr
    client = (site / "reference" / "client" / "index.html").read_text(encoding="utf-8")
    # AsyncClient's ":class:`~paysdk.ValidationError`" and its "for ``asyncio`` code::" example
    assert 'href="../errors/#paysdk.ValidationError"><code>ValidationError</code></a>' in client
    assert "The API client, for <code>asyncio</code> code:</p>" in client


def test_make_lint_checks_the_built_site() -> None:
    lint = (ROOT / "Makefile").read_text().split("\nlint:", 1)[1].split("\n\n", 1)[0]
    build = lint.index("mkdocs build --strict --site-dir .site")
    assert lint.index("scripts/check_site.py .site") > build


def test_no_docstring_begins_with_a_decision_id() -> None:
    """Docstrings say first what the code does, then which decision it follows (``D12: ...`` is not)."""
    citation = re.compile(r"^\W*(?:D\d+|Decisions?\b)")
    found = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                docstring = ast.get_docstring(node)
                if docstring and citation.match(docstring):
                    name = getattr(node, "name", "<module>")
                    found.append(f"{path.relative_to(ROOT)}:{name}: {docstring.splitlines()[0]}")
    assert found == []
