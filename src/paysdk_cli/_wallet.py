"""Wallet plumbing shared by the wallet families: who a command acts as, and the stored user sessions.

* :func:`wallet_api` opens the profile's wallet client (``_context.open_wallet_client``) and yields a
  :class:`Caller`: ``caller(lambda w: w.cards.list(user_id))`` runs the SDK call either as the
  application (``client.wallet``) or, with ``--as-user NAME``, as a stored user session
  (``client.wallet.as_user(store=..., key=...)``).
* Every token pair lives in the profile's ``FileTokenStore`` (``_secrets.wallet_token_path``, 0600, one
  ``fcntl`` lock per key): the application's under :func:`paysdk.wallet_store_key` of the merchant, each
  user session under the key of ``username:<name>``. The SDK writes a refreshed pair to the file BEFORE
  using it, holding that key's lock, so concurrent invocations acting as the same user refresh once
  and a crash never loses a rotated pair; the CLI holds no lock across a call.
* ``paysdk users login`` also records the session in a small index (``_secrets.user_sessions_path``,
  0600, ``fcntl``-locked): username -> user id and store key, no tokens, for ``users list`` and
  ``--as-user``. Nothing here ever prints a token.

Nothing here imports ``paysdk`` at module level.
"""

from __future__ import annotations

import json
import logging
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
    from paysdk.resources.wallet import WalletUserView

__all__ = [
    "AS_USER",
    "AsUser",
    "Caller",
    "SessionStore",
    "describe_token",
    "forget_app_tokens",
    "save_user_session",
    "session_store",
    "session_tokens",
    "stored_app_tokens",
    "token_store",
    "user_view",
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
    """The profile's index of user sessions: ``{"sessions": {username: record}}`` in a 0600 JSON file,
    a record being ``{"username", "userId", "key"}`` (the tokens are in :func:`token_store`).

    Every read-modify-write holds an exclusive ``fcntl`` lock on ``<file>.lock``, so two invocations
    never lose each other's writes.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's lock (exclusive, across processes)."""
        from paysdk._files import exclusive_lock

        with exclusive_lock(self.path.with_name(self.path.name + ".lock")):
            yield

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


# ------------------------------------------------------------------------- user sessions <-> store


def token_store(st: State) -> paysdk.FileTokenStore:
    """The profile's token store: the application pair and every user session's pair."""
    import paysdk
    from paysdk_cli._secrets import wallet_token_path

    return paysdk.FileTokenStore(wallet_token_path(st.profile))


def user_session_key(st: State, username: str) -> str:
    """The store key of ``username``'s session (the profile's environment and merchant)."""
    import paysdk
    from paysdk_cli._context import environment, require_merchant

    return paysdk.wallet_store_key(environment(st), require_merchant(st), "username:" + username)


def save_user_session(
    st: State, client: paysdk.Client, username: str, session: paysdk.UserSession
) -> dict[str, Any]:
    """Put a new session (``users login``) in the token store, under its key's lock, and index it."""
    key = user_session_key(st, username)
    client.wallet.as_user(session, store=token_store(st), key=key).stored_session()  # writes it now
    record = {"username": username, "userId": session.user_id, "key": key}
    session_store(st).put(username, record)
    return record


def user_view(st: State, client: paysdk.Client, username: str, record: dict[str, Any]) -> WalletUserView:
    """``client.wallet.as_user`` on the token store under the session's key."""
    key = record.get("key")
    if not isinstance(key, str):
        raise CLIError(
            f"the stored session of user {username!r} is unreadable: run "
            f"`paysdk --profile {st.profile} users login --username {username}`",
            ExitCode.AUTH,
        )
    return client.wallet.as_user(store=token_store(st), key=key)


def session_tokens(st: State, record: dict[str, Any]) -> paysdk.StoredTokens | None:
    """The stored pair of an index record (``None`` when the store has none)."""
    key = record.get("key")
    return token_store(st).load(key) if isinstance(key, str) else None


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
    st: State
    username: str | None = None
    record: dict[str, Any] | None = None

    @property
    def user_id(self) -> str | None:
        """The acting user's id (``None`` when acting as the application)."""
        user_id = self.record.get("userId") if self.record is not None else None
        return str(user_id) if user_id else None

    def default_user_id(self, given: str | None) -> str:
        """``--user-id``, else the acting user's own id; a usage error when neither."""
        user_id = given or self.user_id
        if not user_id:
            raise CLIError(
                "no user: pass --user-id (or act as a user with --as-user USERNAME)", ExitCode.USAGE
            )
        return user_id

    def __call__(self, operation: Callable[[Any], T]) -> T:
        if self.username is None or self.record is None:
            return operation(self.client.wallet)
        view = user_view(self.st, self.client, self.username, self.record)
        # The SDK refreshes an expired token by itself, single-flight on the store key's lock, and
        # saves the rotated pair to the file before using it.
        if view.stored_session() is None:
            raise CLIError(f"the session of {self.username!r} was logged out meanwhile", ExitCode.AUTH)
        return operation(view)


@contextmanager
def wallet_api(st: State, as_user: str | None = None) -> Iterator[Caller]:
    """The profile's wallet client and who acts (``--as-user``), closed afterwards."""
    from paysdk_cli._context import open_wallet_client

    record = None
    if as_user is not None:
        record = session_store(st).get(as_user)
        if record is None:
            raise CLIError(
                f"no stored session for user {as_user!r} in profile {st.profile!r}: run "
                f"`paysdk --profile {st.profile} users login --username {as_user}`",
                ExitCode.AUTH,
            )
    with open_wallet_client(st) as client:
        yield Caller(client, st, as_user, record)


# ------------------------------------------------------------------------ the application token pair


def _app_key(st: State) -> str:
    import paysdk
    from paysdk_cli._context import environment, require_merchant

    return paysdk.wallet_store_key(environment(st), require_merchant(st))


def stored_app_tokens(st: State) -> tuple[str, str] | None:
    """The stored application (access, refresh) tokens, or ``None``: for ``whoami``, never printed."""
    stored = token_store(st).load(_app_key(st))
    if stored is None:
        return None
    return stored.access_token.reveal(), stored.refresh_token.reveal()


def forget_app_tokens(st: State) -> bool:
    """Delete the stored application token pair; whether there was one."""
    key = _app_key(st)
    store = token_store(st)
    with store.lock(key):
        had = store.load(key) is not None
        store.delete(key)
    return had
