"""The one CSV record reader of every CSV file the SDK and the reference server read (D320).

Batch charge files (:mod:`paysdk.contracts.charges_csv`), reconciliation files
(:mod:`paysdk.contracts.reconciliation`) and cardholder files (the server's cardholder service) are read
by :class:`CsvRecords`: a binary stream's physical lines, each at most :data:`MAX_LINE_BYTES` bytes (a
longer line is refused once that many bytes are read, never read whole), decoded as UTF-8 and handed to
``csv.reader`` (RFC 4180 quoting, strict) one record at a time, a record being one row even when a quoted
cell holds line breaks.

Any record ``csv`` refuses (a cell beyond its field limit, a quote followed by other text, an open quote
at the end of the file), a line that is not UTF-8 or a line too long raises :class:`CsvSyntaxError` naming
the record's row (the first record is row 1) and, when it can tell, the cell at fault: the caller refuses
the whole file. A reader must never carry on after such an error: the parser would restart inside an open
quote, and a line hidden in a quoted cell would be read as a row of its own (issue 20).

Pure stdlib; nothing here imports httpx, pydantic or the server.
"""

from __future__ import annotations

import codecs
import csv
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Final

__all__ = ["MAX_LINE_BYTES", "CsvRecords", "CsvSyntaxError"]

#: The longest physical line (its line end included) of any CSV file read: far above a valid row of any
#: of our layouts (a few cells of at most 1,024 characters), far below a file that could hurt a reader.
MAX_LINE_BYTES: Final = 256 << 10
_BOM: Final = codecs.BOM_UTF8


class CsvSyntaxError(ValueError):
    """A file that cannot be read as CSV: ``row`` is the record at fault (the first record is row 1),
    ``cell`` the index of the cell at fault from 0 (``None`` when it cannot be told), ``message`` what is
    wrong. ``encoding`` tells a line that is not UTF-8 text from a CSV fault."""

    def __init__(self, row: int, cell: int | None, message: str, *, encoding: bool = False) -> None:
        super().__init__(f"row {row}: {message}")
        self.row = row
        self.cell = cell
        self.message = message
        self.encoding = encoding
        #: The text read of a line too long (its first bytes), to find the cell within its record.
        self.text: str | None = None

    def column(self, columns: Sequence[str], default: str = "row") -> str:
        """The name of the cell at fault among the header's ``columns``, else ``default``."""
        if self.cell is not None and 0 <= self.cell < len(columns):
            return columns[self.cell]
        return default


def _cell_at_fault(text: str, limit: int) -> int:
    """The index of the cell at which ``csv`` (excel dialect, strict) stops reading ``text``, a record's
    lines: the first cell longer than ``limit`` characters, a closing quote followed by something else
    than a comma or a line end, or the cell still open at the end of ``text``."""
    cell = length = 0
    state = 0  # 0: a cell starts, 1: unquoted, 2: quoted, 3: a quote inside a quoted cell
    for char in text:
        if state == 2:
            if char == '"':
                state = 3
                continue
            length += 1
        elif state == 3:
            if char == '"':
                state = 2
                length += 1
            elif char == ",":
                cell, length, state = cell + 1, 0, 0
                continue
            else:  # a line end (the record ends) or the strict mode's "',' expected after '\"'"
                return cell
        elif char == ",":
            cell, length, state = cell + 1, 0, 0
            continue
        elif char in "\r\n":
            return cell
        elif char == '"' and state == 0:
            state = 2
            continue
        else:
            state = 1
            length += 1
        if length > limit:
            return cell
    return cell


class CsvRecords:
    """The CSV records of a binary ``stream`` from its current position.

    Iterate for ``(row, cells)`` (a blank line is a record with no cells, keeping its number), or, for a
    reader with a fast path of its own (the batch charge file), iterate :attr:`lines` for the raw lines
    and hand a line that needs ``csv`` to :meth:`record`, which reads as many more lines as the record
    spans. :attr:`offset` is the byte offset after the last line read (``offset`` at the start plus the
    bytes read), :attr:`line` the lines read, :attr:`row` the records begun. ``update`` is called with
    every raw line read (a hash's ``update``); ``bom``: a UTF-8 BOM opening the first line is dropped.
    """

    __slots__ = ("_base", "_continued", "bom", "limit", "line", "lines", "offset", "stream", "update")

    def __init__(
        self,
        stream: IO[bytes],
        *,
        offset: int = 0,
        row: int = 0,
        bom: bool = False,
        limit: int = MAX_LINE_BYTES,
        update: Callable[[bytes], object] | None = None,
    ) -> None:
        self.stream = stream
        self.offset = offset
        self._base = row
        self._continued = 0  # lines read by :meth:`record` after a record's first line
        self.line = 0
        self.bom = bom
        self.limit = limit
        self.update = update
        #: The raw lines (bytes, line end included); each one begins a record unless :meth:`record`
        #: reads it as the rest of the record it is reading.
        self.lines: Iterator[bytes] = self._raw()

    @property
    def row(self) -> int:
        """The number of the record the last line read belongs to."""
        return self._base + self.line - self._continued

    def _raw(self) -> Iterator[bytes]:
        readline = self.stream.readline
        limit = self.limit
        size = limit + 1
        update = self.update
        raw = readline(size)
        if self.bom and raw.startswith(_BOM):
            self.line = 1
            self.offset += len(raw)
            if update is not None:
                update(raw)
            self._check(raw)
            yield raw[len(_BOM) :]
            raw = readline(size)
        while raw:  # the hot loop of a million-row file: as little as it can be
            self.line += 1
            self.offset += len(raw)
            if update is not None:
                update(raw)
            if len(raw) > limit:
                self._check(raw)
            yield raw
            raw = readline(size)

    def _check(self, raw: bytes) -> None:
        if len(raw) > self.limit:
            text = raw.decode("utf-8", "ignore")
            error = CsvSyntaxError(
                self.row,
                _cell_at_fault(text, csv.field_size_limit()),
                f"has a line longer than {self.limit:,} bytes (line {self.line})",
            )
            error.text = text
            raise error

    def decode(self, raw: bytes) -> str:
        """``raw``, the last line read, as text; a :class:`CsvSyntaxError` when it is not UTF-8."""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            byte = self.offset - len(raw) + exc.start
            raise CsvSyntaxError(
                self.row,
                None,
                f"is not UTF-8 text (line {self.line}, byte {byte}); save it as UTF-8",
                encoding=True,
            ) from None

    def record(self, first: str) -> list[str]:
        """The cells of the record that begins with ``first`` (the last line read, decoded), reading
        the lines a quoted cell spans; a :class:`CsvSyntaxError` naming the row and the cell when
        ``csv`` refuses it."""
        taken = [first]

        row = self.row

        def more() -> Iterator[str]:
            while True:
                self._continued += 1  # counted before the line is read: it belongs to this record
                raw = next(self.lines, None)
                if raw is None:
                    self._continued -= 1
                    return
                text = self.decode(raw)
                taken.append(text)
                yield text

        try:
            return next(csv.reader(itertools.chain((first,), more()), strict=True), [])
        except CsvSyntaxError as exc:
            if exc.text is not None:  # a line too long inside the record: its cell counted from the start
                exc.cell = _cell_at_fault("".join(taken) + exc.text, csv.field_size_limit())
            raise
        except csv.Error as exc:
            text = "".join(taken)
            cell = _cell_at_fault(text, csv.field_size_limit())
            raise CsvSyntaxError(row, cell, f"is not valid CSV ({exc})") from None

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        for raw in self.lines:
            yield self.row, self.record(self.decode(raw))
