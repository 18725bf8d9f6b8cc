"""File paths the SDK accepts from its user (token stores, callback dedup stores)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["user_path"]


def user_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as the user meant it: a leading ``~`` or ``~user`` expanded to that home directory,
    and a relative path made absolute against the working directory of this call (so a later
    ``os.chdir`` does not move the file). Environment variables such as ``$HOME`` are not expanded."""
    return Path(os.path.abspath(Path(path).expanduser()))
