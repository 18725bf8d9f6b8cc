"""examples/merchant_suite, a merchant's own suite on the paysdk fixtures, run as its author would: pytest
in a subprocess, in process (asyncio strict mode, its pytest.ini) and over a socket (auto mode), under
``python -X dev -W error::ResourceWarning`` as CI runs the other examples."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parents[2] / "examples" / "merchant_suite"


def _test_count() -> int:
    count = 0
    for path in SUITE.glob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        count += sum(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
            for node in tree.body
        )
    return count


@pytest.mark.parametrize(
    "options",
    [[], ["--paysdk-server=socket", "-o", "asyncio_mode=auto"]],
    ids=["inprocess-strict", "socket-auto"],
)
def test_the_example_suite_passes(options: list[str]) -> None:
    expected = _test_count()
    assert expected >= 8
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAYSDK_", "PYTEST_"))}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-W",
            "error::pytest.PytestUnraisableExceptionWarning",
            *options,
        ],
        cwd=SUITE,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "ResourceWarning" not in done.stdout + done.stderr  # every client and socket closed
    summary = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"=+ {expected} passed in [\d.]+s( \([\d:]+\))? =+", summary), summary
