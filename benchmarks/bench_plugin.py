"""The pytest plugin's cost (issue 21 item 7, D401-D402).

Figures:

* socket vs in process: ``examples/merchant_suite`` (a merchant's own suite on the ``paysdk_*``
  fixtures: payment links paid, callbacks waited for, the virtual clock, the wallet) run by pytest in a
  subprocess with ``--paysdk-server=socket`` and with the default in-process server, interleaved rounds.
  A test's time is its setup, call and teardown, leaving out the session's server start (the first
  test's setup) and stop (the last test's teardown), which a suite pays once; each test's median over
  the rounds is summed. Goal: socket <= 1.5x in process.
* the plugin's own cost per test: a generated suite of tests that do nothing, half of them asking for
  ``paysdk_client`` (so the reset, a callback inbox, a fresh merchant and a client are made and closed
  around them) and half asking for nothing, the two kinds interleaved; the median time of the first kind
  minus the median of the second, per mode. Goal < 10 ms.

``python -m benchmarks.bench_plugin`` runs it alone; ``make bench`` runs it with the others (~1.5 minutes).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "examples" / "merchant_suite"
# Each test's median of 4 interleaved rounds: one slow round under load moves nothing.
ROUNDS = int(os.environ.get("PAYSDK_BENCH_PLUGIN_ROUNDS", "4"))
COST_TESTS = 60

# Interleaved (a plain test, a test with the fixtures, ...), so that a change in the machine's load
# during the run weighs on both kinds alike; a plain test last, so that the session's teardown (the
# server's stop, left out) falls on no test of the fixtures.
_PAIR = """
def test_plain_{index}():
    pass


def test_with_the_plugin_{index}(paysdk_client):
    pass

"""
_COST_SUITE = (
    "".join(_PAIR.format(index=index) for index in range(COST_TESTS)) + "\ndef test_plain_last():\n    pass\n"
)


def _run(directory: Path, mode: str) -> list[dict[str, Any]]:
    """Run pytest in ``directory`` with the server in ``mode``; the phases of each test, in run order."""
    with tempfile.TemporaryDirectory(prefix="paysdk-bench-plugin-") as scratch:
        times = Path(scratch) / "times.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PAYSDK_", "PYTEST_"))}
        env["PAYSDK_BENCH_TIMES"] = str(times)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += ["-p", "benchmarks._pytest_timer", f"--paysdk-server={mode}", "-o", "asyncio_mode=auto"]
        done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise SystemExit(
                f"pytest in {directory} ({mode}) failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
            )
        rows: list[dict[str, Any]] = json.loads(times.read_text(encoding="utf-8"))
    return rows


def _per_test(rows: list[dict[str, Any]]) -> list[float]:
    """Each test's seconds, without the session's server start (first setup) and stop (last teardown)."""
    seconds = []
    for index, row in enumerate(rows):
        phases = dict(row)
        if index == 0:
            phases["setup"] = 0.0
        if index == len(rows) - 1:
            phases["teardown"] = 0.0
        seconds.append(sum(phases.get(when, 0.0) for when in ("setup", "call", "teardown")))
    return seconds


def bench_suite(rounds: int = ROUNDS) -> dict[str, Any]:
    """Interleaved rounds of the merchant suite in both modes: each test's median over the rounds, summed."""
    seconds: dict[str, dict[str, list[float]]] = {"inprocess": {}, "socket": {}}
    for _ in range(rounds):
        for mode, tests in seconds.items():
            rows = _run(SUITE, mode)
            for row, spent in zip(rows, _per_test(rows), strict=True):
                tests.setdefault(row["test"], []).append(spent)
    inprocess, socket = (sum(statistics.median(t) for t in seconds[mode].values()) for mode in seconds)
    return {
        "tests": len(seconds["inprocess"]),
        "inprocess": inprocess,
        "socket": socket,
        "ratio": socket / inprocess,
    }


def bench_cost() -> dict[str, float]:
    """Milliseconds the fixtures add to a test that does nothing, per mode."""
    costs = {}
    with tempfile.TemporaryDirectory(prefix="paysdk-bench-plugin-suite-") as directory:
        suite = Path(directory)
        (suite / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
        (suite / "test_cost.py").write_text(_COST_SUITE)
        for mode in ("inprocess", "socket"):
            rows = _run(suite, mode)
            per_test = dict(zip((row["test"] for row in rows), _per_test(rows), strict=True))
            plain = [s for test, s in per_test.items() if "test_plain" in test]
            fixtures = [s for test, s in per_test.items() if "test_with_the_plugin" in test][
                1:
            ]  # not the start
            costs[mode] = (statistics.median(fixtures) - statistics.median(plain)) * 1000
    return costs


def plugin_rows() -> list[tuple[str, str, str, str]]:
    """The figures as rows of ``benchmarks/run.py``'s table."""
    suite = bench_suite()
    cost = bench_cost()
    return [
        (
            f"pytest plugin: merchant suite ({suite['tests']} tests) socket vs in-process",
            f"socket {suite['socket']:.2f} vs in-process {suite['inprocess']:.2f} s",
            f"{suite['ratio']:.2f}x",
            "<= 1.5x",
        ),
        (
            "pytest plugin: own cost per test",
            f"in-process {cost['inprocess']:.1f}, socket {cost['socket']:.1f} ms",
            "",
            "< 10 ms",
        ),
    ]


def main() -> None:
    print(json.dumps({"suite": bench_suite(), "cost_ms": bench_cost()}, indent=2))


if __name__ == "__main__":
    main()
