"""Where the CLI's secrets are kept: environment, OS keyring, or a 0600 file as the last resort.

Two kinds of long-lived secret, each per profile (:data:`KINDS`):

* the merchant token (``paysdk login``): ``$PAYSDK_MERCHANT_TOKEN``, else the keyring (service
  ``paysdk``, username = the profile name), else ``<config dir>/credentials.json`` key ``tokens``;
* the wallet signing key (``paysdk wallet login``): ``$PAYSDK_WALLET_PRIVATE_KEY``, else the keyring
  (service ``paysdk-wallet-key``, username = the profile name), else ``credentials.json`` key
  ``wallet_keys``.

Reading order: the environment variable (overrides everything, for CI and containers), the OS
keyring, then the fallback file (mode 0600), written only when no keyring backend works (common on
headless Linux), always with a warning on stderr.

Short-lived wallet tokens are not here: they live in files under ``<config dir>/wallet/`` (see
:func:`wallet_token_path` and :func:`user_sessions_path`), because the SDK's ``FileTokenStore`` needs a
file it can lock across processes so that concurrent invocations refresh only once.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paysdk_cli import _config
from paysdk_cli._output import warn

__all__ = [
    "CONTROL_TOKEN",
    "CONTROL_TOKEN_ENV",
    "KEYRING_SERVICE",
    "KINDS",
    "MERCHANT_TOKEN",
    "TOKEN_ENV",
    "WALLET_KEY",
    "WALLET_KEY_ENV",
    "SecretKind",
    "StoredToken",
    "credentials_path",
    "delete_secret",
    "delete_token",
    "load_secret",
    "load_token",
    "store_secret",
    "store_token",
    "user_sessions_path",
    "wallet_dir",
    "wallet_token_path",
]

KEYRING_SERVICE = "paysdk"
TOKEN_ENV = "PAYSDK_MERCHANT_TOKEN"
WALLET_KEY_ENV = "PAYSDK_WALLET_PRIVATE_KEY"
CREDENTIALS_FILE = "credentials.json"
WALLET_DIR = "wallet"

_log = logging.getLogger("paysdk_cli")


@dataclass(frozen=True, slots=True)
class SecretKind:
    """One kind of stored secret: its environment override, keyring service and fallback-file key."""

    label: str
    env: str
    service: str
    file_key: str


MERCHANT_TOKEN = SecretKind("merchant token", TOKEN_ENV, KEYRING_SERVICE, "tokens")
WALLET_KEY = SecretKind("wallet signing key", WALLET_KEY_ENV, "paysdk-wallet-key", "wallet_keys")
#: The reference server's control token (``paysdk sandbox control-token``, sent on ``/_sandbox`` calls).
CONTROL_TOKEN_ENV = "PAYSDK_CONTROL_TOKEN"
CONTROL_TOKEN = SecretKind("control token", CONTROL_TOKEN_ENV, "paysdk-control-token", "control_tokens")
KINDS = (MERCHANT_TOKEN, WALLET_KEY, CONTROL_TOKEN)


@dataclass(frozen=True, slots=True)
class StoredToken:
    """A secret and where it came from (``env``, ``keyring`` or ``file``). ``repr`` hides the value."""

    value: str
    source: str

    def __repr__(self) -> str:
        return f"StoredToken(value='****', source={self.source!r})"


def wallet_dir() -> Path:
    """``<config dir>/wallet``: the per-profile wallet token files (created 0700 when written)."""
    return _config.config_dir() / WALLET_DIR


def wallet_token_path(profile: str) -> Path:
    """The application token pair of ``profile`` (the SDK's ``FileTokenStore``, 0600, locked)."""
    return wallet_dir() / f"{_safe(profile)}.tokens.json"


def user_sessions_path(profile: str) -> Path:
    """The user sessions (token pairs) of ``profile`` from ``paysdk users login`` (0600, locked)."""
    return wallet_dir() / f"{_safe(profile)}.users.json"


def _safe(profile: str) -> str:
    import hashlib
    import re

    if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", profile) and not profile.startswith("."):
        return profile
    return "profile-" + hashlib.sha256(profile.encode("utf-8")).hexdigest()[:16]


def credentials_path() -> Path:
    """The fallback file's path (it may not exist)."""
    return _config.config_dir() / CREDENTIALS_FILE


def _keyring() -> Any:
    import keyring

    return keyring


def _keyring_works(kr: Any) -> bool:
    from keyring.backends import fail

    return not isinstance(kr.get_keyring(), fail.Keyring)


def _read_all() -> dict[str, Any]:
    path = credentials_path()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        warn(f"{path} can be read by other users; run: chmod 600 {path}")
    return _config.read_json_object(path)


def _read_file(kind: SecretKind) -> dict[str, Any]:
    values = _read_all().get(kind.file_key, {})
    return values if isinstance(values, dict) else {}


def _write_file(values: dict[str, Any], kind: SecretKind) -> None:
    data = _read_all()
    data[kind.file_key] = values
    _config.write_private_file(credentials_path(), data)


def store_secret(kind: SecretKind, profile: str, value: str) -> str:
    """Save a ``kind`` secret for ``profile``. Returns where it went: ``keyring`` or the file's path."""
    kr = _keyring()
    error: Exception | None = None
    if _keyring_works(kr):
        try:
            kr.set_password(kind.service, profile, value)
        except Exception as exc:  # keyring backends raise many kinds (dbus, locked, no backend)
            error = exc
        else:
            values = _read_file(kind)
            if profile in values:  # do not leave a stale copy on disk
                del values[profile]
                _write_file(values, kind)
            return "keyring"
    reason = f"{type(error).__name__}" if error else "no keyring backend is available"
    _log.debug("keyring unusable: %s", reason)
    values = _read_file(kind)
    values[profile] = value
    _write_file(values, kind)
    path = credentials_path()
    noun = "token" if kind is MERCHANT_TOKEN else kind.label
    warn(
        f"no usable OS keyring ({reason}); the {noun} was saved to {path} (mode 0600). "
        f"Set {kind.env} instead if you prefer not to keep it on disk."
    )
    return str(path)


def load_secret(kind: SecretKind, profile: str) -> StoredToken | None:
    """The ``kind`` secret to use for ``profile``, or ``None`` when there is none anywhere."""
    env = os.environ.get(kind.env)
    if env:
        return StoredToken(env.strip(), "env")
    kr = _keyring()
    if _keyring_works(kr):
        try:
            value = kr.get_password(kind.service, profile)
        except Exception as exc:
            _log.debug("keyring read failed: %s", type(exc).__name__)
        else:
            if value:
                return StoredToken(value, "keyring")
    value = _read_file(kind).get(profile)
    if isinstance(value, str) and value:
        return StoredToken(value, "file")
    return None


def delete_secret(kind: SecretKind, profile: str) -> list[str]:
    """Remove ``profile``'s ``kind`` secret from the keyring and the fallback file. Returns where it was."""
    removed: list[str] = []
    kr = _keyring()
    if _keyring_works(kr):
        try:
            if kr.get_password(kind.service, profile) is not None:
                kr.delete_password(kind.service, profile)
                removed.append("keyring")
        except Exception as exc:
            _log.debug("keyring delete failed: %s", type(exc).__name__)
    values = _read_file(kind)
    if profile in values:
        del values[profile]
        _write_file(values, kind)
        removed.append(str(credentials_path()))
    return removed


def store_token(profile: str, token: str) -> str:
    """Save the merchant ``token`` for ``profile``. Returns where it went."""
    return store_secret(MERCHANT_TOKEN, profile, token)


def load_token(profile: str) -> StoredToken | None:
    """The merchant token to use for ``profile``, or ``None``."""
    return load_secret(MERCHANT_TOKEN, profile)


def delete_token(profile: str) -> list[str]:
    """Remove ``profile``'s merchant token from the keyring and the fallback file."""
    return delete_secret(MERCHANT_TOKEN, profile)
