"""The bare SDK's installed size beside stripe's and openai's (issue 21 item 3, D423-D424).

The wheel is built as CI builds it (``python -m build``, :mod:`tests.packaging._build`), then installed
with no extras into a fresh virtual environment (``python -m venv --without-pip``; this interpreter's
pip installs into it, so pip itself is not counted). ``stripe`` and ``openai`` are installed from the
package index into fresh environments the same way. The figure is the sum of the sizes of the files
under each environment's ``site-packages`` (the byte code pip compiles at install included, as a user
gets it). Goal: ours at most stripe's.

``python -m benchmarks.bench_footprint`` runs it alone; ``make bench`` runs it with the others. pip's
cache makes a second run take seconds; the first downloads the three packages' dependencies.
"""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent

#: The packages ours is compared with, installed with no extras.
OTHERS = ("stripe", "openai")


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


def installed_sizes() -> tuple[dict[str, int], float]:
    """Bytes installed by ``paysdk`` (the built wheel, no extras) and by each of :data:`OTHERS`, and the
    seconds the whole measurement took."""
    started = time.perf_counter()
    helpers = _build_helpers()
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="paysdk-bench-footprint-") as folder:
        tmp = Path(folder)
        wheel: Path = helpers.build_dist(tmp / "dist").wheel
        for name, requirement in (("paysdk", str(wheel)), *((other, other) for other in OTHERS)):
            venv = tmp / f"venv-{name}"
            helpers.make_venv(venv, requirement)
            sizes[name] = site_packages_bytes(venv)
    return sizes, time.perf_counter() - started


def footprint_rows() -> list[tuple[str, str, str, str]]:
    """The ``make bench`` row: ours, stripe's and openai's installed sizes; ours / stripe's."""
    sizes, _ = installed_sizes()
    mb = {name: size / 1e6 for name, size in sizes.items()}
    return [
        (
            "bare SDK installed size vs stripe (openai)",
            f"ours {mb['paysdk']:.1f} vs stripe {mb['stripe']:.1f} (openai {mb['openai']:.1f}) MB",
            f"{sizes['paysdk'] / sizes['stripe']:.2f}x",
            "<= 1.00x",
        )
    ]


def main() -> None:
    sizes, seconds = installed_sizes()
    for name, size in sizes.items():
        print(f"{name:<8} {size / 1e6:8.1f} MB")
    ratio = sizes["paysdk"] / sizes["stripe"]
    print(f"ours / stripe {ratio:.2f}x (goal <= 1.00x); measured in {seconds:.0f} s")


if __name__ == "__main__":
    main()
