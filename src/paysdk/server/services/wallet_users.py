"""Wallet users: cardholders, passwords, user login/refresh/logout, OTP, password reset, the outbox.

Decisions D34, D37-D39:

* Passwords (and card PINs) are hashed with scrypt (:mod:`paysdk.server.passwords`: N=2**14, r=8, p=1,
  16-byte random salt) and compared with :func:`hmac.compare_digest`. An unknown username costs the
  same scrypt as a known one, so timing does not reveal which usernames exist. Wrong username or
  password: ``401 / 7101``.
* ``/users/login``: the optional ``merchant`` must be the application token's slug (``400 / 7001``).
  The username is matched in its canonical form (D96: NFKC and case folding). Wrong passwords back off
  (D381, :mod:`~paysdk.server.services.login_throttle`): 5 in a row lock the name, ``429 / 7108``.
* Usernames are unique per merchant in their canonical form (``username_key``, D96): ``"Ana"`` and
  ``"ＡＮＡ"`` clash (``409`` naming ``username``); invisible and bidirectional characters are refused and
  emails are checked for form by the contract models.
* ``/users/refresh``: TTL overrides within D34 (``accessTokenTtl`` 60 s..24 h, ``refreshTokenTtl``
  5 min..90 days and at least the access lifetime; ``400 / 7001`` naming the field otherwise).
* ``/users/logout`` (D38): ``X-User-Token`` names the session; it is revoked at once.
* OTP (D39): a new request supersedes the user's previous live codes. Verification: no live code (never
  requested, already used or superseded; also an unknown email, so nothing is revealed) ``7203``;
  expired ``7203``; a code that already took 5 wrong tries ``7204`` (it is dead); a wrong code or purpose
  ``7202`` (counted). The attempt count is committed even though the answer is an error: such functions
  return the problem for the router to raise after commit.
* Reset (D39): ``newPassword != confirmPassword`` ``7206`` and fewer than 8 characters ``7207`` are checked
  before the token, so a typo does not burn it; then the token (single use, 15 minutes, bound to the
  email's user) ``7205``. Success revokes every session of the user and clears the back-off of its
  username (D381).
"""

from __future__ import annotations

import hmac
import secrets
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from paysdk.contracts.wallet import (
    Cardholder,
    LogoutResult,
    OtpRequest,
    OtpSent,
    OtpVerified,
    OtpVerifyRequest,
    OutboxMessage,
    PasswordResetRequest,
    PasswordResetResult,
    PermissionRecord,
    SandboxUserCreate,
    TokenPair,
    UserLoginRequest,
    UserProfile,
    UserRefreshRequest,
    WalletCode,
    email_key,
    username_key,
)
from paysdk.server.context import ServerContext
from paysdk.server.core_tables import ClientRow
from paysdk.server.errors import APIProblem
from paysdk.server.passwords import dummy_hash, hash_secret, verify_secret
from paysdk.server.services import login_throttle, wallet_tokens
from paysdk.server.services.wallet_common import new_id, sha256_hex, valid_id, wallet_problem
from paysdk.server.services.wallet_tokens import Principal
from paysdk.server.wallet_tables import (
    WalletClientKeyRow,
    WalletOtpRow,
    WalletOutboxRow,
    WalletPermissionRow,
    WalletResetTokenRow,
    WalletUserRow,
)

__all__ = [
    "OTP_ATTEMPTS",
    "OTP_TTL",
    "RESET_TTL",
    "cardholder_view",
    "create_user",
    "load_user",
    "logout",
    "outbox",
    "permission_view",
    "request_otp",
    "reset_password",
    "user_login",
    "user_refresh",
    "verify_otp",
]

OTP_TTL = timedelta(minutes=10)
OTP_ATTEMPTS = 5
RESET_TTL = timedelta(minutes=15)
MIN_PASSWORD = 8


def unusable_hash() -> str:
    """A password hash no password matches (of a forgotten random secret, made once per process), for
    users created without a password (bulk cardholders, D186): no key derivation per user, and a login
    against it costs what a real one does."""
    return dummy_hash()


# ------------------------------------------------------------------------------------------ users


def permission_view(row: WalletPermissionRow) -> PermissionRecord:
    """The wire form of a permission record."""
    return PermissionRecord(
        id=row.id,
        card_id=row.card_id,
        user_id=row.user_id,
        permissions=list(row.permissions),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def cardholder_view(session: Session, user: WalletUserRow) -> Cardholder:
    """A user with the permission records granted to them."""
    records = session.scalars(
        select(WalletPermissionRow)
        .where(WalletPermissionRow.user_id == user.id)
        .order_by(WalletPermissionRow.created_at, WalletPermissionRow.id)
    )
    return Cardholder(
        user_id=user.id,
        username=user.username,
        email=user.email,
        merchant=user.merchant,
        profile=UserProfile.model_validate(user.profile or {}),
        permissions=[permission_view(row) for row in records],
    )


def create_user(session: Session, spec: SandboxUserCreate, now: datetime) -> Cardholder:
    """``POST /_sandbox/users``: unknown merchant ``404``; a taken username or email ``409``."""
    client = session.scalars(select(ClientRow).where(ClientRow.slug == spec.merchant)).first()
    if client is None:
        raise APIProblem.not_found("Client", "merchant")
    email = email_key(spec.email)
    if len(email) > 255:
        raise APIProblem.invalid_field("email", "is too long")
    key = username_key(spec.username)
    taken = session.execute(
        select(WalletUserRow.email).where(
            WalletUserRow.client_id == client.id,
            (WalletUserRow.username_key == key)
            | (WalletUserRow.username == spec.username)
            | (WalletUserRow.email == email),
        )
    ).first()
    if taken is not None:
        field = "email" if taken.email == email else "username"
        raise APIProblem.conflict(f"A user with this {field} already exists.", field)
    profile = spec.profile.model_dump(by_alias=True, exclude_none=True, mode="json") if spec.profile else {}
    user = WalletUserRow(
        id=new_id("usr"),
        client_id=client.id,
        merchant=client.slug,
        username=spec.username,
        username_key=key,
        email=email,
        password_hash=hash_secret(spec.password),
        profile=profile,
        created_at=now,
    )
    try:
        with session.begin_nested():
            session.add(user)
    except IntegrityError:
        raise APIProblem.conflict("A user with this username or email already exists.", "username") from None
    return cardholder_view(session, user)


def load_user(session: Session, client_id: int, user_id: str) -> WalletUserRow:
    """A user of the merchant, else ``404 / 7201``."""
    user = session.get(WalletUserRow, user_id) if valid_id(user_id) else None
    if user is None or user.client_id != client_id:
        raise wallet_problem(WalletCode.USER_NOT_FOUND, "User not found.", "userId", "not found")
    return user


def _user_by_email(session: Session, client_id: int, email: str) -> WalletUserRow | None:
    return session.scalars(
        select(WalletUserRow).where(
            WalletUserRow.client_id == client_id, WalletUserRow.email == email_key(email)
        )
    ).first()


def _check_merchant(app: Principal, merchant: str | None) -> None:
    if merchant is not None and merchant != app.merchant:
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR,
            "merchant does not name the application's merchant.",
            "merchant",
            "must be the application token's merchant",
        )


def _user_ttls(session: Session, client_id: int) -> tuple[int, int]:
    settings = session.get(WalletClientKeyRow, client_id)
    if settings is None:
        return wallet_tokens.DEFAULT_USER_ACCESS_TTL, wallet_tokens.DEFAULT_USER_REFRESH_TTL
    return settings.user_access_ttl, settings.user_refresh_ttl


def user_login(
    session: Session, context: ServerContext, now: datetime, app: Principal, body: UserLoginRequest
) -> TokenPair | APIProblem:
    """``POST /users/login``: a new user session; wrong passwords back off (D381,
    :mod:`~paysdk.server.services.login_throttle`: the count is committed, the problem returned)."""
    _check_merchant(app, body.merchant)
    # By its canonical form (D96): "ANA" logs in as "Ana".
    key = username_key(body.username)
    refused = login_throttle.locked(session, now, "user", app.client_id, key)
    if refused is not None:
        return refused
    user = session.scalars(
        select(WalletUserRow).where(
            WalletUserRow.client_id == app.client_id, WalletUserRow.username_key == key
        )
    ).first()
    ok = verify_secret(body.password, user.password_hash if user is not None else dummy_hash())
    if user is None or not ok:
        login_throttle.record_failure(session, now, "user", app.client_id, key)
        return wallet_problem(
            WalletCode.INVALID_CREDENTIALS, "Wrong username or password.", "password", "wrong credentials"
        )
    login_throttle.forget(session, "user", app.client_id, key)
    ttls = _requested_ttls(session, app.client_id, body.access_token_ttl, body.refresh_token_ttl)
    row = wallet_tokens.create_session(session, context, now, "user", app.client_id, app.merchant, user.id)
    return wallet_tokens.issue_pair(session, context, now, row, *ttls)


def _bounded(value: int | None, low: int, high: int, field: str) -> int | None:
    if value is not None and not low <= value <= high:
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR,
            f"{field} must be between {low} and {high} seconds.",
            field,
            f"must be between {low} and {high}",
        )
    return value


def user_refresh(
    session: Session, context: ServerContext, now: datetime, app: Principal, body: UserRefreshRequest
) -> TokenPair | APIProblem:
    """``POST /users/refresh`` with optional lifetime overrides (D34)."""
    _check_merchant(app, body.merchant)
    ttls = _requested_ttls(session, app.client_id, body.access_token_ttl, body.refresh_token_ttl)
    return wallet_tokens.refresh(
        session, context, now, body.refresh_token, "user", merchant=app.merchant, ttls=ttls
    )


def _requested_ttls(
    session: Session, client_id: int, access_ttl: int | None, refresh_ttl: int | None
) -> tuple[int, int]:
    """User-token lifetimes: the client's, overridden within the bounds of D34 (login and refresh)."""
    access = _bounded(access_ttl, 60, 86400, "accessTokenTtl")
    refresh = _bounded(refresh_ttl, 300, 90 * 86400, "refreshTokenTtl")
    default_access, default_refresh = _user_ttls(session, client_id)
    access = access if access is not None else default_access
    refresh = refresh if refresh is not None else max(default_refresh, access)
    if refresh < access:
        raise wallet_problem(
            WalletCode.VALIDATION_ERROR,
            "refreshTokenTtl must be at least the access token lifetime.",
            "refreshTokenTtl",
            "must be at least the access token lifetime",
        )
    return access, refresh


def logout(
    session: Session, context: ServerContext, now: datetime, app: Principal, user_token: str | None
) -> LogoutResult:
    """``POST /users/logout`` (D38): the session of ``X-User-Token`` ends."""
    if user_token is None:
        raise wallet_problem(
            WalletCode.TOKEN_INVALID, "X-User-Token with the user's access token is required.", "X-User-Token"
        )
    user = wallet_tokens.authenticate(session, context, now, user_token, field="X-User-Token", kind="user")
    if user.client_id != app.client_id:
        raise wallet_problem(
            WalletCode.TOKEN_INVALID, "The user token is of another merchant.", "X-User-Token"
        )
    wallet_tokens.revoke_session(session, user.session_id, "logout", now)
    return LogoutResult(logged_out=True)


# ---------------------------------------------------------------------------------------- OTP


def _code_hash(salt: str, code: str) -> str:
    return sha256_hex(f"{salt}:{code}")


def request_otp(session: Session, now: datetime, app: Principal, body: OtpRequest) -> OtpSent:
    """``POST /users/auth/otp``: always ``sent`` (D39); a known email gets a code in the outbox."""
    user = _user_by_email(session, app.client_id, body.email)
    if user is None:
        return OtpSent(sent=True)
    session.execute(
        update(WalletOtpRow)
        .where(WalletOtpRow.user_id == user.id, WalletOtpRow.state == "live")
        .values(state="superseded")
        .execution_options(synchronize_session=False)
    )
    code = f"{secrets.randbelow(10**6):06d}"
    salt = secrets.token_hex(8)
    session.add(
        WalletOtpRow(
            user_id=user.id,
            purpose=body.purpose,
            code_sha256=_code_hash(salt, code),
            salt=salt,
            attempts=0,
            state="live",
            expires_at=now + OTP_TTL,
            created_at=now,
        )
    )
    session.add(
        WalletOutboxRow(
            client_id=app.client_id,
            to=user.email,
            subject="Your verification code",
            body=f"Your {app.merchant} verification code is {code}. It expires in 10 minutes.",
            data={"otp": code, "purpose": body.purpose, "merchant": app.merchant},
            at=now,
        )
    )
    return OtpSent(sent=True)


def verify_otp(
    session: Session, now: datetime, app: Principal, body: OtpVerifyRequest
) -> OtpVerified | APIProblem:
    """``PUT /users/auth/otp`` (D39); see the module docstring for the order of the checks."""
    user = _user_by_email(session, app.client_id, body.email)
    otp = (
        session.scalars(
            select(WalletOtpRow)
            .where(WalletOtpRow.user_id == user.id, WalletOtpRow.state.in_(("live", "dead")))
            .order_by(WalletOtpRow.id.desc())
            .limit(1)
            .with_for_update()
        ).first()
        if user is not None
        else None
    )
    if otp is None or user is None:
        return wallet_problem(
            WalletCode.OTP_EXPIRED, "No live code: request a new one.", "otp", "no live code"
        )
    if otp.state == "dead" or otp.attempts >= OTP_ATTEMPTS:
        otp.state = "dead"
        return wallet_problem(
            WalletCode.OTP_ATTEMPTS_EXCEEDED, "Too many wrong codes: request a new one.", "otp", "dead"
        )
    if otp.expires_at <= now:
        otp.state = "expired"
        return wallet_problem(
            WalletCode.OTP_EXPIRED, "The code has expired: request a new one.", "otp", "expired"
        )
    good = hmac.compare_digest(otp.code_sha256, _code_hash(otp.salt, body.otp)) and hmac.compare_digest(
        otp.purpose.encode("utf-8"), body.purpose.encode("utf-8")
    )
    if not good:
        otp.attempts += 1
        return wallet_problem(WalletCode.OTP_INVALID, "Wrong code.", "otp", "wrong code")
    otp.state = "used"
    if body.purpose != "password_reset":
        return OtpVerified(verified=True)
    token = secrets.token_urlsafe(32)
    session.add(
        WalletResetTokenRow(
            token_sha256=sha256_hex(token), user_id=user.id, expires_at=now + RESET_TTL, created_at=now
        )
    )
    return OtpVerified(verified=True, token=token)


def reset_password(
    session: Session, now: datetime, app: Principal, body: PasswordResetRequest
) -> PasswordResetResult:
    """``POST /users/auth/password/reset`` (D39)."""
    if not hmac.compare_digest(body.new_password.encode("utf-8"), body.confirm_password.encode("utf-8")):
        raise wallet_problem(
            WalletCode.PASSWORD_MISMATCH,
            "newPassword and confirmPassword differ.",
            "confirmPassword",
            "differs",
        )
    if len(body.new_password) < MIN_PASSWORD:
        raise wallet_problem(
            WalletCode.PASSWORD_TOO_WEAK,
            f"The password needs at least {MIN_PASSWORD} characters.",
            "newPassword",
            f"fewer than {MIN_PASSWORD} characters",
        )
    invalid = wallet_problem(
        WalletCode.RESET_TOKEN_INVALID, "The reset token is wrong, used or expired.", "token", "invalid"
    )
    user = _user_by_email(session, app.client_id, body.email)
    if user is None:
        raise invalid
    consumed = session.execute(
        update(WalletResetTokenRow)
        .where(
            WalletResetTokenRow.token_sha256 == sha256_hex(body.token),
            WalletResetTokenRow.user_id == user.id,
            WalletResetTokenRow.used_at.is_(None),
            WalletResetTokenRow.expires_at > now,
        )
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if getattr(consumed, "rowcount", 0) != 1:
        raise invalid
    user.password_hash = hash_secret(body.new_password)
    wallet_tokens.revoke_user_sessions(session, user.id, "password_reset", now)
    # The owner proved the mailbox: wrong passwords tried before no longer lock the name (D381).
    login_throttle.forget(session, "user", app.client_id, user.username_key or username_key(user.username))
    return PasswordResetResult(reset=True)


def _outbox_address(to: str) -> str:
    """``?to=`` as the outbox stores addresses (:func:`email_key`; lower-cased when it is no email)."""
    try:
        return email_key(to)
    except ValueError:
        return to.strip().lower()


def outbox(session: Session, to: str | None) -> list[OutboxMessage]:
    """``GET /_sandbox/outbox[?to=]``: the emails, oldest first."""
    statement = select(WalletOutboxRow).order_by(WalletOutboxRow.id)
    if to is not None:
        statement = statement.where(WalletOutboxRow.to == _outbox_address(to.replace("\x00", "")))
    messages: list[OutboxMessage] = []
    for row in session.scalars(statement):
        data: dict[str, Any] = dict(row.data or {})
        messages.append(OutboxMessage(to=row.to, subject=row.subject, body=row.body, at=row.at, data=data))
    return messages
