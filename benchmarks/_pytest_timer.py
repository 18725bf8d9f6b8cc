"""A pytest plugin for ``benchmarks/bench_plugin.py``: writes each test's setup, call and teardown
seconds, in run order, as JSON to the file named by ``PAYSDK_BENCH_TIMES`` when the session ends."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

_times: dict[str, dict[str, float]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep the duration of each phase of each test."""
    _times.setdefault(report.nodeid, {})[report.when] = report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the durations."""
    target = os.environ.get("PAYSDK_BENCH_TIMES")
    if target:
        rows = [{"test": test, **phases} for test, phases in _times.items()]
        Path(target).write_text(json.dumps(rows), encoding="utf-8")
