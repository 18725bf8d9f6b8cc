"""End to end: ``paysdk backoffice login | logout`` and ``paysdk sandbox backoffice ...`` against the
reference server on a real socket (D105, D184, D185, D200, D201), and ``_backoffice.open_backoffice_client``
as the cardholder commands use it. No secret may appear in any output."""

from __future__ import annotations

import json
from typing import Any

import pytest

from paysdk_cli._backoffice import BACKOFFICE_PASSWORD, backoffice_token_path, open_backoffice_client
from paysdk_cli._config import load_profile
from paysdk_cli._errors import CLIError
from paysdk_cli._secrets import load_secret
from paysdk_cli._state import OutputFormat, State

from .conftest import MemoryKeyring, run_cli

pytestmark = pytest.mark.usefixtures("cli_server")

EMAIL = "ops@acme-bank.example"


class Outputs:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def run(
        self, *args: str, input: str | None = None, code: int = 0, env: dict[str, str] | None = None
    ) -> Any:
        result = run_cli("-o", "json", *args, input=input, env=env)
        self.texts += [result.stdout, result.stderr]
        assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
        return json.loads(result.stdout) if code == 0 and result.stdout.strip() else result

    def assert_secret_free(self, *secrets: str) -> None:
        for text in self.texts:
            assert "eyJ" not in text, text
            for secret in secrets:
                assert secret not in text, text


def test_operator_partner_login_logout(memory_keyring: MemoryKeyring, cli_server: str) -> None:
    out = Outputs()
    out.run("sandbox", "clients", "create", "--slug", "acme-bank", "--save-profile")
    operator = out.run("sandbox", "backoffice", "operator", "create", "--email", EMAIL, "--save-profile")
    assert operator["password"] == "****"  # masked in JSON; kept in the keyring
    password = memory_keyring.passwords[(BACKOFFICE_PASSWORD.service, "default")]
    shown = out.run(
        "sandbox", "backoffice", "operator", "create", "--email", "two@acme-bank.example", "--show-secrets"
    )
    assert len(shown["password"]) >= 12
    listed = out.run("sandbox", "backoffice", "operator", "list")
    assert [o["email"] for o in listed] == [EMAIL, "two@acme-bank.example"]
    assert all("password" not in o for o in listed)
    profile = load_profile("default")
    assert (profile["backoffice_merchant"], profile["backoffice_operator"]) == ("acme-bank", EMAIL)

    # Login: key from the wallet's storage, operator and password from the profile.
    login = out.run("backoffice", "login")
    assert login["merchant"] == "acme-bank"
    assert login["operator"] == EMAIL
    assert login["expiresIn"] == 900
    assert login["cmsBaseUrl"].endswith("/cms/rest")
    assert backoffice_token_path("default").exists()

    # Another operator, password from stdin: stored in place of the first one's.
    out.run(
        "backoffice",
        "login",
        "--operator",
        "two@acme-bank.example",
        "--password-stdin",
        input=shown["password"] + "\n",
    )
    assert memory_keyring.passwords[(BACKOFFICE_PASSWORD.service, "default")] == shown["password"]
    # A wrong password (from the environment): exit 4, nothing stored.
    wrong = out.run(
        "backoffice", "login", "--operator", EMAIL, code=4, env={"PAYSDK_BACKOFFICE_PASSWORD": "nope-nope"}
    )
    assert "7101" in wrong.stderr or "password" in wrong.stderr.lower()
    assert load_profile("default")["backoffice_operator"] == "two@acme-bank.example"

    # Partners and enrollment.
    partner = out.run(
        "sandbox", "backoffice", "partner", "create", "--name", "Acme Payroll", "--partner-id", "acme"
    )
    assert partner["partnerId"] == "acme"
    assert [p["partnerId"] for p in out.run("sandbox", "backoffice", "partner", "list")] == ["acme"]
    user = out.run(
        "sandbox",
        "users",
        "create",
        "--username",
        "ana",
        "--email",
        "ana@example.com",
        "--password-stdin",
        input="password-1\n",
    )
    enrolled = out.run("sandbox", "backoffice", "partner", "enroll", "acme", "--user-id", user["userId"])
    assert enrolled["cardholderId"] == user["userId"]
    missing = out.run(
        "sandbox", "backoffice", "partner", "enroll", "nope", "--user-id", user["userId"], code=6
    )
    assert "partnerId" in missing.stderr

    # The helper the cardholder commands use: a client with both tokens, associating a card.
    card = out.run("sandbox", "cards", "create")
    st = State(output=OutputFormat.json)
    with open_backoffice_client(st) as client:
        associated = client.backoffice.associate_card("acme", user["userId"], card["cardId"])
    assert associated.holder_id == user["userId"]

    # Logout forgets the pairs; --forget-password the password too; the helper then exits 4.
    assert out.run("backoffice", "logout")["forgotTokens"] is True
    assert out.run("backoffice", "logout")["forgotTokens"] is False
    out.run("backoffice", "logout", "--forget-password")
    assert load_secret(BACKOFFICE_PASSWORD, "default") is None
    with pytest.raises(CLIError) as no_password, open_backoffice_client(State(output=OutputFormat.json)):
        pass
    assert no_password.value.exit_code == 4
    out.assert_secret_free(password)  # the second one was shown on purpose (--show-secrets)


def test_login_needs_an_operator_and_a_key(memory_keyring: MemoryKeyring) -> None:
    out = Outputs()
    usage = out.run("backoffice", "login", "--merchant", "acme-bank", code=2)
    assert "--operator" in usage.stderr
    with pytest.raises(CLIError) as nothing, open_backoffice_client(State(output=OutputFormat.json)):
        pass
    assert nothing.value.exit_code == 4
    assert "backoffice login" in str(nothing.value)
