"""The per-invocation state the global options decide. Kept tiny: ``main.py`` imports it for ``--help``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_PROFILE", "OutputFormat", "State"]

#: Where ``paysdk serve`` listens by default: the local reference server.
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_PROFILE = "default"


class OutputFormat(StrEnum):
    """``table`` for people, ``json`` for scripts."""

    table = "table"
    json = "json"


@dataclass
class State:
    """What the global options decided for this invocation."""

    profile: str = DEFAULT_PROFILE
    base_url_option: str | None = None
    output: OutputFormat = OutputFormat.json
    verbose: bool = False
    _settings: dict[str, str] | None = field(default=None, repr=False)

    @property
    def settings(self) -> dict[str, str]:
        """The profile's stored (non-secret) settings."""
        if self._settings is None:
            from paysdk_cli._config import load_profile
            from paysdk_cli._errors import CLIError

            try:
                self._settings = load_profile(self.profile)
            except ValueError as exc:
                raise CLIError(str(exc)) from None
        return self._settings

    @property
    def base_url(self) -> str:
        """``--base-url`` / ``$PAYSDK_BASE_URL``, else the profile's, else the local reference server."""
        return (self.base_url_option or self.settings.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
