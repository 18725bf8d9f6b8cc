"""``paysdk sandbox health``, ``reset`` and ``control-token``: the reference server itself.

Commands of the ``sandbox`` group itself: the package registers them, in the order of its help.
"""

from __future__ import annotations

from typing import Annotated

import typer

from paysdk_cli._context import open_client, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import emit, info, warn
from paysdk_cli.commands.sandbox._common import wire

__all__ = ["control_token", "health", "reset"]


def health(ctx: typer.Context) -> None:
    """Check that the reference server is up (status, environment, database, virtual now)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.sandbox.health()
    emit(st.output, wire(result), title="Health")


def reset(
    ctx: typer.Context,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (needed without a terminal).")
    ] = False,
) -> None:
    """Delete every client, transaction, callback, fault and the clock offset.

    On a terminal it asks first; without one (a script, CI) it refuses unless --yes is given.
    """
    from paysdk_cli._params import stdin_is_terminal

    st = state(ctx)
    if not yes:
        if not stdin_is_terminal():
            raise CLIError(
                f"sandbox reset erases every client and transaction at {st.base_url}: "
                "pass --yes to confirm without a terminal",
                ExitCode.USAGE,
            )
        if not typer.confirm(f"Erase every client, transaction and callback at {st.base_url}?", err=True):
            raise CLIError("reset cancelled: nothing was erased", ExitCode.ERROR)
    with open_client(st, token_required=False) as sdk:
        sdk.sandbox.reset()
    info(f"Reset the reference server at {st.base_url}.")


def control_token(
    ctx: typer.Context,
    token_stdin: Annotated[
        bool, typer.Option("--token-stdin", help="Read the token from standard input instead of a prompt.")
    ] = False,
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove the profile's stored control token.")
    ] = False,
) -> None:
    """Store the reference server's control token in the profile (OS keyring).

    A server started on a non-loopback address (paysdk serve --host 0.0.0.0 --control-token ...) needs
    it on every sandbox call; the CLI sends it in Paysdk-Control-Token. It is read from a hidden prompt,
    or from standard input with --token-stdin; never a command-line argument, never echoed.
    PAYSDK_CONTROL_TOKEN, when set, overrides it.
    """
    import os

    from paysdk_cli._params import read_secret
    from paysdk_cli._secrets import CONTROL_TOKEN, CONTROL_TOKEN_ENV, delete_secret, store_secret

    st = state(ctx)
    if clear:
        removed = delete_secret(CONTROL_TOKEN, st.profile)
        where = ", ".join(removed) if removed else "nowhere (none was stored)"
        info(f"Control token of profile {st.profile!r} removed from {where}.")
        return
    token = read_secret(
        "Control token",
        from_stdin=token_stdin,
        instead=f"--token-stdin (paysdk sandbox control-token --token-stdin < token.txt), or set "
        f"{CONTROL_TOKEN_ENV}",
    ).strip()
    if not token:
        raise CLIError("no control token given", ExitCode.USAGE)
    if any(ord(ch) < 0x21 or ord(ch) > 0x7E for ch in token):
        raise CLIError("the control token must be printable ASCII without spaces", ExitCode.USAGE)
    where = store_secret(CONTROL_TOKEN, st.profile, token)
    info(f"Control token of profile {st.profile!r} stored in {where}.")
    if os.environ.get(CONTROL_TOKEN_ENV):
        warn(f"{CONTROL_TOKEN_ENV} is set and overrides the stored control token while it stays set")
