"""``paysdk backoffice login | logout``: the backoffice credentials of a profile (spec 4.4, 5.3.5-5.3.7;
D105-D107, D184, D201).

The backoffice needs two tokens at once: the application's (signed with the merchant's Ed25519 key, the
same key the wallet uses) and the operator's (email and password). ``login`` checks both against the
server and keeps what later commands need: the key in the wallet's key storage, the password in the
keyring (service ``paysdk-backoffice-password``; ``$PAYSDK_BACKOFFICE_PASSWORD`` overrides it), the
merchant and the operator's email in the profile, and both token pairs in a locked 0600 file
(``paysdk_cli._backoffice``). Commands acting in the backoffice (``paysdk cardholders ...``) open their
client with :func:`paysdk_cli._backoffice.open_backoffice_client`. Nothing secret is ever printed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from paysdk_cli import _config
from paysdk_cli._app import new_app
from paysdk_cli._context import require_merchant, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import emit, info, warn
from paysdk_cli._params import expand_path, read_secret

__all__ = ["app"]

app = new_app(
    "The backoffice session: the application's key and an operator's email and password.\n\n"
    "Both token pairs stay in a locked 0600 file; later commands reuse them, refresh them once and log "
    "the operator in again when the session has ended."
)


def _password(
    st_profile: str, operator: str, stored_operator: str | None, from_stdin: bool
) -> tuple[str, str]:
    """The operator's password and its origin (``stdin``, ``env``, ``keyring``, ``file``, ``prompt``)."""
    from paysdk_cli._backoffice import BACKOFFICE_PASSWORD
    from paysdk_cli._secrets import load_secret

    if from_stdin:
        return read_secret("Password", from_stdin=True), "stdin"
    env = os.environ.get(BACKOFFICE_PASSWORD.env)
    if env:
        return env, "env"
    if stored_operator == operator:
        stored = load_secret(BACKOFFICE_PASSWORD, st_profile)
        if stored is not None:
            return stored.value, stored.source
    return read_secret(f"Password of {operator}", from_stdin=False, instead="--password-stdin"), "prompt"


@app.command("login")
def login(
    ctx: typer.Context,
    merchant: Annotated[
        str | None,
        typer.Option(
            "--merchant",
            help="Merchant slug (default: the profile's backoffice merchant, else its merchant).",
        ),
    ] = None,
    operator: Annotated[
        str | None,
        typer.Option("--operator", help="The operator's email (default: the profile's backoffice operator)."),
    ] = None,
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            help="File holding the application's Ed25519 private key (default: the wallet's stored key).",
            dir_okay=False,
            callback=expand_path,
        ),
    ] = None,
    key_stdin: Annotated[
        bool, typer.Option("--key-stdin", help="Read the private key from standard input.")
    ] = False,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the operator's password from standard input.")
    ] = False,
) -> None:
    """Log the application and an operator in to the backoffice and keep the credentials.

    The key comes from --key-file, --key-stdin or the wallet's key storage (`paysdk wallet login`,
    `paysdk sandbox clients create --save-profile`); the password from --password-stdin,
    PAYSDK_BACKOFFICE_PASSWORD, the stored one (for the same operator) or a hidden prompt; never an
    argument.
    """
    from paysdk_cli._backoffice import BACKOFFICE_PASSWORD, backoffice_token_path, open_backoffice_client
    from paysdk_cli._secrets import WALLET_KEY, store_secret
    from paysdk_cli.commands.wallet import _check_key, _read_key

    if password_stdin and key_stdin:
        raise CLIError("pass either --key-stdin or --password-stdin, not both", ExitCode.USAGE)
    st = state(ctx)
    slug = merchant or st.settings.get("backoffice_merchant") or require_merchant(st)
    stored_operator = st.settings.get("backoffice_operator")
    email = operator or stored_operator
    if not email:
        raise CLIError("no operator: pass --operator EMAIL", ExitCode.USAGE)
    key, key_source = _read_key(key_file, key_stdin, st.profile)
    if key is not None:
        _check_key(key)
    password, password_source = _password(st.profile, email, stored_operator, password_stdin)
    with open_backoffice_client(
        st, merchant=slug, operator=email, private_key=key, password=password
    ) as client:
        client.backoffice.login()
        pair = client.backoffice.login_user()
        environment = client.environment
    if key is not None:
        store_secret(WALLET_KEY, st.profile, key)
        if os.environ.get(WALLET_KEY.env):
            warn(f"{WALLET_KEY.env} is set and overrides the stored key while it stays set")
    where = password_source
    if password_source in ("stdin", "prompt"):
        where = store_secret(BACKOFFICE_PASSWORD, st.profile, password)
    _config.update_profile(st.profile, backoffice_merchant=slug, backoffice_operator=email.strip().lower())
    info(
        f"Backoffice login: merchant {slug!r}, operator {email!r}, profile {st.profile!r}; "
        f"password in {where}."
    )
    emit(
        st.output,
        {
            "merchant": slug,
            "operator": email.strip().lower(),
            "environment": environment.name,
            "cmsBaseUrl": environment.cms_base_url,
            "keySource": key_source,
            "tokenType": pair.token_type,
            "expiresIn": pair.expires_in,
            "refreshExpiresIn": pair.refresh_expires_in,
            "tokenStore": str(backoffice_token_path(st.profile)),
        },
        title="Backoffice login",
    )


@app.command("logout")
def logout(
    ctx: typer.Context,
    forget_password: Annotated[
        bool,
        typer.Option("--forget-password", help="Also remove the operator's password from the secret store."),
    ] = False,
) -> None:
    """Forget the stored backoffice token pairs (and, with --forget-password, the operator's password).

    The signing key stays (the wallet uses it too: `paysdk wallet logout --forget-key`).
    """
    from paysdk_cli._backoffice import BACKOFFICE_PASSWORD, backoffice_token_path
    from paysdk_cli._secrets import delete_secret

    st = state(ctx)
    had = False
    slug, email = st.settings.get("backoffice_merchant"), st.settings.get("backoffice_operator")
    path = backoffice_token_path(st.profile)
    if slug and path.exists():
        import paysdk
        from paysdk_cli._context import environment

        store = paysdk.FileTokenStore(path)
        env = environment(st)
        keys = [paysdk.backoffice_store_key(env, slug)]
        if email:
            keys.insert(0, paysdk.backoffice_store_key(env, slug, email))
        for key in keys:
            with store.lock(key):
                had = store.load(key) is not None or had
                store.delete(key)
    info(
        f"Forgot the backoffice token pairs of profile {st.profile!r}."
        if had
        else "No backoffice token pairs were stored."
    )
    if forget_password:
        removed = delete_secret(BACKOFFICE_PASSWORD, st.profile)
        info(
            f"Removed the operator's password from {', '.join(removed)}."
            if removed
            else "No password was stored."
        )
        if os.environ.get(BACKOFFICE_PASSWORD.env):
            warn(f"{BACKOFFICE_PASSWORD.env} is still set and will keep being used")
    emit(st.output, {"profile": st.profile, "forgotTokens": had}, title="Backoffice logout")
