"""Exit codes and the one place where an exception becomes an ``Error:`` line on stderr.

======  =====================================================================
code    meaning
======  =====================================================================
0       success
1       error (anything not listed below)
2       usage: bad option or argument, or input the SDK refused before sending
4       authentication: HTTP 401/403, or no merchant token configured
6       the API refused the request: any other HTTP 4xx
7       the API failed (HTTP 5xx, or a success answer that does not match the contract) or could not
        be reached (connection, timeout)
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
            return ExitCode.AUTH if exc.field in _CREDENTIAL_FIELDS else ExitCode.USAGE
        if isinstance(exc, errors.APIError):
            status = int(exc.status_code)
            if status in (401, 403):
                return ExitCode.AUTH
            if status >= 500:
                return ExitCode.SERVER
            if 400 <= status < 500:
                return ExitCode.API
            return ExitCode.ERROR
        if isinstance(exc, errors.APIConnectionError | errors.UnexpectedResponseError):
            return ExitCode.SERVER
    return ExitCode.ERROR


#: SDK validation fields that are about credentials, not about an option: exit 4, not 2.
_CREDENTIAL_FIELDS = frozenset({"merchant_token", "wallet", "private_key", "session"})

#: Wallet own codes (D31) that call for logging in again, and those about the signing key.
_WALLET_RANGE = range(7000, 8100)
_WALLET_TOKEN_CODES = frozenset({7102, 7103, 7104, 7105, 7107})
_WALLET_KEY_CODES = frozenset({7601, 7604, 7616})


def _auth_hint(status: int, own_code: int | None) -> str | None:
    """What to do about a 401/403: merchant token, wallet login, signing key, or nothing to log in to."""
    if status not in (401, 403):
        return None
    if own_code is None or own_code not in _WALLET_RANGE:
        return "check the merchant token: paysdk login, or PAYSDK_MERCHANT_TOKEN"
    if own_code == 7106:
        return "this call takes the other kind of token: add or drop --as-user (application vs user)"
    if own_code in _WALLET_TOKEN_CODES:
        return "log in again: paysdk wallet login (or paysdk users login for --as-user)"
    if own_code in _WALLET_KEY_CODES:
        return "check the merchant slug and signing key: paysdk wallet login --merchant SLUG --key-file FILE"
    return None


def _describe(exc: BaseException, verbose: bool) -> list[str]:
    if isinstance(exc, CLIError):
        return [exc.message]
    errors = _sdk_errors()
    if errors is not None:
        if isinstance(exc, errors.ValidationError):
            if exc.field == "merchant_token":
                return [f"the stored merchant token is unusable: {exc.message}"]
            if exc.field in _CREDENTIAL_FIELDS:
                return [f"wallet credentials: {exc.message}", f"  {_auth_hint(401, 7102)}"]
            return [f"invalid value for {_option_name(exc.field)}: {exc.message}"]
        if isinstance(exc, errors.APIError):
            code = f" ownCode {exc.own_code}" if exc.own_code is not None else ""
            lines = [f"HTTP {exc.status_code}{code}: {exc.message}"]
            body = exc.body
            details = body.get("details") if isinstance(body, dict) else None
            for detail in details if isinstance(details, list) else []:
                if isinstance(detail, dict):
                    lines.append(f"  {detail.get('field', '?')}: {detail.get('message', '')}")
            hint = _auth_hint(exc.status_code, exc.own_code)
            if hint:
                lines.append(f"  {hint}")
            if verbose:
                where = f"{exc.method} {exc.path}".strip()
                lines.append(
                    f"  request: {where or '?'}, attempts {exc.attempts}, request id {exc.request_id or '-'}"
                )
            return lines
        if isinstance(exc, errors.UnexpectedResponseError):
            return [
                f"the API answered HTTP {exc.status_code} to {exc.method} {exc.path}, but the answer "
                f"does not match the contract ({exc.problem})",
                "  the request may have taken effect: check its state before repeating it",
            ]
        if isinstance(exc, errors.ResponseTooLargeError):
            return [f"the API's answer was too large: {exc}"]
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
