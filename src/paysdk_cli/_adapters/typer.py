"""The command line's one reach into typer's private parts (D530, D532).

Written against typer 0.12 to 0.29 (``pyproject.toml``: ``typer>=0.12,<0.30``).
``tests/cli/test_adapter_typer.py`` fails, naming the hook and the installed version, when a private
part used here is gone or changed.

Hooks:

- :func:`usage_error_class`: the ``UsageError`` class typer's commands raise and catch. typer 0.2x
  vendors click as the private module ``typer._click`` (its classes are not ``click``'s); older typer uses
  ``click`` itself. The CLI raises it for an SDK validation error, so that typer prints it as a usage
  error (exit 2, the command's usage line) (D434).
- :func:`shell_complete_of` / :func:`set_shell_complete`: a parameter's ``_custom_shell_complete``, the
  completer click keeps from ``shell_complete=``. ``PaysdkCommand`` gives the enumerated options
  (``--channel``, ``--currency``, ...) their allowed values as completions after typer has built the
  parameters (D442), where the constructor's argument can no longer be passed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["SHELL_COMPLETE", "set_shell_complete", "shell_complete_of", "usage_error_class"]

#: The attribute of a click parameter that holds its ``shell_complete=`` completer.
SHELL_COMPLETE = "_custom_shell_complete"


def usage_error_class() -> Any:
    """typer's ``UsageError`` (``typer._click.exceptions.UsageError`` on typer 0.2x, else click's)."""
    try:
        from typer._click.exceptions import UsageError
    except ImportError:  # older typer: click itself
        from click.exceptions import UsageError  # type: ignore[assignment]
    return UsageError


def shell_complete_of(param: Any) -> Callable[..., Any] | None:
    """The completer ``param`` was given (``None``: click's default for its type)."""
    completer: Callable[..., Any] | None = getattr(param, SHELL_COMPLETE, None)
    return completer


def set_shell_complete(param: Any, completer: Callable[..., Any]) -> None:
    """Give ``param`` the completer ``completer(ctx, param, incomplete)``, as ``shell_complete=`` would."""
    setattr(param, SHELL_COMPLETE, completer)
