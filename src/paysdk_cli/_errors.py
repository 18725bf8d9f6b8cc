"""Exit codes and the one place where an exception becomes an ``Error:`` line on stderr.

======  =====================================================================
code    meaning
======  =====================================================================
0       success
1       error (anything not listed below)
2       usage: bad option or argument, or input the SDK refused before sending
4       authentication: HTTP 401/403, or no merchant token configured
6       the API refused the request: any other HTTP 4xx
7       the API failed (HTTP 5xx) or could not be reached (connection, timeout)
130     interrupted (Ctrl-C), except ``callbacks listen``, which exits 0
======  =====================================================================
"""

from __future__ import annotations

import sys
import traceback
from enum import IntEnum
from typing import Any

from paysdk_cli._output import error

__all__ = ["CLIError", "ExitCode", "exit_code_for", "report"]


class ExitCode(IntEnum):
    """The documented exit codes of ``paysdk``."""

    OK = 0
    ERROR = 1
    USAGE = 2
    AUTH = 4
    API = 6
    SERVER = 7


class CLIError(Exception):
    """A failure the CLI explains itself: ``message`` goes to stderr, the process exits ``exit_code``."""

    def __init__(self, message: str, exit_code: int = ExitCode.ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = int(exit_code)


def _sdk_errors() -> Any:
    # Only look at paysdk's exception tree when it was imported: an exception cannot be one of its
    # classes otherwise, and `--help` must not pay for importing it.
    return sys.modules.get("paysdk._errors")


def _option_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def exit_code_for(exc: BaseException) -> int:
    """The exit code for an exception (see the module docstring)."""
    if isinstance(exc, CLIError):
        return exc.exit_code
    errors = _sdk_errors()
    if errors is not None:
        if isinstance(exc, errors.ValidationError):
            return ExitCode.AUTH if exc.field == "merchant_token" else ExitCode.USAGE
        if isinstance(exc, errors.APIError):
            status = int(exc.status_code)
            if status in (401, 403):
                return ExitCode.AUTH
            if status >= 500:
                return ExitCode.SERVER
            if 400 <= status < 500:
                return ExitCode.API
            return ExitCode.ERROR
        if isinstance(exc, errors.APIConnectionError):
            return ExitCode.SERVER
    return ExitCode.ERROR


def _describe(exc: BaseException, verbose: bool) -> list[str]:
    if isinstance(exc, CLIError):
        return [exc.message]
    errors = _sdk_errors()
    if errors is not None:
        if isinstance(exc, errors.ValidationError):
            if exc.field == "merchant_token":
                return [f"the stored merchant token is unusable: {exc.message}"]
            return [f"invalid value for {_option_name(exc.field)}: {exc.message}"]
        if isinstance(exc, errors.APIError):
            code = f" ownCode {exc.own_code}" if exc.own_code is not None else ""
            lines = [f"HTTP {exc.status_code}{code}: {exc.message}"]
            body = exc.body
            details = body.get("details") if isinstance(body, dict) else None
            for detail in details if isinstance(details, list) else []:
                if isinstance(detail, dict):
                    lines.append(f"  {detail.get('field', '?')}: {detail.get('message', '')}")
            if exc.status_code in (401, 403):
                lines.append("  check the merchant token: paysdk login, or PAYSDK_MERCHANT_TOKEN")
            if verbose:
                where = f"{exc.method} {exc.path}".strip()
                lines.append(
                    f"  request: {where or '?'}, attempts {exc.attempts}, request id {exc.request_id or '-'}"
                )
            return lines
        if isinstance(exc, errors.APITimeoutError):
            return [f"the request timed out: {exc}"]
        if isinstance(exc, errors.APIConnectionError):
            return [f"could not reach the API: {exc}"]
        if isinstance(exc, errors.PaySDKError):
            return [str(exc)]
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return [f"{exc.strerror}{where}"]
    return [f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__]


def report(exc: BaseException, *, verbose: bool = False) -> int:
    """Print ``exc`` on stderr (traceback only when ``verbose``) and return its exit code."""
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    lines = _describe(exc, verbose)
    error(lines[0])
    for line in lines[1:]:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()
    return exit_code_for(exc)
