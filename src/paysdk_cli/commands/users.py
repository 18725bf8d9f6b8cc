"""``paysdk users``: wallet user sessions, one-time codes and password reset (spec 4.3, 5.3.6-5.3.8).

Every call here uses the application's wallet session (``paysdk wallet login``) as bearer. A user's
session (token pair) is stored in the profile's token store (the SDK's ``FileTokenStore``, 0600, next to
the application pair) and indexed by username (``_wallet.SessionStore``), so that ``--as-user USERNAME``
on the card, transfer and permission commands acts as that user.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._output import emit, info, warn
from paysdk_cli._params import read_secret

__all__ = ["app"]

app = new_app(
    "Wallet users: sessions, one-time codes, password reset.\n\n"
    "`users login` stores the user's session so that `--as-user USERNAME` acts as that user."
)

_PURPOSE_HELP = "Purpose of the code; must be the same when requesting and verifying."


def _end_session(wallet: Any, session: Any) -> None:
    wallet.users.logout(session)


def _session_view(record: dict[str, Any], tokens: Any) -> dict[str, Any]:
    """A stored session without its tokens (``tokens``: its :class:`paysdk.StoredTokens` or ``None``)."""
    from paysdk_cli._wallet import describe_token

    access = describe_token(tokens.access_token.reveal() if tokens is not None else None)
    refresh = describe_token(tokens.refresh_token.reveal() if tokens is not None else None)
    return {
        "username": record.get("username"),
        "userId": record.get("userId"),
        "accessTokenExpiresAt": access["expiresAt"],
        "refreshTokenExpiresAt": refresh["expiresAt"],
    }


@app.command("login")
def login(
    ctx: typer.Context,
    username: Annotated[str, typer.Option("--username", help="The wallet user's username.")],
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from standard input, not a prompt.")
    ] = False,
    access_token_ttl: Annotated[
        int | None,
        typer.Option("--access-token-ttl", help="Access token lifetime in seconds (60..86400).", min=1),
    ] = None,
    refresh_token_ttl: Annotated[
        int | None,
        typer.Option("--refresh-token-ttl", help="Refresh token lifetime in seconds (300..7776000).", min=1),
    ] = None,
) -> None:
    """Log a wallet user in and store the session for --as-user USERNAME.

    The password comes from a hidden prompt or, with --password-stdin, from standard input; it is
    never an argument and never stored.
    """
    from paysdk_cli._wallet import save_user_session, wallet_api

    st = state(ctx)
    password = read_secret("Password", from_stdin=password_stdin, instead="--password-stdin")
    with wallet_api(st) as call:
        session = call(
            lambda w: w.users.login(
                username,
                password,
                access_token_ttl=access_token_ttl,
                refresh_token_ttl=refresh_token_ttl,
            )
        )
        record = save_user_session(st, call.client, username, session)
    info(f"User {username!r} logged in; session stored in profile {st.profile!r} (use --as-user {username}).")
    emit(st.output, _session_view(record, session.stored), title="User session")


@app.command("logout")
def logout(
    ctx: typer.Context,
    username: Annotated[
        str | None, typer.Option("--username", help="Whose session to end (default: the only one stored).")
    ] = None,
    all_users: Annotated[bool, typer.Option("--all", help="End every stored user session.")] = False,
) -> None:
    """End a user's session on the server and forget it here."""
    import paysdk
    from paysdk._tokens import RECOVERABLE_CODES
    from paysdk_cli._wallet import session_store, user_view, wallet_api

    st = state(ctx)
    store = session_store(st)
    sessions = store.all()
    if all_users:
        names = sorted(sessions)
    elif username is not None:
        names = [username]
    elif len(sessions) == 1:
        names = list(sessions)
    elif not sessions:
        names = []
    else:
        raise CLIError(
            f"several user sessions are stored ({', '.join(sorted(sessions))}): pass --username",
            ExitCode.USAGE,
        )
    if not names:
        info(f"No user session is stored in profile {st.profile!r}.")
        return
    with wallet_api(st) as call:
        for name in names:
            record = sessions.get(name)
            if record is None:
                raise CLIError(
                    f"no stored session for user {name!r} in profile {st.profile!r}", ExitCode.USAGE
                )
            view = user_view(st, call.client, name, record)
            session = view.stored_session()
            if session is not None:
                try:
                    call(functools.partial(_end_session, session=session))
                except paysdk.AuthenticationError as exc:
                    # The session was already dead (invalid, expired, revoked, reused: the codes on which
                    # the SDK renews a bearer): forgetting it is all that is left.
                    if exc.own_code not in RECOVERABLE_CODES:
                        raise
                    warn(f"the session of {name!r} had already ended (ownCode {exc.own_code})")
                view.forget_tokens()
            store.remove(name)
            info(f"Logged out user {name!r}.")


@app.command("list")
def list_sessions(ctx: typer.Context) -> None:
    """List the user sessions stored in this profile (never their tokens)."""
    from paysdk_cli._wallet import session_store, session_tokens

    st = state(ctx)
    records = session_store(st).all()
    emit(
        st.output,
        [_session_view(record, session_tokens(st, record)) for _, record in sorted(records.items())],
        title="User sessions",
    )


@app.command("otp")
def otp(
    ctx: typer.Context,
    email: Annotated[str, typer.Option("--email", help="The user's email address.")],
    purpose: Annotated[str, typer.Option("--purpose", help=_PURPOSE_HELP)] = "password_reset",
    verify: Annotated[
        bool, typer.Option("--verify", help="Verify a code received by email instead of requesting one.")
    ] = False,
    code: Annotated[
        str | None, typer.Option("--code", help="With --verify: the 6-digit code (default: a hidden prompt).")
    ] = None,
) -> None:
    """Request a one-time code by email, or check one with --verify.

    The answer never says whether the email exists. In the sandbox the email lands in
    `paysdk sandbox outbox`. A verified password_reset code is used by `users reset-password`
    (which verifies it itself), so --verify never prints the reset token.
    """
    from paysdk_cli._wallet import wallet_api

    st = state(ctx)
    if code is not None and not verify:
        raise CLIError("--code only goes with --verify", ExitCode.USAGE)
    if not verify:
        with wallet_api(st) as call:
            call(lambda w: w.users.request_otp(email, purpose=purpose))
        info(f"If {email} belongs to a user, a code was sent to it.")
        emit(st.output, {"email": email, "purpose": purpose, "sent": True}, title="One-time code")
        return
    otp_code = (code or read_secret("Code", from_stdin=False, instead="--code CODE")).strip()
    with wallet_api(st) as call:
        result = call(lambda w: w.users.verify_otp(email, otp_code, purpose=purpose))
    emit(st.output, {"email": email, "purpose": purpose, "verified": result.verified}, title="One-time code")


@app.command("reset-password")
def reset_password(
    ctx: typer.Context,
    email: Annotated[str, typer.Option("--email", help="The user's email address.")],
    code: Annotated[
        str | None,
        typer.Option("--code", help="The 6-digit code from `users otp` (default: a hidden prompt)."),
    ] = None,
    password_stdin: Annotated[
        bool,
        typer.Option("--password-stdin", help="Read the new password from standard input, not a prompt."),
    ] = False,
) -> None:
    """Set a new password with a code from `users otp --email E` (purpose password_reset).

    Verifies the code, then resets the password with the reset token it yields (never printed).
    Every session of the user ends.
    """
    from paysdk_cli._wallet import wallet_api

    st = state(ctx)
    otp_code = (code or read_secret("Code", from_stdin=False, instead="--code CODE")).strip()
    password = read_secret(
        "New password", from_stdin=password_stdin, confirm=not password_stdin, instead="--password-stdin"
    )
    with wallet_api(st) as call:
        verified = call(lambda w: w.users.verify_otp(email, otp_code, purpose="password_reset"))
        if not verified.verified or verified.token is None:
            raise CLIError("the code was not accepted", ExitCode.API)
        token = verified.token
        call(lambda w: w.users.reset_password(email, password, password, token))
    info(
        f"Password reset for {email}; every session of that user has ended "
        "(a stored one is forgotten by `paysdk users logout`)."
    )
    emit(st.output, {"email": email, "reset": True}, title="Password reset")
