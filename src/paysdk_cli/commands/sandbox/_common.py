"""What several ``paysdk sandbox`` sub-groups share: a model as its wire mapping, ``--merchant``, a
date-time option."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from paysdk_cli._context import State

__all__ = ["MERCHANT", "merchant_slug", "parse_datetime", "wire", "wire_list"]


def wire(model: Any) -> dict[str, Any]:
    """A control-plane model as its camelCase wire mapping."""
    data: dict[str, Any] = model.to_wire()
    return data


def wire_list(models: Any) -> list[dict[str, Any]]:
    """Each model of a list as its wire mapping."""
    return [wire(model) for model in models]


def merchant_slug(st: State, given: str | None) -> str:
    """The merchant a command acts for: ``--merchant``, else the profile's merchant, else its client."""
    from paysdk_cli._context import require_merchant

    return require_merchant(st, given)


#: ``--merchant`` of the wallet sub-groups (users, cards).
MERCHANT = typer.Option(
    "--merchant", help="Merchant slug (default: the profile's merchant, else its client)."
)


def parse_datetime(text: str, option: str) -> datetime:
    """An ISO 8601 date-time; one without an offset is UTC."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not an ISO 8601 date-time (e.g. 2030-01-31T12:00:00Z)", param_hint=option
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
