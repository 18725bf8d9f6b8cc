"""The token state machine: when to use, refresh or re-login, as pure functions. No I/O, no clock.

The client shells (:class:`paysdk._auth.AsyncTokenManager` and its generated sync twin) own the
locks, the store and the HTTP calls; they ask this module what to do::

    with per-credential lock (thread/task) and store.lock(key) (processes):
        stored = store.load(key)                     # re-read: someone may have refreshed already
        flow = TokenFlow(stored, now, policy, can_login=..., rejected=<token that got a 401>, ...)
        decision = flow.start()
        while decision.step is not USE/FAIL:
            REFRESH -> POST refresh -> flow.refresh_succeeded(pair, now) / flow.refresh_failed(code)
            LOGIN   -> POST login   -> flow.login_succeeded(pair, now)   / flow.login_failed(code)
        on USE with new tokens: store.save(key, tokens) BEFORE using them

Rules (RFC 9700: one refresh in flight per credential, persist the rotated pair before using it):

* **Single-flight**: a caller that saw a token rejected (401) or looking stale takes the lock and
  re-reads the store; if the stored access token is another one than the rejected one, or is fresh, it
  is used as is: another thread, task or process refreshed meanwhile.
* **Proactive refresh**: an access token is stale when less than ``min(60 s, 10 % of its lifetime)``
  is left (:class:`RefreshPolicy`); the margin never exceeds a tenth of the lifetime, so short-lived
  user tokens are not refreshed on every call.
* **At most one refresh and one login** per acquisition, so a dead refresh token never causes a
  loop: a refresh refused with 7102/7103/7104/7105/7106 (the refresh token is dead, e.g. a crash between
  the server's rotation and the store's write left an already-used token: 7105) falls back to a login
  when the credential can log in (application keys), and fails otherwise (user sessions have no
  password to log in with). A refused login (7601/7604/7616, anything) fails: never retried.
* Times: ``exp``/``iat`` are read without verification (:func:`paysdk._jwt.decode_unverified`) and
  used only for timing. The lifetime ``exp - iat`` is anchored on the local clock at receipt, so a
  skewed server clock (or the sandbox's virtual clock) does not make tokens look expired at birth; the
  server stays the judge (401 7103 triggers the single-flight refresh).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from paysdk._jwt import JWTError, decode_unverified
from paysdk._secret import Secret

__all__ = [
    "DEAD_REFRESH_CODES",
    "RECOVERABLE_CODES",
    "REPLAY_CODES",
    "SESSION_DEAD_CODES",
    "Decision",
    "RefreshPolicy",
    "Step",
    "StoredTokens",
    "TokenFlow",
    "is_fresh",
    "newer_pair",
    "tokens_from_pair",
]

#: A request refused with one of these (401) is replayed once after the single-flight refresh.
REPLAY_CODES: Final = frozenset({7102, 7103})
#: A request refused with one of these (401): the session is gone; an application credential logs in
#: again (then the request is replayed once), a user session fails.
SESSION_DEAD_CODES: Final = frozenset({7104, 7105})
#: A request refused (401) with one of these gets the single-flight recovery and one replay.
RECOVERABLE_CODES: Final = REPLAY_CODES | SESSION_DEAD_CODES
#: A refresh refused with one of these: the refresh token is dead; log in again if possible.
DEAD_REFRESH_CODES: Final = frozenset({7102, 7103, 7104, 7105, 7106})

#: The upper bound of the proactive-refresh margin, seconds.
DEFAULT_MAX_SKEW: Final = 60.0
#: The margin as a fraction of the access token's lifetime (the smaller of the two wins).
DEFAULT_SKEW_FRACTION: Final = 0.1


@dataclass(frozen=True, slots=True)
class RefreshPolicy:
    """When an access token is considered stale: ``min(max_skew, fraction * lifetime)`` before expiry."""

    max_skew: float = DEFAULT_MAX_SKEW
    fraction: float = DEFAULT_SKEW_FRACTION

    def margin(self, lifetime: float) -> float:
        """Seconds before expiry at which the token is refreshed."""
        return max(0.0, min(self.max_skew, self.fraction * max(lifetime, 0.0)))


@dataclass(frozen=True, slots=True)
class StoredTokens:
    """A token pair as a :class:`~paysdk.TokenStore` keeps it. Times are local Unix seconds.

    ``access_expires_at``/``refresh_expires_at`` are when the tokens expire by the local clock,
    ``obtained_at`` when the pair was received. The tokens are :class:`~paysdk.Secret`: the repr masks them.
    """

    access_token: Secret
    refresh_token: Secret
    access_expires_at: float
    refresh_expires_at: float
    obtained_at: float

    @property
    def lifetime(self) -> float:
        """The access token's lifetime in seconds."""
        return self.access_expires_at - self.obtained_at

    def to_json(self) -> dict[str, Any]:
        """The JSON object the file and Redis stores write (holds the tokens in clear)."""
        return {
            "accessToken": self.access_token.reveal(),
            "refreshToken": self.refresh_token.reveal(),
            "accessExpiresAt": self.access_expires_at,
            "refreshExpiresAt": self.refresh_expires_at,
            "obtainedAt": self.obtained_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StoredTokens:
        """Inverse of :meth:`to_json`; ``ValueError`` when the object does not fit."""
        try:
            access, refresh = data["accessToken"], data["refreshToken"]
            times = [float(data[name]) for name in ("accessExpiresAt", "refreshExpiresAt", "obtainedAt")]
        except (KeyError, TypeError, ValueError):
            raise ValueError("not a stored token pair") from None
        if not isinstance(access, str) or not isinstance(refresh, str) or not access or not refresh:
            raise ValueError("not a stored token pair")
        return cls(Secret(access), Secret(refresh), times[0], times[1], times[2])


def _lifetime_from_claims(token: str, fallback: float) -> float:
    """``exp - iat`` of a JWT (read unverified, for timing only), else ``fallback`` seconds."""
    try:
        _, claims = decode_unverified(token)
    except JWTError:
        return fallback
    exp, iat = claims.get("exp"), claims.get("iat")
    numbers = (int, float)
    if isinstance(exp, numbers) and isinstance(iat, numbers) and not isinstance(exp, bool) and exp > iat:
        return float(exp - iat)
    return fallback


def tokens_from_pair(
    access_token: str, refresh_token: str, *, expires_in: float, refresh_expires_in: float, now: float
) -> StoredTokens:
    """The :class:`StoredTokens` of a login or refresh answer received at local time ``now``."""
    access_life = _lifetime_from_claims(access_token, float(expires_in))
    refresh_life = _lifetime_from_claims(refresh_token, float(refresh_expires_in))
    return StoredTokens(
        access_token=Secret(access_token),
        refresh_token=Secret(refresh_token),
        access_expires_at=now + access_life,
        refresh_expires_at=now + refresh_life,
        obtained_at=now,
    )


def is_fresh(tokens: StoredTokens, now: float, policy: RefreshPolicy) -> bool:
    """Whether the access token can be sent as is (more than the policy's margin left)."""
    return now < tokens.access_expires_at - policy.margin(tokens.lifetime)


def newer_pair(stored: StoredTokens | None, candidate: StoredTokens) -> StoredTokens:
    """Of what a store holds and a pair offered to it (e.g. a user session given to a view), the one to
    keep: ``candidate`` when the store is empty or holds an older pair (obtained earlier: the candidate
    is a newer login), else ``stored`` (e.g. the candidate's own rotation, saved by another holder)."""
    if stored is None or candidate.obtained_at > stored.obtained_at:
        return candidate
    return stored


def refresh_usable(tokens: StoredTokens, now: float) -> bool:
    """Whether the refresh token has not expired by the local clock."""
    return now < tokens.refresh_expires_at


class Step(enum.Enum):
    """What the shell does next."""

    USE = "use"  # send ``Decision.tokens.access_token``
    REFRESH = "refresh"  # POST the refresh endpoint with ``Decision.tokens.refresh_token``
    LOGIN = "login"  # log in again with the credential (application keys)
    FAIL = "fail"  # give up: raise the error at hand (or ``Decision.reason`` when there is none)


@dataclass(frozen=True, slots=True)
class Decision:
    """A step, the tokens it concerns, whether they are new (must be saved before use), and why."""

    step: Step
    tokens: StoredTokens | None = None
    save: bool = False
    reason: str = ""


class TokenFlow:
    """One acquisition of an access token for one credential (sans-I/O; see the module docstring).

    ``stored`` is what the store holds now (re-read under the lock). ``rejected`` is the access token
    that the server refused (``rejected_code`` the ownCode of that 401), or ``None`` when the caller
    only found its cached token stale or missing. ``can_login``: the credential can log in again
    (application keys); user sessions cannot.
    """

    def __init__(
        self,
        stored: StoredTokens | None,
        now: float,
        policy: RefreshPolicy,
        *,
        can_login: bool,
        rejected: Secret | None = None,
        rejected_code: int | None = None,
    ) -> None:
        self._stored = stored
        self._now = now
        self._policy = policy
        self._can_login = can_login
        self._rejected = rejected
        self._rejected_code = rejected_code
        self.refreshes = 0
        self.logins = 0

    def _login_or_fail(self, reason: str) -> Decision:
        if self._can_login and self.logins == 0:
            return Decision(Step.LOGIN, reason=reason)
        return Decision(Step.FAIL, reason=reason)

    def start(self) -> Decision:
        """The first step."""
        stored = self._stored
        if stored is None:
            return self._login_or_fail("no stored tokens")
        if self._rejected is not None:
            if stored.access_token != self._rejected:
                # Single-flight: another thread, task or process replaced the token meanwhile.
                if is_fresh(stored, self._now, self._policy):
                    return Decision(Step.USE, stored, reason="the stored token replaced the rejected one")
                return self._refresh_or_login(stored, "the stored token is newer but about to expire")
            if self._rejected_code in SESSION_DEAD_CODES:
                return self._login_or_fail(f"the session is dead (ownCode {self._rejected_code})")
            return self._refresh_or_login(stored, "the access token was rejected")
        if is_fresh(stored, self._now, self._policy):
            return Decision(Step.USE, stored, reason="the stored token is fresh")
        return self._refresh_or_login(stored, "the access token is about to expire")

    def _refresh_or_login(self, stored: StoredTokens, reason: str) -> Decision:
        # A user session cannot log in: its refresh is tried even when it looks expired locally, and
        # the server's answer (a typed error) is what the caller gets.
        if refresh_usable(stored, self._now) or not self._can_login:
            return Decision(Step.REFRESH, stored, reason=reason)
        return self._login_or_fail(reason + "; the refresh token expired")

    def refresh_succeeded(
        self,
        access_token: str,
        refresh_token: str,
        *,
        expires_in: float,
        refresh_expires_in: float,
        now: float,
    ) -> Decision:
        """The refresh answered a new pair: save it, then use it."""
        self.refreshes += 1
        return _obtained(access_token, refresh_token, expires_in, refresh_expires_in, now, "refreshed")

    def refresh_failed(self, own_code: int | None) -> Decision:
        """The refresh was refused with ``own_code`` (``None``: no answer, or no ownCode)."""
        self.refreshes += 1
        if own_code in DEAD_REFRESH_CODES:
            return self._login_or_fail(f"the refresh token is dead (ownCode {own_code})")
        return Decision(Step.FAIL, reason="the refresh failed")

    def login_succeeded(
        self,
        access_token: str,
        refresh_token: str,
        *,
        expires_in: float,
        refresh_expires_in: float,
        now: float,
    ) -> Decision:
        """The login answered a pair: save it, then use it."""
        self.logins += 1
        return _obtained(access_token, refresh_token, expires_in, refresh_expires_in, now, "logged in")

    def login_failed(self, own_code: int | None) -> Decision:
        """The login was refused (7601, 7604, 7616, ...) or got no answer: give up, never retried."""
        self.logins += 1
        return Decision(Step.FAIL, reason=f"the login failed (ownCode {own_code})")


def _obtained(
    access_token: str,
    refresh_token: str,
    expires_in: float,
    refresh_expires_in: float,
    now: float,
    reason: str,
) -> Decision:
    """A new pair from the server: saved to the store first (the old refresh token is spent), then used."""
    tokens = tokens_from_pair(
        access_token, refresh_token, expires_in=expires_in, refresh_expires_in=refresh_expires_in, now=now
    )
    return Decision(Step.USE, tokens, save=True, reason=reason)
