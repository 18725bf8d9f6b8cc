"""Where merchant tokens are kept: environment, OS keyring, or a 0600 file as the last resort.

Reading order for a profile's token:

1. ``$PAYSDK_MERCHANT_TOKEN`` (overrides everything, for CI and containers);
2. the OS keyring, service ``paysdk``, username = the profile name;
3. ``<config dir>/credentials.json`` (mode 0600), written only when no keyring backend works
   (common on headless Linux), always with a warning on stderr.
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
    "KEYRING_SERVICE",
    "TOKEN_ENV",
    "StoredToken",
    "credentials_path",
    "delete_token",
    "load_token",
    "store_token",
]

KEYRING_SERVICE = "paysdk"
TOKEN_ENV = "PAYSDK_MERCHANT_TOKEN"
CREDENTIALS_FILE = "credentials.json"

_log = logging.getLogger("paysdk_cli")


@dataclass(frozen=True, slots=True)
class StoredToken:
    """A token and where it came from (``env``, ``keyring`` or ``file``). ``repr`` hides the value."""

    value: str
    source: str

    def __repr__(self) -> str:
        return f"StoredToken(value='****', source={self.source!r})"


def credentials_path() -> Path:
    """The fallback file's path (it may not exist)."""
    return _config.config_dir() / CREDENTIALS_FILE


def _keyring() -> Any:
    import keyring

    return keyring


def _keyring_works(kr: Any) -> bool:
    from keyring.backends import fail

    return not isinstance(kr.get_keyring(), fail.Keyring)


def _read_file() -> dict[str, Any]:
    path = credentials_path()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        warn(f"{path} can be read by other users; run: chmod 600 {path}")
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        warn(f"{path} is not valid JSON; ignoring it")
        return {}
    tokens = data.get("tokens", {}) if isinstance(data, dict) else {}
    return tokens if isinstance(tokens, dict) else {}


def _write_file(tokens: dict[str, Any]) -> None:
    _config.write_private_file(credentials_path(), {"tokens": tokens})


def store_token(profile: str, token: str) -> str:
    """Save ``token`` for ``profile``. Returns where it went: ``keyring`` or the fallback file's path."""
    kr = _keyring()
    error: Exception | None = None
    if _keyring_works(kr):
        try:
            kr.set_password(KEYRING_SERVICE, profile, token)
        except Exception as exc:  # keyring backends raise many kinds (dbus, locked, no backend)
            error = exc
        else:
            tokens = _read_file()
            if profile in tokens:  # do not leave a stale copy on disk
                del tokens[profile]
                _write_file(tokens)
            return "keyring"
    reason = f"{type(error).__name__}" if error else "no keyring backend is available"
    _log.debug("keyring unusable: %s", reason)
    tokens = _read_file()
    tokens[profile] = token
    _write_file(tokens)
    path = credentials_path()
    warn(
        f"no usable OS keyring ({reason}); the token was saved to {path} (mode 0600). "
        f"Set {TOKEN_ENV} instead if you prefer not to keep it on disk."
    )
    return str(path)


def load_token(profile: str) -> StoredToken | None:
    """The token to use for ``profile``, or ``None`` when there is none anywhere."""
    env = os.environ.get(TOKEN_ENV)
    if env:
        return StoredToken(env.strip(), "env")
    kr = _keyring()
    if _keyring_works(kr):
        try:
            value = kr.get_password(KEYRING_SERVICE, profile)
        except Exception as exc:
            _log.debug("keyring read failed: %s", type(exc).__name__)
        else:
            if value:
                return StoredToken(value, "keyring")
    value = _read_file().get(profile)
    if isinstance(value, str) and value:
        return StoredToken(value, "file")
    return None


def delete_token(profile: str) -> list[str]:
    """Remove ``profile``'s token from the keyring and the fallback file. Returns where it was."""
    removed: list[str] = []
    kr = _keyring()
    if _keyring_works(kr):
        try:
            if kr.get_password(KEYRING_SERVICE, profile) is not None:
                kr.delete_password(KEYRING_SERVICE, profile)
                removed.append("keyring")
        except Exception as exc:
            _log.debug("keyring delete failed: %s", type(exc).__name__)
    tokens = _read_file()
    if profile in tokens:
        del tokens[profile]
        _write_file(tokens)
        removed.append(str(credentials_path()))
    return removed
