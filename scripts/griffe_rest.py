"""Render the reST of paysdk's docstrings on the docs site: a griffe extension (``mkdocs.yml``).

The docstrings are written for ``help()`` and editors in reST: ``:class:`~paysdk.Secret```,
``:meth:`title <target>```, ````literal```` and paragraphs ending in ``::`` before an indented
example. mkdocstrings renders Markdown, so when griffe loads the package this extension rewrites each
docstring's text (the source files are left as they are):

* a role (``:class:``, ``:meth:``, ``:func:``, ``:attr:``, ``:data:``, ``:mod:``, ``:exc:``, ``:obj:``,
  ``:const:``, also as ``:py:class:``) becomes an optional cross-reference: a link to the object's
  section when the site documents it, inline code otherwise (so ``mkdocs build --strict`` does not fail
  on a private target). A ``~`` shows the last name only; ``:meth:`Title <target>``` shows ``Title``;
  ``:meth:`` and ``:func:`` without a title get ``()``, as Sphinx writes them. A relative target
  (``:attr:`wallet``` in ``AsyncClient``'s docstring) is looked up from the docstring's object
  outwards, as Python would: its class, its module, the module's imports;
* a paragraph ending in ``::`` keeps one ``:`` (``::`` alone is dropped) and the indented block after it
  becomes a fenced code block (``python`` when it parses as Python, ``text`` otherwise);
* double-backtick literals are already Markdown code spans and stay as they are.

``scripts/check_site.py`` (``make lint``) fails when the built site still shows a role, a ``::``
paragraph end or a double backtick outside code.
"""

from __future__ import annotations

import ast
import html
import re
from collections.abc import Callable, Iterator
from typing import Any

from griffe import Extension, Module, NameResolutionError, Object

__all__ = ["RestRoles", "rest_to_markdown"]

#: The Python-domain roles; ``py:`` prefix optional, as Sphinx reads them.
ROLES = ("class", "meth", "func", "attr", "data", "mod", "exc", "obj", "const")
ROLE_RE = re.compile(r":(?:py:)?(?P<role>" + "|".join(ROLES) + r"):`(?P<content>[^`]+)`")
_TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
_FENCE = re.compile(r"^\s*(```|~~~)")

Resolver = Callable[[str], str]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _language(block: str) -> str:
    try:
        compile(block, "<docstring>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except (SyntaxError, ValueError):
        return "text"
    return "python"


def _literal_blocks(text: str) -> Iterator[tuple[bool, str]]:
    """``(is_code, chunk)`` pieces of ``text``: fenced code (existing or made from ``::`` blocks) apart
    from the prose, whose ``::`` paragraph ends are rewritten."""
    lines = text.split("\n")
    prose: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _FENCE.match(line):  # an existing Markdown fence: passed through untouched
            fence = line.strip()[:3]
            end = index + 1
            while end < len(lines) and not lines[end].strip().startswith(fence):
                end += 1
            if prose:
                yield False, "\n".join(prose) + "\n"
                prose = []
            yield True, "\n".join(lines[index : end + 1]) + "\n"
            index = end + 1
            continue
        stripped = line.rstrip()
        if stripped.endswith("::"):
            base = _indent(line)
            end = index + 1
            while end < len(lines) and not lines[end].strip():
                end += 1
            block_end = end
            while block_end < len(lines) and (
                not lines[block_end].strip() or _indent(lines[block_end]) > base
            ):
                block_end += 1
            body = lines[end:block_end]
            while body and not body[-1].strip():
                body.pop()
            if body and _indent(body[0]) > base:
                head = stripped[:-2].rstrip()
                if head.strip():
                    prose.append(head if stripped[:-2].endswith(" ") else head + ":")
                margin = min(_indent(item) for item in body if item.strip())
                code = "\n".join(item[margin:] for item in body)
                pad = " " * base
                yield False, "\n".join(prose) + "\n"
                prose = []
                fenced = [
                    f"{pad}```{_language(code)}",
                    *(pad + item if item else "" for item in code.split("\n")),
                ]
                yield True, "\n" + "\n".join([*fenced, pad + "```"]) + "\n\n"
                index = block_end
                while index < len(lines) and not lines[index].strip():
                    index += 1
                continue
        prose.append(line)
        index += 1
    if prose:
        yield False, "\n".join(prose)


def _role(match: re.Match[str], resolve: Resolver) -> str:
    role, content = match["role"], " ".join(match["content"].split())
    titled = _TITLED.match(content)
    if titled and titled["title"]:
        title, target = titled["title"], titled["target"]
    else:
        target = content
        title = ""
    target = "".join(target.split())  # a target broken over two lines: `paysdk.contracts.\n  PAGE_ENTRIES`
    link = not target.startswith("!")
    target = target.lstrip("!")
    short = target.startswith("~")
    target = target.lstrip("~").lstrip(".")
    if not title:
        title = target.rsplit(".", 1)[-1] if short else target
        if role in ("meth", "func") and not title.endswith(")"):
            title += "()"
    code = f"<code>{html.escape(title)}</code>"
    if not link:
        return code
    identifier = html.escape(resolve(target.split("(", 1)[0]), quote=True)
    return f'<autoref identifier="{identifier}" optional>{code}</autoref>'


def rest_to_markdown(text: str, resolve: Resolver = lambda name: name) -> str:
    """``text`` with its reST roles and ``::`` literal blocks in Markdown (see the module docstring).

    ``resolve`` turns a role's target (``Secret``, ``paysdk.Secret``) into the full dotted path the site
    knows the object by; the default keeps it as written.
    """
    pieces = []
    for is_code, chunk in _literal_blocks(text):
        pieces.append(chunk if is_code else ROLE_RE.sub(lambda m: _role(m, resolve), chunk))
    return "".join(pieces)


def _resolver(obj: Object) -> Resolver:
    def resolve(target: str) -> str:
        first, dot, rest = target.partition(".")
        try:
            return obj.resolve(first) + dot + rest
        except NameResolutionError:
            return target

    return resolve


def _objects(obj: Object) -> Iterator[Object]:
    yield obj
    for member in obj.members.values():
        if not member.is_alias and isinstance(member, Object):
            yield from _objects(member)


class RestRoles(Extension):
    """Rewrites the reST of every docstring of a loaded package into Markdown, once its tree is complete."""

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        """Rewrite each docstring of ``pkg`` (its modules, classes, functions and attributes)."""
        for obj in _objects(pkg):
            if obj.docstring is not None:
                obj.docstring.value = rest_to_markdown(obj.docstring.value, _resolver(obj))
