"""What a user outside this repository reads first: the install lines, the package page, ``--help``.

- Every install line (``pip install ...``, ``pipx run --spec ...``) and every ``name[extra]`` of this
  package in the README, ``docs/*.md`` and ``src/`` names the distribution the built wheel declares
  (``paysdk`` on the index is an unrelated project, D420), and so do the extras' self-references.
- The wheel's metadata carries the project URLs (the docs site is mkdocs.yml's ``site_url``), the
  Python-version, OS and typing classifiers (D426); the dev tools are a dependency group, not an extra
  (D425), which pip reads from ``pyproject.toml`` and the Makefile installs.
- The README, which is the index page's description, links only to absolute URLs that resolve: a page
  (and heading) of the docs site, or a file of the repository (D426).
- No help text of the ``paysdk`` command names a file of this repository (``docs/cli.md``); the root
  help points at the docs site (D427).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from paysdk._version import DISTRIBUTION, install_hint
from paysdk_cli.main import DOCS_URL, FAMILIES, app, load_family

from ._build import ROOT, Dist, clean_env

DOCS = ROOT / "docs"
#: Where a user reads install lines: the README and the docs' pages (the decision log quotes history).
USER_DOCS = [ROOT / "README.md", *sorted(p for p in DOCS.glob("*.md") if p.name != "spec-decisions.md")]
SOURCES = sorted((ROOT / "src").rglob("*.py"))

#: ``pip install ARGS`` (ARGS may start on the next line of a docstring); ``pipx run|install [--spec] ARGS``.
INSTALL_LINE = re.compile(r"\b(?:pip install|pipx (?:run|install)(?:\s+--spec)?)\s+(?P<args>[^`\n#;&]*)")
#: ``name[extra,...]`` anywhere (backticks, tables, prose).
EXTRA_REFERENCE = re.compile(r"(?<![\w./{-])(?P<name>[A-Za-z][\w-]*)\[(?P<extras>[\w, -]+)\]")
REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _ours(name: str) -> bool:
    """A name a user could take for this package: ``paysdk``, ``paysdk-toolkit``, ``paysdk_cli``..."""
    return _normal(name).startswith("paysdk")


def _install_requirements(text: str) -> list[str]:
    """The requirement names of every install line of ``text`` (flags and paths left out)."""
    names = []
    for match in INSTALL_LINE.finditer(text):
        for token in match.group("args").split():
            token = token.strip("'\"")
            if token.startswith("-") or token in (".", "..") or "/" in token:
                continue
            name = REQUIREMENT_NAME.match(token)
            if name:
                names.append(name.group())
            break  # the first requirement of the line: what follows is the command pipx runs, or prose
    return names


def _mentions(path: Path) -> tuple[list[str], list[str]]:
    text = path.read_text(encoding="utf-8")
    extras = [m.group("name") for m in EXTRA_REFERENCE.finditer(text) if _ours(m.group("name"))]
    return _install_requirements(text), extras


def _site_url() -> str:
    match = re.search(r"^site_url:\s*(\S+)\s*$", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE)
    assert match, "mkdocs.yml has no site_url"
    return match.group(1)


def _pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)


# --------------------------------------------------------------------------------------------------
# the name (D420)


def test_every_install_line_and_extra_names_the_built_distribution(dist: Dist) -> None:
    name = dist.name
    assert name == DISTRIBUTION == _pyproject()["project"]["name"]
    assert _normal(name) != "paysdk"  # the index's `paysdk` is somebody else's project

    wrong: list[str] = []
    installs_in_docs = extras_in_docs = installs_in_src = 0
    for path in [*USER_DOCS, *SOURCES]:
        installs, extras = _mentions(path)
        ours = [req for req in installs if _ours(req)]
        wrong += [f"{path.relative_to(ROOT)}: install {req}" for req in ours if req != name]
        wrong += [f"{path.relative_to(ROOT)}: {ref}[...]" for ref in extras if ref != name]
        if path.suffix == ".md":
            installs_in_docs += len(ours)
            extras_in_docs += len(extras)
        else:
            installs_in_src += len(ours)
    assert wrong == []
    # the scan found what it checks (README and docs hold about twenty install lines, src the hints)
    assert installs_in_docs >= 15
    assert extras_in_docs >= 20
    assert installs_in_src >= 4
    readme_installs, _ = _mentions(ROOT / "README.md")
    assert name in readme_installs  # the bare `pip install <name>` line

    # the hints the code prints are built from the same name
    assert install_hint("cli") == f"pip install '{name}[cli]'"
    from paysdk.testing._server import INSTALL_HINT

    assert f"pip install '{name}[testing]'" == INSTALL_HINT

    # the extras' self-references (`testing` pulls `server`, `all` pulls everything)
    for extra, requirements in _pyproject()["project"]["optional-dependencies"].items():
        for requirement in requirements:
            req_name = REQUIREMENT_NAME.match(requirement)
            assert req_name
            if _ours(req_name.group()):
                assert req_name.group() == name, (extra, requirement)


def test_the_scan_catches_the_old_name() -> None:
    """The check above is not vacuous: the install lines of the index's other ``paysdk`` fail it."""
    text = (
        "$ pip install paysdk\n$ pip install 'paysdk[cli]'   # + the command\n"
        "pipx run --spec 'paysdk[cli,server]' paysdk serve\nAlso `paysdk[redis]`.\n"
        "``pip install\n    paysdk[redis]``\n$ pip install -e . && pip install pytest-asyncio\n"
    )
    assert _install_requirements(text) == ["paysdk", "paysdk", "paysdk", "paysdk", "pytest-asyncio"]
    assert [m.group("name") for m in EXTRA_REFERENCE.finditer(text)] == ["paysdk"] * 4


# --------------------------------------------------------------------------------------------------
# the package page (D425, D426)


def test_the_package_page_has_the_project_urls_and_classifiers(dist: Dist) -> None:
    metadata = dist.metadata()
    urls = dict(entry.split(", ", 1) for entry in metadata["Project-URL"])
    assert set(urls) == {"Homepage", "Documentation", "Changelog", "Issues"}
    assert all(url.startswith("https://") for url in urls.values())
    assert urls["Documentation"] == _site_url() == DOCS_URL
    repository = urls["Homepage"].rstrip("/")
    assert urls["Issues"] == f"{repository}/issues"
    assert urls["Changelog"] == f"{repository}/blob/main/CHANGELOG.md"
    assert (ROOT / "CHANGELOG.md").is_file()

    classifiers = set(metadata["Classifier"])
    assert "Typing :: Typed" in classifiers
    assert {"Operating System :: POSIX :: Linux", "Operating System :: MacOS"} <= classifiers
    assert "Operating System :: Microsoft :: Windows" in classifiers
    assert "Programming Language :: Python :: 3 :: Only" in classifiers
    minors = sorted(
        int(c.rsplit(".", 1)[1])
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert metadata["Requires-Python"] == [">=3.11"]
    assert minors[0] == 11  # the oldest Python named is the one Requires-Python allows
    assert minors == list(range(11, minors[-1] + 1))


def test_the_dev_tools_are_a_dependency_group_that_pip_reads_and_make_installs(dist: Dist) -> None:
    project = _pyproject()
    assert "dev" not in project["project"]["optional-dependencies"]
    assert "dev" not in (dist.metadata().get("Provides-Extra") or [])
    group = {
        re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0].lower() for req in project["dependency-groups"]["dev"]
    }
    assert {"pytest", "pytest-asyncio", "mypy", "ruff", "build", "pipx", "mkdocs-material"} <= group

    makefile = (ROOT / "Makefile").read_text()
    assert 'pip install -q --upgrade "pip>=25.1"' in makefile  # --group needs pip 25.1
    assert "pip install -q -e '.[all]' --group dev" in makefile
    assert "[dev]" not in makefile

    # pip (this environment's, >= 25.1) reads the group from pyproject.toml; every tool of it is
    # installed here, so a dry run with no index resolves it without a download
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--no-index",
            "--group",
            f"{ROOT / 'pyproject.toml'}:dev",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Would install" not in proc.stdout, proc.stdout


def _markdown_links(text: str) -> list[str]:
    inline = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)
    reference = re.findall(r"^\s*\[[^\]]+\]:\s*(\S+)", text, re.MULTILINE)
    html = re.findall(r"(?:href|src)=\"([^\"]+)\"", text)
    return [*inline, *reference, *html]


def _anchors(page: Path) -> set[str]:
    """The ids mkdocs' ``toc`` gives the page's headings (lower case, punctuation dropped, spaces ``-``)."""
    anchors = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            title = re.sub(r"[^\w\s-]", "", title)
            anchors.add(re.sub(r"[\s]+", "-", title).strip("-"))
    return anchors


def test_the_readme_links_resolve_on_the_index_page(dist: Dist) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert dist.description().strip() == readme.strip()  # the index page shows the README as it is

    site = _site_url()
    repository = dict(e.split(", ", 1) for e in dist.metadata()["Project-URL"])["Homepage"].rstrip("/")
    links = _markdown_links(readme)
    assert len(links) >= 23
    unresolved = []
    for link in links:
        if link.startswith(site):
            path, _, anchor = link.removeprefix(site).partition("#")
            page = DOCS / (path.strip("/") + ".md" if path.strip("/") else "index.md")
            if not page.is_file() or (anchor and anchor not in _anchors(page)):
                unresolved.append(link)
        elif link.startswith(f"{repository}/blob/main/"):
            if not (ROOT / link.removeprefix(f"{repository}/blob/main/")).exists():
                unresolved.append(link)
        elif not link.startswith("https://"):
            unresolved.append(link)  # relative: the index page has no docs/ beside it
    assert unresolved == []


# --------------------------------------------------------------------------------------------------
# help texts (D427)


def _help_paths() -> list[list[str]]:
    paths: list[list[str]] = [[]]

    def walk(path: list[str], command: Any) -> None:
        paths.append(path)
        for name, child in (getattr(command, "commands", None) or {}).items():
            walk([*path, name], child)

    for family in FAMILIES:
        walk([family], load_family(family))
    return paths


def test_no_help_text_points_at_a_file_a_pip_user_does_not_have() -> None:
    assert _site_url() == DOCS_URL
    runner = CliRunner()
    root = runner.invoke(app, ["--help"], terminal_width=200)
    assert root.exit_code == 0, root.output
    assert f"{DOCS_URL}cli/" in root.output
    assert (DOCS / "cli.md").is_file()  # the page the URL names

    paths = _help_paths()
    assert len(paths) > 50
    offending = []
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], terminal_width=200)
        assert result.exit_code == 0, (path, result.output)
        if re.search(r"\bdocs/|\b[\w-]+\.md\b", result.output):
            offending.append(" ".join(path))
    assert offending == []
