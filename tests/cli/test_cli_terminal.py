"""End to end: ``paysdk terminal create|capture|void|refund`` and ``paysdk sandbox terminal`` against the
reference server on a real socket, with the profile's stored merchant token; tables for people, ``-o
json`` for scripts, the documented exit codes (6: the API refused; 2: input refused before sending)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")

CARD = ("--currency", "GTQ", "--terminal-id", "POS-9", "--card", "4242424242424242")


def _json(*args: str, code: int = 0) -> Any:
    result = run_cli("-o", "json", *args)
    assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
    return json.loads(result.stdout) if code == 0 else result


def _merchant() -> str:
    slug = f"cli-t-{uuid.uuid4().hex[:8]}"
    _json("sandbox", "clients", "create", "--slug", slug, "--save-profile")
    return slug


def test_two_step_capture_refusals_settlement_refund_and_void() -> None:
    slug = _merchant()
    created = _json("terminal", "create", "--amount", "80.00", *CARD, "--manual", "--reference", "T-1")
    assert created["status"] == "authorized"
    assert created["captureMode"] == "manual"
    assert created["amount"] == 80
    assert created["reference"] == "T-1"
    payment_id = created["id"]

    captured = _json("terminal", "capture", payment_id, "--amount", "72.50")
    assert (captured["status"], captured["capturedAmount"]) == ("captured", 72.5)
    again = _json("terminal", "capture", payment_id, code=6)
    assert "captured already" in again.stderr
    early = _json("terminal", "refund", payment_id, code=6)
    assert "not settled" in early.stderr

    _json("sandbox", "clock", "advance", "604800")
    shown = _json("sandbox", "terminal", "show", payment_id)
    assert shown["status"] == "paid_out"
    assert shown["settledAt"]
    assert shown["paidOutAt"]
    part = _json("terminal", "refund", payment_id, "--amount", "12.50")
    assert (part["status"], part["refundedAmount"]) == ("paid_out", 12.5)
    too_much = _json("terminal", "refund", payment_id, "--amount", "60.01", code=6)
    assert "amount" in too_much.stderr
    rest = _json("terminal", "refund", payment_id)
    assert (rest["status"], rest["refundedAmount"]) == ("refunded", 72.5)

    other = _json("terminal", "create", "--amount", "10", *CARD, "--manual")
    assert _json("terminal", "void", other["id"])["status"] == "voided"

    table = run_cli("-o", "table", "terminal", "create", "--amount", "5", *CARD)
    assert table.exit_code == 0, table.stderr
    assert "Terminal payment" in table.stdout
    assert "captured" in table.stdout
    assert "4242424242424242" not in table.stdout

    affiliation = _json("sandbox", "terminal", "affiliation", "--client", slug)
    assert affiliation["affiliation"] == created["affiliation"]
    assert _json("sandbox", "terminal", "show", "tpm_nope", code=6).exit_code == 6


def test_input_refused_before_sending_and_errors_naming_fields() -> None:
    _merchant()
    bad_expiry = _json("terminal", "create", "--amount", "1", *CARD, "--expiry", "13/2030", code=2)
    assert "--expiry" in bad_expiry.stderr
    float_like = _json("terminal", "create", "--amount", "1.234", *CARD, code=2)
    assert "amount" in float_like.stderr
    bad_card = _json(
        "terminal",
        "create",
        "--amount",
        "1",
        "--currency",
        "GTQ",
        "--terminal-id",
        "T",
        "--card",
        "x",
        code=2,
    )
    assert "card" in bad_card.stderr
    currency = _json(
        "terminal",
        "create",
        "--amount",
        "1",
        "--currency",
        "EUR",
        "--terminal-id",
        "T",
        "--card",
        "4242424242424242",
        code=2,
    )
    assert "currency" in currency.stderr
    declined = _json(
        "terminal",
        "create",
        "--amount",
        "1",
        "--currency",
        "GTQ",
        "--terminal-id",
        "T",
        "--card",
        "4000000000009995",
    )
    assert (declined["status"], declined["declineReason"]) == ("declined", "insufficient_funds")
    unknown = _json("terminal", "void", "tpm_000000000000000000000000", code=6)
    assert "not found" in unknown.stderr.lower()
