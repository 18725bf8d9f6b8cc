#!/usr/bin/env python3
"""Measure the reference server's import structure: modules, lines, largest files, import cycles.

The graph is grimp's (the one import-linter checks), so it holds every import: module level, inside
functions and under ``TYPE_CHECKING``. A cycle is a strongly connected component of that graph with more
than one module (Tarjan's algorithm); the script prints those that hold a server module, largest first.
Run it with the source tree to measure first on ``PYTHONPATH``::

    PYTHONPATH=$PWD/src python scripts/import_graph.py
    PYTHONPATH=$PWD/src python scripts/import_graph.py --no-type-checking   # imports that run only
    PYTHONPATH=$PWD/src python scripts/import_graph.py --top 20
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import grimp

PACKAGE = "paysdk"
SERVER = "paysdk.server"


def strongly_connected(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every strongly connected component of ``edges`` (Tarjan's algorithm, iterative: no deep recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def module_file(module: str) -> Path | None:
    """The source file of ``module`` (found, not imported), or ``None``."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--top", type=int, default=10, help="how many of the largest files to list (10)")
    parser.add_argument(
        "--no-type-checking",
        action="store_true",
        help="leave out imports under `if TYPE_CHECKING:` (those that never run)",
    )
    args = parser.parse_args(argv)

    graph = grimp.build_graph(PACKAGE, exclude_type_checking_imports=args.no_type_checking, cache_dir=None)
    server = sorted(m for m in graph.modules if m == SERVER or m.startswith(SERVER + "."))
    root = module_file(PACKAGE)
    base = root.parent.parent if root is not None else Path.cwd()
    lines: dict[str, int] = {}
    for module in server:
        path = module_file(module)
        if path is not None:
            lines[module] = len(path.read_text(encoding="utf-8").splitlines())
    print(f"source: {root.parent if root is not None else '?'}")
    print(f"server modules: {len(server)}  lines: {sum(lines.values())}")
    print(f"largest {args.top} files:")
    for module, count in sorted(lines.items(), key=lambda item: (-item[1], item[0]))[: args.top]:
        path = module_file(module)
        shown = path.relative_to(base) if path is not None else module
        print(f"  {count:6d}  {shown}")

    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    cycles = [c for c in strongly_connected(edges) if len(c) > 1 and any(m in lines for m in c)]
    cycles.sort(key=lambda c: (-len(c), c))
    in_cycles = sum(1 for c in cycles for m in c if m in lines)
    kind = "run-time imports" if args.no_type_checking else "all imports, TYPE_CHECKING included"
    print(f"import cycles holding server modules ({kind}): {len(cycles)}; their server modules: {in_cycles}")
    for component in cycles:
        print(f"  cycle of {len(component)} modules:")
        for module in component:
            print(f"    {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
