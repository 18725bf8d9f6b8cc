"""The one output layer: data on stdout (a rich table or exact JSON), everything else on stderr.

* ``emit(data)`` writes a record (mapping) or a list of records. In ``json`` format it writes one JSON
  document per call through :func:`paysdk._json.dumps` (``Decimal`` keeps its exact digits); in
  ``table`` format a title line, then ``name  value`` lines for one record, or a rich table for a list.
  A table never wraps or cuts an ID, amount, timestamp or header: prose (cells with spaces) wraps at
  spaces, and when the terminal is still too narrow the least useful columns are hidden (said once on
  stderr) or, when that is not enough, each record is written as its own block (:func:`fit_columns`).
  A table declares the columns that carry its meaning (``keep``): they are never hidden, like IDs (D430).
* ``emit_event(data, text)`` writes one line per event (JSON lines, or the human ``text``).
* ``info``/``warn``/``error`` write to stderr and never to stdout.
* ``mask(data, keys)`` replaces secret values before anything is printed.
* Nothing a server or a file says reaches the terminal as a control: every human output (table cells,
  column names, titles, event lines, info, warnings, errors) shows C0 controls other than newline and tab,
  DEL and C1 controls escaped as ``\x1b`` (:func:`printable`, D393); JSON output escapes them as
  ``\u001b``/``\u009b`` (still the same JSON value).

rich and paysdk are imported only when a table or JSON document is actually written.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from typing import Any

from paysdk_cli._state import OutputFormat

__all__ = [
    "OutputFormat",
    "emit",
    "emit_event",
    "error",
    "info",
    "json_text",
    "mask",
    "printable",
    "warn",
]

#: C0 controls other than newline and tab, DEL and the C1 controls: a terminal acts on them (an escape
#: sequence retitles the window, clears the screen, rewrites what was shown).
_CONTROLS = [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]
_ESCAPED = {code: f"\\x{code:02x}" for code in _CONTROLS}
#: In JSON text they may appear raw only inside strings (JSON's own syntax is ASCII): ``\u00XX`` there.
_JSON_ESCAPED = {code: f"\\u{code:04x}" for code in _CONTROLS if code >= 0x7F}


def printable(text: str) -> str:
    """``text`` with every control a terminal would act on shown as ``\x1b`` (module docstring)."""
    return text.translate(_ESCAPED)


def _stderr(text: str) -> None:
    sys.stderr.write(printable(text) + "\n")
    sys.stderr.flush()


def info(message: str) -> None:
    """Progress for people: stderr."""
    _stderr(message)


def warn(message: str) -> None:
    """A warning: stderr, prefixed ``Warning:``."""
    _stderr(f"Warning: {message}")


def error(message: str) -> None:
    """An error: stderr, prefixed ``Error:``."""
    _stderr(f"Error: {message}")


def mask(data: Mapping[str, Any], keys: Iterable[str], *, show: bool = False) -> dict[str, Any]:
    """A copy of ``data`` with the values of ``keys`` replaced by ``****`` (unless ``show``)."""
    from paysdk._redact import MASK  # the SDK's mask; imported on use, `--help` never loads paysdk

    result = dict(data)
    if not show:
        for key in keys:
            if result.get(key) is not None:
                result[key] = MASK
    return result


def json_text(data: Any) -> str:
    """``data`` as exact JSON text (``Decimal`` digits kept) with DEL and the C1 controls escaped as
    ``\\u00XX`` (the C0 ones are already): the same JSON value, nothing a terminal acts on."""
    from paysdk._json import dumps

    return dumps(data).decode("utf-8").translate(_JSON_ESCAPED)


#: An ISO-8601 UTC timestamp as the API writes it; tables show it to the second (``...Z``).
_UTC_TIME = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?(?:\+00:00|Z)"


def _compact_time(text: str) -> str:
    import re

    match = re.fullmatch(_UTC_TIME, text)
    return match.group(1) + "Z" if match else text


def _cell(value: Any) -> str:
    """A value as the text of a table cell, escaped (:func:`printable`)."""
    return printable(_text(value))


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime | date):
        return _compact_time(value.isoformat())
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, str):
        return _compact_time(value)
    if isinstance(value, Mapping):
        return json_text(value) if value else "-"
    if isinstance(value, Sequence):
        return ", ".join(_text(item) for item in value) if value else "-"
    return str(value)


#: Prose (a cell with spaces: an error message, a description) may wrap at spaces, down to this width.
PROSE_MIN_WIDTH = 24
#: Columns of a table are separated by three spaces (box.SIMPLE without edges, padding 1).
_GAP = 3
#: Column names that identify something: never hidden to fit a narrow terminal.
_IDENTIFIER_NAMES = frozenset({"id", "uid", "reference", "path", "url", "URL", "number"})


def _is_identifier(name: str) -> bool:
    return name in _IDENTIFIER_NAMES or name.endswith(("Id", "Uid", "ID"))


class _Column:
    """One column of a table and what its data allows: how wide, whether it may wrap, how useful."""

    def __init__(
        self, name: str, index: int, values: list[Any], cells: list[str], *, kept: bool = False
    ) -> None:
        from rich.cells import cell_len

        self.name = name
        self.label = printable(name)  # as shown (a CSV header name may hold anything)
        self.index = index
        self.cells = cells
        present = [v for v in values if v is not None]
        self.numeric = bool(present) and all(
            isinstance(v, Decimal | int) and not isinstance(v, bool) for v in present
        )
        self.prose = any(any(ch.isspace() for ch in cell) for cell in cells)
        lines = [line for cell in cells for line in (cell.splitlines() or [""])]
        self.natural = max([cell_len(self.label), *(cell_len(line) for line in lines)])
        if self.prose:
            longest_word = max((cell_len(word) for cell in cells for word in cell.split()), default=0)
            self.minimum = max(cell_len(self.label), longest_word, min(self.natural, PROSE_MIN_WIDTH))
        else:
            self.minimum = self.natural  # an ID, amount, timestamp or status never wraps
        self.identifier = _is_identifier(name) and bool(present)
        self.kept = kept  # declared by the table as carrying its meaning: never hidden
        # Which columns go first when the terminal is too narrow: empty ones, then yes/no flags and
        # texts with one value in every row, then the other texts, then numbers; identifiers never.
        if not present:
            self.rank = 0
        elif self.numeric:
            self.rank = 3
        elif all(isinstance(v, bool) for v in present) or (len(cells) > 1 and len(set(cells)) == 1):
            self.rank = 1
        else:
            self.rank = 2

    def repeats(self, other: _Column) -> None:
        """Rank this column first to go when every row shows what ``other`` shows (balance and
        availableBalance of cards with nothing pending): it says nothing new."""
        if len(self.cells) > 1 and self.cells == other.cells:
            self.rank = 0


def _needed(columns: Sequence[_Column], widths: Mapping[str, int]) -> int:
    return sum(widths[c.name] for c in columns) + _GAP * max(len(columns) - 1, 0)


def fit_columns(columns: Sequence[_Column], width: int) -> tuple[list[_Column], dict[str, int]] | None:
    """Which columns to show, and how wide, in ``width`` cells; ``None``: one record per block instead.

    Prose shrinks first (wrapping at spaces); then the least useful columns are hidden (never an
    identifier or a kept column, never more than half of them). Nothing else is ever wrapped or cut.
    """
    natural = {c.name: c.natural for c in columns}
    if _needed(columns, natural) <= width:
        return list(columns), natural
    minimum = {c.name: c.minimum for c in columns}
    shown = list(columns)
    hideable = (c for c in columns if not (c.identifier or c.kept))
    for column in sorted(hideable, key=lambda c: (c.rank, -c.index)):
        if _needed(shown, minimum) <= width:
            break
        shown.remove(column)
    if _needed(shown, minimum) > width or 2 * len(shown) < len(columns):
        return None
    widths = {c.name: minimum[c.name] for c in shown}
    spare = width - _needed(shown, widths)
    for column in shown:
        extra = min(spare, column.natural - widths[column.name])
        widths[column.name] += extra
        spare -= extra
    return shown, widths


def _console() -> Any:
    from rich.console import Console

    return Console(file=sys.stdout, soft_wrap=False, highlight=False)


def _write_blocks(records: Sequence[Mapping[str, Any]], names: Sequence[str], width: int) -> None:
    """One record per block: ``name  value`` lines, records apart by a blank line.

    Values are never cut; prose wraps at spaces under its own column, everything else stays whole on
    its line (a terminal soft-wraps an overlong line, and copying it gives it back whole).
    """
    import textwrap

    from rich.cells import cell_len

    labels = {name: printable(name) for name in names}
    key_width = max((cell_len(label) for label in labels.values()), default=0)
    room = width - key_width - 2
    indent = " " * (key_width + 2)
    lines: list[str] = []
    for number, record in enumerate(records):
        if number:
            lines.append("")
        for name in names:
            cell = _cell(record.get(name))
            parts = cell.splitlines() or [""]
            if room >= PROSE_MIN_WIDTH and any(cell_len(part) > room for part in parts):
                parts = [
                    piece
                    for part in parts
                    for piece in (
                        textwrap.wrap(part, room, break_long_words=False, break_on_hyphens=False) or [""]
                    )
                ]
            label = labels[name]
            lines.append(label + " " * (key_width - cell_len(label) + 2) + parts[0])
            lines.extend(indent + part for part in parts[1:])
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def _print_table(
    data: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None,
    title: str | None,
    keep: Sequence[str] = (),
) -> None:
    rows = [data] if isinstance(data, Mapping) else list(data)
    if not rows:
        info(f"No {title.lower() if title else 'results'}.")
        return
    names = list(columns) if columns else list(dict.fromkeys(k for row in rows for k in row))
    console = _console()
    width = int(console.width)
    if title:
        sys.stdout.write(printable(title) + "\n\n")
    fitted = None
    if not isinstance(data, Mapping):
        table_columns = [
            _Column(
                name,
                index,
                [row.get(name) for row in rows],
                [_cell(row.get(name)) for row in rows],
                kept=name in keep,
            )
            for index, name in enumerate(names)
        ]
        for later, column in enumerate(table_columns):
            for earlier in table_columns[:later]:
                column.repeats(earlier)
        fitted = fit_columns(table_columns, width)
    if fitted is None:
        _write_blocks(rows, names, width)
        return
    shown, widths = fitted
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
    for column in shown:
        table.add_column(
            Text(column.label),  # never read as rich markup
            width=widths[column.name],
            justify="right" if column.numeric else "left",
            no_wrap=not column.prose,
            overflow="fold" if column.prose else "ellipsis",
        )
    for row in range(len(rows)):
        table.add_row(*(Text(column.cells[row]) for column in shown))
    console.print(table)
    hidden = [name for name in names if name not in {c.name for c in shown}]
    if hidden:
        info(f"Hidden to fit {width} columns: {', '.join(hidden)} (-o json shows every field).")


def emit(
    fmt: OutputFormat,
    data: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    columns: Sequence[str] | None = None,
    title: str | None = None,
    keep: Sequence[str] = (),
) -> None:
    """Write a record or a list of records to stdout in ``fmt``.

    ``columns`` picks (and orders) what the table shows; JSON always holds every key. ``keep`` names
    the columns that carry the table's meaning: a narrow terminal hides the others first and never
    these (each record gets its own block when they do not fit, D430).
    """
    if fmt is OutputFormat.json:
        sys.stdout.write(json_text(data) + "\n")
        sys.stdout.flush()
    else:
        _print_table(data, columns, title, keep)


def emit_event(fmt: OutputFormat, data: Mapping[str, Any], text: str) -> None:
    """One line per event on stdout: a JSON line, or ``text`` for people (escaped). Flushed at once."""
    sys.stdout.write((json_text(data) if fmt is OutputFormat.json else printable(text)) + "\n")
    sys.stdout.flush()
