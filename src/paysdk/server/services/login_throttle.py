"""The back-off of password logins (D381): wallet users (``/users/login``) and backoffice operators
(``{cms}/app/users/login``).

The mechanism of OTP verification (D39): wrong tries are counted in the database and the count is committed
even though the answer is an error (the login functions return the problem for the router to raise after
commit). Counted per login name in its canonical form (a username's ``username_key``, an operator's
``email_key``) of one client, whether or not a user has that name, so the answers never tell which names
exist. Every :data:`LOGIN_ATTEMPTS`-th wrong password in a row locks the name for :func:`lock_for` of the
virtual clock (1 minute, then 2, 4, ... at most :data:`MAX_LOCK`); while locked, every login of the name is
``429 / 7108`` with ``Retry-After`` (seconds of the virtual clock), the right password too, and no password
is checked. A successful login, or a wallet user's password reset (the OTP proved the mailbox), clears
the count.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import ColumnElement, and_, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.contracts.wallet import WalletCode
from paysdk.server.errors import APIProblem
from paysdk.server.services.wallet_common import wallet_problem
from paysdk.server.wallet_tables import WalletLoginFailureRow

__all__ = [
    "BASE_LOCK",
    "LOGIN_ATTEMPTS",
    "MAX_LOCK",
    "LoginKind",
    "forget",
    "lock_for",
    "locked",
    "record_failure",
]

#: Wrong passwords in a row before each lock (as many as an OTP code takes, D39).
LOGIN_ATTEMPTS = 5
#: The first lock; each further one doubles, up to :data:`MAX_LOCK`.
BASE_LOCK = timedelta(minutes=1)
MAX_LOCK = timedelta(hours=1)

LoginKind = Literal["user", "backoffice_user"]


def lock_for(locks: int) -> timedelta:
    """How long the ``locks``-th lock of a name lasts (1, 2, 4, ... minutes, at most an hour)."""
    longer: timedelta = BASE_LOCK * 2 ** min(locks - 1, 16)
    return min(longer, MAX_LOCK)


def _where(kind: LoginKind, client_id: int, key: str) -> ColumnElement[bool]:
    return and_(
        WalletLoginFailureRow.kind == kind,
        WalletLoginFailureRow.client_id == client_id,
        WalletLoginFailureRow.login_key == key[:255],
    )


def locked(session: Session, now: datetime, kind: LoginKind, client_id: int, key: str) -> APIProblem | None:
    """``429 / 7108`` with ``Retry-After`` while the name is locked, else ``None``."""
    until = session.scalar(select(WalletLoginFailureRow.locked_until).where(_where(kind, client_id, key)))
    if until is None or until <= now:
        return None
    seconds = max(1, math.ceil((until - now).total_seconds()))
    problem = wallet_problem(
        WalletCode.LOGIN_THROTTLED,
        f"Too many wrong passwords: try again in {seconds} seconds.",
        "password",
        f"too many wrong passwords; locked for {seconds} more seconds",
    )
    problem.headers["Retry-After"] = str(seconds)
    return problem


def record_failure(session: Session, now: datetime, kind: LoginKind, client_id: int, key: str) -> None:
    """Count a wrong password for the name (atomically, whichever process answers); every
    :data:`LOGIN_ATTEMPTS`-th in a row locks it."""
    where = _where(kind, client_id, key)
    bump = (
        update(WalletLoginFailureRow)
        .where(where)
        .values(failures=WalletLoginFailureRow.failures + 1)
        .execution_options(synchronize_session=False)
    )
    if getattr(session.execute(bump), "rowcount", 0) == 0:
        try:
            with session.begin_nested():
                session.add(
                    WalletLoginFailureRow(kind=kind, client_id=client_id, login_key=key[:255], failures=1)
                )
        except IntegrityError:  # another request inserted it first
            session.execute(bump)
    row = session.scalars(
        select(WalletLoginFailureRow).where(where).execution_options(populate_existing=True)
    ).one()
    if row.failures % LOGIN_ATTEMPTS == 0:
        row.locked_until = now + lock_for(row.failures // LOGIN_ATTEMPTS)


def forget(session: Session, kind: LoginKind, client_id: int, key: str) -> None:
    """A successful login: the name's count starts again."""
    session.execute(
        delete(WalletLoginFailureRow)
        .where(_where(kind, client_id, key))
        .execution_options(synchronize_session=False)
    )
