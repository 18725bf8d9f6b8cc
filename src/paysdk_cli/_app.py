"""The one way to make a typer app here: plain (non-rich) help, ``-h``, no completion options.

Rich help rendering imports rich on every ``--help``; plain click formatting keeps ``--help`` cheap.
Every command is a :class:`PaysdkCommand`: arguments are named in capitals (``CARD_ID``) in usage
lines, help and errors, and input the SDK refuses before sending is reported as a usage error of the
option that carried it, in the same words as a value the CLI refuses itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand

__all__ = ["CONTEXT_SETTINGS", "PaysdkCommand", "new_app"]

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}


class PaysdkCommand(TyperCommand):
    """A typer command with ``CARD_ID``-style argument names and SDK validation errors as usage errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument) and param.metavar is None and param.name:
                param.metavar = param.name.upper()

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = str(param.metavar or (param.name or "").upper())
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            from paysdk_cli._errors import usage_error_for

            usage = usage_error_for(exc, ctx)
            if usage is None:
                raise
            raise usage from None


def _group_callback() -> None:
    """Present so a family with a single command is still a group (``paysdk links create``)."""


class _Typer(typer.Typer):
    """A typer app whose commands are :class:`PaysdkCommand` unless told otherwise."""

    def command(self, name: str | None = None, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        kwargs.setdefault("cls", PaysdkCommand)
        return super().command(name, *args, **kwargs)


def new_app(help: str | None = None, *, group: bool = True) -> typer.Typer:
    """A typer app for one command family (``group``) or for one command."""
    return _Typer(
        help=help,
        callback=_group_callback if group else None,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        add_completion=False,
        no_args_is_help=True,
        context_settings=CONTEXT_SETTINGS,
    )
