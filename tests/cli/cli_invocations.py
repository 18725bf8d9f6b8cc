"""One minimal invocation per ``paysdk`` command, run by ``tests/cli/test_cli_every_command.py``.

Every command of the tree needs an entry here (the test fails naming a command without one, and an
entry naming no command): a new command cannot be added without saying how to call it. Each call runs
against the reference server on a real socket after ``/_sandbox/reset``, with a profile made by
``paysdk sandbox clients create --slug every-cmd --save-profile`` (its merchant token and wallet signing
key stored); it must reach the server (at least one request) and exit with ``exit``. An invocation
need not succeed: a call the server refuses (an unknown id: exit 6) still runs the command's whole
path (arguments, SDK call, the server's answer, its rendering). A command that sends nothing to the
server says why in ``local``.

In ``args``, ``{tmp}`` is a directory holding ``files`` (name -> text).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["INVOCATIONS", "SLUG", "Call"]

#: The sandbox client each call runs as.
SLUG = "every-cmd"


@dataclass(frozen=True)
class Call:
    """How to call one command: its arguments (after ``paysdk -o json <command>``), its exit code, the
    files it reads, or why it sends nothing to the server."""

    args: tuple[str, ...] = ()
    exit: int = 0
    files: Mapping[str, str] = field(default_factory=dict)
    local: str | None = None
    input: str | None = None
    #: Commands run first (``(args, stdin)``), their requests not counted: a wallet login, a user.
    before: tuple[tuple[tuple[str, ...], str | None], ...] = ()
    #: It runs until stopped: not run here; ``local`` names the test that runs it.
    endless: bool = False


_MISSING = "missing-0001"
_PASSWORD = "correct-horse-9\n"
#: A wallet user ``ana`` with a stored session (``--as-user ana``).
_ANA: tuple[tuple[tuple[str, ...], str | None], ...] = (
    (
        ("sandbox", "users", "create", "--username", "ana", "--email", "ana@example.com", "--password-stdin"),
        _PASSWORD,
    ),
    (("users", "login", "--username", "ana", "--password-stdin"), _PASSWORD),
    (("wallet", "login"), None),
)
_AS_ANA = ("--as-user", "ana")
#: A backoffice operator with the profile's backoffice login.
_OPERATOR: tuple[tuple[tuple[str, ...], str | None], ...] = (
    (
        ("sandbox", "backoffice", "operator", "create", "--email", "op@example.com", "--password-stdin"),
        _PASSWORD,
    ),
    (("backoffice", "login", "--operator", "op@example.com", "--password-stdin"), _PASSWORD),
)
_CARD = ("--card", "4242424242424242")

INVOCATIONS: dict[str, Call] = {
    "login": Call(("--token-stdin",), exit=4, input="0" * 64 + "\n"),
    "logout": Call(local="removes a stored token: nothing is sent"),
    "auth status": Call(),
    "profiles list": Call(local="lists the profiles of the config file"),
    "links create": Call(
        ("--amount", "10.00", "--user-id", "+50255550123", "--channel", "wa", "--client", SLUG)
    ),
    "alt create": Call(
        ("--amount", "10.00", "--user-id", "+50255550123", "--channel", "wa", "--client", SLUG)
    ),
    "alt process": Call((_MISSING, "--processor", "paypal"), exit=6),
    "alt intent": Call((_MISSING, "--processor", "paypal"), exit=6),
    "alt dismiss": Call((_MISSING,), exit=6),
    "callbacks listen": Call(("--sandbox-client", SLUG, "--port", "0", "--timeout", "0.2")),
    "wallet login": Call(),
    "wallet whoami": Call(
        local="shows the stored application session", before=((("wallet", "login"), None),)
    ),
    "wallet jwks": Call(),
    "wallet logout": Call(local="drops the stored application tokens", before=((("wallet", "login"), None),)),
    "wallet export-key": Call(("--show-secrets",), local="prints the profile's stored signing key"),
    "users login": Call(("--username", "nobody", "--password-stdin"), exit=4, input=_PASSWORD),
    "users logout": Call(("--username", "ana"), before=_ANA),
    "users list": Call(local="lists the profile's stored user sessions"),
    "users otp": Call(("--email", "nobody@example.com", "--verify", "--code", "123456"), exit=6),
    "users reset-password": Call(
        ("--email", "nobody@example.com", "--code", "123456", "--password-stdin"), exit=6, input=_PASSWORD
    ),
    "cards list": Call(_AS_ANA, before=_ANA),
    "cards summary": Call(("--start-date", "2030-01-01", "--end-date", "2030-01-31", *_AS_ANA), before=_ANA),
    "cards issue": Call(("--user-id", _MISSING), exit=6, before=_ANA),
    "cards link": Call((_MISSING, "--user-id", _MISSING), exit=6, before=_ANA),
    "cards link-external": Call(
        ("--user-id", _MISSING, "--token-stdin"), exit=6, before=_ANA, input="ltk_missing\n"
    ),
    "cards show": Call((_MISSING,), exit=6),
    "cards alias": Call((_MISSING, "--alias", "main"), exit=6),
    "cards block": Call((_MISSING,), exit=6),
    "cards unblock": Call((_MISSING,), exit=6),
    "cards activate": Call((_MISSING,), exit=6),
    "cards set-pin": Call((_MISSING, "--pin-stdin"), exit=6, input="1234\n"),
    "cards movements": Call((_MISSING,), exit=6),
    "funds add": Call((_MISSING, "--amount", "1.00"), exit=6),
    "funds withdraw": Call((_MISSING, "--amount", "1.00"), exit=6),
    "transfers create": Call(("--from", _MISSING, "--to", "missing-0002", "--amount", "1.00"), exit=6),
    "permissions grant": Call((_MISSING, "--user-id", "usr_x", "-p", "checkCard"), exit=6),
    "permissions update": Call((_MISSING, "-p", "checkCard"), exit=6),
    "permissions list": Call(("--card-id", _MISSING), exit=6),
    "subscriptions verify-card": Call(("--plan-id", _MISSING, "--email", "a@example.com"), exit=6),
    "subscriptions cancel": Call((_MISSING,), exit=6),
    "subscriptions update-email": Call((_MISSING, "a@example.com"), exit=6),
    "subscriptions history": Call((_MISSING,), exit=6),
    "leads create": Call(
        (
            "--legal-name",
            "Toy S.A.",
            "--tax-id",
            "1234567-8",
            "--contact-name",
            "Ana",
            "--contact-email",
            "ana@example.com",
            "--country",
            "GT",
            "--channel",
            "wa",
            "--currency",
            "GTQ",
        )
    ),
    "leads upload": Call(("{tmp}/doc.pdf", "--lead", _MISSING), exit=6, files={"doc.pdf": "%PDF-1.4\n"}),
    "charges upload": Call(
        ("{tmp}/charges.csv",),
        exit=5,
        files={"charges.csv": "subscriptionId,amount,reference\nsub_x,1.00,r1\n"},
    ),
    "backoffice login": Call(
        ("--operator", "nobody@example.com", "--password-stdin"), exit=4, input=_PASSWORD
    ),
    "backoffice logout": Call(local="drops the stored backoffice tokens", before=_OPERATOR),
    "cardholders upload": Call(
        ("{tmp}/holders.csv", "--partner", _MISSING),
        exit=6,
        files={"holders.csv": "email\na@example.com\n"},
        before=_OPERATOR,
    ),
    "cardholders progress": Call((_MISSING, "--partner", _MISSING), exit=6, before=_OPERATOR),
    "cardholders associate-card": Call((_MISSING, _MISSING, "--partner", _MISSING), exit=6, before=_OPERATOR),
    "cardholders lookup": Call(("--partner", _MISSING, "--email", "a@example.com"), exit=6, before=_OPERATOR),
    "terminal create": Call(("--amount", "10.00", "--currency", "GTQ", "--terminal-id", "POS-1", *_CARD)),
    "terminal capture": Call((_MISSING,), exit=6),
    "terminal void": Call((_MISSING,), exit=6),
    "terminal refund": Call((_MISSING,), exit=6),
    "reconciliation upload": Call(
        ("{tmp}/day.csv", "--affiliation", "0000000000"),
        exit=6,
        files={"day.csv": "settlementDate,paymentId,amount,currency\n"},
    ),
    "sandbox health": Call(),
    "sandbox reset": Call(("--yes",)),
    "sandbox control-token": Call(("--token-stdin",), local="stores a control token", input="c" * 43 + "\n"),
    "sandbox pay": Call((_MISSING, *_CARD), exit=6),
    "sandbox simulate": Call((_MISSING, "--outcome", "paid"), exit=6),
    "sandbox callbacks": Call(),
    "sandbox resend-callback": Call(("evt_missing",), exit=6),
    "sandbox jobs": Call(),
    "sandbox requests": Call(),
    "sandbox tail": Call(
        local="follows the live feed until stopped: tests/cli/test_cli_tail.py runs it", endless=True
    ),
    "sandbox test-cards": Call(),
    "sandbox outbox": Call(),
    "sandbox subscription": Call((_MISSING,), exit=6),
    "sandbox clients create": Call(("--slug", "another-client")),
    "sandbox clients show": Call((SLUG,)),
    "sandbox clients update": Call((SLUG, "--display-name", "Every Command")),
    "sandbox clients rotate-keys": Call((SLUG,)),
    "sandbox clock show": Call(),
    "sandbox clock advance": Call(("60",)),
    "sandbox transactions show": Call((_MISSING,), exit=6),
    "sandbox faults add": Call(("--kind", "latency")),
    "sandbox faults list": Call(),
    "sandbox faults clear": Call(),
    "sandbox users create": Call(
        ("--username", "ana", "--email", "ana@example.com", "--password-stdin"), input=_PASSWORD
    ),
    "sandbox cards create": Call(),
    "sandbox linking-tokens create": Call(("--pan", "4242424242424242", "--expiry", "12/30")),
    "sandbox charges create": Call((_MISSING, "--amount", "1.00"), exit=6),
    "sandbox charges capture": Call((_MISSING,), exit=6),
    "sandbox charges refund": Call((_MISSING,), exit=6),
    "sandbox charges clear-refund": Call((_MISSING,), exit=6),
    "sandbox backoffice operator create": Call(
        ("--email", "op@example.com", "--password-stdin"), input=_PASSWORD
    ),
    "sandbox backoffice operator list": Call(),
    "sandbox backoffice partner create": Call(("--name", "Partner")),
    "sandbox backoffice partner list": Call(),
    "sandbox backoffice partner enroll": Call((_MISSING, "--user-id", "usr_x"), exit=6),
    "sandbox plan create": Call(("--amount", "10.00")),
    "sandbox plan show": Call((_MISSING,), exit=6),
    "sandbox subscriptions create": Call(("--plan-id", _MISSING), exit=6),
    "sandbox terminal affiliation": Call(("--client", SLUG)),
    "sandbox terminal show": Call((_MISSING,), exit=6),
    "sandbox processor secret": Call(),
    "sandbox processor settle": Call((_MISSING,), exit=6),
    "sandbox processor pay-out": Call((_MISSING,), exit=6),
    "sandbox processor feed": Call(("--event", f"settled:{_MISSING}")),
    "sandbox lead show": Call((_MISSING,), exit=6),
    "sandbox lead approve": Call((_MISSING,), exit=6),
    "sandbox lead reject": Call((_MISSING, "--reason", "no"), exit=6),
    "sandbox deprecations set": Call(("POST /transactions",)),
    "sandbox deprecations clear": Call(),
    "sandbox deprecations list": Call(),
    "serve": Call(local="starts a server of its own: tests/cli/test_cli_serve.py runs it", endless=True),
}
