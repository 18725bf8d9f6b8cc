"""Wallet plumbing shared by the wallet families: who a command acts as, and the stored user sessions.

* :func:`wallet_api` opens the profile's wallet client (``_context.open_wallet_client``) and yields a
  :class:`Caller`: ``caller(lambda w: w.cards.list(user_id))`` runs the SDK call either as the
  application (``client.wallet``) or, with ``--as-user NAME``, as a stored user session
  (``client.wallet.as_user(session)``). The application's token pair is the SDK's business (its
  ``FileTokenStore`` refreshes single-flight across processes). For a user session the CLI holds the
  session file's lock for the duration of the call, so the SDK's user view refreshes an expired
  token at most once across invocations, and the rotated pair is saved before the lock is released.
* User sessions (``paysdk users login``) are kept per profile in ``_secrets.user_sessions_path`` (JSON,
  mode 0600 in a 0700 directory, ``fcntl``-locked across processes), by username. Nothing here ever
  prints a token.

Nothing here imports ``paysdk`` at module level.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from paysdk_cli import _config
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._state import State

if TYPE_CHECKING:
    import paysdk

__all__ = [
    "AS_USER",
    "AsUser",
    "Caller",
    "SessionStore",
    "describe_token",
    "forget_app_tokens",
    "session_from_record",
    "session_record",
    "session_store",
    "stored_app_tokens",
    "wallet_api",
]

T = TypeVar("T")

_log = logging.getLogger("paysdk_cli")

AS_USER = typer.Option(
    "--as-user",
    "--user-session",
    help="Act as this user's stored session (from `paysdk users login`) instead of as the application.",
    metavar="USERNAME",
)
AsUser = Annotated[str | None, AS_USER]


class SessionStore:
    """The profile's user sessions: ``{"sessions": {username: record}}`` in a 0600 JSON file.

    Every read-modify-write holds an exclusive ``fcntl`` lock on ``<file>.lock``, so two invocations
    never lose each other's writes, and a refresh happens once.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's lock (exclusive, across processes)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def read(self) -> dict[str, dict[str, Any]]:
        """Every record (call it holding :meth:`locked`)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except ValueError:
            _log.debug("ignoring an unreadable session file %s", self.path)
            return {}
        sessions = data.get("sessions") if isinstance(data, dict) else None
        return (
            {str(k): v for k, v in sessions.items() if isinstance(v, dict)}
            if isinstance(sessions, dict)
            else {}
        )

    def write(self, sessions: dict[str, dict[str, Any]]) -> None:
        """Replace every record (call it holding :meth:`locked`)."""
        if sessions:
            _config.write_private_file(self.path, {"sessions": sessions})
        else:
            self.path.unlink(missing_ok=True)

    def all(self) -> dict[str, dict[str, Any]]:
        """Every stored session record, by username."""
        with self.locked():
            return self.read()

    def get(self, username: str) -> dict[str, Any] | None:
        """One session record (``None`` when there is none)."""
        return self.all().get(username)

    def put(self, username: str, record: dict[str, Any]) -> None:
        """Save (or replace) ``username``'s session."""
        with self.locked():
            sessions = self.read()
            sessions[username] = record
            self.write(sessions)

    def remove(self, username: str) -> bool:
        """Forget ``username``'s session; whether there was one."""
        with self.locked():
            sessions = self.read()
            found = sessions.pop(username, None) is not None
            self.write(sessions)
            return found


def session_store(st: State) -> SessionStore:
    """The user-session store of the invocation's profile."""
    from paysdk_cli._secrets import user_sessions_path

    return SessionStore(user_sessions_path(st.profile))


# ------------------------------------------------------------------ SDK UserSession <-> record


def session_record(username: str, session: paysdk.UserSession) -> dict[str, Any]:
    """What is stored for a user session: its :class:`paysdk.StoredTokens` (tokens in clear: the
    file is 0600) plus the username and user id."""
    return {"username": username, "userId": session.user_id, **session.stored.to_json()}


def session_from_record(record: dict[str, Any]) -> paysdk.UserSession:
    """The SDK user session a stored record describes (exit 4 when the record is unusable)."""
    import paysdk

    try:
        return paysdk.UserSession.from_stored(paysdk.StoredTokens.from_json(record))
    except ValueError:
        raise CLIError(
            f"the stored session of {record.get('username')!r} is unusable: run `paysdk users login` again",
            ExitCode.AUTH,
        ) from None


# ------------------------------------------------------------------------------ acting as someone


def describe_token(token: str | None) -> dict[str, Any]:
    """Non-secret facts of a JWT read WITHOUT verifying it: expiry (and whether it passed on this
    machine's clock), kind, subject, issuer. Never the token itself."""
    from datetime import UTC, datetime

    if not token:
        return {"expiresAt": None}
    from paysdk._jwt import JWTError, decode_unverified

    try:
        _, claims = decode_unverified(token)
    except JWTError:
        return {"expiresAt": None}
    exp = claims.get("exp")
    expires_at = datetime.fromtimestamp(exp, UTC) if isinstance(exp, int | float) else None
    return {
        "expiresAt": expires_at,
        "expired": expires_at is not None and expires_at <= datetime.now(UTC),
        "kind": claims.get("kind"),
        "subject": claims.get("sub"),
        "issuer": claims.get("iss"),
    }


@dataclass
class Caller:
    """Runs SDK wallet calls as the application or as one stored user session (see the module doc)."""

    client: paysdk.Client
    username: str | None = None
    store: SessionStore | None = None
    user_id: str | None = None

    def default_user_id(self, given: str | None) -> str:
        """``--user-id``, else the acting user's own id; a usage error when neither."""
        user_id = given or self.user_id
        if not user_id:
            raise CLIError(
                "no user: pass --user-id (or act as a user with --as-user USERNAME)", ExitCode.USAGE
            )
        return user_id

    def __call__(self, operation: Callable[[Any], T]) -> T:
        if self.username is None or self.store is None:
            return operation(self.client.wallet)
        return self._as_user(self.username, self.store, operation)

    def _as_user(self, username: str, store: SessionStore, operation: Callable[[Any], T]) -> T:
        """Run ``operation`` on ``client.wallet.as_user(session)`` holding the session file's lock.

        The SDK's user view refreshes an expired access token by itself (in memory); holding the
        lock for the call means no other invocation can present the same single-use refresh token,
        and the rotated pair is saved before the lock is released (even when the call then fails).
        """
        with store.locked():
            record = store.read().get(username)
            if record is None:
                raise CLIError(f"the session of {username!r} was logged out meanwhile", ExitCode.AUTH)
            session = session_from_record(record)
            view = self.client.wallet.as_user(session)
            try:
                return operation(view)
            finally:
                current = view.session
                if current.stored.access_token != session.stored.access_token:
                    _log.debug("saving the refreshed session of %s", username)
                    sessions = store.read()
                    sessions[username] = session_record(username, current)
                    store.write(sessions)


@contextmanager
def wallet_api(st: State, as_user: str | None = None) -> Iterator[Caller]:
    """The profile's wallet client and who acts (``--as-user``), closed afterwards."""
    from paysdk_cli._context import open_wallet_client

    store = None
    user_id = None
    if as_user is not None:
        store = session_store(st)
        record = store.get(as_user)
        if record is None:
            raise CLIError(
                f"no stored session for user {as_user!r} in profile {st.profile!r}: run "
                f"`paysdk --profile {st.profile} users login --username {as_user}`",
                ExitCode.AUTH,
            )
        user_id = str(record.get("userId") or "") or None
    with open_wallet_client(st) as client:
        yield Caller(client, as_user, store, user_id)


# ------------------------------------------------------------------------ the application token pair


@contextmanager
def app_token_store(st: State) -> Iterator[tuple[Any, str]]:
    """The profile's ``FileTokenStore`` and the SDK's key of the current merchant and environment,
    with that key's lock held."""
    import paysdk
    from paysdk._wallet_auth import application_key
    from paysdk_cli._context import environment, require_merchant
    from paysdk_cli._secrets import wallet_token_path

    store = paysdk.FileTokenStore(wallet_token_path(st.profile))
    key = application_key(environment(st), require_merchant(st))
    with store.lock(key):
        yield store, key


def stored_app_tokens(st: State) -> tuple[str, str] | None:
    """The stored application (access, refresh) tokens, or ``None``: for ``whoami``, never printed."""
    with app_token_store(st) as (store, key):
        stored = store.load(key)
    if stored is None:
        return None
    return stored.access_token.reveal(), stored.refresh_token.reveal()


def forget_app_tokens(st: State) -> bool:
    """Delete the stored application token pair; whether there was one."""
    with app_token_store(st) as (store, key):
        had = store.load(key) is not None
        store.delete(key)
    return had
