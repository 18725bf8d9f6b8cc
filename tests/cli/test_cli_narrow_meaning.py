"""Tables at 80 columns keep the columns that carry the meaning (issue 21, D430), against the reference
server on a real socket: a movement's type and direction, a card's status and currency, why a
reconciliation row is invalid, a document's SHA-256."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")

ROOT = Path(__file__).resolve().parents[2]
PDF = str(ROOT / "examples" / "documents" / "incorporation.pdf")
NARROW = {"COLUMNS": "80"}
HIDDEN = "Hidden to fit "


def _json(*args: str, input: str | None = None) -> Any:
    result = run_cli("-o", "json", *args, input=input)
    assert result.exit_code == 0, (args, result.stderr)
    return json.loads(result.stdout)


def _table(*args: str, code: int = 0) -> tuple[list[str], str]:
    """The table's header names at 80 columns (and stderr); the test fails on a block layout."""
    result = run_cli("-o", "table", *args, env=NARROW)
    assert result.exit_code == code, (args, result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    rules = [n for n, line in enumerate(lines) if line.strip() and set(line.strip()) == {"─"}]
    assert len(rules) == 1, result.stdout  # a table, not blocks
    assert all(len(line) <= 80 for line in lines[rules[0] - 1 :]), result.stdout
    return lines[rules[0] - 1].split(), result.stdout + result.stderr


def _wallet_cards() -> tuple[str, str]:
    _json("sandbox", "clients", "create", "--slug", f"cli-n-{uuid.uuid4().hex[:8]}", "--save-profile")
    _json("wallet", "login")
    user = _json(
        "sandbox",
        "users",
        "create",
        "--username",
        "nora",
        "--email",
        "nora@example.com",
        "--password-stdin",
        input="narrow-pass-9\n",
    )
    user_id = next(v for k, v in user.items() if k.endswith("serId"))
    first = _json("cards", "issue", "--user-id", user_id, "--alias", "main")["cardId"]
    second = _json("cards", "issue", "--user-id", user_id)["cardId"]
    _json("funds", "add", first, "--amount", "100.0001")
    _json("transfers", "create", "--from", first, "--to", second, "--amount", "1.5")
    return user_id, first


def test_cards_list_and_movements_keep_their_meaning_at_80_columns() -> None:
    user_id, card = _wallet_cards()
    header, _ = _table("cards", "list", "--user-id", user_id)
    assert {"cardId", "status", "currency", "balance"} <= set(header), header
    assert "availableBalance" not in header  # equal to balance in every row: it goes first
    header, text = _table("cards", "movements", card)
    assert {"type", "direction", "amount", "counterpartCardId"} <= set(header), header
    assert "debit" in text
    assert "credit" in text
    _, second = _json("cards", "list", "--user-id", user_id)
    header, text = _table("transfers", "create", "--from", card, "--to", second["cardId"], "--amount", "2")
    assert {"type", "direction", "amount"} <= set(header), header


def test_reconciliation_and_lead_documents_keep_their_meaning_at_80_columns(tmp_path: Path) -> None:
    _json("sandbox", "clients", "create", "--slug", f"cli-n-{uuid.uuid4().hex[:8]}", "--save-profile")
    payment = _json(
        "terminal",
        "create",
        "--amount",
        "10.00",
        "--currency",
        "GTQ",
        "--terminal-id",
        "POS-7",
        "--card",
        "4242424242424242",
    )
    _json("sandbox", "clock", "advance", "345600")  # 4 days: settled by the daily job
    payment = _json("sandbox", "terminal", "show", payment["id"])
    path = tmp_path / "day.csv"
    path.write_text(
        "settlementDate,paymentId,amount,currency\n"
        f"{payment['settlementDate']},{payment['id']},9.00,GTQ\n"
        f"not-a-date,{payment['id']},10.00,GTQ\n"
        f"2026-01-02,{payment['id']},ten,GTQ\n",
        encoding="utf-8",
    )
    header, text = _table(
        "reconciliation", "upload", str(path), "--affiliation", payment["affiliation"], code=5
    )
    assert {"row", "status", "message"} <= set(header), header
    assert "settlementDate" in text

    lead = _json(
        "leads",
        "create",
        "--legal-name",
        "Tienda Sol S.A.",
        "--tax-id",
        "1234567-8",
        "--contact-name",
        "Ana",
        "--contact-email",
        "ana@tiendasol.gt",
        "--country",
        "GT",
        "--channel",
        "wa",
        "--currency",
        "GTQ",
    )
    # documentId and sha256 (64 hex) need more than 80 columns together: each document gets its own
    # block, with the SHA-256 whole on its line, never a table without it
    result = run_cli("-o", "table", "leads", "upload", PDF, "--lead", lead["leadId"], env=NARROW)
    assert result.exit_code == 0, result.stderr
    digest = hashlib.sha256(Path(PDF).read_bytes()).hexdigest()
    assert f"sha256       {digest}" in result.stdout.splitlines(), result.stdout
    assert HIDDEN not in result.stderr
