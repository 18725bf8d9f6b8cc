"""The one output layer: data on stdout (a rich table or exact JSON), everything else on stderr.

* ``emit(data)`` writes a record (mapping) or a list of records. In ``json`` format it writes one JSON
  document per call through :func:`paysdk._json.dumps` (``Decimal`` keeps its exact digits); in
  ``table`` format a rich table (a key/value table for one record).
* ``emit_event(data, text)`` writes one line per event (JSON lines, or the human ``text``).
* ``info``/``warn``/``error`` write to stderr and never to stdout.
* ``mask(data, keys)`` replaces secret values before anything is printed.

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
    "MASK",
    "OutputFormat",
    "emit",
    "emit_event",
    "error",
    "info",
    "mask",
    "warn",
]

MASK = "****"


def _stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
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
    result = dict(data)
    if not show:
        for key in keys:
            if result.get(key) is not None:
                result[key] = MASK
    return result


def _json_text(data: Any) -> str:
    from paysdk._json import dumps

    return dumps(data).decode("utf-8")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return _json_text(value) if value else "-"
    if isinstance(value, Sequence):
        return ", ".join(_cell(item) for item in value) if value else "-"
    return str(value)


def _print_table(
    data: Mapping[str, Any] | Sequence[Mapping[str, Any]], columns: Sequence[str] | None, title: str | None
) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, soft_wrap=False, highlight=False)
    if isinstance(data, Mapping):
        table = Table(title=title, box=box.SIMPLE, show_header=False)
        table.add_column("field", style="bold")
        table.add_column("value", overflow="fold")
        for key in columns or list(data):
            table.add_row(key, _cell(data.get(key)))
    else:
        rows = list(data)
        if not rows:
            info(f"No {title.lower() if title else 'results'}.")
            return
        names = list(columns) if columns else list(dict.fromkeys(k for row in rows for k in row))
        table = Table(title=title, box=box.SIMPLE)
        for name in names:
            # Amounts and counts are never folded across lines (a split "74.5001" misreads).
            numeric = all(
                isinstance(row.get(name), Decimal | int) and not isinstance(row.get(name), bool)
                for row in rows
                if row.get(name) is not None
            ) and any(row.get(name) is not None for row in rows)
            if numeric:
                table.add_column(name, justify="right", no_wrap=True)
            else:
                table.add_column(name, overflow="fold")
        for row in rows:
            table.add_row(*(_cell(row.get(name)) for name in names))
    console.print(table)


def emit(
    fmt: OutputFormat,
    data: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    columns: Sequence[str] | None = None,
    title: str | None = None,
) -> None:
    """Write a record or a list of records to stdout in ``fmt``.

    ``columns`` picks (and orders) what the table shows; JSON always holds every key.
    """
    if fmt is OutputFormat.json:
        sys.stdout.write(_json_text(data) + "\n")
        sys.stdout.flush()
    else:
        _print_table(data, columns, title)


def emit_event(fmt: OutputFormat, data: Mapping[str, Any], text: str) -> None:
    """One line per event on stdout: a JSON line, or ``text`` for people. Flushed at once."""
    sys.stdout.write((_json_text(data) if fmt is OutputFormat.json else text) + "\n")
    sys.stdout.flush()
