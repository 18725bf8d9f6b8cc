"""The prose of ``/openapi.json`` made plain Markdown for an API user, from text written for engineers.

FastAPI takes an operation's description from its route function's docstring and a schema's from its
pydantic model's docstring or ``Field(description=...)``; those are written in reST and cite the
decisions they follow (``(D10)``). :func:`plain_descriptions` rewrites every ``description`` and
``summary`` of the document with :func:`plain_text`, so the source keeps its citations for the next
engineer while the document reads as prose (D483):

* the text is dedented as :func:`inspect.cleandoc` does (a model's raw ``__doc__`` keeps its indent,
  which Markdown would show as code);
* a citation is dropped with its punctuation: ``(D10)``, ``(D186, D187)``, ``(D256-D258)``,
  ``(decision D13)`` go whole; in a longer parenthesis only the part that cites goes
  (``(24 h, D17)`` -> ``(24 h)``, ``(D39: the same ...)`` -> ``(the same ...)``, ``(spec 2.3; required
  fields: decision D3)`` -> ``(spec 2.3)``); a sentence ``Decision D11.`` goes; an id used as a word
  in a sentence is not rewritten (the source says it otherwise, or after a docstring's ``\\f``);
* a reST role (``:class:`~paysdk.Secret```, ``:meth:`Title <target>```) becomes inline code of what
  it shows (``Secret``, ``Title``), a double-backtick literal single-backtick code, and a paragraph
  ending in ``::`` ends in ``:`` (``::`` alone is dropped) with its indented block fenced.

Fenced code blocks are left as they are. The docs site renders the same docstrings with links
(``scripts/griffe_rest.py``); this rewrite needs none, so the two stay apart.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

__all__ = ["plain_descriptions", "plain_text"]

_ID = r"D\d{1,3}(?:\s*-\s*D\d{1,3})?"
#: One or more decision ids, optionally named as such: ``D17``, ``D186, D187``, ``decision D3``.
_IDS = rf"(?:(?:spec-)?[Dd]ecisions?\s+)?{_ID}(?:\s*(?:,|and)\s*{_ID})*"
_ONLY_IDS = re.compile(rf"\s*{_IDS}\s*")
_LEADING_IDS = re.compile(rf"\s*{_IDS}\s*:\s*(?P<rest>.+)", re.DOTALL)
_LABELLED_IDS = re.compile(rf"[^:]+:\s*{_IDS}\s*")
_HAS_ID = re.compile(r"\bD\d{1,3}\b")
#: An innermost parenthesis, with the blanks before it.
_PAREN = re.compile(r"(?P<space>\s*)\((?P<inner>[^()]*)\)")
_SENTENCE = re.compile(rf"\s*\bDecisions?\s+{_IDS}\.")
_ROLE = re.compile(r"(?<![\w`]):(?:[a-z]+:)?(?P<role>[a-z]+):`(?P<content>[^`]+)`")
_TITLED = re.compile(r"(?P<title>.+?)\s*<[^<>]+>", re.DOTALL)
_LITERAL = re.compile(r"``(?!`)(?P<code>.+?)``", re.DOTALL)
_FENCE = re.compile(r"^\s*(```|~~~)")
#: What may follow a dropped citation directly, with no blank before it.
_CLOSING = ".,;:)!?"
#: Keys whose values are data of the API (examples, defaults), never prose.
_DATA_KEYS = frozenset({"example", "examples", "default", "const", "enum", "value"})


def _drop_citations(inner: str) -> str | None:
    """The parenthesis' content without its citing parts; ``None`` when nothing else is left."""
    if _ONLY_IDS.fullmatch(inner):
        return None
    if not _HAS_ID.search(inner):
        return inner
    tokens = re.split(r"([,;])", inner)  # parts, each after its separator
    parts = [("", tokens[0])] + [(tokens[i], tokens[i + 1]) for i in range(1, len(tokens), 2)]
    kept: list[tuple[str, str]] = []
    for separator, part in parts:
        leading = _LEADING_IDS.fullmatch(part)
        if leading:
            kept.append((separator, " " + leading["rest"]))
        elif not (_ONLY_IDS.fullmatch(part) or _LABELLED_IDS.fullmatch(part)):
            kept.append((separator, part))
    if not kept:
        return None
    text = kept[0][1].lstrip() + "".join(separator + part for separator, part in kept[1:])
    return text.rstrip()


def _citation(match: re.Match[str]) -> str:
    inner = _drop_citations(match["inner"])
    if inner is not None:
        return f"{match['space']}({inner})"
    following = match.string[match.end() : match.end() + 1]
    return "" if not following or following.isspace() or following in _CLOSING else match["space"]


def _role(match: re.Match[str]) -> str:
    content = " ".join(match["content"].split())  # a target may be broken over two lines
    titled = _TITLED.fullmatch(content)
    if titled:
        return f"`{titled['title']}`"
    target = "".join(content.split()).lstrip("!")
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    call = "()" if match["role"] in ("meth", "func") and not target.endswith(")") else ""
    return f"`{target.lstrip('.')}{call}`"


def _prose(text: str) -> str:
    text = _PAREN.sub(_citation, text)
    text = _SENTENCE.sub("", text)
    text = _ROLE.sub(_role, text)
    return _LITERAL.sub(lambda match: f"`{match['code']}`", text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blocks(lines: list[str]) -> list[tuple[bool, list[str]]]:
    """``(is_code, lines)`` runs: existing fences and the ``::`` literal blocks, made fences, apart from
    the prose (whose ``::`` paragraph ends become ``:``)."""
    runs: list[tuple[bool, list[str]]] = [(False, [])]
    index = 0
    while index < len(lines):
        line = lines[index]
        if _FENCE.match(line):
            fence = line.strip()[:3]
            end = index + 1
            while end < len(lines) and not lines[end].strip().startswith(fence):
                end += 1
            runs += [(True, lines[index : end + 1]), (False, [])]
            index = end + 1
            continue
        if line.rstrip().endswith("::"):
            base, head = _indent(line), line.rstrip()[:-2]
            start = index + 1
            while start < len(lines) and not lines[start].strip():
                start += 1
            end = start
            if start < len(lines) and _indent(lines[start]) <= base:
                # the block's indent was taken by cleandoc (the docstring's only other lines): a paragraph
                while end < len(lines) and lines[end].strip():
                    end += 1
            else:
                while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > base):
                    end += 1
            body = lines[start:end]
            while body and not body[-1].strip():
                body.pop()
            if head.strip():
                runs[-1][1].append(head.rstrip() if head.endswith(" ") else head + ":")
            if any(item.strip() for item in body):
                margin = min(_indent(item) for item in body if item.strip())
                code = [item[margin:] for item in body]
                runs += [(True, ["", "```", *code, "```", ""]), (False, [])]
            index = end
            continue
        runs[-1][1].append(line)
        index += 1
    return runs


def plain_text(text: str) -> str:
    """``text`` (a docstring or a hand-written description) as plain Markdown prose (module docstring,
    D484)."""
    pieces = [
        "\n".join(lines) if is_code else _prose("\n".join(lines))
        for is_code, lines in _blocks(inspect.cleandoc(text).split("\n"))
        if lines
    ]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(pieces)).strip()


def plain_descriptions(node: Any) -> None:
    """Rewrite with :func:`plain_text`, in place, every string ``description`` and ``summary`` of an
    OpenAPI document (or any part of it), leaving examples, defaults and enumerations as they are."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary") and isinstance(value, str):
                node[key] = plain_text(value)
            elif key not in _DATA_KEYS or (key == "examples" and isinstance(value, dict)):
                plain_descriptions(value)
    elif isinstance(node, list):
        for item in node:
            plain_descriptions(item)
