"""End to end: ``paysdk subscriptions`` and the subscription control plane (``paysdk sandbox plan``,
``sandbox subscriptions create``, ``sandbox subscription SUB_UID``) against the reference server on a
real socket, with the profile's stored wallet login as the credential (D138); tables for people,
``-o json`` for scripts, the documented exit codes for errors."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")


def _json(*args: str, code: int = 0) -> Any:
    result = run_cli("-o", "json", *args)
    assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
    assert "eyJ" not in result.stdout + result.stderr  # never a token
    return json.loads(result.stdout) if code == 0 else result


def _merchant() -> str:
    slug = f"cli-s-{uuid.uuid4().hex[:8]}"
    _json("sandbox", "clients", "create", "--slug", slug, "--save-profile")
    _json("wallet", "login")
    return slug


def test_verify_card_pay_show_update_history_cancel() -> None:
    slug = _merchant()
    plan = _json("sandbox", "plan", "create", "--client", slug, "--amount", "12.50", "--plan-id", "gold")
    assert plan["planId"] == "gold"
    assert plan["amount"] == 12.5
    assert (plan["interval"], plan["intervalCount"], plan["dailyAttempts"]) == ("month", 1, 3)
    assert _json("sandbox", "plan", "show", "gold") == plan

    started = _json("subscriptions", "verify-card", "--plan-id", "gold", "--email", "ana@example.com")
    assert started["status"] == "pending"
    assert started["URL"].endswith(started["uid"])
    sub_uid = started["subUid"]
    paid = _json("sandbox", "pay", started["uid"], "--card-number", "4242 4242 4242 4242")
    assert paid["status"] == "approved"

    shown = _json("sandbox", "subscription", sub_uid)
    assert shown["status"] == "active"
    assert shown["nextRenewalDate"] == shown["anchorDate"]
    assert shown["attempts"] == 0
    assert shown["charges"] == []
    assert shown["plan"]["planId"] == "gold"
    table = run_cli("-o", "table", "sandbox", "subscription", sub_uid)
    assert table.exit_code == 0, table.stderr
    assert f"Subscription {sub_uid}" in table.stdout
    assert "nextRenewalDate" in table.stdout
    assert "visa ****4242" in table.stdout.lower()
    assert "No charges." in table.stderr

    updated = _json("subscriptions", "update-email", sub_uid, "new@example.com")
    assert updated["email"] == "new@example.com"
    assert updated["status"] == "active"
    assert "card" not in updated  # JSON carries the wire fields only
    assert _json("subscriptions", "history", sub_uid) == []
    _json("sandbox", "clock", "advance", "46800")  # 13 h: the charge process runs and charges period 1
    history = _json("subscriptions", "history", sub_uid)
    assert len(history) == 1
    assert (history[0]["status"], history[0]["source"], history[0]["amount"]) == ("approved", "renewal", 12.5)
    assert history[0]["paymentMethod"] == {"brand": "visa", "last4": "4242"}
    listed = run_cli("-o", "table", "subscriptions", "history", sub_uid)
    assert listed.exit_code == 0, listed.stderr
    assert f"Payment history of {sub_uid}" in listed.stdout
    assert "approved" in listed.stdout
    assert "12.50" in listed.stdout
    shown = run_cli("-o", "table", "sandbox", "subscription", sub_uid)
    assert "Charges" in shown.stdout
    assert "approved" in shown.stdout

    cancelled = _json("subscriptions", "cancel", sub_uid)
    assert cancelled["status"] == "cancelled"
    assert "nextRenewalDate" not in cancelled
    again = run_cli("-o", "table", "subscriptions", "cancel", sub_uid)
    assert again.exit_code == 0, again.stderr
    assert "cancelled" in again.stdout


def test_verify_only_bulk_create_and_errors() -> None:
    slug = _merchant()
    plan = _json(
        "sandbox", "plan", "create", "--client", slug, "--amount", "5", "--interval", "week", "--term", "4"
    )
    only = _json("subscriptions", "verify-card", "--no-create")
    assert only.get("subUid") is None

    created = _json(
        "sandbox", "subscriptions", "create", "--plan-id", plan["planId"], "--count", "3", "--start-date",
        "2030-01-31",
    )  # fmt: skip
    assert created["count"] == 3
    assert len(created["subUids"]) == 3
    one = _json("sandbox", "subscription", created["subUids"][0])
    assert one["anchorDate"] == "2030-01-31"
    assert one["endsOn"] is not None
    table = run_cli("-o", "table", "sandbox", "subscriptions", "create", "--plan-id", plan["planId"])
    assert table.exit_code == 0, table.stderr
    assert "1 subscriptions" in table.stdout

    # Refused before sending: a usage error naming the argument (exit 2).
    missing = _json("subscriptions", "verify-card", "--email", "a@example.com", code=2)
    assert "invalid value for --plan-id: is required" in missing.stderr
    mixed = _json("subscriptions", "verify-card", "--no-create", "--plan-id", plan["planId"], code=2)
    assert "invalid value for --plan-id:" in mixed.stderr
    assert "must not be given when should_create_subscription is False" in mixed.stderr
    bad_email = _json("subscriptions", "update-email", created["subUids"][0], "not-an-email", code=2)
    assert "email" in bad_email.stderr.lower()
    assert _json("sandbox", "plan", "create", "--client", slug, "--amount", "1.001", code=2).stderr
    # The API refuses: unknown plan or subscription (exit 6), an error on stderr, nothing on stdout.
    unknown = _json("subscriptions", "verify-card", "--plan-id", "nope", "--email", "a@example.com", code=6)
    assert unknown.stderr.startswith("Error: HTTP 404")
    assert unknown.stdout == ""
    assert _json("subscriptions", "cancel", "sub_nothing", code=6).stderr.startswith("Error: HTTP 404")
    assert _json("subscriptions", "history", "sub_nothing", code=6).stderr.startswith("Error: HTTP 404")
    assert _json("sandbox", "subscription", "sub_nothing", code=6).stderr.startswith("Error: HTTP 404")

    # An inactive subscription (its card declines the renewal, one attempt per period) cannot be
    # cancelled: 409, exit 6.
    strict = _json("sandbox", "plan", "create", "--client", slug, "--amount", "3", "--daily-attempts", "1")
    made = _json(
        "sandbox", "subscriptions", "create", "--plan-id", strict["planId"], "--card", "4000000000000341"
    )
    _json("sandbox", "clock", "advance", "46800")
    assert _json("sandbox", "subscription", made["subUids"][0])["status"] == "inactive"
    conflict = _json("subscriptions", "cancel", made["subUids"][0], code=6)
    assert conflict.stderr.startswith("Error: HTTP 409")


def test_without_a_wallet_login_the_commands_say_what_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAYSDK_WALLET_PRIVATE_KEY", raising=False)
    result = run_cli("subscriptions", "history", "sub_1")
    assert result.exit_code == 2, result.stderr  # no merchant: a usage error, as the wallet commands
    assert "wallet login" in result.stderr
    assert result.stdout == ""


def test_a_refused_wallet_key_exits_4() -> None:
    slug = f"cli-s-{uuid.uuid4().hex[:8]}"
    _json("sandbox", "clients", "create", "--slug", slug, "--save-profile")
    _json("sandbox", "clients", "rotate-keys", slug)  # the stored key no longer signs for this merchant
    result = run_cli("subscriptions", "history", "sub_1")
    assert result.exit_code == 4, result.stderr
    assert result.stderr.startswith("Error: HTTP 401")
    assert result.stdout == ""
