"""The ``paysdk`` typer app: global options, the command families (loaded lazily), exit codes.

``paysdk --help`` must cost little more than ``import typer``. So this module imports only typer and
``_state``; each family's module (``commands/<family>.py``) is imported when that family is invoked,
and every heavy import (httpx, pydantic, rich, keyring, platformdirs, ``paysdk``) happens inside the
command that needs it. Typer's rich help formatting is off (it imports rich on every ``--help``).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from paysdk_cli._app import CONTEXT_SETTINGS, OUTPUT_HELP
from paysdk_cli._deprecations import deprecation_notices
from paysdk_cli._state import DEFAULT_BASE_URL, DEFAULT_PROFILE, OutputFormat, State

__all__ = ["FAMILIES", "app", "run"]

#: name -> (module, typer app attribute, short help shown by ``paysdk --help``). A test checks that the
#: short help matches the command's own help, so the two cannot drift apart.
FAMILIES: dict[str, tuple[str, str, str]] = {
    "login": ("paysdk_cli.commands.auth", "login_app", "Store a profile's merchant token in the OS keyring."),
    "logout": ("paysdk_cli.commands.auth", "logout_app", "Remove a profile's stored merchant token."),
    "auth": (
        "paysdk_cli.commands.auth",
        "auth_app",
        "Authentication: which profile and token are in use, and whether the token works.",
    ),
    "profiles": (
        "paysdk_cli.commands.auth",
        "profiles_app",
        "Profiles: each one's API address, client and token (masked).",
    ),
    "links": ("paysdk_cli.commands.payment_links", "app", "Payment links: hosted checkout pages."),
    "alt": ("paysdk_cli.commands.alternative_payments", "app", "Alternative payments on direct rails."),
    "callbacks": ("paysdk_cli.commands.callbacks", "app", "Merchant callbacks: run a local receiver."),
    "wallet": (
        "paysdk_cli.commands.wallet",
        "app",
        "The wallet session: application login with the merchant's Ed25519 key.",
    ),
    "users": ("paysdk_cli.commands.users", "app", "Wallet users: sessions, one-time codes, password reset."),
    "cards": ("paysdk_cli.commands.cards", "app", "Wallet cards: list, issue, link, block, movements."),
    "funds": ("paysdk_cli.commands.funds", "app", "Card funds: the issuer adds or withdraws money."),
    "transfers": ("paysdk_cli.commands.transfers", "app", "Card-to-card transfers."),
    "permissions": ("paysdk_cli.commands.permissions", "app", "Card permissions of authorized users."),
    "subscriptions": (
        "paysdk_cli.commands.subscriptions",
        "app",
        "Subscriptions: verify a card to create one, cancel, change its email, payment history.",
    ),
    "leads": (
        "paysdk_cli.commands.onboarding",
        "app",
        "Merchant onboarding: a lead and its documents.",
    ),
    "charges": ("paysdk_cli.commands.charges", "app", "Batch charges of subscriptions from a CSV file."),
    "backoffice": (
        "paysdk_cli.commands.backoffice",
        "app",
        "The backoffice session: the application's key and an operator's email and password.",
    ),
    "cardholders": (
        "paysdk_cli.commands.cardholders",
        "app",
        "Cardholders: bulk upload with live progress, operator card association.",
    ),
    "terminal": (
        "paysdk_cli.commands.terminal",
        "app",
        "Terminal (POS) payments with two-step capture.",
    ),
    "reconciliation": (
        "paysdk_cli.commands.reconciliation",
        "app",
        "Reconcile the processor's daily settlement CSV with your settled terminal payments.",
    ),
    "sandbox": ("paysdk_cli.commands.sandbox", "app", "Control plane of the local reference server."),
    "serve": ("paysdk_cli.commands.serve", "app", "Run the local reference server."),
    "trigger": (
        "paysdk_cli.commands.trigger",
        "app",
        "Run a named scenario and print, in order, what it caused.",
    ),
}

#: The documentation site (mkdocs.yml's ``site_url``): what help texts point at, never a file of this
#: repository, which a pip user does not have (D427).
DOCS_URL = "https://paysdk-toolkit.readthedocs.io/"

EPILOG = f"""\b
Exit codes:
  0  success
  1  error
  2  usage (bad option or argument, or input refused before sending)
  3  serve: the address is in use
  4  authentication (HTTP 401/403, or no merchant token / wallet key)
  5  charges upload: some rows not charged (refused, declined or unknown)
     cardholders upload/progress: some rows failed
  6  the API refused the request (other HTTP 4xx)
  7  the API failed (HTTP 5xx, an off-contract answer) or could not be reached
\b
Environment: PAYSDK_PROFILE, PAYSDK_BASE_URL, PAYSDK_MERCHANT_TOKEN (overrides the
stored token), PAYSDK_WALLET_PRIVATE_KEY (overrides the stored wallet key),
PAYSDK_CONFIG_DIR, PAYSDK_CALLBACK_HEADER_VALUE.
\b
Guide: {DOCS_URL}cli/
"""


def load_family(name: str) -> Any:
    """Import a family's module and build its click command (a group, or one command)."""
    module_name, attribute, _ = FAMILIES[name]
    sub_app = getattr(importlib.import_module(module_name), attribute)
    command = typer.main.get_command(sub_app)
    command.name = name
    return command


class _PaysdkGroup(TyperGroup):
    """The root group: lazy families, and the one place where exceptions become exit codes."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *(name for name in FAMILIES if name not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in FAMILIES:
            command = load_family(cmd_name)
            self.commands[cmd_name] = command
        return command

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        # The short help comes from FAMILIES, so `paysdk --help` imports no command module.
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, _, short) in FAMILIES.items()])

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except typer.TyperException as exc:  # a bad global option: -o yaml
            from paysdk_cli._errors import restyle_usage_error

            raise restyle_usage_error(exc) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer.TyperException as exc:  # click's usage errors, in the CLI's words
            from paysdk_cli._errors import restyle_usage_error

            raise restyle_usage_error(exc) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:
            from paysdk_cli._errors import report

            verbose = isinstance(ctx.obj, State) and ctx.obj.verbose
            raise typer.Exit(report(exc, verbose=verbose)) from None


app = typer.Typer(
    name="paysdk",
    cls=_PaysdkGroup,
    help="Payment links, alternative payments, the wallet, callbacks and the local reference server.",
    epilog=EPILOG,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings=CONTEXT_SETTINGS,
)


def _print_version(value: bool) -> None:
    """``--version``: the package's one version (``paysdk._version``), then exit 0."""
    if value:
        from paysdk._version import __version__

        typer.echo(f"paysdk {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    profile: Annotated[
        str, typer.Option("--profile", envvar="PAYSDK_PROFILE", help="Profile: stored token and settings.")
    ] = DEFAULT_PROFILE,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            envvar="PAYSDK_BASE_URL",
            help=f"API address. Default: the profile's, else the local reference server {DEFAULT_BASE_URL}.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        OutputFormat | None,
        typer.Option(
            "-o",
            "--output",
            help=OUTPUT_HELP,
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Debug lines (request metadata) and tracebacks on stderr.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the version and exit.", is_eager=True, callback=_print_version),
    ] = False,
) -> None:
    """Payment links, alternative payments, the wallet, callbacks and the local reference server."""
    if output is None:
        output = OutputFormat.table if sys.stdout.isatty() else OutputFormat.json
    ctx.obj = State(profile=profile, base_url_option=base_url or None, output=output, verbose=verbose)
    ctx.with_resource(deprecation_notices())  # one stderr notice per deprecated operation (D196)
    if verbose or "paysdk_cli._context" in sys.modules or os.environ.get("PAYSDK_LOG"):
        from paysdk_cli._context import configure_logging

        configure_logging(verbose)


def run() -> None:
    """Run the typer app (the console script ``paysdk`` is :func:`paysdk_cli._entry.run`)."""
    app(prog_name="paysdk")
