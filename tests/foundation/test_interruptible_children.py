"""The commands the tests start stop on Ctrl-C however pytest was started (``tests/conftest.py``,
``_interruptible_children``).

A shell starts a background command (``make test &``, ``nohup make test``, a script's ``cmd &``) with
``SIGINT`` ignored, and every child inherits that. A Python process started with it ignored never raises
``KeyboardInterrupt``, so ``paysdk callbacks listen`` and ``paysdk sandbox tail`` ran past the tests'
Ctrl-C until their 120 s deadline: 23 failures in one such run of the suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Exits 0 when the process started with Python's own ``SIGINT`` handler (``KeyboardInterrupt``).
_CHILD = (
    "import signal, sys; sys.exit(0 if signal.getsignal(signal.SIGINT) is signal.default_int_handler else 1)"
)


def test_a_child_of_the_tests_starts_with_ctrl_c_raising_keyboard_interrupt() -> None:
    assert subprocess.run([sys.executable, "-c", _CHILD], check=False, timeout=60).returncode == 0


def test_pytest_started_with_sigint_ignored_still_gives_its_children_ctrl_c() -> None:
    """The test above, in a pytest started as a background command starts it (``SIGINT`` ignored)."""

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    probe = [sys.executable, "-c", _CHILD]
    assert subprocess.run(probe, preexec_fn=ignore_sigint, check=False, timeout=60).returncode == 1
    test = test_a_child_of_the_tests_starts_with_ctrl_c_raising_keyboard_interrupt.__name__
    node = f"{Path(__file__).relative_to(ROOT)}::{test}"
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node],
        cwd=ROOT,
        env=env,
        preexec_fn=ignore_sigint,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout
