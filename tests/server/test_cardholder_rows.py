"""The shared cardholder file validator (D186, D210)."""

from __future__ import annotations

import pytest

from paysdk.contracts.cardholders import (
    CardholderFileError,
    CardholderRow,
    RowError,
    check_header,
    formula_cell,
    is_blank,
    parse_row,
)

HEADER = ("externalId", "username", "email", "firstName", "lastName", "phone", "issueCard", "cardAlias")


def test_header_checks() -> None:
    assert check_header([*HEADER, "", None]) == HEADER
    with pytest.raises(CardholderFileError) as unknown:
        check_header(["externalId", "nickname"])
    assert unknown.value.field == "nickname"
    with pytest.raises(CardholderFileError) as missing:
        check_header(["externalId", "username", "email", "firstName"])
    assert missing.value.field == "lastName"
    with pytest.raises(CardholderFileError) as twice:
        check_header([*HEADER, "email"])
    assert twice.value.field == "email"
    with pytest.raises(CardholderFileError) as empty:
        check_header(["", None])
    assert empty.value.field == "file"


def test_valid_row() -> None:
    row = parse_row(
        HEADER, ["e1", "ana", "Ana@Example.com", "Ana", "Lima", "+5511999990000", "yes", "Payroll"], 2
    )
    assert row == CardholderRow(
        2, "e1", "ana", "ana@example.com", "Ana", "Lima", "+5511999990000", True, "Payroll"
    )
    assert parse_row(HEADER[:5], [12345.0, "u", "u@x.io", "A", "B"], 3) == CardholderRow(
        3, "12345", "u", "u@x.io", "A", "B"
    )


@pytest.mark.parametrize(
    ("cells", "field"),
    [
        (["", "ana", "a@x.io", "A", "B"], "externalId"),
        (["e", "ana", "not-an-email", "A", "B"], "email"),
        (["e", "an\u202ea", "a@x.io", "A", "B"], "username"),
        (["e", "ana", "a@x.io", "", "B"], "firstName"),
        (["e", "ana", "a@x.io", "A", "B" * 101], "lastName"),
        (["e", "ana", "a@x.io", "A", "B", "12345"], "phone"),
        (["e", "ana", "a@x.io", "A", "B", "", "maybe"], "issueCard"),
        (["e", "ana", "a@x.io", "A", "B", "", "no", "alias"], "cardAlias"),
        (["e", "ana", "a@x.io", "A", "B", "", "", "", "extra"], "file"),
    ],
)
def test_row_errors(cells: list[str], field: str) -> None:
    error = parse_row(HEADER, cells, 7)
    assert isinstance(error, RowError)
    assert (error.row, error.field) == (7, field)
    assert error.external_id == (cells[0] or None)


def test_blank() -> None:
    assert is_blank(["", None, "  "])
    assert not is_blank(["", "x"])


def test_formula_cells_name_their_column_and_row() -> None:
    """D210: a text cell starting with ``=`` (after blanks) refuses the file, naming its column."""
    found = formula_cell(HEADER, ["e", "ana", "a@x.io", ' =HYPERLINK("x")', "B"], 7)
    assert found is not None
    assert (found.field, found.row) == ("firstName", 7)
    assert found.message == "row 7: a formula is not accepted; give the value itself"
    beyond = formula_cell(HEADER[:5], ["e", "ana", "a@x.io", "A", "B", "=1+1"], 3)
    assert beyond is not None
    assert beyond.field == "file"
    assert formula_cell(HEADER, ["e", "ana", "a@x.io", "A=B", "B", "+5511999990000", 1.0], 2) is None
