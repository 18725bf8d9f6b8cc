"""Text a spreadsheet would run as a formula (OWASP "CSV injection"; D384, revising D210): the one rule the
reference server's checks and the CLI's report writers share.

A text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (leading blanks ignored) is a
formula, or becomes one, once a spreadsheet opens the CSV or workbook holding it: ``+cmd|' /C calc'!A0``,
``@SUM(1+1)``, ``-2+3``.

* On the way in, :func:`check_free_text` refuses such a value in a free-text field (names, descriptions,
  aliases, references), where nothing legitimate starts that way. Fields with a format of their own
  (amounts, which may be negative; E.164 phone numbers, which start with ``+``; emails; ids with a
  pattern) are checked by that format instead.
* On the way out, :func:`neutralise` makes any such cell text with a leading ``'`` (a ``-5.00`` too: a
  report's cell is shown, not summed, and ``'+50255555555`` keeps its ``+``).

Pure and cheap to import: no pydantic, no I/O.
"""

from __future__ import annotations

from typing import Final

__all__ = ["FORMULA_MESSAGE", "FORMULA_PREFIXES", "check_free_text", "is_formula", "neutralise"]

#: A text starting with one of these is a formula (or becomes one) in a spreadsheet (OWASP).
FORMULA_PREFIXES: Final = ("=", "+", "-", "@", "\t", "\r")
#: What a refused free-text value is told.
FORMULA_MESSAGE: Final = (
    "must not start with =, +, -, @, a tab or a carriage return (a spreadsheet would run it as a formula)"
)


def is_formula(text: str) -> bool:
    """Whether a spreadsheet would read ``text`` as a formula: it starts with one of
    :data:`FORMULA_PREFIXES`, leading blanks ignored."""
    return text.startswith(FORMULA_PREFIXES) or text.lstrip().startswith(FORMULA_PREFIXES)


def check_free_text(value: str) -> str:
    """``value`` when it is no formula (:func:`is_formula`), else ``ValueError`` (:data:`FORMULA_MESSAGE`)."""
    if is_formula(value):
        raise ValueError(FORMULA_MESSAGE)
    return value


def neutralise(cell: str) -> str:
    """``'=cmd`` for ``=cmd``: a cell a spreadsheet would read as a formula (:func:`is_formula`), made
    text."""
    return "'" + cell if is_formula(cell) else cell
