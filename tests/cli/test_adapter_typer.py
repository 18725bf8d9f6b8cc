"""The typer adapter's hooks against the installed typer (D530, D532): a failure names the hook and the
version, so raising the bound in pyproject.toml starts here."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import typer
from typer.testing import CliRunner

from paysdk_cli._adapters.typer import (
    SHELL_COMPLETE,
    set_shell_complete,
    shell_complete_of,
    usage_error_class,
)

TYPER = f"typer {version('typer')}"


def test_the_usage_error_class_is_the_one_typer_commands_print_as_usage_errors() -> None:
    usage_error = usage_error_class()
    assert issubclass(typer.BadParameter, usage_error), f"{TYPER}: UsageError is not typer's"
    app = typer.Typer()

    @app.command()
    def main() -> None:
        raise usage_error("the adapter's usage error")

    result = CliRunner().invoke(app, [])
    assert result.exit_code == 2, (TYPER, result.output)
    assert "the adapter's usage error" in result.output
    assert "Usage:" in result.output


def test_a_completer_set_after_the_parameters_are_built_is_the_one_completion_uses() -> None:
    app = typer.Typer()

    @app.command()
    def main(channel: str = typer.Option("wa", "--channel")) -> None:
        """One option."""

    command = typer.main.get_command(app)
    (param,) = [p for p in command.params if "--channel" in getattr(p, "opts", ())]
    assert hasattr(param, SHELL_COMPLETE), f"{TYPER}: a parameter has no {SHELL_COMPLETE}"
    assert shell_complete_of(param) is None

    def completer(ctx: Any, param: Any, incomplete: str) -> list[str]:
        return [value for value in ("wa", "sms", "email") if value.startswith(incomplete)]

    set_shell_complete(param, completer)
    assert shell_complete_of(param) is completer
    ctx = command.make_context("main", [], resilient_parsing=True)
    offered = [item.value for item in param.shell_complete(ctx, "s")]
    assert offered == ["sms"], f"{TYPER}: completion does not use {SHELL_COMPLETE} ({offered})"
