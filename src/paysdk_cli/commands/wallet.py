"""``paysdk wallet login | whoami | logout | jwks | export-key``: the application's wallet session (spec
4.3, 5.3; D36).

The Ed25519 signing key lives in the profile's secret store (``_secrets``: keyring, else the 0600
``credentials.json``); the application token pair in the SDK's ``FileTokenStore`` under
``<config dir>/wallet/`` (0600, locked across processes). The token pair is never printed; the key only
by ``export-key --show-secrets`` (D433).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from paysdk_cli import _config
from paysdk_cli._app import new_app
from paysdk_cli._context import open_wallet_client, require_merchant, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import OutputFormat, emit, info, warn
from paysdk_cli._params import expand_path, read_secret

__all__ = ["app"]

app = new_app(
    "The wallet session: application login with the merchant's Ed25519 key.\n\n"
    "The key stays in the profile's secret store and the token pair in a locked 0600 file, so later "
    "commands reuse the tokens and refresh them once, even when several run at the same moment."
)


def _read_key(key_file: Path | None, key_stdin: bool, profile: str) -> tuple[str | None, str]:
    """The private key given to this login, and its origin; ``(None, source)`` to use the stored one."""
    from paysdk_cli._secrets import WALLET_KEY, load_secret

    if key_file is not None and key_stdin:
        raise CLIError("pass either --key-file or --key-stdin, not both", ExitCode.USAGE)
    if key_file is not None:
        try:
            if key_file.stat().st_mode & 0o077:
                warn(f"{key_file} can be read by other users; run: chmod 600 {key_file}")
            return key_file.read_text(encoding="utf-8").strip(), "file"
        except OSError as exc:
            raise CLIError(
                f"cannot read --key-file: {exc.strerror or exc}: {key_file}", ExitCode.USAGE
            ) from None
    if key_stdin:
        return sys.stdin.read().strip(), "stdin"
    stored = load_secret(WALLET_KEY, profile)
    if stored is not None:
        return None, stored.source
    key = read_secret("Wallet private key", from_stdin=False, instead="--key-file FILE or --key-stdin")
    return key.strip(), "prompt"


def _check_key(key: str) -> None:
    from paysdk._jwt import JWTError, load_signing_key

    if not key:
        raise CLIError("no private key given", ExitCode.USAGE)
    try:
        load_signing_key(key)
    except JWTError as exc:
        raise CLIError(f"invalid private key: {exc}", ExitCode.USAGE) from None


@app.command("login")
def login(
    ctx: typer.Context,
    merchant: Annotated[
        str | None,
        typer.Option("--merchant", help="Merchant slug (default: the profile's merchant, else its client)."),
    ] = None,
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            help="File holding the Ed25519 private key: a 32-byte seed in base64 or hex, or an OKP JWK.",
            dir_okay=False,
            callback=expand_path,
        ),
    ] = None,
    key_stdin: Annotated[
        bool, typer.Option("--key-stdin", help="Read the private key from standard input.")
    ] = False,
) -> None:
    """Log the application in to the wallet and store the key and the token pair.

    The key is read from --key-file, --key-stdin, the profile's secret store (for example saved by
    `paysdk sandbox clients create --save-profile`), or a hidden prompt; never from an argument.
    PAYSDK_WALLET_PRIVATE_KEY, when set, overrides the stored key.
    """
    from paysdk_cli._secrets import WALLET_KEY, store_secret, wallet_token_path

    st = state(ctx)
    slug = require_merchant(st, merchant)
    key, source = _read_key(key_file, key_stdin, st.profile)
    if key is not None:
        _check_key(key)
    with open_wallet_client(st, merchant=slug, private_key=key) as client:
        pair = client.wallet.login()
        environment = client.environment
    where = "keyring" if source == "keyring" else ("environment" if source == "env" else None)
    if key is not None:
        where = store_secret(WALLET_KEY, st.profile, key)
        if os.environ.get(WALLET_KEY.env):
            warn(f"{WALLET_KEY.env} is set and overrides the stored key while it stays set")
    elif source == "file":
        from paysdk_cli._secrets import credentials_path

        where = str(credentials_path())
    _config.update_profile(st.profile, merchant=slug)
    info(f"Wallet login: merchant {slug!r}, profile {st.profile!r}; key in {where}.")
    emit(
        st.output,
        {
            "merchant": slug,
            "environment": environment.name,
            "walletBaseUrl": environment.wallet_base_url,
            "tokenType": pair.token_type,
            "expiresIn": pair.expires_in,
            "refreshExpiresIn": pair.refresh_expires_in,
            "tokenStore": str(wallet_token_path(st.profile)),
        },
        title="Wallet login",
    )


@app.command("whoami")
def whoami(ctx: typer.Context) -> None:
    """Show the wallet session: merchant, environment, token expiry (never the tokens)."""
    from paysdk_cli._context import environment as environment_of
    from paysdk_cli._secrets import WALLET_KEY, load_secret, wallet_token_path
    from paysdk_cli._wallet import describe_token, session_store, stored_app_tokens

    st = state(ctx)
    slug = require_merchant(st)
    tokens = stored_app_tokens(st)
    if tokens is None:
        raise CLIError(
            f"not logged in to the wallet (profile {st.profile!r}): run `paysdk --profile {st.profile} "
            f"wallet login`",
            ExitCode.AUTH,
        )
    access = describe_token(tokens[0])
    refresh = describe_token(tokens[1])
    key = load_secret(WALLET_KEY, st.profile)
    environment = environment_of(st)
    data: dict[str, Any] = {
        "profile": st.profile,
        "merchant": slug,
        "environment": environment.name,
        "walletBaseUrl": environment.wallet_base_url,
        "tokenIssuer": access.get("issuer"),
        "accessTokenExpiresAt": access["expiresAt"],
        "accessTokenExpired": access.get("expired"),
        "refreshTokenExpiresAt": refresh["expiresAt"],
        "keySource": key.source if key else None,
        "tokenStore": str(wallet_token_path(st.profile)),
        "userSessions": sorted(session_store(st).all()),
    }
    emit(st.output, data, title="Wallet session")


@app.command("jwks")
def jwks(ctx: typer.Context) -> None:
    """Show the public keys the wallet signs its tokens with (its JWKS; no login needed)."""
    from paysdk_cli._context import open_client

    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        result = sdk.wallet.jwks()
    if st.output is OutputFormat.json:
        emit(st.output, result.to_wire())
    else:
        emit(
            st.output,
            [key.to_wire() for key in result.keys],
            columns=["kid", "crv", "alg", "x"],
            title="Wallet signing keys (JWKS)",
        )


@app.command("logout")
def logout(
    ctx: typer.Context,
    forget_key: Annotated[
        bool, typer.Option("--forget-key", help="Also remove the signing key from the secret store.")
    ] = False,
) -> None:
    """Forget the stored application token pair (and, with --forget-key, the signing key).

    User sessions stay; end them with `paysdk users logout`.
    """
    from paysdk_cli._secrets import WALLET_KEY, delete_secret
    from paysdk_cli._wallet import forget_app_tokens

    st = state(ctx)
    had = forget_app_tokens(st)
    info(
        f"Forgot the wallet token pair of profile {st.profile!r}."
        if had
        else "No wallet token pair was stored."
    )
    if forget_key:
        removed = delete_secret(WALLET_KEY, st.profile)
        info(
            f"Removed the signing key from {', '.join(removed)}." if removed else "No signing key was stored."
        )
        if os.environ.get(WALLET_KEY.env):
            warn(f"{WALLET_KEY.env} is still set and will keep being used")


@app.command("export-key")
def export_key(
    ctx: typer.Context,
    show_secrets: Annotated[
        bool, typer.Option("--show-secrets", help="Required: print the stored signing key to stdout.")
    ] = False,
) -> None:
    """Print the profile's stored wallet signing key (the one `sandbox clients create --save-profile`
    or `wallet login` kept), to move it to another machine or a secrets manager.

    Only with --show-secrets, as the key itself on one line of stdout (nothing else there), so
    `paysdk wallet export-key --show-secrets > key.pem` writes a file `wallet login --key-file` reads;
    where it came from goes to stderr. The same with -o json (a key file is not a JSON document, as
    `gh auth token` prints the token alone). Exit 4 when no key is stored.

    \f
    Decision D433.
    """
    from paysdk_cli._secrets import WALLET_KEY, load_secret

    st = state(ctx)
    if not show_secrets:
        raise CLIError(
            "the signing key is a secret: pass --show-secrets to print it (e.g. > key.pem)", ExitCode.USAGE
        )
    stored = load_secret(WALLET_KEY, st.profile)
    if stored is None:
        raise CLIError(f"no wallet signing key is stored in profile {st.profile!r}", ExitCode.AUTH)
    info(f"Wallet signing key of profile {st.profile!r} (from {stored.source}):")
    sys.stdout.write(stored.value.strip() + "\n")
    sys.stdout.flush()
