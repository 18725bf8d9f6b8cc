"""The configuration directory and the (non-secret) profiles file.

``$PAYSDK_CONFIG_DIR`` wins; otherwise ``platformdirs.user_config_dir("paysdk")``. The profiles file is
``profiles.json``::

    {"profiles": {"default": {"base_url": "http://127.0.0.1:8000", "client": "acme", "merchant": "acme"}}}

``client`` is the payment-link client slug, ``merchant`` the wallet merchant slug (``paysdk wallet
login``); on the reference server both are the client's slug. It never holds a token or key: those
live in the OS keyring (or the 0600 fallback file) and under ``wallet/`` (see ``_secrets``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from paysdk_cli._output import warn
from paysdk_cli._state import DEFAULT_BASE_URL, DEFAULT_PROFILE

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_PROFILE",
    "PROFILE_KEYS",
    "config_dir",
    "ensure_config_dir",
    "load_profile",
    "load_profiles",
    "read_json_object",
    "update_profile",
    "write_private_file",
]

PROFILE_FILE = "profiles.json"
#: The keys a profile may hold. None of them is a secret.
PROFILE_KEYS = ("base_url", "client", "merchant", "backoffice_merchant", "backoffice_operator")


def config_dir() -> Path:
    """The directory holding ``profiles.json`` (and, without a keyring, ``credentials.json``)."""
    override = os.environ.get("PAYSDK_CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("paysdk"))


def ensure_config_dir() -> Path:
    """Create the configuration directory (mode 0700) if needed and return it."""
    directory = config_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (``{}`` when the file does not exist).

    A file that is not a JSON object is not silently ignored: a warning names it, then it is treated
    as empty (a later save replaces it).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        warn(f"{path} is not valid JSON; ignoring it")
        return {}
    if not isinstance(data, dict):
        warn(f"{path} does not hold a JSON object; ignoring it")
        return {}
    return data


def write_private_file(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` atomically, readable by the owner only (0600)."""
    from paysdk._files import write_private_file as write  # on use: `--help` never loads paysdk

    write(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def load_profiles() -> dict[str, dict[str, str]]:
    """Every profile, by name."""
    data = read_json_object(config_dir() / PROFILE_FILE)
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict):
        warn(f"{config_dir() / PROFILE_FILE}: 'profiles' is not a JSON object; ignoring it")
        return {}
    return {
        str(name): {str(k): str(v) for k, v in values.items() if k in PROFILE_KEYS}
        for name, values in profiles.items()
        if isinstance(values, dict)
    }


def load_profile(name: str) -> dict[str, str]:
    """One profile's settings (empty when the profile is not in the file)."""
    return load_profiles().get(name, {})


def update_profile(name: str, **values: str | None) -> dict[str, str]:
    """Set (or, with ``None``, remove) keys of one profile and save the file. Returns the profile."""
    unknown = set(values) - set(PROFILE_KEYS)
    if unknown:
        raise ValueError(f"unknown profile keys: {sorted(unknown)}")
    path = ensure_config_dir() / PROFILE_FILE
    data = read_json_object(path)
    profiles = data.setdefault("profiles", {})
    profile = profiles.setdefault(name, {})
    for key, value in values.items():
        if value is None:
            profile.pop(key, None)
        else:
            profile[key] = value
    write_private_file(path, data)
    return {str(k): str(v) for k, v in profile.items()}
