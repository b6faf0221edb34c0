"""Per-call overhead of privopt.graphs.Graph over the C++ Dijkstra kernel alone.

Runs on the LR-Geo Rome grid (1,331 cells, 4,764 road edges) when ``--rome DIR`` is given, else
on a generated 37 × 36 grid road network of the same size. For each search kind it measures,
in the same process:

- ``kernel``: the C++ kernel alone (a C++ timing loop over the same sources, no Python);
- ``Graph.distances``: one Python call per search on the prepared graph;
- ``shortest_paths``: the one-shot wrapper (validates and symmetrises the graph per call).

and prints mean microseconds per search, the overhead ratio ``Graph / kernel − 1`` (target
≤ 10 %, issue 13 item 5) and the peak RSS. Usage::

    python bench/graph_bench.py [--rome ../shared/data/rome] [--reps 2000]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
from privopt.graphs import Graph, shortest_paths


def _rome_graph(directory: Path) -> Graph:
    from privopt.geo import load_rome_grid

    return load_rome_grid(directory).road


def _grid_graph(rows: int = 37, cols: int = 36, cell_km: float = 0.5) -> Graph:
    idx = np.arange(rows * cols).reshape(rows, cols)
    u = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    v = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    rng = np.random.default_rng(0)
    length = cell_km * rng.uniform(1.0, 1.5, u.size)  # roads longer than the straight line
    return Graph.from_edges(rows * cols, u, v, length)


def _per_call(fn, sources: np.ndarray, reps: int) -> float:
    start = time.perf_counter()
    for r in range(reps):
        fn(int(sources[r % sources.size]))
    return (time.perf_counter() - start) / reps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rome", type=Path, help="directory with the Rome grid CSV files")
    ap.add_argument("--reps", type=int, default=2000, help="searches per measurement")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (median kept)")
    args = ap.parse_args(argv)
    g = _rome_graph(args.rome) if args.rome else _grid_graph()
    csr = g.csr  # the one-shot wrapper gets the same (already symmetric) arcs
    sources = np.random.default_rng(1).integers(0, g.n_nodes, size=256)
    kinds = {
        "ball Γ = 20 km (LR set, all nodes)": {"cutoff": 20.0, "max_nodes": None},
        "ball Γ = 2 km": {"cutoff": 2.0, "max_nodes": None},
        "L = 20 nearest": {"cutoff": 20.0, "max_nodes": 20},
    }
    print(f"graph: {g!r}; load: {Path('/proc/loadavg').read_text().split()[:3]}", file=sys.stderr)
    print("| search | kernel µs | Graph.distances µs | overhead | shortest_paths µs |")
    print("|---|---|---|---|---|")
    for label, kw in kinds.items():
        kernel, handle, oneshot = [], [], []
        for _ in range(args.rounds):  # interleaved, so that load changes hit all three alike
            kernel.append(g.kernel_seconds(sources, reps=args.reps, **kw))
            handle.append(_per_call(lambda s, kw=kw: g.distances(s, **kw), sources, args.reps))
            oneshot.append(
                _per_call(
                    lambda s, kw=kw: shortest_paths(csr, s, cutoff=kw["cutoff"]),
                    sources,
                    max(1, args.reps // 20),
                )
            )
        k, h, o = np.median(kernel), np.median(handle), np.median(oneshot)
        print(f"| {label} | {k * 1e6:.1f} | {h * 1e6:.1f} | {h / k - 1:+.1%} | {o * 1e6:.1f} |")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS: {rss:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
