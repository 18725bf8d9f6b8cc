"""``python -m paysdk_cli``: the same as the ``paysdk`` command."""

from paysdk_cli.main import run

run()
