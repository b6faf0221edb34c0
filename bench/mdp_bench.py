"""Metric-DP benchmarks (issue 3 item 7): privopt's solvers against plain HiGHS, same run.

Every method runs in its own subprocess (so that peak RSS is per method and a time limit can
stop it); tables are printed in Markdown. Timings are wall clock on this machine.

    python bench/mdp_bench.py paper   [--data DIR] [--instances 2] [--methods ...]
    python bench/mdp_bench.py scaling [--sizes 250 500 1000 2000] [--k 100 N]
    python bench/mdp_bench.py expmech [--eps 2 4 6 8 10]

``paper``: the four 500-record settings (K = 100 outputs as in the authors' code, ε = 10/km,
η = 2; text uses the MiniLM embeddings with η = 1.0 since its distances are in [0, 1.4]),
next to the paper's Table 3 times. ``scaling``: Rome road nodes (or the grid without data).
``expmech``: utility loss of the optimal LP vs ExpMech (paper Fig. 7).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import time
from pathlib import Path

import numpy as np

PAPER_TABLE3 = {"road": "290.7 s (k-m-DV, 16 cores, gap 0.01)",
                "grid": "161.4 s", "text": "27.2 s", "synthetic": "185.1 s"}


def make_problem(dataset: str, n: int, k: int | None, seed: int, data: Path | None,
                 eps: float = 10.0, eta: float | None = None):
    from privopt.mdp import (MDPProblem, gaussian_3d, load_rome_nodes, load_text_embeddings,
                             rome_grid)

    out = None if k is None or k >= n else int(k)
    if dataset == "grid":
        pts = rome_grid()
        return MDPProblem(pts[:n], epsilon=eps, eta=eta or 2.0, outputs=out, seed=seed)
    if dataset == "synthetic":
        return MDPProblem(gaussian_3d(n, seed=seed), epsilon=eps, eta=eta or 2.0, outputs=out,
                          seed=seed)
    if dataset == "road":
        if data is None:
            raise SystemExit("road needs --data (the shared data folder)")
        pts = load_rome_nodes(data / "rome" / "nodes_rome.csv", n, seed=seed)
        return MDPProblem(pts, epsilon=eps, eta=eta or 2.0, metric="haversine", outputs=out,
                          seed=seed)
    if dataset == "text":
        if data is None:
            raise SystemExit("text needs --data (the shared data folder)")
        _, emb = load_text_embeddings(data / "text", n, seed=seed)
        return MDPProblem(emb, epsilon=eps, eta=eta or 1.0, outputs=out, seed=seed)
    raise SystemExit(f"unknown dataset {dataset}")


def _worker(queue, spec, method, opts):
    from privopt.mdp import solve

    try:
        prob = make_problem(**spec)
        t = time.perf_counter()
        pm = solve(prob, method, **opts)
        elapsed = time.perf_counter() - t
        v = pm.verify(prob)
        comps = pm.summary.get("components", [])
        queue.put({"ok": True, "time": elapsed, "loss": pm.expected_loss,
                   "lb": pm.lower_bound, "viol": v.max_relative_violation,
                   "iters": sum(c.get("iterations", 0) for c in comps),
                   "rows": sum(c.get("rows", c.get("pool_rows_used", 0)) for c in comps),
                   "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                   "n_edges": len(prob.edges), "K": prob.n_outputs})
    except Exception as exc:  # reported in the table
        queue.put({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:80]})


def run_one(spec: dict, method: str, opts: dict, limit: float) -> dict:
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_worker, args=(q, spec, method, opts))
    t = time.perf_counter()
    p.start()
    p.join(limit)
    if p.is_alive():
        p.terminate()
        p.join()
        return {"ok": False, "error": f"time limit {limit:.0f} s", "time": limit}
    res = q.get() if not q.empty() else {"ok": False, "error": f"exit {p.exitcode}"}
    res.setdefault("wall", time.perf_counter() - t)
    return res


METHODS = {
    "plain-highs": ("lp", {"row_generation": False}),
    "rowgen": ("lp", {}),
    "benders": ("benders", {"rel_gap": 1e-4}),
    "expmech": ("expmech", {}),
}


def _fmt(res: dict, ref: dict | None) -> list[str]:
    if not res["ok"]:
        return [res["error"], "", "", "", "", ""]
    speed = (f"{ref['time'] / res['time']:.1f}×" if ref and ref.get("ok") else "")
    return [f"{res['time']:.2f}", speed, f"{res['loss']:.10g}",
            f"{res['viol']:.1e}", f"{res['iters']}", f"{res['rss_mb']:.0f}"]


def table(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def cmd_paper(args) -> None:
    rows = []
    for ds in args.datasets:
        for seed in range(args.instances):
            spec = dict(dataset=ds, n=500, k=100, seed=seed, data=args.data)
            ref = run_one(spec, *METHODS["plain-highs"], args.limit)
            rows.append([ds, str(seed), "plain HiGHS", *_fmt(ref, None), PAPER_TABLE3[ds]])
            for m in args.methods:
                res = run_one(spec, *METHODS[m], args.limit)
                rows.append([ds, str(seed), m, *_fmt(res, ref), ""])
            print(table(rows[-1 - len(args.methods):], HEADER + ["paper"]), flush=True)
    print("\n## paper settings (N = 500, K = 100, ε = 10, η = 2)\n")
    print(table(rows, HEADER + ["paper (Table 3, BD k-m-DV)"]))


HEADER = ["dataset", "seed", "method", "time (s)", "speed-up vs plain", "expected loss",
          "max rel. viol.", "LP iters", "peak RSS (MB)"]


def cmd_scaling(args) -> None:
    rows = []
    ds = "road" if args.data else "grid"
    for n in args.sizes:
        for k in args.k:
            kk = n if k == "N" else int(k)
            spec = dict(dataset=ds, n=n, k=kk, seed=0, data=args.data, eps=args.eps)
            ref = run_one(spec, *METHODS["plain-highs"], args.limit)
            rows.append([f"{ds} N={n}", f"K={kk}", "plain HiGHS", *_fmt(ref, None)])
            for m in args.methods:
                res = run_one(spec, *METHODS[m], args.limit)
                rows.append([f"{ds} N={n}", f"K={kk}", m, *_fmt(res, ref)])
            print(table(rows[-1 - len(args.methods):], HEADER), flush=True)
    print("\n## scaling\n")
    print(table(rows, HEADER))


def cmd_expmech(args) -> None:
    rows = []
    for ds in args.datasets:
        for eps in args.eps:
            spec = dict(dataset=ds, n=args.n, k=args.kout, seed=0, data=args.data, eps=eps)
            lp = run_one(spec, *METHODS["rowgen"], args.limit)
            em = run_one(spec, *METHODS["expmech"], args.limit)
            if lp["ok"] and em["ok"]:
                rows.append([ds, f"{eps:g}", f"{lp['loss']:.6g}", f"{em['loss']:.6g}",
                             f"{100 * (1 - lp['loss'] / em['loss']):.1f} %",
                             f"{lp['time']:.2f}"])
            else:
                rows.append([ds, f"{eps:g}", lp.get("error", ""), em.get("error", ""), "", ""])
            print(rows[-1], flush=True)
    print("\n## utility: optimal LP vs ExpMech (paper Fig. 7: 47 %, 47 %, 22 %, 24 % lower)\n")
    print(table(rows, ["dataset", "ε", "LP loss", "ExpMech loss", "LP lower by",
                       "LP time (s)"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["paper", "scaling", "expmech"])
    ap.add_argument("--data", type=Path, default=None, help="shared data folder")
    ap.add_argument("--datasets", nargs="+", default=["grid", "synthetic", "road", "text"])
    ap.add_argument("--methods", nargs="+", default=["rowgen", "benders"],
                    choices=list(METHODS))
    ap.add_argument("--instances", type=int, default=2)
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    ap.add_argument("--k", nargs="+", default=["100", "N"])
    ap.add_argument("--eps", type=float, nargs="+", default=[2, 4, 6, 8, 10])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--kout", type=int, default=100)
    ap.add_argument("--limit", type=float, default=600.0, help="seconds per method run")
    args = ap.parse_args(argv)
    if args.mode == "scaling" and len(args.eps) > 1:
        args.eps = 10.0
    elif args.mode == "scaling":
        args.eps = args.eps[0]
    if args.data is None:
        args.datasets = [d for d in args.datasets if d in ("grid", "synthetic")]
    {"paper": cmd_paper, "scaling": cmd_scaling, "expmech": cmd_expmech}[args.mode](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
