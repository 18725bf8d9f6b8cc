"""Exit codes and the one place where an exception becomes an ``Error:`` line on stderr (its control
characters escaped, :func:`paysdk_cli._output.printable`).

======  =====================================================================
code    meaning
======  =====================================================================
0       success
1       error (anything not listed below)
2       usage: bad option or argument, or input the SDK refused before sending
3       ``serve`` cannot listen on its address (in use)
4       authentication: HTTP 401/403, or no merchant token configured
5       ``charges upload``: some rows were not charged (refused, declined or unknown, D159)
6       the API refused the request: any other HTTP 4xx
7       the API failed (HTTP 5xx, a 3xx redirect, or a success answer that does not match the
        contract) or could not be reached (connection, timeout)
130     interrupted (Ctrl-C), except ``callbacks listen`` and ``serve``, which exit 0 (also on SIGTERM)
======  =====================================================================
"""

from __future__ import annotations

import sys
import traceback
from decimal import Decimal
from enum import IntEnum
from typing import Any

import typer

from paysdk_cli._adapters.typer import usage_error_class
from paysdk_cli._output import error, printable

__all__ = ["CLIError", "ExitCode", "exit_code_for", "report", "restyle_usage_error", "usage_error_for"]


class ExitCode(IntEnum):
    """The documented exit codes of ``paysdk``."""

    OK = 0
    ERROR = 1
    USAGE = 2
    LISTEN = 3
    AUTH = 4
    PARTIAL = 5
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
            if 400 <= status < 500:
                return ExitCode.API
            # 5xx, and any other answer the operation does not expect (a 3xx redirect, which the SDK
            # never follows, or an unexpected 1xx/2xx): the API failed (D342).
            return ExitCode.SERVER
        if isinstance(exc, errors.APIConnectionError | errors.UnexpectedResponseError):
            return ExitCode.SERVER
    return ExitCode.ERROR


#: SDK validation fields that are about credentials, not about an option: exit 4, not 2.
_CREDENTIAL_FIELDS = frozenset({"merchant_token", "wallet", "private_key", "session"})

#: The hint line for each remedy of the own-code table (:class:`paysdk.contracts.codes.Remedy`).
_REMEDY_HINTS = {
    "merchant_token": "check the merchant token: paysdk login, or PAYSDK_MERCHANT_TOKEN",
    "other_token_kind": (
        "this call takes the other kind of token: add or drop --as-user (application vs user)"
    ),
    "log_in_again": "log in again: paysdk wallet login (or paysdk users login for --as-user)",
    "signing_key": (
        "check the merchant slug and signing key: paysdk wallet login --merchant SLUG --key-file FILE"
    ),
}


def _auth_hint(status: int, own_code: int | None) -> str | None:
    """What to do about a 401/403 (the remedy of its own code): merchant token, wallet login, signing key,
    or nothing to log in to. A 401/403 without a known code is about the merchant token."""
    if status not in (401, 403):
        return None
    # Imported here, on an error: `paysdk --help` does not pay for the table.
    from paysdk.contracts.codes import code_info

    row = code_info(own_code)
    if row is None:
        return _REMEDY_HINTS["merchant_token"]
    return _REMEDY_HINTS[row.remedy] if row.remedy is not None else None


def _redirect_hint(status: int, headers: dict[str, str]) -> str | None:
    """What to do about a 3xx: the SDK follows no redirect (an API call is never re-sent elsewhere).
    Only the origin of ``Location`` is shown: its path or query may carry a token."""
    if not 300 <= status < 400:
        return None
    from urllib.parse import urlsplit

    try:
        target = urlsplit(headers.get("location", ""))
        origin = f"{target.scheme}://{target.netloc.rpartition('@')[2]}" if target.scheme else ""
    except ValueError:
        origin = ""
    where = f" to {origin}" if origin else ""
    return (
        f"the server answered with a redirect{where}, which the SDK does not follow: point --base-url "
        "(or PAYSDK_BASE_URL) at the address that answers the API"
    )


def _address_tried(exc: BaseException) -> str | None:
    """``http://127.0.0.1:8000``: where the transport error behind ``exc`` happened (no path, no query)."""
    cause = exc.__cause__
    httpx = sys.modules.get("httpx")
    if httpx is None or not isinstance(cause, httpx.TransportError):
        return None
    try:
        url = cause.request.url
    except RuntimeError:  # an httpx error raised without its request
        return None
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{url.scheme}://{host}" + (f":{url.port}" if url.port else "")


def _unreachable(exc: BaseException, address: str) -> list[str]:
    """A transport failure: the address tried and, when nothing answered there, what to do about it."""
    import httpx

    if isinstance(exc.__cause__, httpx.ConnectError | httpx.ConnectTimeout):
        return [
            f"could not connect to {address}: {exc}",
            "  is the server running? Start the local reference server with `paysdk serve`, "
            "or point at another address with --base-url URL (or PAYSDK_BASE_URL)",
        ]
    if isinstance(exc.__cause__, httpx.TimeoutException):
        return [f"the request to {address} timed out: {exc}"]
    return [f"could not reach the API at {address}: {exc}"]


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
            hint = _auth_hint(exc.status_code, exc.own_code) or _redirect_hint(exc.status_code, exc.headers)
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
        address = _address_tried(exc) if isinstance(exc, errors.APIConnectionError) else None
        if address:
            return _unreachable(exc, address)
        if isinstance(exc, errors.APITimeoutError):
            return [f"the request timed out: {exc}"]
        if isinstance(exc, errors.APIConnectionError):
            return [f"could not reach the API: {exc}"]
        if isinstance(exc, errors.PaySDKError):
            return [str(exc)]
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return [f"{exc.strerror}{where}"]
    from paysdk._describe import exception_text

    return [exception_text(exc)]  # never an empty message (D434)


def _param_name(param: Any) -> str:
    """``--amount`` for an option (its first long name), ``CARD_ID`` for an argument."""
    opts = [str(opt) for opt in getattr(param, "opts", None) or []]
    if getattr(param, "param_type_name", "") == "argument" or not opts:
        return str(getattr(param, "metavar", None) or (getattr(param, "name", None) or "").upper())
    return next((opt for opt in opts if opt.startswith("--")), opts[0])


def _choices(param: Any) -> list[str]:
    for holder in (getattr(param, "type_descriptor", None), getattr(param, "type", None)):
        choices = getattr(holder, "choices", None)
        if choices:
            return [str(getattr(choice, "value", choice)) for choice in choices]
    return []


def _shown(value: Any) -> str:
    return repr(str(getattr(value, "value", value)))


#: Coercion failures (pydantic error types, as typer reports them) in the CLI's own words.
_COERCION_WORDS = {
    "int_parsing": "is not a whole number",
    "int_from_float": "is not a whole number",
    "float_parsing": "is not a number",
    "decimal_parsing": "is not a decimal number",
    "bool_parsing": "is not true or false",
}


_LIMIT_WORDS = (("le", "more than"), ("lt", "not less than"), ("ge", "less than"), ("gt", "not more than"))


def _bad_value(exc: Any) -> str:
    """What is wrong with the value of a BadParameter, starting with the value itself."""
    param = exc.param
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if param is not None and callable(errors):
        first = (errors() or [{}])[0]
        kind, value, limits = first.get("type", ""), first.get("input"), first.get("ctx") or {}
        choices = _choices(param)
        if choices:
            return f"{_shown(value)} is not one of {', '.join(choices)}"
        if kind in _COERCION_WORDS:
            return f"{_shown(value)} {_COERCION_WORDS[kind]}"
        for key, words in _LIMIT_WORDS:
            if key in limits:
                return f"{_shown(value)} is {words} {limits[key]}"
        return f"{_shown(value)}: {str(first.get('msg', exc.message)).removeprefix('Value error, ')}"
    return str(exc.message)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def restyle_usage_error(exc: Any) -> Any:
    """A click usage error in the CLI's one style, or ``exc`` itself when it is none.

    ``invalid value for --amount: 'abc' is not a decimal number``; ``missing option --kind (one of:
    ...)``; ``missing argument CARD_ID``: the option (its long name) or argument (in capitals) and the
    offending value, without pydantic's or click's wording. Exit code 2, with click's usage lines.
    """
    usage_error = usage_error_class()
    if not isinstance(exc, usage_error) or getattr(exc, "restyled", False):
        return exc
    param = getattr(exc, "param", None)
    hint = getattr(exc, "param_hint", None)
    if isinstance(hint, list | tuple):
        hint = next((h for h in hint if str(h).startswith("--")), hint[0] if hint else None)
    name = str(hint) if hint else (_param_name(param) if param is not None else "")
    if type(exc).__name__ == "MissingParameter" and name:
        kind = getattr(exc, "param_type", None) or getattr(param, "param_type_name", "parameter")
        choices = _choices(param) if param is not None else []
        message = f"missing {kind} {name}" + (f" (one of: {', '.join(choices)})" if choices else "")
    elif isinstance(exc, typer.BadParameter) and name:
        message = f"invalid value for {name}: {_bad_value(exc)}"
    else:
        message = _lower_first(exc.format_message()).rstrip(".")
    styled = usage_error(message, exc.ctx)
    styled.restyled = True
    return styled


def usage_error_for(exc: BaseException, ctx: Any) -> Any:
    """A usage error (exit 2, usage lines) for input the SDK refused before sending, else ``None``.

    The SDK names the argument (``amount``); the option that carried it is named with the value typed:
    ``invalid value for --amount: '10.123' has more than 2 decimal places``.
    """
    errors = _sdk_errors()
    if errors is None or not isinstance(exc, errors.ValidationError) or exit_code_for(exc) != ExitCode.USAGE:
        return None
    field = str(exc.field)
    option = _option_name(field)
    param = next(
        (p for p in ctx.command.params if p.name == field or option in (getattr(p, "opts", None) or [])),
        None,
    )
    value = ctx.params.get(param.name) if param is not None else None
    name = _param_name(param) if param is not None else option
    message = str(exc.message)
    if isinstance(value, str | int | Decimal) and not isinstance(value, bool):
        # "'10.123' has more than 2 decimal places"; "'1234': string should have ..." for a sentence
        joined = ": " + _lower_first(message) if message[:1].isupper() else " " + message
        message = _shown(value) + joined
    styled = usage_error_class()(f"invalid value for {name}: {message}", ctx)
    styled.restyled = True
    return styled


def report(exc: BaseException, *, verbose: bool = False) -> int:
    """Print ``exc`` on stderr (traceback only when ``verbose``) and return its exit code."""
    if verbose:  # escaped as every line below: an exception's message may hold what a server sent
        sys.stderr.write(printable("".join(traceback.format_exception(exc))))
    lines = _describe(exc, verbose)
    error(lines[0])
    for line in lines[1:]:
        sys.stderr.write(printable(line) + "\n")
    sys.stderr.flush()
    return exit_code_for(exc)
