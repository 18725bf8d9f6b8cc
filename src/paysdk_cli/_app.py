"""The one way to make a typer app here: plain (non-rich) help, ``-h``, no completion options.

Rich help rendering imports rich on every ``--help``; plain click formatting keeps ``--help`` cheap.
"""

from __future__ import annotations

import typer

__all__ = ["CONTEXT_SETTINGS", "new_app"]

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}


def _group_callback() -> None:
    """Present so a family with a single command is still a group (``paysdk links create``)."""


def new_app(help: str | None = None, *, group: bool = True) -> typer.Typer:
    """A typer app for one command family (``group``) or for one command."""
    return typer.Typer(
        help=help,
        callback=_group_callback if group else None,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        add_completion=False,
        no_args_is_help=True,
        context_settings=CONTEXT_SETTINGS,
    )
