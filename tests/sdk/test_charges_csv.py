"""The shared batch charge CSV reader (``paysdk.contracts.charges_csv``, D155) and the SDK's split into
parts (D158): row numbers across parts, BOM, CRLF, quotes with line breaks, the fast and the csv paths
agreeing, byte ranges that rebuild each part exactly, and the errors the SDK raises before sending.
"""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path

import pytest

import paysdk
from paysdk.contracts.charges_csv import BATCH_MAX_ROWS, CsvFileError, CsvPart, plan_upload, scan

HEADER = b"subscriptionId,amount,reference"


def _part_bytes(data: bytes, layout: CsvPart) -> bytes:
    return layout.header + b"".join(data[span.start : span.end] for span in layout.spans)


def test_bom_crlf_quotes_and_line_breaks_keep_row_numbers() -> None:
    data = (
        "\ufeffdescription,reference,amount,subscriptionId,currency\r\n"
        '"two\r\nlines",r-1,10.00,sub_1,gtq\r\n'
        '"a ""quoted"", comma",r-2,0.01,sub_2,\r\n'
        "\r\n"
        "café,r-3,7,sub_3,\r\n"
        "plain,r-4,7.5,sub_4,USD"  # no line end at the end of the file
    ).encode()
    scanned = scan(io.BytesIO(data), keep_rows=True)
    assert scanned.errors == []
    assert scanned.rows == 4
    assert scanned.charges is not None
    assert [(c.row, c.reference, c.description, c.currency) for c in scanned.charges] == [
        (2, "r-1", "two\r\nlines", "GTQ"),
        (3, "r-2", 'a "quoted", comma', None),
        (5, "r-3", "café", None),
        (6, "r-4", "plain", "USD"),
    ]
    assert [c.amount for c in scanned.charges] == [
        Decimal("10.00"),
        Decimal("0.01"),
        Decimal(7),
        Decimal("7.5"),
    ]


@pytest.mark.parametrize(
    ("row", "column", "fragment"),
    [
        ("sub_1,-1,r", "amount", "digits"),
        ("sub_1,1.234,r", "amount", "digits"),
        ("sub_1,1e3,r", "amount", "digits"),
        ("sub_1, 1,r", "amount", "digits"),
        ("sub_1,0.00,r", "amount", "greater than 0"),
        ("sub_1,12345678901,r", "amount", "digits"),
        ("sub_1,1,=1+1", "reference", "starting with a letter"),
        ("sub_1,1,-r", "reference", "starting with a letter"),
        ("sub_1,1," + "r" * 65, "reference", "1 to 64"),
        ("sub 1,1,r", "subscriptionId", "subscription id"),
        ("sub_1,1", "reference", "2 cells"),
        ("sub_1,1,r,extra", "row", "4 cells"),
        ("sub_1," + "9" * 2000 + ",r", "amount", "1,024"),
    ],
)
def test_row_errors_name_row_and_column(row: str, column: str, fragment: str) -> None:
    data = HEADER + b"\n" + row.encode() + b"\nsub_2,1,ok\n"
    scanned = scan(io.BytesIO(data))
    assert [(e.row, e.column) for e in scanned.errors][:1] == [(2, column)]
    assert fragment in scanned.errors[0].message
    assert list(scanned.state) == [0, 2, 0]  # the next row is read normally


#: A quoted description past the csv module's field limit (131,072 characters) hiding a row of its own.
SMUGGLED = (
    HEADER
    + b',description\nsub_1,1.00,r-1,"'
    + b"x" * 140_000
    + b'\nsub_hidden,7.77,r-hidden,smuggled\n"\nsub_2,1.00,r-2,\n'
)


@pytest.mark.parametrize(
    ("data", "row", "column", "fragment"),
    [
        (SMUGGLED, 2, "description", "field limit"),
        (HEADER + b'\nsub_1,1,ok\nsub_1,1,"r"x\nsub_2,1,r2\n', 3, "reference", "not valid CSV"),
        (HEADER + b"\nsub_1," + b"9" * 200_000 + b",r\n", 2, "amount", "field limit"),
        (HEADER + b'\nsub_1,1,ok\nsub_2,1,"open\n', 3, "reference", "unexpected end"),
        # a multi-megabyte line is refused once MAX_LINE_BYTES are read, never read whole
        (HEADER + b"\nsub_1,1,ok\nsub_2,1," + b"r" * 5_000_000 + b"\n", 3, "reference", "262,144 bytes"),
    ],
)
def test_a_record_csv_refuses_refuses_the_whole_file(
    data: bytes, row: int, column: str, fragment: str
) -> None:
    """D320 (issue 20): a csv parse error names its row and column and nothing of the file is read as
    a row: the parser never restarts inside an open quote."""
    for keep_rows in (False, True):
        with pytest.raises(CsvFileError) as caught:
            scan(io.BytesIO(data), keep_rows=keep_rows)
        assert (caught.value.row, caught.value.column) == (row, column)
        assert fragment in caught.value.message
    with pytest.raises(CsvFileError):
        plan_upload(io.BytesIO(data))


def test_a_long_line_is_not_read_whole() -> None:
    """The reader asks the stream for at most MAX_LINE_BYTES + 1 bytes of a line (D320)."""
    from paysdk.contracts.csv_records import MAX_LINE_BYTES

    class Counting(io.BytesIO):
        largest = 0

        def readline(self, size: int | None = -1, /) -> bytes:
            line = super().readline(size)
            Counting.largest = max(Counting.largest, len(line))
            return line

    with pytest.raises(CsvFileError, match="longer than"):
        scan(Counting(HEADER + b"\nsub_1,1," + b"r" * (8 << 20) + b"\n"))
    assert Counting.largest == MAX_LINE_BYTES + 1


def test_duplicates_name_the_earlier_row_only_when_present() -> None:
    data = HEADER + b'\nsub_1,1,a\nsub_1,1,b\nsub_1,"2",a\nsub_1,3,a\n'
    scanned = scan(io.BytesIO(data), keep_rows=True)
    assert [(e.row, e.column, e.message) for e in scanned.errors] == [
        (4, "reference", "duplicate of row 2"),
        (5, "reference", "duplicate of row 2"),
    ]
    assert scanned.charges is not None
    assert [c.row for c in scanned.charges] == [2, 3]


@pytest.mark.parametrize(
    ("data", "column"),
    [
        (b"", "file"),
        (b"\xef\xbb\xbf\r\n", "file"),
        (HEADER + b"\n", "file"),
        (HEADER + b"\n\n\n", "file"),
        (b"subscriptionId,amount\nsub,1\n", "reference"),
        (b"subscriptionId,amount,reference,Amount\n", "Amount"),
        (b"subscriptionId,amount,reference,reference\n", "reference"),
        (HEADER + b"\nsub_1,1,r\xe9f\n", "file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "file"),
    ],
)
def test_file_errors(data: bytes, column: str) -> None:
    with pytest.raises(CsvFileError) as caught:
        scan(io.BytesIO(data))
    assert caught.value.column == column


def test_the_servers_limit_refuses_the_whole_file() -> None:
    rows = b"".join(b"sub_1,1,r-%d\n" % index for index in range(BATCH_MAX_ROWS + 1))
    with pytest.raises(CsvFileError, match="5,000"):
        scan(io.BytesIO(HEADER + b"\n" + rows), max_rows=BATCH_MAX_ROWS)
    assert (
        scan(
            io.BytesIO(HEADER + b"\n" + rows[: rows.index(b"sub_1,1,r-5000\n")]), max_rows=BATCH_MAX_ROWS
        ).rows
        == 5000
    )


def test_parts_are_byte_ranges_numbered_as_the_file() -> None:
    lines = [b"\xef\xbb\xbf" + HEADER]
    for index in range(12):
        lines.append(b"sub_%d,1.00,ref-%d" % (index, index))
    lines.insert(5, b"")  # row 6 is blank
    lines.insert(8, b'sub_x,1,"multi\r\nline"')  # row 9: a quoted cell (the reference is invalid)
    data = b"\r\n".join(lines) + b"\r\n"
    plan = plan_upload(io.BytesIO(data), part_rows=4)
    assert [(e.row, e.column) for e in plan.errors] == [(9, "reference")]
    assert [(p.index, p.first_row, p.last_row, p.rows) for p in plan.parts] == [
        (1, 2, 5, 4),
        (2, 7, 11, 4),
        (3, 12, 15, 4),
    ]
    second = plan.parts[1]
    assert [s.first_row for s in second.spans] == [7, 10]  # row 9 is left out
    assert list(second.data_rows()) == [7, 8, 10, 11]
    assert [second.original_row(r) for r in (2, 3, 4, 5)] == [7, 8, 10, 11]
    rebuilt = _part_bytes(data, second)
    assert (
        rebuilt
        == HEADER + b"\r\nsub_4,1.00,ref-4\r\nsub_5,1.00,ref-5\r\nsub_6,1.00,ref-6\r\nsub_7,1.00,ref-7\r\n"
    )
    for part in plan.parts:  # every part is a valid file of its own with the same rows
        again = scan(io.BytesIO(_part_bytes(data, part)))
        assert again.errors == []
        assert again.rows == part.rows
    assert len({p.key for p in plan.parts}) == 3


def test_a_parts_key_names_the_rows_it_carries_whatever_the_part_size() -> None:
    """D321 (issue 20): the same rows are the same bytes under the same key in any split (blank lines,
    invalid rows left out, a trailing blank line and a resplit included); other rows, another key."""
    lines = [HEADER]
    for index in range(20):
        lines.append(
            b""
            if index % 7 == 3
            else b"sub_1,-1,bad-%d" % index
            if index % 5 == 4
            else b"sub_1,1,r-%d" % index
        )
    data = b"\n".join(lines) + b"\n\n"
    bodies: dict[str, bytes] = {}
    valid = [row for part in plan_upload(io.BytesIO(data)).parts for row in part.data_rows()]
    for size in range(1, 9):
        for resplits in ((), ((7, 2),), ((5, 3), (12, 1))):
            plan = plan_upload(io.BytesIO(data), part_rows=size, resplits=resplits)
            assert [row for part in plan.parts for row in part.data_rows()] == valid
            for part in plan.parts:
                assert part.key == f"csv-{plan.sha256[:16]}-{part.first_row}-{part.last_row}"
                body = _part_bytes(data, part)
                assert bodies.setdefault(part.key, body) == body, (size, resplits, part)
    three = plan_upload(io.BytesIO(data), part_rows=3)
    resplit = plan_upload(io.BytesIO(data), part_rows=3, resplits=((three.parts[1].last_row, 2),))
    assert resplit.parts[:2] == three.parts[:2]  # the parts before the new size keep their rows and keys
    assert all(part.rows <= 2 for part in resplit.parts[2:])


def test_the_fast_path_and_the_csv_path_agree() -> None:
    plain = HEADER + b",description,currency\nsub_1,1.5,r-1,hello world,usd\n"
    quoted = HEADER + b',description,currency\n"sub_1","1.5","r-1","hello world","usd"\n'
    one = scan(io.BytesIO(plain), keep_rows=True).charges
    two = scan(io.BytesIO(quoted), keep_rows=True).charges
    assert one == two
    assert one is not None
    assert one[0].currency == "USD"


def test_sdk_read_csv_raises_before_sending(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_bytes(HEADER + b"\nsub_1,1,ok\nsub_1,-1,bad\n")
    csv_file = paysdk.read_charges_csv(path)
    assert csv_file.rows == 2
    assert csv_file.invalid_rows == frozenset({3})
    assert [(r.row, r.status) for r in csv_file.refused_results()] == [(3, "refused")]
    with paysdk.Client(environment=paysdk.Environment.local("http://127.0.0.1:9")) as client:
        with pytest.raises(paysdk.CsvValidationError) as caught:
            client.subscriptions.charges.upload_csv(path)
        assert caught.value.errors[0].row == 3
        with pytest.raises(paysdk.CsvValidationError) as missing:
            client.subscriptions.charges.upload_csv(io.BytesIO(b"amount\n1\n"))
        assert missing.value.field == "subscriptionId"
        with pytest.raises(paysdk.ValidationError, match="part_rows"):
            client.subscriptions.charges.read_csv(path, part_rows=5001)
        with pytest.raises(paysdk.ValidationError, match="cannot read"):
            client.subscriptions.charges.read_csv(tmp_path / "missing.csv")
        with pytest.raises(paysdk.ValidationError, match="binary"):
            client.subscriptions.charges.read_csv(io.StringIO("x"))  # type: ignore[arg-type]
