"""``paysdk login``/``logout``, ``paysdk auth status`` and ``paysdk profiles list``: the profile's merchant
token in the OS keyring, checked against the API before it is stored and whenever its status is asked.

The check is one cheap authenticated call (:func:`check_token`): dismissing a transaction id that cannot
exist. The merchant token's authorizer answers it before anything else, so ``401``/``403`` means the token
is refused and ``404`` (any other ``4xx``) means it works; nothing is created or changed either way.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from paysdk_cli import _config
from paysdk_cli._app import new_app
from paysdk_cli._context import CLIENT_OPTIONS, State, environment, state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import emit, info, warn
from paysdk_cli._params import read_secret

__all__ = ["TokenCheck", "auth_app", "check_token", "login_app", "logout_app", "profiles_app", "save_token"]

_TOKEN_SHAPE = re.compile(r"[0-9a-fA-F]{64}")
#: The transaction id the check dismisses: not the shape of any id a server hands out, so never found.
PROBE_UID = "paysdk-token-check"


@dataclass(frozen=True)
class TokenCheck:
    """The API's verdict on a merchant token: ``valid``, ``refused`` or ``unverified`` (no answer)."""

    verdict: str
    detail: str

    @property
    def exit_code(self) -> ExitCode:
        """0 for a working token, 4 (authentication) for a refused one, 7 when the API did not answer."""
        return {"valid": ExitCode.OK, "refused": ExitCode.AUTH}.get(self.verdict, ExitCode.SERVER)


def check_token(st: State, token: str) -> TokenCheck:
    """Ask the API whether ``token`` works, with one call that changes nothing (the module's docstring)."""
    import paysdk

    options: dict[str, Any] = {"max_retries": 1, **CLIENT_OPTIONS}
    try:
        with paysdk.Client(paysdk.Secret(token), environment(st), **options) as client:
            client.alternative_payments.dismiss(PROBE_UID)
    except paysdk.WrongEnvironmentError:
        return TokenCheck("refused", "a token of another environment (sandbox vs production)")
    except (paysdk.AuthenticationError, paysdk.PermissionDeniedError) as exc:
        return TokenCheck("refused", f"the API refused it (HTTP {exc.status_code})")
    except paysdk.APIError as exc:
        if 400 <= exc.status_code < 500:
            return TokenCheck("valid", "accepted by the API")
        return TokenCheck("unverified", f"the API failed (HTTP {exc.status_code})")
    except paysdk.RequestError as exc:
        return TokenCheck("unverified", f"the API could not be reached: {type(exc).__name__}")
    return TokenCheck("valid", "accepted by the API")


def masked(token: str) -> str:
    """``****`` and, for a token long enough to keep secret without them, its last four characters."""
    from paysdk._redact import MASK

    return MASK + (token[-4:] if len(token) >= 32 else "")


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
    verify: Annotated[
        bool,
        typer.Option(
            "--verify/--no-verify", help="Check the token against the API before storing it (default: check)."
        ),
    ] = True,
) -> None:
    """Store a profile's merchant token in the OS keyring.

    The token is first checked against the API (the profile's address, or --base-url): a refused
    token is not stored (exit 4); when the API cannot be reached nothing is stored either (exit 7)
    unless --no-verify.

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
        warn("the token is not 64 hexadecimal characters (spec 5.2)")
    root = state(ctx)
    st = State(profile=name, base_url_option=base_url or root.base_url_option, output=root.output)
    if verify:
        check = check_token(st, token)
        if check.verdict != "valid":
            hint = "" if check.verdict == "refused" else "; pass --no-verify to store it unchecked"
            raise CLIError(
                f"not logged in: the token was not stored, {check.detail} at {st.base_url}{hint}",
                check.exit_code,
            )
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


def _status_row(st: State, *, check: bool) -> dict[str, Any]:
    """One profile's row: address, environment, client, where its token comes from, masked, and (with
    ``check``) the API's verdict on it. A token is never printed."""
    from paysdk_cli._secrets import load_token

    stored = load_token(st.profile)
    row: dict[str, Any] = {
        "profile": st.profile,
        "baseUrl": st.base_url,
        "environment": environment(st).name,
        "client": st.settings.get("client"),
        "tokenSource": stored.source if stored else None,
        "token": masked(stored.value) if stored else None,
    }
    if check:
        verdict = check_token(st, stored.value) if stored else TokenCheck("missing", "no token stored")
        row["tokenStatus"] = verdict.verdict
        row["detail"] = verdict.detail
    return row


def auth_status(ctx: typer.Context) -> None:
    """Show the active profile, its API address and environment, and whether its token works.

    The token is checked with one call to the API that changes nothing, and shown masked. Exit 0 when
    it works, 4 when it is missing or refused, 7 when the API cannot be reached.
    """
    st = state(ctx)
    row = _status_row(st, check=True)
    emit(st.output, row, title="Authentication")
    verdict = row["tokenStatus"]
    if verdict != "valid":
        code = ExitCode.AUTH if verdict == "missing" else TokenCheck(verdict, "").exit_code
        raise typer.Exit(int(code))


#: The table's columns, the ones that carry the meaning first (a narrow terminal hides the last ones).
PROFILE_COLUMNS = (
    "active",
    "profile",
    "baseUrl",
    "tokenStatus",
    "client",
    "tokenSource",
    "token",
    "environment",
    "detail",
)


def profiles_list(
    ctx: typer.Context,
    check: Annotated[
        bool, typer.Option("--check", help="Also check each profile's token against its API address.")
    ] = False,
) -> None:
    """List the stored profiles: address, environment, client and token source (masked); * is active."""
    from paysdk_cli._config import load_profiles

    st = state(ctx)
    names = sorted({*load_profiles(), st.profile})
    rows = []
    for name in names:
        # --base-url / PAYSDK_BASE_URL apply to every profile, as they would to `--profile NAME ...`
        profile = State(profile=name, base_url_option=st.base_url_option, output=st.output)
        rows.append({"active": "*" if name == st.profile else "", **_status_row(profile, check=check)})
    emit(st.output, rows, columns=[c for c in PROFILE_COLUMNS if c in rows[0]], title="Profiles")


login_app = new_app(group=False)
login_app.command("login")(login)
logout_app = new_app(group=False)
logout_app.command("logout")(logout)
auth_app = new_app("Authentication: which profile and token are in use, and whether the token works.")
auth_app.command("status")(auth_status)
profiles_app = new_app("Profiles: each one's API address, client and token (masked).")
profiles_app.command("list")(profiles_list)
