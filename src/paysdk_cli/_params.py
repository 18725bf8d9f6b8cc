"""Parsing of option values shared by several commands (amounts, ``k=v`` pairs, JSON objects)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import typer

__all__ = [
    "WALLET_PLACES",
    "expand_path",
    "parse_amount",
    "parse_date",
    "parse_json_object",
    "parse_key_values",
    "parse_wallet_amount",
    "read_secret",
    "stdin_is_terminal",
]


def parse_amount(text: str, option: str = "--amount") -> Decimal:
    """A decimal string (``10.50``) as an exact ``Decimal``; never a float.

    Written as a CSV cell writes an amount (:func:`paysdk.contracts.common.parse_amount_text`, D431):
    ``1e3``, ``1_000``, ``+5``, ``-5`` or ``NaN`` are refused, though ``Decimal()`` takes them.
    """
    from paysdk.contracts.common import parse_amount_text

    try:
        return parse_amount_text(text.strip())
    except ValueError as exc:
        try:
            Decimal(text.strip())
        except InvalidOperation:
            raise typer.BadParameter(f"{text!r} is not a decimal number", param_hint=option) from None
        raise typer.BadParameter(f"{text!r} {exc}", param_hint=option) from None


def parse_key_values(pairs: list[str] | None, option: str = "--custom-key") -> dict[str, str] | None:
    """``["k=v", ...]`` as a dict (``None`` when empty). A repeated key keeps the last value."""
    if not pairs:
        return None
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint=option)
        result[key.strip()] = value
    return result


def parse_json_object(text: str | None, option: str) -> dict[str, Any] | None:
    """A JSON object given on the command line (numbers with decimals kept exact)."""
    if text is None:
        return None
    try:
        value = json.loads(text, parse_float=Decimal)
    except ValueError as exc:
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint=option) from None
    if not isinstance(value, dict):
        raise typer.BadParameter("must be a JSON object", param_hint=option)
    return value


def expand_path(value: Path | None) -> Path | None:
    """A path option's value with a leading ``~`` or ``~user`` expanded (a typer ``callback``).

    The shell expands ``~`` only in an unquoted word of its own: not in ``"~/qr.png"``, nor after
    ``--qr-out=``. Relative paths stay relative to the working directory.
    """
    return None if value is None else value.expanduser()


#: Wallet balances and amounts carry at most 4 decimal places (spec 2.5, D41).
WALLET_PLACES = 4


def parse_wallet_amount(text: str, option: str = "--amount") -> Decimal:
    """A wallet amount: an exact decimal string, finite, > 0, at most 4 decimal places (D41)."""
    value = parse_amount(text, option)
    if value <= 0:
        raise typer.BadParameter(f"{text!r} must be greater than zero", param_hint=option)
    if value.adjusted() >= 14:
        raise typer.BadParameter(f"{text!r} is too large", param_hint=option)
    if value != value.quantize(Decimal(1).scaleb(-WALLET_PLACES)):
        raise typer.BadParameter(f"{text!r} has more than {WALLET_PLACES} decimal places", param_hint=option)
    return value


def parse_date(text: str | None, option: str) -> date | None:
    """``YYYY-MM-DD`` as a :class:`datetime.date` (``None`` stays ``None``)."""
    if text is None:
        return None
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a date in the form YYYY-MM-DD", param_hint=option
        ) from None


def stdin_is_terminal() -> bool:
    """Whether a hidden prompt can be shown: standard input is a terminal (tests stand in for one)."""
    import sys

    return sys.stdin.isatty()


def read_secret(prompt: str, *, from_stdin: bool, confirm: bool = False, instead: str | None = None) -> str:
    """A secret from one line of standard input, or from a hidden prompt (on stderr); never an argument.

    Without a terminal on stdin there is no prompt: a usage error that says what to use ``instead``
    (e.g. ``--password-stdin``). Empty input is a usage error too.
    """
    import sys

    from paysdk_cli._errors import CLIError, ExitCode

    if from_stdin:
        value = sys.stdin.readline().rstrip("\r\n")
    elif not stdin_is_terminal():
        what = prompt if prompt.isupper() else prompt.lower()
        raise CLIError(
            f"no terminal to prompt for the {what}: use {instead or 'a terminal'}",
            ExitCode.USAGE,
        )
    else:
        value = str(typer.prompt(prompt, hide_input=True, err=True, confirmation_prompt=confirm))
    if not value.strip():
        raise CLIError(f"no {prompt.lower()} given", ExitCode.USAGE)
    return value
