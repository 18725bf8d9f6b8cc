"""The documentation states what the code does: test cards, exit codes and decisions cited in code."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from paysdk.server.services.test_cards import TEST_CARDS

ROOT = Path(__file__).resolve().parents[2]


def test_server_guide_lists_every_test_card_with_its_outcome() -> None:
    guide = (ROOT / "docs" / "server.md").read_text()
    for card in TEST_CARDS:
        row = next((line for line in guide.splitlines() if f"`{card.number}`" in line), None)
        assert row is not None, f"{card.number} missing from docs/server.md"
        assert card.outcome in row
        assert card.brand in row


def test_every_decision_cited_in_code_is_recorded() -> None:
    decisions = (ROOT / "docs" / "spec-decisions.md").read_text()
    recorded = set(re.findall(r"^\| (D\d+) \|", decisions, flags=re.M))
    cited: set[str] = set()
    for path in (ROOT / "src").rglob("*.py"):
        cited |= set(re.findall(r"\bdecision (D\d+)\b", path.read_text()))
    assert cited, "no decision is cited in the code"
    assert cited <= recorded, f"cited but not recorded: {sorted(cited - recorded)}"


def test_readme_shows_the_two_commands_and_links_existing_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme
    assert "make test" in readme
    # the links are the docs site's pages (D426; tests/packaging/test_package_page.py resolves them)
    pages = re.findall(r"\]\(https://paysdk-toolkit\.readthedocs\.io/([^)#]*)", readme)
    assert len(pages) >= 20
    for page in pages:
        assert (ROOT / "docs" / f"{page.strip('/') or 'index'}.md").exists(), page


def _coverage_table() -> list[tuple[str, list[str], bool]]:
    """``(family, route prefixes, emulated)`` per row of docs/server.md's Coverage table."""
    section = (ROOT / "docs" / "server.md").read_text().split("\n## Coverage\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] == "family" or set(cells[0]) <= {"-"}:
            continue
        assert cells[3] in ("yes", "not yet"), line
        rows.append((cells[0], re.findall(r"`(/[^`]*)`", cells[2]), cells[3] == "yes"))
    return rows


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_the_coverage_table_matches_the_served_routes_and_the_readme(
    asgi_client: httpx.AsyncClient,
) -> None:
    """Issue 7.13: what the README and docs/server.md say the server emulates is what it serves."""
    paths = list((await asgi_client.get("/openapi.json")).json()["paths"])
    rows = _coverage_table()
    assert len(rows) >= 10, rows

    def served(prefix: str) -> list[str]:
        return [path for path in paths if path == prefix or path.startswith(prefix + "/")]

    for family, prefixes, emulated in rows:
        for prefix in prefixes:
            if emulated:
                assert served(prefix), f"{family}: nothing served under {prefix}"
            else:
                assert not served(prefix), f"{family} is served ({served(prefix)}): mark it emulated"
    every_prefix = [prefix for _, prefixes, _ in rows for prefix in prefixes]
    unlisted = [path for path in paths if not any(path in served(prefix) for prefix in every_prefix)]
    assert not unlisted, f"routes of no family in docs/server.md's Coverage table: {unlisted}"

    paragraphs = (ROOT / "README.md").read_text().split("\n\n")
    summary = " ".join(next(text for text in paragraphs if "**Reference server**" in text).split())
    summary = summary.split("**Reference server**", 1)[1]
    assert "(https://paysdk-toolkit.readthedocs.io/server/#coverage)" in summary  # docs/server.md (D426)
    claimed, _, missing = summary.lower().partition("not emulated yet")
    for family, _, emulated in rows:
        assert family in (claimed if emulated else missing), f"README's server summary and {family!r}"
        assert family not in (missing if emulated else claimed), f"README's server summary and {family!r}"
