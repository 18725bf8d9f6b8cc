"""The bare SDK's installed size beside stripe's and openai's (issue 21 item 3, D423-D424).

The wheel is built as CI builds it (``python -m build``, :mod:`tests.packaging._build`), then installed
with no extras into a fresh virtual environment (``python -m venv --without-pip``; this interpreter's
pip installs into it, so pip itself is not counted). ``stripe`` and ``openai`` are installed from the
package index into fresh environments the same way. The figure is the sum of the sizes of the files
under each environment's ``site-packages`` (the byte code pip compiles at install included, as a user
gets it). Goal: ours at most stripe's.

In the same environments, the import cost (issue 21 item 4, D462): the median wall time of a fresh
interpreter running ``from paysdk import Client`` (ours), ``import stripe``, ``import openai`` and, as
the floor ours stands on, ``import httpx, pydantic`` (in ours: the same versions of both). Rounds are
interleaved (each statement once per round, after one warm-up each) with a clean environment (no
``PYTHONPATH``: the source tree never shadows what was installed), so drift hits all four alike. Shown
beside the others, with ours over httpx+pydantic; the goal on that ratio is ``make bench``'s own row.

``python -m benchmarks.bench_footprint`` runs it alone; ``make bench`` runs it with the others. pip's
cache makes a second run take seconds; the first downloads the three packages' dependencies.
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent

#: The packages ours is compared with, installed with no extras.
OTHERS = ("stripe", "openai")

#: The import-cost statements: label -> (the environment it runs in, the statement).
IMPORTS: dict[str, tuple[str, str]] = {
    "paysdk": ("paysdk", "from paysdk import Client"),
    "stripe": ("stripe", "import stripe"),
    "openai": ("openai", "import openai"),
    "httpx+pydantic": ("paysdk", "import httpx, pydantic"),
}
#: Rounds of the import-cost measurement (the median is kept).
IMPORT_RUNS = 15


def _build_helpers() -> ModuleType:
    """``tests/packaging/_build.py`` (what the packaging tests build and install with), loaded by path:
    ``tests`` is no package, and the name ``packaging`` is the PyPA library's."""
    name = "paysdk_bench_build"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "packaging" / "_build.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before running it: its dataclass looks its module up
        spec.loader.exec_module(module)
    return sys.modules[name]


def site_packages_bytes(venv: Path) -> int:
    """The total size of the files under the environment's ``site-packages``."""
    relative = Path(sysconfig.get_path("purelib", vars={"base": ".", "platbase": "."}))
    site = venv / relative
    if not site.is_dir():
        raise RuntimeError(f"no site-packages at {site}")
    return sum(path.stat().st_size for path in site.rglob("*") if path.is_file() and not path.is_symlink())


def import_seconds(venvs: dict[str, Path], runs: int = IMPORT_RUNS) -> dict[str, float]:
    """The median wall time of a fresh interpreter of each statement's environment (:data:`IMPORTS`)
    running it; rounds interleaved, one warm-up each, clean environment variables."""
    env = _build_helpers().clean_env()
    commands = {
        label: [str(venvs[venv] / "bin" / "python"), "-c", statement]
        for label, (venv, statement) in IMPORTS.items()
    }

    def timed(command: list[str]) -> float:
        started = time.perf_counter()
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - started

    for command in commands.values():
        timed(command)  # warm-up: page cache
    seconds: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, command in commands.items():
            seconds[label].append(timed(command))
    return {label: statistics.median(values) for label, values in seconds.items()}


def measure(runs: int = IMPORT_RUNS) -> tuple[dict[str, int], dict[str, float], float]:
    """Bytes installed by ``paysdk`` (the built wheel, no extras) and by each of :data:`OTHERS`, the
    import costs in those same environments (:func:`import_seconds`), and the seconds it all took."""
    started = time.perf_counter()
    helpers = _build_helpers()
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="paysdk-bench-footprint-") as folder:
        tmp = Path(folder)
        wheel: Path = helpers.build_dist(tmp / "dist").wheel
        venvs: dict[str, Path] = {}
        for name, requirement in (("paysdk", str(wheel)), *((other, other) for other in OTHERS)):
            venv = venvs[name] = tmp / f"venv-{name}"
            helpers.make_venv(venv, requirement, compile_bytecode=True)  # as a user's pip installs
            sizes[name] = site_packages_bytes(venv)
        imports = import_seconds(venvs, runs)
    return sizes, imports, time.perf_counter() - started


def import_row(imports: dict[str, float]) -> tuple[str, str, str, str]:
    """The ``make bench`` row of the import costs: ours, stripe's, openai's, httpx+pydantic's."""
    ms = {label: value * 1000 for label, value in imports.items()}
    return (
        "import cost in clean venvs (ours / httpx+pydantic)",
        f"paysdk Client {ms['paysdk']:.0f} ms, stripe {ms['stripe']:.0f} ms, openai {ms['openai']:.0f} ms"
        f" (httpx+pydantic {ms['httpx+pydantic']:.0f} ms)",
        f"{imports['paysdk'] / imports['httpx+pydantic']:.2f}x",
        "(shown)",
    )


def footprint_rows() -> list[tuple[str, str, str, str]]:
    """The ``make bench`` rows: ours, stripe's and openai's installed sizes, ours / stripe's; and the
    import costs measured in the same environments."""
    sizes, imports, _ = measure()
    mb = {name: size / 1e6 for name, size in sizes.items()}
    return [
        (
            "bare SDK installed size vs stripe (openai)",
            f"ours {mb['paysdk']:.1f} vs stripe {mb['stripe']:.1f} (openai {mb['openai']:.1f}) MB",
            f"{sizes['paysdk'] / sizes['stripe']:.2f}x",
            "<= 1.00x",
        ),
        import_row(imports),
    ]


def main() -> None:
    sizes, imports, seconds = measure()
    for name, size in sizes.items():
        print(f"{name:<8} {size / 1e6:8.1f} MB")
    ratio = sizes["paysdk"] / sizes["stripe"]
    print(f"ours / stripe {ratio:.2f}x (goal <= 1.00x)")
    for label, (_, statement) in IMPORTS.items():
        print(f"{label:<15} {imports[label] * 1000:6.0f} ms  python -c {statement!r}")
    _, figures, import_ratio, _ = import_row(imports)
    print(f"import cost in clean venvs: {figures}; ours / httpx+pydantic {import_ratio}")
    print(f"measured in {seconds:.0f} s")


if __name__ == "__main__":
    main()
