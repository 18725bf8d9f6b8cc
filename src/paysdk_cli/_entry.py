"""The ``paysdk`` console script, importable without the ``cli`` extra.

``pip install paysdk-toolkit`` (the distribution's name on the package index, D420) installs the ``paysdk``
command too, but not typer, rich or keyring, which the command line needs. This module imports none of
them: it looks them up first and, when one is missing, prints one line naming the extra to install and
exits 1, instead of a traceback from ``import typer``.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec

__all__ = ["CLI_REQUIREMENTS", "run"]

#: The top-level modules the ``cli`` extra brings (``pyproject.toml``).
CLI_REQUIREMENTS = ("typer", "rich", "keyring", "platformdirs")

MISSING_CLI_MESSAGE = "paysdk: the command line needs the cli extra ({missing} not installed): {hint}"


def missing_cli_requirements() -> list[str]:
    """The ``cli`` extra's modules that cannot be imported here (found without importing them)."""
    return [name for name in CLI_REQUIREMENTS if not _importable(name)]


def _importable(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):  # a finder that refuses the name, or a module without a spec
        return False


def run() -> None:
    """Run the ``paysdk`` command, or say in one line which extra it needs."""
    missing = missing_cli_requirements()
    if missing:
        from paysdk._version import install_hint  # the distribution's name (D420), on this path only

        message = MISSING_CLI_MESSAGE.format(missing=", ".join(missing), hint=install_hint("cli"))
        sys.stderr.write(message + "\n")
        raise SystemExit(1)
    from paysdk_cli.main import run as run_cli

    run_cli()
