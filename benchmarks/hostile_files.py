"""Hostile xlsx workbooks (issue 20, item 7; D330), built in memory for the tests and ``make bench``.

* :func:`far_cell_xlsx`: a valid small workbook (1-2 KB) with one cell at ``XFD1048576``, its
  ``<dimension>`` declaring it or not: a dense-grid reader allocates 2^34 cells for it.
* :func:`whitespace_bomb_xlsx`: a workbook whose sheet holds ``expanded`` bytes of whitespace between
  two rows, deflated to about a thousandth of that; ``lie`` makes the zip directory declare the sheet
  1,000 bytes long instead.

The archives are written by :func:`zip_archive` (stdlib ``zlib`` and ``struct``): the bomb's deflate
stream is one fully flushed block of 1 MiB of spaces repeated, so a 1 GiB member takes a second to build
instead of a minute of compression. ``zipfile`` reads them like any other archive.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["Member", "far_cell_xlsx", "member", "whitespace_bomb_xlsx", "workbook_xlsx", "zip_archive"]

_CONTENT_TYPES = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    b'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    b'<Default Extension="xml" ContentType="application/xml"/>'
    b'<Override PartName="/xl/workbook.xml" '
    b'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    b'<Override PartName="/xl/worksheets/sheet1.xml" '
    b'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    b"</Types>"
)
_ROOT_RELS = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    b'<Relationship Id="rId1" '
    b'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    b'Target="xl/workbook.xml"/></Relationships>'
)
_WORKBOOK = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    b'<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
    b'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
    b'<sheets><sheet name="Cardholders" sheetId="1" r:id="rId1"/></sheets></workbook>'
)
_WORKBOOK_RELS = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    b'<Relationship Id="rId1" '
    b'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
    b'Target="worksheets/sheet1.xml"/></Relationships>'
)
_HEADER = ("externalId", "username", "email", "firstName", "lastName")
_SPACES = 1 << 20


@dataclass(frozen=True)
class Member:
    """One member of :func:`zip_archive`: its name, its deflate stream (raw, no zlib header) and what it
    inflates to (``size`` bytes with CRC-32 ``crc``); ``declared`` overrides the size the directory
    states."""

    name: str
    deflated: bytes
    size: int
    crc: int
    declared: int | None = None


def member(name: str, data: bytes) -> Member:
    """A member holding ``data``, deflated."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return Member(name, packer.compress(data) + packer.flush(), len(data), zlib.crc32(data))


def _inline_row(row: int, values: Iterable[str]) -> bytes:
    cells = "".join(
        f'<c r="{chr(ord("A") + index)}{row}" t="inlineStr"><is><t>{value}</t></is></c>'
        for index, value in enumerate(values)
    )
    return f'<row r="{row}">{cells}</row>'.encode()


def _sheet(body: bytes, dimension: str | None) -> tuple[bytes, bytes]:
    head = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    )
    if dimension is not None:
        head += f'<dimension ref="{dimension}"/>'.encode()
    return head + b"<sheetData>" + body, b"</sheetData></worksheet>"


def _parts(sheet: Member) -> list[Member]:
    return [
        member("[Content_Types].xml", _CONTENT_TYPES),
        member("_rels/.rels", _ROOT_RELS),
        member("xl/workbook.xml", _WORKBOOK),
        member("xl/_rels/workbook.xml.rels", _WORKBOOK_RELS),
        sheet,
    ]


def workbook_xlsx(sheet_xml: bytes) -> bytes:
    """A workbook whose only worksheet is ``sheet_xml``."""
    return zip_archive(_parts(member("xl/worksheets/sheet1.xml", sheet_xml)))


def far_cell_xlsx(*, declared: bool = True) -> bytes:
    """A header, one valid row, and a cell at ``XFD1048576`` (the dimension says so when ``declared``)."""
    rows = _inline_row(1, _HEADER) + _inline_row(2, ("E1", "u1", "u1@example.com", "Ana", "Lima"))
    rows += b'<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>x</t></is></c></row>'
    head, tail = _sheet(rows, "A1:XFD1048576" if declared else None)
    return workbook_xlsx(head + tail)


def whitespace_bomb_xlsx(expanded: int = 1 << 30, *, lie: bool = False) -> bytes:
    """A workbook whose sheet holds a header, ``expanded`` bytes (whole MiB) of spaces, then a row."""
    head, tail = _sheet(_inline_row(1, _HEADER), "A1:E2")
    tail = _inline_row(2, ("E1", "u1", "u1@example.com", "Ana", "Lima")) + tail
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    spaces = b" " * _SPACES
    start = packer.compress(head) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(spaces) + packer.flush(zlib.Z_FULL_FLUSH)
    end = packer.compress(tail) + packer.flush()
    count = expanded // _SPACES
    crc = zlib.crc32(head)
    for _ in range(count):
        crc = zlib.crc32(spaces, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + count * _SPACES + len(tail)
    sheet = Member("xl/worksheets/sheet1.xml", start + block * count + end, size, crc, 1000 if lie else None)
    return zip_archive(_parts(sheet))


def _zip64(size: int, compressed: int, offset: int | None) -> tuple[bytes, bool]:
    if size < 0xFFFFFFFF and compressed < 0xFFFFFFFF and (offset is None or offset < 0xFFFFFFFF):
        return b"", False
    values = [size, compressed] + ([] if offset is None else [offset])
    body = struct.pack(f"<{len(values)}Q", *values)
    return struct.pack("<HH", 0x0001, len(body)) + body, True


def _records(members: Iterable[Member]) -> Iterator[bytes]:
    central: list[bytes] = []
    offset = 0
    for item in members:
        name = item.name.encode()
        size = item.size if item.declared is None else item.declared
        extra, big = _zip64(size, len(item.deflated), None)
        small = 0xFFFFFFFF if big else None
        local = struct.pack(
            "<IHHHHHIIIHH",
            0x04034B50,
            45 if big else 20,
            0,
            8,
            0,
            0x21,
            item.crc,
            small or len(item.deflated),
            small or size,
            len(name),
            len(extra),
        )
        yield local + name + extra
        yield item.deflated
        cextra, cbig = _zip64(size, len(item.deflated), offset)
        csmall = 0xFFFFFFFF if cbig else None
        central.append(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                45,
                45 if cbig else 20,
                0,
                8,
                0,
                0x21,
                item.crc,
                csmall or len(item.deflated),
                csmall or size,
                len(name),
                len(cextra),
                0,
                0,
                0,
                0,
                csmall or offset,
            )
            + name
            + cextra
        )
        offset += len(local) + len(name) + len(extra) + len(item.deflated)
    directory = b"".join(central)
    yield directory
    yield struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central), len(directory), offset, 0)


def zip_archive(members: Iterable[Member]) -> bytes:
    """A zip archive of ``members`` (deflated; zip64 fields where a size needs them)."""
    return b"".join(_records(members))
