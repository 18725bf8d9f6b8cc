#!/usr/bin/env python3
"""Fail when the built docs site still shows reST markup as text (``make lint``, after ``mkdocs build``).

The API reference is generated from reST docstrings (``scripts/griffe_rest.py`` turns them into
Markdown). What it misses would show on the site as raw text; this scans every ``*.html`` page of the
site for, outside code (``<pre>``, ``<code>``, scripts and styles):

* a role: ``:class:``, ``:meth:``, ``:func:``, ``:attr:``, ``:data:``, ``:mod:``, ``:exc:``, ``:obj:``,
  ``:const:`` (also ``:py:...``), or any ``:name:`` directly before code, as ``:ref:`x``` renders;
* a paragraph (or list item, table cell, definition) that ends in ``::``, the head of a literal block;
* a double backtick.

Each finding is printed as ``page: what: snippet`` and the exit status is 1.

Usage::

    python scripts/check_site.py [SITE_DIR]    # default: .site
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Elements whose text is code or not text: not checked.
SKIPPED = {"pre", "code", "script", "style", "textarea", "kbd", "samp"}
#: Elements whose end ends a paragraph of text.
BLOCKS = {"p", "li", "dd", "dt", "td", "th", "div", "blockquote", "section"} | {f"h{n}" for n in range(1, 7)}
#: In the text stream: where a code element stood, and where a block ended.
CODE = "\x00"
BLOCK_END = "\x01"
ROLES = "class|meth|func|attr|data|mod|exc|obj|const"
CHECKS = (
    ("reST role", re.compile(rf":(?:py:)?(?:{ROLES}):|:[a-z][a-z:]*:(?={CODE}|`)")),
    ("'::' paragraph end", re.compile(rf"::[ \t\n]*{BLOCK_END}")),
    ("double backtick", re.compile("``")),
)


class _Text(HTMLParser):
    """The page's text outside code, code elements as one ``CODE`` mark, block ends as ``BLOCK_END``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED:
            if not self.skipping:
                self.parts.append(CODE)
            self.skipping.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            if tag == self.skipping[-1]:
                self.skipping.pop()
            return
        if tag in BLOCKS:
            self.parts.append(BLOCK_END)

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def page_text(html: str) -> str:
    """The text of a page as the checks read it (see ``_Text``)."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


def _snippet(text: str, start: int, end: int) -> str:
    piece = text[max(0, start - 60) : end + 40]
    piece = piece.replace(CODE, "`…`").replace(BLOCK_END, " ¶ ")
    return " ".join(piece.split())


def findings(html: str) -> list[tuple[str, str]]:
    """``(what, snippet)`` for each leftover of reST markup in one page."""
    text = page_text(html)
    found = []
    for what, pattern in CHECKS:
        for match in pattern.finditer(text):
            found.append((what, _snippet(text, match.start(), match.end())))
    return found


def check(site: Path) -> list[str]:
    """One line per finding, ``page: what: snippet``, over every page of ``site``."""
    lines = []
    for page in sorted(site.rglob("*.html")):
        for what, snippet in findings(page.read_text(encoding="utf-8")):
            lines.append(f"{page.relative_to(site).as_posix()}: {what}: {snippet}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("site", nargs="?", type=Path, default=ROOT / ".site", help="the built site (.site)")
    args = parser.parse_args(argv)
    site: Path = args.site
    if not any(site.rglob("*.html")):
        print(f"{site}: no built page (run mkdocs build first)", file=sys.stderr)
        return 1
    lines = check(site)
    for line in lines:
        print(line, file=sys.stderr)
    if lines:
        print(f"{len(lines)} leftover(s) of reST markup in the built site", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
