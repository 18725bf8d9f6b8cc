"""docs/sdk.md's Money table says how many decimals each family takes: each row is checked against the
SDK call (or the CSV parser) it names, with that many decimals accepted and one more refused."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from paysdk import ValidationError
from paysdk.contracts.charges_csv import scan
from paysdk.resources import alternative_payments, payment_links, terminal, wallet

DOC = Path(__file__).resolve().parents[2] / "docs" / "sdk.md"


def _doc_places() -> dict[str, int]:
    """``family -> decimals`` from the Money section's table."""
    section = DOC.read_text(encoding="utf-8").split("\n## Money\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([A-Z][^|]*?) \| .* \| (\d) \|$", section, flags=re.MULTILINE)
    return {family: int(places) for family, places in rows}


def _csv(amount: str) -> None:
    found = scan(io.BytesIO(f"subscriptionId,amount,reference\nsub-1,{amount},ref-1\n".encode()))
    if found.errors:
        raise ValidationError("amount", found.errors[0].message)


#: Each family's amount, as the SDK (or the batch-charge CSV) takes it.
CHECKS: dict[str, Callable[[str], object]] = {
    "Payment links": lambda amount: payment_links.create_operation(
        amount=amount, user_id="+50255555555", channel="wa", client="shop"
    ),
    "Alternative payments": lambda amount: alternative_payments.create_operation(
        amount=amount, user_id="+50255555555", channel="wa", client="shop"
    ),
    "Terminal": lambda amount: terminal.capture_operation("pay-1", amount=amount),
    "Subscriptions": _csv,
    "Wallet": lambda amount: (
        wallet.add_funds_operation("card-1", amount),
        wallet.transfer_operation("card-1", "card-2", amount),
    ),
}


def test_every_family_with_amounts_is_in_the_table() -> None:
    assert set(_doc_places()) == set(CHECKS)
    assert _doc_places()["Wallet"] == 4


@pytest.mark.parametrize("family", list(CHECKS))
def test_the_documented_decimals_are_what_the_family_takes(family: str) -> None:
    places = _doc_places()[family]
    CHECKS[family]("1." + "1" * places)
    with pytest.raises(ValidationError, match="decimal"):
        CHECKS[family]("1." + "1" * (places + 1))
