"""Issue 21, item 12, against the reference server on a real socket: secrets never in a table, one way
to write an amount (options as CSV cells), voided payments without settlement dates, batch summaries that
count replays apart, one line per callback delivery at 80 columns, and no empty error message."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")

TERMINAL = ("--currency", "GTQ", "--terminal-id", "POS-7", "--card", "4242424242424242")
LINK = ("links", "create", "--user-id", "+50255555555", "--channel", "wa")


def _json(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Any:
    result = run_cli("-o", "json", *args, input=input, env=env)
    assert result.exit_code == 0, (args, result.stderr)
    return json.loads(result.stdout) if result.stdout.strip() else None


def _client() -> str:
    slug = f"cli-s-{uuid.uuid4().hex[:8]}"
    _json("sandbox", "clients", "create", "--slug", slug, "--save-profile")
    return slug


@pytest.mark.parametrize("amount", ["1e3", "1_000", "+5", "1.5E2", "١٠"])
def test_an_amount_option_is_written_as_a_csv_cell(amount: str, tmp_path: Path) -> None:
    """``Decimal()`` takes all of these; the CSV refuses them, and so does every amount option (D431)."""
    _client()
    for args in ([*LINK, "--amount", amount], ["terminal", "create", "--amount", amount, *TERMINAL]):
        result = run_cli(*args)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        assert "--amount" in result.stderr
        assert "must be digits with decimals (no sign, spaces or exponent)" in result.stderr, result.stderr
    data = tmp_path / "charges.csv"
    data.write_text(f"subscriptionId,amount,reference\nsub_1,{amount},r-1\n", encoding="utf-8")
    csv_result = run_cli("charges", "upload", str(data), "--validate-only")
    assert csv_result.exit_code == 2, csv_result.stderr
    assert "row 2: amount: must be digits with at most 2 decimals (no sign, spaces or exponent)" in (
        csv_result.stderr
    )
    assert _json("terminal", "create", "--amount", "1000", *TERMINAL)["amount"] == 1000  # the plain form
