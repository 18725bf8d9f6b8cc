"""``paysdk login`` and ``paysdk logout``: the profile's merchant token in the OS keyring."""

from __future__ import annotations

import os
import re
from typing import Annotated

import typer

from paysdk_cli import _config
from paysdk_cli._app import new_app
from paysdk_cli._context import state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import info, warn
from paysdk_cli._params import read_secret

__all__ = ["login_app", "logout_app", "save_token"]

_TOKEN_SHAPE = re.compile(r"[0-9a-fA-F]{64}")


def save_token(profile: str, token: str) -> str:
    """Store ``token`` for ``profile`` as ``paysdk login`` does; returns where it went."""
    from paysdk_cli._secrets import TOKEN_ENV, store_token

    where = store_token(profile, token)
    if os.environ.get(TOKEN_ENV):
        warn(f"{TOKEN_ENV} is set and overrides the stored token while it stays set")
    return where


def login(
    ctx: typer.Context,
    profile: Annotated[
        str | None, typer.Option("--profile", help="Profile to log in (default: the global --profile).")
    ] = None,
    token_stdin: Annotated[
        bool, typer.Option("--token-stdin", help="Read the token from standard input instead of a prompt.")
    ] = False,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Also store this API address in the profile.")
    ] = None,
    client: Annotated[
        str | None, typer.Option("--client", help="Also store this client slug as the profile's default.")
    ] = None,
) -> None:
    """Store a profile's merchant token in the OS keyring.

    The token is read from a hidden prompt, or from standard input with --token-stdin
    (for example `paysdk login --token-stdin < token.txt`); it is never a command-line argument.
    Without a working keyring (common on headless Linux) it goes to a 0600 file in the
    configuration directory, with a warning. PAYSDK_MERCHANT_TOKEN, when set, overrides it.
    """
    from paysdk_cli._secrets import TOKEN_ENV

    name = profile or state(ctx).profile
    token = read_secret(
        "Merchant token",
        from_stdin=token_stdin,
        instead=f"--token-stdin (paysdk login --token-stdin < token.txt), or set {TOKEN_ENV}",
    ).strip()
    if not token:
        raise CLIError("no merchant token given", ExitCode.USAGE)
    if any(ch.isspace() for ch in token):
        raise CLIError("the token must not contain whitespace", ExitCode.USAGE)
    if not _TOKEN_SHAPE.fullmatch(token):
        warn("the token is not 64 hexadecimal characters (spec 5.2); storing it anyway")
    where = save_token(name, token)
    settings = _config.update_profile(name, base_url=base_url, client=client)
    extra = ", ".join(f"{k}={v}" for k, v in sorted(settings.items()))
    info(f"Logged in: profile {name!r}, token stored in {where}" + (f" ({extra})" if extra else "") + ".")


def logout(
    ctx: typer.Context,
    profile: Annotated[
        str | None, typer.Option("--profile", help="Profile to log out (default: the global --profile).")
    ] = None,
) -> None:
    """Remove a profile's stored merchant token (keyring and fallback file)."""
    from paysdk_cli._secrets import TOKEN_ENV, delete_token

    name = profile or state(ctx).profile
    removed = delete_token(name)
    if removed:
        info(f"Logged out: profile {name!r}, token removed from {', '.join(removed)}.")
    else:
        info(f"Profile {name!r} had no stored token.")
    if os.environ.get(TOKEN_ENV):
        warn(f"{TOKEN_ENV} is still set and will keep being used")


login_app = new_app(group=False)
login_app.command("login")(login)
logout_app = new_app(group=False)
logout_app.command("logout")(logout)
