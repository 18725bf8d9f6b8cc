"""The pure pieces shared by the SDK and the server: the reconciliation CSV reader (D194, D241) and the
processor signature scheme (D193, D240)."""

from __future__ import annotations

import hashlib
import io
from datetime import date
from decimal import Decimal

import pytest

from paysdk.contracts.processor_webhooks import parse_signature, sign, verify
from paysdk.contracts.reconciliation import (
    ReconciliationFileError,
    read_reconciliation_csv,
)

HEADER = b"settlementDate,paymentId,amount,currency\r\n"


def _read(data: bytes, **kw: int) -> object:
    return read_reconciliation_csv(io.BytesIO(data), **kw)


def test_rows_are_records_numbered_from_the_header() -> None:
    data = (
        b"\xef\xbb\xbfpaymentId, amount ,currency,settlementDate\r\n"
        b'"tpm_1",10.5,gtq,2026-01-05\r\n'
        b"\r\n"
        b'tpm_2,1.00,GTQ,"2026-01-\n05"\r\n'  # a line break inside a quoted cell: one record
        b"tpm_3,2,USD,2026-01-06\n"
        b"tpm_1,2,USD,2026-01-06\n"
    )
    scan = read_reconciliation_csv(io.BytesIO(data))
    assert scan.sha256 == hashlib.sha256(data).hexdigest()
    assert scan.rows == 4
    assert [(r.row, r.payment_id, r.amount, r.currency, r.settlement_date) for r in scan.valid] == [
        (2, "tpm_1", Decimal("10.5"), "GTQ", date(2026, 1, 5)),
        (5, "tpm_3", Decimal(2), "USD", date(2026, 1, 6)),
    ]
    assert scan.errors == [
        (4, "settlementDate", "must be a date YYYY-MM-DD"),
        (6, "paymentId", "appears again: row 2 names this payment"),
    ]


def test_every_error_of_a_row() -> None:
    data = (
        HEADER
        + b"2026-13-01,tpm 1,-1,GT\r\n"
        + b"2026-01-05,tpm_2,1.00\r\n"
        + b"2026-01-05,"
        + b"x" * 2000
        + b",1.00,GTQ\r\n"
        + b"2026-01-05,tpm_4,1.001,GTQ\r\n"
        + b"2026-01-05,tpm_5,0,GTQ\r\n"
    )
    scan = read_reconciliation_csv(io.BytesIO(data))
    assert scan.rows == 5
    by_row: dict[int, list[str]] = {}
    for row, field, _message in scan.errors:
        by_row.setdefault(row, []).append(field)
    assert by_row == {
        2: ["settlementDate", "paymentId", "amount", "currency"],
        3: ["row"],
        4: ["paymentId"],
        5: ["amount"],
    }
    assert [r.row for r in scan.valid] == [6]  # zero is a valid net amount (fully refunded)


@pytest.mark.parametrize(
    ("data", "row", "column", "fragment"),
    [
        # a quoted cell past the csv module's field limit hiding a row of its own (issue 20)
        (
            HEADER
            + b'2026-01-05,"'
            + b"x" * 140_000
            + b'\r\n2026-01-05,tpm_hidden,7.77,GTQ\r\n",1.00,GTQ\r\n2026-01-05,tpm_2,1.00,GTQ\r\n',
            2,
            "paymentId",
            "field limit",
        ),
        (HEADER + b'2026-01-05,tpm_1,1,GTQ\r\n2026-01-05,"tpm_3"x,1.00,GTQ\r\n', 3, "paymentId", "not valid"),
        (
            HEADER + b"2026-01-05,tpm_1,1,GTQ\r\n2026-01-05," + b"x" * (10 << 20) + b",1,GTQ\r\n",
            3,
            "paymentId",
            "bytes",
        ),
        (HEADER + b'2026-01-05,tpm_1,1,"GTQ\r\n', 2, "currency", "unexpected end"),
    ],
)
def test_a_record_csv_refuses_refuses_the_whole_file(
    data: bytes, row: int, column: str, fragment: str
) -> None:
    """D320: any csv parse error (or a line past MAX_LINE_BYTES) refuses the file naming its row and
    column; the parser never restarts inside an open quote."""
    with pytest.raises(ReconciliationFileError) as caught:
        read_reconciliation_csv(io.BytesIO(data))
    assert (caught.value.row, caught.value.column) == (row, column)
    assert fragment in caught.value.message


@pytest.mark.parametrize(
    ("data", "column"),
    [
        (b"", "file"),
        (b"\r\n", "file"),
        (b"settlementDate,paymentId,amount\n", "currency"),
        (b"settlementDate,paymentId,amount,currency,fee\n", "fee"),
        (b"settlementDate,paymentId,amount,currency,amount\n", "amount"),
        (b"settlementDate,paymentId,amount,curr\xe9ncy\n", "file"),
        (HEADER + b"2026-01-05,tpm_1,1.00,GTQ\n\xff\n", "file"),
    ],
)
def test_file_errors_name_the_file_or_the_column(data: bytes, column: str) -> None:
    with pytest.raises(ReconciliationFileError) as caught:
        read_reconciliation_csv(io.BytesIO(data))
    assert caught.value.column == column


def test_too_many_rows() -> None:
    rows = b"".join(b"2026-01-05,tpm_%d,1.00,GTQ\n" % i for i in range(4))
    assert read_reconciliation_csv(io.BytesIO(HEADER + rows), max_rows=4).rows == 4
    with pytest.raises(ReconciliationFileError, match="more than 3"):
        read_reconciliation_csv(io.BytesIO(HEADER + rows), max_rows=3)


def test_the_signature_scheme() -> None:
    secret, body = "psec_" + "a" * 64, b'{"x":1}'
    header = sign(secret, body, 1_700_000_000)
    assert parse_signature(header) is not None
    assert verify(secret, body, header, 1_700_000_000 + 300) is None
    assert (
        verify(secret, body, "v0=zz, " + header.replace(",", ", "), 1_700_000_000) is None
    )  # other schemes skipped
    assert "stale" in (verify(secret, body, header, 1_700_000_000 + 301) or "")
    assert "does not match" in (verify(secret, body + b" ", header, 1_700_000_000) or "")
    assert "does not match" in (verify("psec_other", body, header, 1_700_000_000) or "")
    assert "missing" in (verify(secret, body, None, 0) or "")
    for bad in (
        "t=1",
        "v1=" + "a" * 64,
        "t=1,t=2,v1=" + "a" * 64,
        "t=x,v1=" + "a" * 64,
        "t=1,v1=abc",
        "t=1;v1=" + "a" * 64,
        "garbage",
    ):
        assert parse_signature(bad) is None, bad
        assert "malformed" in (verify(secret, body, bad, 1) or ""), bad
