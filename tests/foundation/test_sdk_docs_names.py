"""``docs/sdk.md`` names every public SDK method by its dotted name (``client.wallet.cards.get``).

The names come from the SDK registry (``paysdk.resources._registry.FAMILIES``) and the resources' public
methods, both clients (:func:`sdk_coverage.public_methods`), so a new family, or a new method, fails here
until the guide names it; deleting a family's section from the guide fails too. A family also needs a
heading that starts with its registry title. Methods of the user view are written as called:
``client.wallet.as_user(...).cards.get`` names ``client.wallet.as_user.cards.get``.
"""

from __future__ import annotations

import re
from pathlib import Path

from paysdk.resources._registry import FAMILIES
from sdk_coverage import KINDS, public_methods

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "sdk.md"
#: A call in a dotted name (``as_user(store=...)``) is read as its attribute (``as_user``).
_CALL = re.compile(r"\(([^()]|\([^()]*\))*\)")


def _guide_text(text: str) -> str:
    return _CALL.sub("", text)


def missing_names(text: str) -> list[str]:
    """The dotted names of public SDK methods that ``text`` (the guide's Markdown) does not name."""
    names = {name for kind in KINDS for name in public_methods(kind).values()}
    plain = _guide_text(text)
    return sorted(
        f"client.{name}" for name in names if not re.search(r"\bclient\." + re.escape(name) + r"\b", plain)
    )


def missing_sections(text: str) -> list[str]:
    """The registry titles no heading of ``text`` starts with."""
    headings = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    return [entry.title for entry in FAMILIES if not any(h.startswith(entry.title) for h in headings)]


def test_the_sdk_guide_names_every_public_method() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert missing_names(text) == [], "add these dotted names to docs/sdk.md"
    assert missing_sections(text) == [], "give these families a section in docs/sdk.md"


def test_deleting_a_family_section_fails_the_check() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    for entry in FAMILIES:
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("#") and entry.title in line)
        level = len(lines[start]) - len(lines[start].lstrip("#"))
        end = next(
            (
                i
                for i in range(start + 1, len(lines))
                if lines[i].startswith("#") and len(lines[i]) - len(lines[i].lstrip("#")) <= level
            ),
            len(lines),
        )
        cut = "\n".join(lines[:start] + lines[end:])
        assert missing_sections(cut) or missing_names(cut), entry.title


def test_a_call_in_a_dotted_name_reads_as_its_attribute() -> None:
    assert (
        _guide_text("client.wallet.as_user(store=s, key=k(1)).cards.get") == "client.wallet.as_user.cards.get"
    )
