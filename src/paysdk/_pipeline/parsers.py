"""Parsers the resource builders wrap around a model's parse: a ``data`` envelope, a list, nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["data_envelope", "list_of", "no_result"]

T = TypeVar("T")


def data_envelope(parse: Callable[[Any], T]) -> Callable[[Any], T]:
    """Unwrap ``{"data": {...}}`` (the integrations answers) before ``parse``."""

    def unwrap(body: Any) -> T:
        if not isinstance(body, dict) or "data" not in body:
            raise ValueError("answer has no 'data' object")
        return parse(body["data"])

    return unwrap


def list_of(parse: Callable[[Any], T]) -> Callable[[Any], list[T]]:
    """Parse a JSON array item by item."""

    def parse_list(body: Any) -> list[T]:
        if not isinstance(body, list):
            raise ValueError("answer is not a JSON array")
        return [parse(item) for item in body]

    return parse_list


def no_result(body: Any) -> None:
    """For calls whose answer carries nothing the caller needs."""
    return None
