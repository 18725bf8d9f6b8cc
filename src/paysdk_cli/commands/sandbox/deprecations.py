"""``paysdk sandbox deprecations``: mark public operations deprecated on the reference server (D196).

Their answers then carry ``Deprecation``/``Sunset``/``Link`` headers; the SDK warns once per operation
per client and the CLI prints one notice per operation per run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import open_client, state
from paysdk_cli._output import emit
from paysdk_cli.commands.sandbox._common import parse_datetime

__all__ = ["app"]

app = new_app("Deprecation marks: Deprecation and Sunset headers on a public operation's answers.")

_COLUMNS = ["operation", "deprecatedAt", "sunset", "link"]
_OPERATION = typer.Argument(
    help="The operation as /openapi.json names it, quoted: 'POST /leads'.", metavar="OPERATION"
)


def _when(text: str | None, option: str) -> datetime | None:
    if text is None:
        return None
    return parse_datetime(text, option)


@app.command("set")
def set_mark(
    ctx: typer.Context,
    operation: Annotated[str, _OPERATION],
    sunset: Annotated[
        str | None,
        typer.Option(
            "--sunset", metavar="DATETIME", help="When it goes away (ISO 8601; UTC without an offset)."
        ),
    ] = None,
    deprecated_at: Annotated[
        str | None,
        typer.Option(
            "--deprecated-at",
            metavar="DATETIME",
            help="When it was deprecated (default: now, virtual clock).",
        ),
    ] = None,
    link: Annotated[str | None, typer.Option("--link", help="Where the deprecation is explained.")] = None,
) -> None:
    """Mark an operation deprecated (again: replace its mark)."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        mark = sdk.sandbox.deprecations.set(
            operation,
            deprecated_at=_when(deprecated_at, "--deprecated-at"),
            sunset=_when(sunset, "--sunset"),
            link=link,
        )
    emit(st.output, mark.to_wire(), columns=_COLUMNS, title="Deprecated")


@app.command("clear")
def clear(
    ctx: typer.Context,
    operation: Annotated[
        str | None, typer.Argument(help="The operation ('POST /leads'); all of them when left out.")
    ] = None,
) -> None:
    """Remove an operation's mark, or every mark."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        removed = sdk.sandbox.deprecations.clear(operation)
    emit(st.output, {"removed": removed}, title="Cleared")


@app.command("list")
def list_marks(ctx: typer.Context) -> None:
    """Every marked operation."""
    st = state(ctx)
    with open_client(st, token_required=False) as sdk:
        marks = sdk.sandbox.deprecations.list()
    emit(st.output, [mark.to_wire() for mark in marks], columns=_COLUMNS, title="Deprecated operations")
