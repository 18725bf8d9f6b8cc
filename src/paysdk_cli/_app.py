"""The one way to make a typer app here: plain (non-rich) help, ``-h``, no completion options.

Rich help rendering imports rich on every ``--help``; plain click formatting keeps ``--help`` cheap.
Every command is a :class:`PaysdkCommand`: arguments are named in capitals (``CARD_ID``) in usage
lines, help and errors, and input the SDK refuses before sending is reported as a usage error of the
option that carried it, in the same words as a value the CLI refuses itself. Every command also takes
the global ``-o/--output`` after its name (``paysdk links create ... -o json``), as gh and aws do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

import typer
from typer.core import TyperArgument, TyperCommand

from paysdk_cli._adapters.typer import set_shell_complete, shell_complete_of
from paysdk_cli._state import OutputFormat

__all__ = [
    "CONTEXT_SETTINGS",
    "ENUMERATED_OPTIONS",
    "OUTPUT_HELP",
    "PaysdkCommand",
    "allowed_values",
    "new_app",
]

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}
#: Options whose allowed values shell completion offers, wherever a command declares them: option ->
#: ``(module, attribute)`` of the shared contract that lists them (an enum, or a tuple of names). The
#: one place: a command module declares a plain ``--currency`` and gets its completion from here.
ENUMERATED_OPTIONS: dict[str, tuple[str, str]] = {
    "--channel": ("paysdk.contracts.common", "Channel"),
    "--currency": ("paysdk.contracts.common", "Currency"),
    "--processor": ("paysdk.contracts.alternative_payments", "RAILS"),
    "--payment-method": ("paysdk.contracts.alternative_payments", "RAILS"),
}


def allowed_values(option: str) -> list[str]:
    """The values the shared contracts allow for ``option`` (one of :data:`ENUMERATED_OPTIONS`)."""
    import importlib

    module, attribute = ENUMERATED_OPTIONS[option]
    listed = getattr(importlib.import_module(module), attribute)
    return [str(getattr(value, "value", value)) for value in listed]


def _completer(option: str) -> Callable[[Any, Any, str], list[str]]:
    """A shell-completion callback offering :func:`allowed_values` that start with what was typed
    (case-insensitively: ``gtq`` completes to ``GTQ``). It imports the contracts only when run."""

    def complete(_ctx: Any, _param: Any, incomplete: str) -> list[str]:
        typed = incomplete.lower()
        return [value for value in allowed_values(option) if value.lower().startswith(typed)]

    return complete


OUTPUT_HELP = "table or json. Default: table on a terminal, json otherwise."


def _set_output(ctx: typer.Context, value: str | None) -> None:
    """``-o`` given after the command: it overrides the global one (the last one given wins)."""
    if value is None:
        return
    from paysdk_cli._context import state

    state(ctx).output = OutputFormat(value)


def output_option() -> Any:
    """The command-level ``-o/--output`` (the same choices as the global option), a fresh parameter.

    Typer builds it from a signature, so it is the parameter class of whichever click typer uses.
    """
    import copy

    return copy.copy(_output_template())


@functools.cache
def _output_template() -> Any:
    def command(
        output: Annotated[
            OutputFormat | None,
            typer.Option(
                "-o",
                "--output",
                help=OUTPUT_HELP,
                show_default=False,
                expose_value=False,
                callback=_set_output,
            ),
        ] = None,
    ) -> None:
        """Unused: the option's template."""

    template = typer.Typer(add_completion=False)
    template.command()(command)
    return typer.main.get_command(template).params[0]


class PaysdkCommand(TyperCommand):
    """A typer command with ``CARD_ID``-style argument names and SDK validation errors as usage errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not any("--output" in getattr(param, "opts", ()) for param in self.params):
            self.params.append(output_option())
        for param in self.params:
            enumerated = [opt for opt in getattr(param, "opts", ()) if opt in ENUMERATED_OPTIONS]
            if enumerated and shell_complete_of(param) is None:
                set_shell_complete(param, _completer(enumerated[0]))
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
