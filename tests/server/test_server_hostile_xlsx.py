"""Hostile xlsx cardholder files (issue 20, item 7; D330), uploaded to the reference server in process on
SQLite and PostgreSQL: a 1.7 KB workbook with a cell at ``XFD1048576`` (declared by its ``<dimension>``
or not), a 1 MB archive holding 1 GiB of whitespace, the same with a zip directory that lies about the
sheet's size. Each is ``400`` naming ``file`` and the problem, no batch is made, and the server answers
its health check after it (a dense-grid reader aborted the process on the first: no ``except`` catches
a native abort). A duplicate is answered before it is read. The reader itself is compared with
python-calamine on ordinary workbooks (shared and inline strings, numbers, booleans, rich text)."""

from __future__ import annotations

import io
from typing import Any

import httpx
import pytest
from benchmarks.hostile_files import far_cell_xlsx, whitespace_bomb_xlsx, workbook_xlsx
from cardholder_kit import Backoffice, person, xlsx_file

from paysdk.contracts.sandbox import SandboxClient
from paysdk.server import xlsx
from paysdk.server.services import cardholders as service


@pytest.fixture
async def bo(asgi_client: httpx.AsyncClient, merchant: SandboxClient) -> Backoffice:
    return Backoffice(asgi_client, merchant)


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return whitespace_bomb_xlsx(1 << 30)


async def _refused(bo: Backoffice, partner: str, content: bytes, fragment: str) -> None:
    answer = await bo.upload(partner, content, "holders.xlsx")
    assert answer.status_code == 400, answer.text
    problem = answer.json()
    assert problem["details"][0]["field"] == "file", problem
    assert fragment in problem["details"][0]["message"], problem
    health = await bo.client.get("/_sandbox/health")
    assert health.status_code == 200, health.text


async def _still_accepts(bo: Backoffice, partner: str) -> None:
    answer = await bo.upload(partner, xlsx_file([person(1)]), "fine.xlsx")
    assert answer.status_code == 202, answer.text
    assert answer.json()["data"]["duplicate"] is False


async def test_a_cell_at_xfd1048576_is_refused_and_the_server_answers(bo: Backoffice, db_url: str) -> None:
    partner = await bo.partner()
    declared = far_cell_xlsx(declared=True)
    assert len(declared) < 2048
    await _refused(bo, partner, declared, "dimension A1:XFD1048576")
    await _refused(bo, partner, far_cell_xlsx(declared=False), "a value at XFD1048576")
    await _still_accepts(bo, partner)


async def test_a_zip_bomb_is_refused_before_it_is_inflated(bo: Backoffice, db_url: str, bomb: bytes) -> None:
    partner = await bo.partner()
    assert len(bomb) < 1_200_000
    await _refused(bo, partner, bomb, "more than 100 times")
    # The directory says 1,000 bytes: zipfile inflates no more than that, and the CRC fails.
    await _refused(bo, partner, whitespace_bomb_xlsx(64 << 20, lie=True), "not a readable xlsx workbook")
    # Sent again: refused again, the same way (a refused file leaves nothing to be a duplicate of).
    await _refused(bo, partner, bomb, "more than 100 times")
    await _still_accepts(bo, partner)


async def test_a_duplicate_is_answered_before_it_is_read(
    bo: Backoffice, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    partner = await bo.partner()
    content = xlsx_file([person(i) for i in range(1, 4)])
    first = await bo.upload(partner, content, "people.xlsx")
    assert first.status_code == 202, first.text
    reads: list[str] = []
    scan = service.scan_file

    def counted(received: Any) -> service.FileScan:
        reads.append(received.sha256)
        return scan(received)

    monkeypatch.setattr(service, "scan_file", counted)
    again = await bo.upload(partner, content, "people.xlsx")
    assert again.status_code == 200, again.text
    assert again.json()["data"]["duplicate"] is True
    assert again.json()["data"]["batchId"] == first.json()["data"]["batchId"]
    assert reads == []
    misnamed = await bo.upload(partner, content, "people.txt")
    assert misnamed.status_code == 400, misnamed.text
    other = await bo.upload(partner, xlsx_file([person(9)]), "other.xlsx")
    assert other.status_code == 202, other.text
    assert len(reads) == 1


def _calamine(content: bytes) -> list[tuple[int, list[object]]]:
    from python_calamine import CalamineWorkbook

    rows = CalamineWorkbook.from_filelike(io.BytesIO(content)).get_sheet_by_index(0).iter_rows()
    found: list[tuple[int, list[object]]] = []
    for number, cells in enumerate(rows, 1):
        kept: list[object] = list(cells)
        while kept and kept[-1] == "":
            kept.pop()
        if kept:
            found.append((number, kept))
    return found


def _workbook(shared: bool) -> bytes:
    import xlsxwriter

    buffer = io.BytesIO()
    book = xlsxwriter.Workbook(buffer, {"in_memory": True, "constant_memory": not shared})
    sheet = book.add_worksheet("Holders")
    sheet.write_row(0, 0, ["externalId", "username", "email", "firstName", "lastName", "phone", "issueCard"])
    sheet.write_row(1, 0, ["E1", "u1", "u1@example.com", "Ana", "Lima", 14155550123, True])
    sheet.write_row(3, 0, [12345, "u3", "u3@example.com", "Ana", "L\u00e9a", 1.5, False])
    if shared:
        sheet.write_rich_string(4, 0, "E", book.add_format({"bold": True}), "5")
    sheet.write_string(5, 2, "=not a formula")
    sheet.write_formula(6, 0, "=1+2", None, 3)
    sheet.write_string(7, 6, "  padded  ")
    book.add_worksheet("Second").write(0, 0, "not read")
    book.close()
    return buffer.getvalue()


@pytest.mark.parametrize("shared", [True, False], ids=["shared-strings", "inline-strings"])
def test_the_reader_reads_what_calamine_reads(shared: bool) -> None:
    content = _workbook(shared)
    mine = list(
        xlsx.read_first_sheet(
            io.BytesIO(content), max_rows=100, max_columns=64, max_cell_chars=1024, max_strings=100
        )
    )
    assert mine == _calamine(content)
    assert mine[0][0] == 1
    assert mine[1][1][5] == 14155550123.0


def test_a_long_cell_is_cut_past_the_limit_and_a_dtd_is_refused() -> None:
    content = xlsx_file([[*person(1)[:3], "A" * 5000, "B"]])
    rows = list(
        xlsx.read_first_sheet(
            io.BytesIO(content), max_rows=100, max_columns=64, max_cell_chars=1024, max_strings=100
        )
    )
    assert rows[1][1][3] == "A" * 1025
    with pytest.raises(xlsx.XlsxError, match="column"):
        list(
            xlsx.read_first_sheet(
                io.BytesIO(content), max_rows=100, max_columns=4, max_cell_chars=1024, max_strings=100
            )
        )
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE w [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        b'<row r="1"><c r="A1" t="inlineStr"><is><t>&b;</t></is></c></row></sheetData></worksheet>'
    )
    with pytest.raises(xlsx.XlsxError, match="document type declaration"):
        list(
            xlsx.read_first_sheet(
                io.BytesIO(workbook_xlsx(laughs)), max_rows=9, max_columns=9, max_cell_chars=9, max_strings=9
            )
        )


def _read(sheet_xml: bytes) -> list[tuple[int, list[object]]]:
    return list(
        xlsx.read_first_sheet(
            io.BytesIO(workbook_xlsx(sheet_xml)),
            max_rows=100,
            max_columns=64,
            max_cell_chars=1024,
            max_strings=100,
        )
    )


def test_prefixed_elements_and_other_reference_forms_read_as_the_plain_sheet() -> None:
    """The hot loop's shortcuts (D500): local names whatever the prefix, a column from ``A``..``ZZ`` by
    table, other forms (``$A$1``, lower case, three letters, no reference) as the reference regex reads
    them."""
    main = b"http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    plain = (
        b'<worksheet xmlns="' + main + b'"><sheetData><row r="2">'
        b'<c r="A2" t="inlineStr"><is><t>a</t></is></c><c r="C2"><v>2</v></c>'
        b'<c r="D2" t="b"><v>1</v></c><c r="AB2" t="inlineStr"><is><t>far</t></is></c></row>'
        b'<row r="3"><c r="A3" t="str"><f>X</f><v>text</v></c></row></sheetData></worksheet>'
    )
    prefixed = (
        b'<x:worksheet xmlns:x="' + main + b'"><x:sheetData><x:row r="2">'
        b'<x:c r="$A$2" t="inlineStr"><x:is><x:t>a</x:t></x:is></x:c><x:c r="c2"><x:v>2</x:v></x:c>'
        b'<x:c t="b"><x:v>1</x:v></x:c><x:c r="ab2" t="inlineStr"><x:is><x:t>far</x:t></x:is></x:c></x:row>'
        b'<x:row><x:c r="A3" t="str"><x:f>X</x:f><x:v>text</x:v></x:c></x:row></x:sheetData></x:worksheet>'
    )
    expected = [(2, ["a", "", 2.0, True, *[""] * 23, "far"]), (3, ["text"])]
    assert _read(plain) == expected
    assert _read(prefixed) == expected
    three = (
        b'<worksheet xmlns="'
        + main
        + b'"><sheetData><row r="1"><c r="AAA1"><v>1</v></c></row></sheetData></worksheet>'
    )
    with pytest.raises(xlsx.XlsxError, match="AAA1"):
        _read(three)
