"""End to end against the reference server (``live_server``): the control-plane commands the SDK had
and the CLI lacked: key rotation, the wallet's JWKS, linking tokens, and card payments (authorize,
capture, refund, clear). JSON and table output; secrets never printed unless asked for in JSON."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest

from paysdk._json import loads
from paysdk_cli._secrets import WALLET_KEY, load_secret

from .conftest import run_cli

pytestmark = pytest.mark.usefixtures("cli_server")

PASSWORD = "correct-horse-9"
#: A terminal wide enough for the long key ids (how tables fit narrow terminals is tested elsewhere).
WIDE = {"COLUMNS": "200"}


def _run(*args: str, input: str | None = None, code: int = 0, output: str = "json") -> Any:
    result = run_cli("-o", output, *args, input=input)
    assert result.exit_code == code, (args, result.exit_code, result.stderr)
    if code == 0 and output == "json" and result.stdout.strip():
        return loads(result.stdout)  # Decimal-exact
    return result


def _merchant() -> str:
    slug = f"cli-c-{uuid.uuid4().hex[:8]}"
    _run("sandbox", "clients", "create", "--slug", slug, "--save-profile")
    _run("wallet", "login")
    return slug


def test_rotate_keys_saves_the_new_key_and_the_old_one_stops_working() -> None:
    slug = _merchant()
    old = load_secret(WALLET_KEY, "default")
    assert old is not None
    first = _run("sandbox", "clients", "show", slug)

    rotated = _run("sandbox", "clients", "rotate-keys", slug, "--save-profile")
    assert rotated["merchant"] == slug
    assert rotated["privateKey"] == "****"
    assert rotated["publicKey"] != first["signingPublicKey"]
    new = load_secret(WALLET_KEY, "default")
    assert new is not None
    assert new.value != old.value

    # the profile's (new) key logs in; the old key is refused with its own code
    _run("wallet", "logout")
    assert _run("wallet", "login")["merchant"] == slug
    refused = _run("wallet", "login", "--key-stdin", input=old.value + "\n", code=4)
    assert "ownCode 7604" in refused.stderr

    # register a public key instead (the original one): the original private key works again
    registered = _run("sandbox", "clients", "rotate-keys", slug, "--public-key", first["signingPublicKey"])
    assert registered["publicKey"] == first["signingPublicKey"]
    assert "privateKey" not in registered
    assert _run("wallet", "login", "--key-stdin", input=old.value + "\n")["merchant"] == slug

    # an expiry in the past (virtual clock): the key is refused as expired
    shown = _run(
        "sandbox", "clients", "rotate-keys", slug, "--expires-at", "2001-01-01T00:00:00", "--show-secrets"
    )
    assert shown["expiresAt"].startswith("2001-01-01T00:00:00")
    expired = _run("wallet", "login", "--key-stdin", input=shown["privateKey"] + "\n", code=4)
    assert "ownCode 7616" in expired.stderr

    # a table never shows the generated key, even with --show-secrets
    table = run_cli("-o", "table", "sandbox", "clients", "rotate-keys", slug, "--show-secrets")
    assert table.exit_code == 0, table.stderr
    assert "****" in table.stdout
    assert "--show-secrets only applies to -o json" in table.stderr
    assert "keyId" in table.stdout

    # usage errors name the option and send nothing
    assert (
        "--expires-at"
        in _run("sandbox", "clients", "rotate-keys", slug, "--expires-at", "soon", code=2).stderr
    )
    both = (
        "sandbox",
        "clients",
        "rotate-keys",
        slug,
        "--public-key",
        first["signingPublicKey"],
        "--save-profile",
    )
    assert "--save-profile" in _run(*both, code=2).stderr
    assert "HTTP 404" in _run("sandbox", "clients", "rotate-keys", "no-such-client", code=6).stderr


def test_wallet_jwks_json_and_table() -> None:
    jwks = _run("wallet", "jwks")
    assert jwks["keys"]
    key = jwks["keys"][0]
    assert (key["kty"], key["crv"], key["alg"]) == ("OKP", "Ed25519", "EdDSA")
    table = run_cli("-o", "table", "wallet", "jwks", env=WIDE)
    assert table.exit_code == 0, table.stderr
    assert key["kid"] in table.stdout
    assert key["x"] in table.stdout


def test_linking_token_is_masked_unless_asked_and_links_an_external_card() -> None:
    slug = _merchant()
    user = _run(
        "sandbox", "users", "create", "--username", "ana", "--email", "ana@example.com",
        "--merchant", slug, "--password-stdin", input=PASSWORD + "\n",
    )["userId"]  # fmt: skip

    masked = _run("sandbox", "linking-tokens", "create", "--pan", "4111 1111 1111 1111", "--expiry", "12/30")
    assert masked["token"] == "****"
    assert masked["expiresAt"]
    table = run_cli("-o", "table", "sandbox", "linking-tokens", "create", "--pan", "4111111111111111",
                    "--expiry", "12/30")  # fmt: skip
    assert table.exit_code == 0, table.stderr
    assert "****" in table.stdout

    shown = _run(
        "sandbox",
        "linking-tokens",
        "create",
        "--pan",
        "4111111111111111",
        "--expiry",
        "12/30",
        "--show-secrets",
    )
    token = shown["token"]
    assert token != "****"
    card = _run("cards", "link-external", "--user-id", user, "--token-stdin", input=token + "\n")
    assert (card["type"], card["holderId"]) == ("linked", user)
    assert "****1111" in card["maskedPan"] or card["maskedPan"].endswith("1111")

    bad = _run("sandbox", "linking-tokens", "create", "--pan", "41", "--expiry", "13/30", code=2)
    assert "pan" in bad.stderr


def test_charges_authorize_capture_refund_and_clear_move_the_balance_exactly() -> None:
    slug = _merchant()
    user = _run(
        "sandbox", "users", "create", "--username", "ben", "--email", "ben@example.com",
        "--merchant", slug, "--password-stdin", input=PASSWORD + "\n",
    )["userId"]  # fmt: skip
    card = _run("cards", "issue", "--user-id", user)["cardId"]
    _run("funds", "add", card, "--amount", "100.0001")

    charge = _run("sandbox", "charges", "create", card, "--amount", "10.5")
    assert (charge["status"], charge["amount"], charge["cardId"]) == ("authorized", Decimal("10.5"), card)
    shown = _run("cards", "show", card)
    assert (shown["balance"], shown["availableBalance"]) == (Decimal("100.0001"), Decimal("89.5001"))

    captured = _run("sandbox", "charges", "capture", charge["chargeId"])
    assert (captured["status"], captured["capturedAmount"]) == ("captured", Decimal("10.5"))
    assert _run("cards", "show", card)["balance"] == Decimal("89.5001")

    refund = _run("sandbox", "charges", "refund", charge["chargeId"], "--amount", "4.25")
    assert (refund["status"], refund["amount"], refund["chargeId"]) == (
        "pending",
        Decimal("4.25"),
        charge["chargeId"],
    )
    assert _run("cards", "show", card)["pendingCredits"] == Decimal("4.25")
    cleared = _run("sandbox", "charges", "clear-refund", refund["refundId"])
    assert cleared["status"] == "cleared"
    assert _run("cards", "show", card)["balance"] == Decimal("93.7501")

    rest = _run("sandbox", "charges", "refund", charge["chargeId"])  # what is left: 6.25
    assert rest["amount"] == Decimal("6.25")

    at_once = run_cli("-o", "table", "sandbox", "charges", "create", card, "--amount", "0.0001", "--capture")
    assert at_once.exit_code == 0, at_once.stderr
    assert "captured" in at_once.stdout
    assert "0.0001" in at_once.stdout

    # refusals: local usage errors name --amount; the server's rules keep their codes
    assert "--amount" in _run("sandbox", "charges", "create", card, "--amount", "1.00001", code=2).stderr
    assert (
        "--amount" in _run("sandbox", "charges", "refund", charge["chargeId"], "--amount", "0", code=2).stderr
    )
    over = _run("sandbox", "charges", "create", card, "--amount", "1000", code=6)
    assert "ownCode 7303" in over.stderr
    again = _run("sandbox", "charges", "capture", charge["chargeId"], code=6)
    assert again.stderr.startswith("Error: HTTP 409")
    missing = _run("sandbox", "charges", "clear-refund", "rfd_nope", code=6)
    assert "HTTP 404" in missing.stderr
