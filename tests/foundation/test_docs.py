"""The documentation states what the code does: test cards, exit codes and decisions cited in code."""

from __future__ import annotations

import re
from pathlib import Path

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
    for link in re.findall(r"\]\((docs/[^)]+)\)", readme):
        assert (ROOT / link).exists(), link
