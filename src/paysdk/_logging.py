"""``PAYSDK_LOG``: the SDK's log lines on stderr without touching your logging setup.

``PAYSDK_LOG=debug`` (one line per HTTP attempt and per retry) or ``PAYSDK_LOG=info`` (retries only)
is read once per process, when the first :class:`~paysdk.Client` or :class:`~paysdk.AsyncClient` is
created, as ``OPENAI_LOG`` and ``STRIPE_LOG`` are. It sets the level of the ``paysdk`` logger and gives
it one handler that writes to ``sys.stderr``. The CLI's ``-v`` uses the same handler
(:func:`enable_stderr_log`). The lines carry metadata only (method, path, status, attempt, elapsed):
never bodies, headers, tokens or keys.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

__all__ = ["ENV_VAR", "LOGGER_NAME", "disable_stderr_log", "enable_stderr_log", "setup_from_env"]

#: The SDK's logger (child loggers: ``paysdk.callbacks``).
LOGGER_NAME = "paysdk"
ENV_VAR = "PAYSDK_LOG"
#: Accepted values of ``PAYSDK_LOG`` (case-insensitive); ``off`` or empty leaves logging alone.
LEVELS: Mapping[str, int | None] = {"debug": logging.DEBUG, "info": logging.INFO, "off": None, "": None}

_env_read = False


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of the record (test runners swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(_LineFormatter())

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class _LineFormatter(logging.Formatter):
    """``2026-01-31T12:00:00Z debug paysdk: POST /transactions attempt=1 status=200 elapsed_ms=12``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname_lower)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%SZ")
        self.converter = time.gmtime

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.__dict__["levelname_lower"] = record.levelname.lower()
        return super().formatMessage(record)


def enable_stderr_log(level: int, names: Iterable[str] = (LOGGER_NAME,)) -> None:
    """Set ``level`` on the loggers ``names`` and give each one :class:`StderrHandler` (never two)."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(handler, StderrHandler) for handler in logger.handlers):
            logger.addHandler(StderrHandler())
        logger.setLevel(level)


def disable_stderr_log(names: Iterable[str] = (LOGGER_NAME,)) -> None:
    """Undo :func:`enable_stderr_log` (the handler removed, the level back to ``NOTSET``)."""
    for name in names:
        logger = logging.getLogger(name)
        ours = [handler for handler in logger.handlers if isinstance(handler, StderrHandler)]
        for handler in ours:
            logger.removeHandler(handler)
        if ours:
            logger.setLevel(logging.NOTSET)


def level_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    """The level ``PAYSDK_LOG`` asks for (``None``: none). An unknown value is ignored with a
    :class:`RuntimeWarning` that names the variable: a typo in a log setting must not stop a program."""
    value = (os.environ if environ is None else environ).get(ENV_VAR, "").strip().lower()
    if value in LEVELS:
        return LEVELS[value]
    warnings.warn(f"{ENV_VAR}={value!r} is ignored: use debug, info or off", RuntimeWarning, stacklevel=3)
    return None


def setup_from_env() -> None:
    """Read ``PAYSDK_LOG`` once per process (the first client calls this) and enable the log it asks for."""
    global _env_read
    if _env_read:
        return
    _env_read = True
    level = level_from_env()
    if level is not None:
        enable_stderr_log(level)
