"""Where ``POST /transactions`` spends its time among the server's ASGI layers: the ``make bench`` row
"Server POST /transactions vs bare Starlette" (goal >= 0.5x) measured again with each layer of
:mod:`paysdk.server.asgi` left out of the app in turn, and with all of them left out.

Every variant is the reference server as ``make bench`` serves it (``benchmarks._servers.serve``, uvicorn,
pinned to CPU 0, a fresh SQLite file), built without the named layers (``PAYSDK_BENCH_DROP``, read by
:func:`benchmarks._servers.reference_app`). The rounds are interleaved: the bare endpoint, then every
variant, again and again, each one :func:`benchmarks.run.throughput` (3,000 requests, 16 connections,
the load generator on CPU 1). Shown: the median ratio of each variant to the bare endpoint and its
rounds. Round to round, one variant moves by about +-0.03 on a two-core machine: a layer's own figure
is an order of magnitude, and only differences well above that mean anything (docs/architecture.md,
"How the hot path stays fast").

``python -m benchmarks.bench_layers [ROUNDS]`` (default 7). Not part of ``make bench``: it answers a
question about the row, it sets no goal.
"""

from __future__ import annotations

import statistics
import sys
from contextlib import ExitStack

import httpx

from benchmarks._servers import serve
from benchmarks.run import TOKEN, throughput

#: The layers of :mod:`paysdk.server.asgi`, by class name, as :func:`paysdk.server.app.create_app` stacks
#: them (outermost first).
LAYERS = (
    "RequestId",
    "Deprecation",
    "BodyBoundsLayer",
    "HostGuard",
    "HookCors",
    "RequestLog",
    "Faults",
    "Idempotency",
)
SLUG = "bench-store"


def variants() -> dict[str, tuple[str, ...]]:
    """Each variant's name and the layers it leaves out."""
    return {
        "as served": (),
        **{f"without {layer}": (layer,) for layer in LAYERS},
        "without all eight": LAYERS,
    }


def measure(rounds: int) -> dict[str, list[float]]:
    """Requests per second of the bare endpoint and of every variant, per round (interleaved)."""
    with ExitStack() as stack:
        urls = {"bare": stack.enter_context(serve("starlette"))}
        tokens = {"bare": TOKEN}
        for name, dropped in variants().items():
            layers = {"PAYSDK_BENCH_DROP": ",".join(dropped)}
            url = stack.enter_context(serve("reference", workers_env=layers))
            created = httpx.post(url + "/_sandbox/clients", json={"slug": SLUG}, timeout=60)
            created.raise_for_status()
            urls[name], tokens[name] = url, str(created.json()["sandboxToken"])
        runs: dict[str, list[float]] = {name: [] for name in urls}
        for _ in range(rounds):
            for name, url in urls.items():
                runs[name].append(throughput(url, tokens[name], SLUG))
    return runs


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    runs = measure(rounds)
    bare = statistics.median(runs.pop("bare"))
    print(f"{'variant':<28}{'req/s':>8}{'vs bare':>9}  rounds (req/s)")
    print(f"{'bare Starlette':<28}{bare:>8.0f}{1:>8.3f}x")
    for name, values in runs.items():
        median = statistics.median(values)
        shown = " ".join(f"{value:.0f}" for value in values)
        print(f"{name:<28}{median:>8.0f}{median / bare:>8.3f}x  {shown}")


if __name__ == "__main__":
    main()
