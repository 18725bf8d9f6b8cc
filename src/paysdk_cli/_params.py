"""Parsing of option values shared by several commands (amounts, ``k=v`` pairs, JSON objects)."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

import typer

__all__ = ["parse_amount", "parse_json_object", "parse_key_values"]


def parse_amount(text: str, option: str = "--amount") -> Decimal:
    """A decimal string (``10.50``) as an exact ``Decimal``; never a float."""
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise typer.BadParameter(f"{text!r} is not a decimal number", param_hint=option) from None
    if not value.is_finite():
        raise typer.BadParameter(f"{text!r} is not a finite number", param_hint=option)
    return value


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
