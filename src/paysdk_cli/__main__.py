"""``python -m paysdk_cli``: the same as the ``paysdk`` command."""

from paysdk_cli._entry import run

run()
