"""A stored page of a long reconciliation report (D331) answers what the models would: the server builds
the page's wire JSON from the entries' stored tuples without validating each entry again."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from paysdk import _json
from paysdk.contracts.reconciliation import (
    AmountMismatchRow,
    InvalidRow,
    MatchedRow,
    MissingPayment,
    ReconciliationReportPage,
    UnknownRow,
)
from paysdk.server.services.reconciliation import page_wire


def _wire(value: dict[str, Any]) -> Any:
    """What a client reads: the JSON written and parsed again (Decimal exact)."""
    return _json.loads(_json.dumps(value))


def test_a_page_from_stored_tuples_is_the_models_wire() -> None:
    entries: dict[str, Any] = {
        "matched": [(2, "tpm_a")],
        "amount_mismatch": [(3, "tpm_b", Decimal("15.00"), Decimal("20.5"))],
        "unknown": [(4, "tpm_c", "the payment settled on 2026-01-06"), (5, "tpm_d", "")],
        "invalid": [(6, "amount", "must be digits"), (6, "row", "the row has 3 cells, the header 4")],
        "missing": [("tpm_e", date(2026, 1, 5), Decimal("30.00"), "GTQ")],
    }
    stored = _json.loads(_json.dumps(entries))  # as the pages table keeps them
    models = ReconciliationReportPage(
        report_id="rcr_1",
        page=2,
        pages=3,
        matched=[MatchedRow(row=2, payment_id="tpm_a")],
        amount_mismatch=[
            AmountMismatchRow(row=3, payment_id="tpm_b", expected=Decimal("15.00"), actual=Decimal("20.5"))
        ],
        unknown=[
            UnknownRow(row=4, payment_id="tpm_c", reason="the payment settled on 2026-01-06"),
            UnknownRow(row=5, payment_id="tpm_d", reason=""),
        ],
        invalid=[
            InvalidRow(row=6, field="amount", message="must be digits"),
            InvalidRow(row=6, field="row", message="the row has 3 cells, the header 4"),
        ],
        missing=[
            MissingPayment(
                payment_id="tpm_e", settlement_date=date(2026, 1, 5), amount=Decimal("30.00"), currency="GTQ"
            )
        ],
    )
    expected = _wire(models.to_wire())
    assert _wire(page_wire(stored, "rcr_1", 2, 3)) == expected
    assert _wire(page_wire(entries, "rcr_1", 2, 3)) == expected
    empty = ReconciliationReportPage(report_id="rcr_1", page=3, pages=3)
    assert _wire(page_wire({}, "rcr_1", 3, 3)) == _wire(empty.to_wire())
