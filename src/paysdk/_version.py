"""The package's version, written here only: pyproject.toml reads it, ``paysdk --version`` prints it."""

__version__ = "0.1.0"
