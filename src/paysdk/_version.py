"""The package's version and its names outside Python, written here only.

pyproject.toml reads ``__version__``; ``paysdk --version`` prints it. :data:`DISTRIBUTION` is the name
on the package index (what ``pip install`` takes; the import packages stay ``paysdk`` and
``paysdk_cli``, the command ``paysdk``), and every install hint the code prints is built from it (D420).
"""

__version__ = "0.1.0"

#: The distribution name on the package index (pyproject.toml's ``[project] name``; D420).
DISTRIBUTION = "paysdk-toolkit"


def install_hint(extra: str) -> str:
    """``pip install '<distribution>[extra]'``: the one line the missing-extra messages name."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"
