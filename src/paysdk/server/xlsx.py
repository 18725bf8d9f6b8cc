"""The first worksheet of an xlsx workbook, read with the standard library in bounded memory (issue 20, D330).

A workbook is a zip archive of XML parts; a reader that builds the sheet as a dense grid (python-calamine
does) allocates rows x columns cells for the furthest cell, so one cell at ``XFD1048576`` in a 1.6 KB file
asked for 512 GiB and aborted the process, and a 1 MB archive of 1 GiB of whitespace was inflated in
memory. This reader never holds more than a row, the shared strings (bounded) and a read buffer:

* Before any part is parsed, the zip directory is checked (:func:`open_workbook`): at most
  :data:`MAX_MEMBERS` members, no encrypted one, their declared uncompressed sizes at most
  :data:`MAX_EXPANDED_BYTES` together, and no member over 1 MiB that expands more than :data:`MAX_RATIO`
  times. ``zipfile`` never inflates more than a member's declared size (a member that holds more fails
  its CRC), so the declared sizes bound the work.
* The sheet's declared ``<dimension ref=...>`` and every cell holding a value are checked against the
  caller's row and column limits before the row is kept.
* The XML is parsed by ``expat`` as it is inflated, 64 KiB at a time, text kept only inside a value
  (``<v>``, ``<t>``) and cut at ``max_cell_chars + 1`` characters (the caller refuses a longer cell); a
  document type declaration (entity expansion) is refused. Elements are known by their local name,
  whatever their namespace; the sheet and the shared strings, the large parts, are parsed without
  namespace processing (``x:c`` is ``c``, an undeclared prefix is not an error there, D500).

Errors are :class:`XlsxError` with the row when there is one; the caller words them as its file errors.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
import zlib
from array import array
from collections.abc import Callable, Iterator
from typing import IO, Final
from xml.parsers import expat

__all__ = [
    "MAX_EXPANDED_BYTES",
    "MAX_MEMBERS",
    "MAX_PART_BYTES",
    "MAX_RATIO",
    "MAX_SHARED_BYTES",
    "XlsxError",
    "column_name",
    "read_first_sheet",
]

#: Members of a workbook's zip archive at most.
MAX_MEMBERS: Final = 1000
#: The members' declared uncompressed sizes together at most (256 MiB, the upload limit's size).
MAX_EXPANDED_BYTES: Final = 256 << 20
#: A member larger than :data:`RATIO_FLOOR` expands at most this many times its compressed size.
MAX_RATIO: Final = 100
RATIO_FLOOR: Final = 1 << 20
#: The workbook's parts other than the sheet and the shared strings (relationships, workbook.xml).
MAX_PART_BYTES: Final = 4 << 20
#: The shared strings' text kept (UTF-8 bytes) at most.
MAX_SHARED_BYTES: Final = 64 << 20

_CHUNK: Final = 64 << 10
_REF = re.compile(r"\$?([A-Za-z]{1,3})\$?([0-9]{1,7})")
_REL_ID = "http://schemas.openxmlformats.org/officeDocument/2006/relationships id"
_NOT_READABLE = "is not a readable xlsx workbook"


class XlsxError(ValueError):
    """The workbook is refused: ``message`` says why (a sentence without the subject, e.g. "is not a
    readable xlsx workbook (...)"), ``row`` is the sheet's row when one is concerned."""

    def __init__(self, message: str, row: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.row = row


def column_name(number: int) -> str:
    """The spreadsheet letters of column ``number`` (1 is ``A``, 64 is ``BL``)."""
    letters = ""
    while number > 0:
        number, rest = divmod(number - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _column_number(letters: str) -> int:
    number = 0
    for letter in letters.upper():
        number = number * 26 + ord(letter) - ord("A") + 1
    return number


#: Element names cached per parse at most (a file naming more elements is read, only less quickly).
_NAMES_MAX: Final = 256
#: Column letters in upper case -> column number, ``A`` to ``ZZ`` (longer ones are computed).
_COLUMNS: Final = {column_name(number): number for number in range(1, 703)}


class _LocalNames(dict[str, str]):
    """An element's name as ``expat`` gives it -> its local name, whatever the namespace: the expanded
    name ``"namespace local"`` (``separator`` ``" "``) or the qualified name ``"prefix:local"``
    (``separator`` ``":"``, a parser without namespace processing). One dict look-up per element instead
    of a call (D500); a bounded cache."""

    def __init__(self, separator: str = " ") -> None:
        super().__init__()
        self.separator = separator

    def __missing__(self, name: str) -> str:
        local = name.rpartition(self.separator)[2]
        if len(self) < _NAMES_MAX:
            self[name] = local
        return local


def _column_of(letters: str) -> int:
    number = _COLUMNS.get(letters)
    return number if number is not None else _column_number(letters)


def _refuse_dtd(*_args: object) -> None:
    raise XlsxError(f"{_NOT_READABLE} (a document type declaration is not accepted)")


def _parse(
    archive: zipfile.ZipFile,
    name: str,
    start: Callable[[str, dict[str, str]], None],
    end: Callable[[str], None] | None = None,
    text: Callable[[str], None] | None = None,
    *,
    namespaces: bool = True,
) -> Iterator[None]:
    """Parse member ``name`` with ``expat`` as it is inflated; yields after each chunk (the sheet's
    reader hands over the rows completed by then). The handlers get ``expat``'s expanded names
    (``"namespace local"``), or the names as written (``"prefix:local"``) with ``namespaces`` false:
    :class:`_LocalNames` gives the local one."""
    parser = expat.ParserCreate(namespace_separator=" ") if namespaces else expat.ParserCreate()
    parser.buffer_text = True
    parser.buffer_size = _CHUNK
    parser.StartDoctypeDeclHandler = _refuse_dtd
    parser.EntityDeclHandler = _refuse_dtd
    parser.StartElementHandler = start
    if end is not None:
        parser.EndElementHandler = end
    if text is not None:
        parser.CharacterDataHandler = text
    try:
        with archive.open(name) as member:
            while chunk := member.read(_CHUNK):
                parser.Parse(chunk, False)
                yield
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise XlsxError(f"{_NOT_READABLE} ({name}: {expat.ErrorString(exc.code)})") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, ValueError) as exc:
        if isinstance(exc, XlsxError):
            raise
        raise XlsxError(f"{_NOT_READABLE} ({name}: {exc})") from None
    yield


def _run(parsing: Iterator[None]) -> None:
    for _ in parsing:
        pass


def _relationships(archive: zipfile.ZipFile, name: str) -> dict[str, tuple[str, str]]:
    """``Id -> (Type, Target)`` of a relationships part (empty when there is none)."""
    found: dict[str, tuple[str, str]] = {}
    if name not in archive.NameToInfo:
        return found

    names = _LocalNames()

    def start(name: str, attrs: dict[str, str]) -> None:
        if names[name] == "Relationship" and "Id" in attrs:
            found[attrs["Id"]] = (attrs.get("Type", ""), attrs.get("Target", ""))

    _run(_parse(archive, name, start))
    return found


def _resolve(base: str, target: str) -> str:
    if target.startswith("/"):
        return target[1:]
    return posixpath.normpath(posixpath.join(posixpath.dirname(base), target))


def _rels_of(part: str) -> str:
    return posixpath.join(posixpath.dirname(part), "_rels", posixpath.basename(part) + ".rels")


def open_workbook(stream: IO[bytes]) -> zipfile.ZipFile:
    """The workbook's archive, its directory checked (module docstring); :class:`XlsxError` otherwise."""
    try:
        archive = zipfile.ZipFile(stream)
        infos = archive.infolist()
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError) as exc:
        raise XlsxError(f"{_NOT_READABLE} ({exc})") from None
    if len(infos) > MAX_MEMBERS:
        raise XlsxError(f"is refused: its archive holds more than {MAX_MEMBERS:,} members")
    expanded = 0
    for info in infos:
        if info.flag_bits & 0x1:
            raise XlsxError(f"is refused: {info.filename} is encrypted")
        expanded += info.file_size
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise XlsxError(
                f"is refused: {info.filename} expands {info.file_size:,} bytes from "
                f"{info.compress_size:,} (more than {MAX_RATIO} times: a zip bomb)"
            )
    if expanded > MAX_EXPANDED_BYTES:
        raise XlsxError(
            f"is refused: its archive expands to {expanded:,} bytes (at most {MAX_EXPANDED_BYTES >> 20} MiB)"
        )
    return archive


def _small_part(archive: zipfile.ZipFile, name: str) -> None:
    info = archive.NameToInfo.get(name)
    if info is not None and info.file_size > MAX_PART_BYTES:
        raise XlsxError(f"is refused: its part {name} is larger than {MAX_PART_BYTES >> 20} MiB")


def _first_sheet(archive: zipfile.ZipFile) -> tuple[str, str | None]:
    """The path of the first worksheet (workbook order) and of the shared strings (or ``None``)."""
    _small_part(archive, "_rels/.rels")
    workbook = "xl/workbook.xml"
    for kind, target in _relationships(archive, "_rels/.rels").values():
        if kind.endswith("/officeDocument"):
            workbook = _resolve("", target)
    if workbook not in archive.NameToInfo:
        raise XlsxError(f"{_NOT_READABLE} (no workbook part)")
    rels_name = _rels_of(workbook)
    for part in (workbook, rels_name):
        _small_part(archive, part)
    sheet_ids: list[str] = []

    names = _LocalNames()

    def start(name: str, attrs: dict[str, str]) -> None:
        if names[name] == "sheet" and _REL_ID in attrs:
            sheet_ids.append(attrs[_REL_ID])

    _run(_parse(archive, workbook, start))
    rels = _relationships(archive, rels_name)
    shared = None
    for kind, target in rels.values():
        if kind.endswith("/sharedStrings"):
            shared = _resolve(workbook, target)
    if not sheet_ids or sheet_ids[0] not in rels:
        raise XlsxError("is a workbook without worksheets")
    sheet = _resolve(workbook, rels[sheet_ids[0]][1])
    if sheet not in archive.NameToInfo:
        raise XlsxError(f"{_NOT_READABLE} (its first worksheet {sheet} is missing)")
    if shared is not None and shared not in archive.NameToInfo:
        shared = None
    return sheet, shared


class _SharedStrings:
    """The shared strings table, packed: one UTF-8 buffer and the offsets of its strings."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.offsets = array("Q", [0])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: int) -> str:
        return self.data[self.offsets[index] : self.offsets[index + 1]].decode("utf-8")


def _shared_strings(archive: zipfile.ZipFile, name: str, max_strings: int, max_chars: int) -> _SharedStrings:
    """The shared strings part read into a :class:`_SharedStrings`: each string's text (its ``<t>``
    elements outside phonetic runs ``<rPh>``) cut at ``max_chars`` characters."""
    table = _SharedStrings()
    data, offsets = table.data, table.offsets
    names = _LocalNames(":")
    kept = ""  # the text of the string being read
    on = False
    phonetic = 0

    def start(name: str, _attrs: dict[str, str]) -> None:
        nonlocal on, phonetic
        tag = names[name]
        if tag == "t":
            if not phonetic:
                on = True
        elif tag == "rPh":
            phonetic += 1

    def end(name: str) -> None:
        nonlocal on, phonetic, kept
        tag = names[name]
        if tag == "t":
            on = False
        elif tag == "si":
            if len(offsets) > max_strings:
                raise XlsxError(f"is refused: it holds more than {max_strings:,} shared strings")
            if kept:
                data.extend(kept.encode("utf-8"))
                kept = ""
                if len(data) > MAX_SHARED_BYTES:
                    raise XlsxError(
                        f"is refused: its shared strings hold more than {MAX_SHARED_BYTES >> 20} MiB of text"
                    )
            offsets.append(len(data))
        elif tag == "rPh":
            phonetic -= 1

    def text(chars: str) -> None:
        nonlocal kept
        if on and len(kept) < max_chars:
            kept += chars[: max_chars - len(kept)]

    _run(_parse(archive, name, start, end, text, namespaces=False))
    return table


def read_first_sheet(
    stream: IO[bytes], *, max_rows: int, max_columns: int, max_cell_chars: int, max_strings: int
) -> Iterator[tuple[int, list[object]]]:
    """``(row number, cells)`` of each row of the first worksheet holding a value, in order (blank rows
    and cells without a value left out; a cell's position is its column, ``""`` filling gaps). A cell is
    ``str``, ``float`` (a number), or ``bool``; text is cut at ``max_cell_chars + 1`` characters.

    :class:`XlsxError` for an archive or sheet that breaks the limits of the module docstring, a sheet
    declaring (``<dimension>``) or holding a value beyond row ``max_rows`` or column ``max_columns``,
    rows out of order, more than ``max_strings`` shared strings, or XML that cannot be read.

    The handlers are closures over plain locals: per element one dict look-up for its local name, per
    cell a table look-up for its column and one string for its text (D500)."""
    archive = open_workbook(stream)
    sheet, shared_name = _first_sheet(archive)
    shared = (
        _shared_strings(archive, shared_name, max_strings, max_cell_chars + 1)
        if shared_name is not None
        else _SharedStrings()
    )
    strings, offsets, count = shared.data, shared.offsets, len(shared)
    limits = f"the limits of {max_rows:,} rows and {max_columns} columns (A to {column_name(max_columns)})"
    limit = max_cell_chars + 1
    names = _LocalNames(":")
    match_ref, columns = _REF.fullmatch, _COLUMNS
    ready: list[tuple[int, list[object]]] = []
    cells: list[object] = []
    buf = ""
    on = False
    row = column = phonetic = 0
    inline = False
    kind = ""

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal kind, on, row, column, phonetic, inline, cells
        tag = names[name]
        if tag == "c":
            ref = attrs.get("r", "")
            letters = ref.rstrip("0123456789")
            number = columns.get(letters)
            if number is not None and 0 < len(ref) - len(letters) < 8:
                column = number  # what _REF reads from "A1" to "ZZ9999999", without the regex
            else:
                matched = match_ref(ref)
                if matched is None:
                    column += 1
                else:
                    letters = matched[1]
                    column = columns.get(letters) or _column_number(letters)
            kind = attrs.get("t", "n")
        elif tag == "v":
            on = True
        elif tag == "row":
            written = attrs.get("r", "")
            new_row = int(written) if written.isdigit() else row + 1
            if new_row <= row:
                raise XlsxError(f"{_NOT_READABLE} (its rows are out of order)", new_row)
            row, column = new_row, 0
            if cells:
                cells = []
        elif tag == "is":
            inline = True
        elif tag == "rPh":
            phonetic += 1
        elif tag == "t":
            if inline and not phonetic:
                on = True
        elif tag == "dimension":
            declared = attrs.get("ref", "")
            last = _REF.fullmatch(declared.rpartition(":")[2])
            if last is not None and (int(last[2]) > max_rows or _column_of(last[1]) > max_columns):
                raise XlsxError(
                    f"is refused: its sheet declares cells up to {declared.rpartition(':')[2]} "
                    f"(dimension {declared}), beyond {limits}"
                )

    def end(name: str) -> None:
        nonlocal on, phonetic, inline, buf, cells
        tag = names[name]
        if tag == "v" or tag == "t":
            on = False
        elif tag == "c":
            if not buf:
                return
            raw = buf
            buf = ""
            value: object
            if kind == "s":
                if not raw.isdigit() and not raw.strip().isdigit():
                    raise XlsxError(f"{_NOT_READABLE} (a cell names a missing shared string)", row)
                index = int(raw)
                if index >= count:
                    raise XlsxError(f"{_NOT_READABLE} (a cell names a missing shared string)", row)
                value = strings[offsets[index] : offsets[index + 1]].decode("utf-8")
                if not value:
                    return
            elif kind == "n":
                try:
                    value = float(raw)
                except ValueError:
                    value = raw
            elif kind == "b":
                value = raw.strip() == "1"
            else:  # inlineStr, str (a formula's text), e (an error such as #N/A), d (an ISO date)
                value = raw
            if row > max_rows or column > max_columns:
                raise XlsxError(
                    f"is refused: it has a value at {column_name(column)}{row}, beyond {limits}", row
                )
            gap = column - 1 - len(cells)
            if gap:
                if gap < 0:
                    raise XlsxError(f"{_NOT_READABLE} (its cells are out of order)", row)
                cells.extend([""] * gap)
            cells.append(value)
        elif tag == "row":
            if cells:
                ready.append((row, cells))
                cells = []
        elif tag == "is":
            inline = False
        elif tag == "rPh":
            phonetic -= 1

    def text(chars: str) -> None:
        nonlocal buf
        if on and len(buf) < limit:
            buf += chars[: limit - len(buf)]

    for _ in _parse(archive, sheet, start, end, text, namespaces=False):
        if ready:
            yield from ready
            ready.clear()
