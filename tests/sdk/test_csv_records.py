"""The one CSV record reader every CSV file shares (``paysdk.contracts.csv_records``, D320): records
numbered across quoted line breaks, a BOM, bounded lines, and every parse error naming its row and cell."""

from __future__ import annotations

import hashlib
import io

import pytest

from paysdk.contracts.csv_records import CsvRecords, CsvSyntaxError


def test_records_rows_offsets_and_the_hash() -> None:
    data = b'\xef\xbb\xbfa,b\r\n"x\r\ny",2\r\n\r\nz,"3"\n'
    digest = hashlib.sha256()
    records = CsvRecords(io.BytesIO(data), bom=True, update=digest.update)
    assert list(records) == [(1, ["a", "b"]), (2, ["x\r\ny", "2"]), (3, []), (4, ["z", "3"])]
    assert (records.offset, records.line, records.row) == (len(data), 5, 4)
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    ("data", "row", "cell", "fragment"),
    [
        (b'a,b\n1,"2"x\n', 2, 1, "expected after"),
        (b'a,b\n1,2\n"3,4\n5,6\n', 3, 0, "unexpected end"),
        (b'a,b,c\n1,"' + b"x" * 140_000 + b'\n9,9,9\n",3\n', 2, 1, "field limit"),
        (b'a,b\n1,"two\n' + b"x" * 300_000 + b'"\n', 2, 1, "longer than 262,144 bytes (line 3)"),
        (b"a,b\n1,\xff\n", 2, None, "not UTF-8"),
    ],
)
def test_a_parse_error_names_its_row_and_cell_and_stops(
    data: bytes, row: int, cell: int | None, fragment: str
) -> None:
    records = iter(CsvRecords(io.BytesIO(data)))
    with pytest.raises(CsvSyntaxError) as caught:
        list(records)
    assert caught.value.row == row
    if cell is not None:
        assert caught.value.cell == cell
    assert fragment in caught.value.message
    assert caught.value.column(("a", "b", "c")) == ("row" if cell is None else "abc"[cell])
