"""Comparison of census mechanisms: L1 error per level, consistency violations, runtime, a plot.

The metrics compare releases with the confidential counts: they are for the data curator's
evaluation and must not be published alongside a release.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privopt.census.hierarchy import CensusCounts
from privopt.census.mechanisms import MECHANISMS, measure_chain, measure_counts, measure_cumulative
from privopt.errors import InvalidInput, SolverLimit
from privopt.report import close_figure, markdown_table, new_figure, save_figure

__all__ = ["KIND", "run_comparison", "comparison_table", "plot_l1_per_level"]

#: Which measurements each mechanism post-processes.
KIND = {
    "M_H": "counts",
    "M_H^r": "counts",
    "M_H^dp": "counts",
    "TopDown": "counts",
    "M_c^r": "cumulative",
    "M_c^dp": "cumulative",
    "M_c^ch": "chain",
}


def run_comparison(
    data: CensusCounts,
    epsilon: float,
    mechanisms: Sequence[str] = ("M_H^dp", "M_c^dp", "M_c^ch", "TopDown"),
    *,
    runs: int = 1,
    seed: int = 0,
    chain_noise_scale: str = "strict",
    qp_time_limit: float | None = 600.0,
) -> list[dict[str, Any]]:
    """Run mechanisms ``runs`` times; mechanisms of one kind share each run's measurements
    (same noise, as in the paper's comparison). Returns one dict per mechanism with mean L1 per
    level (``l1``, shape (L,)), its std, mean #CV (``cv``), mean seconds (``seconds``,
    post-processing + noise) and ``ok`` (False when a QP baseline hit ``qp_time_limit``)."""
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown:
        raise InvalidInput(f"unknown mechanisms {unknown}; choose from {sorted(MECHANISMS)}")
    acc: dict[str, dict[str, list]] = {m: {"l1": [], "cv": [], "t": []} for m in mechanisms}
    skipped: set[str] = set()
    for run in range(runs):
        rng = np.random.default_rng([seed, run])
        meas: dict[str, Any] = {}
        for m in mechanisms:
            if m in skipped:
                continue
            kind = KIND[m]
            if kind not in meas:
                start = time.perf_counter()
                if kind == "counts":
                    meas[kind] = measure_counts(data, epsilon, rng=rng)
                elif kind == "cumulative":
                    meas[kind] = measure_cumulative(data, epsilon, rng=rng)
                else:
                    meas[kind] = measure_chain(
                        data, epsilon, rng=rng, chain_noise_scale=chain_noise_scale
                    )
                meas[kind].info["noise_seconds"] = time.perf_counter() - start
            kw = {"time_limit": qp_time_limit} if m in ("M_H^r", "M_c^r") else {}
            try:
                rel = MECHANISMS[m](data, measurements=meas[kind], **kw)
            except SolverLimit:
                skipped.add(m)
                continue
            acc[m]["l1"].append(rel.l1_per_level(data))
            acc[m]["cv"].append(rel.violations())
            acc[m]["t"].append(rel.timings["postprocess"] + meas[kind].info["noise_seconds"])
    rows = []
    for m in mechanisms:
        a = acc[m]
        ok = m not in skipped and len(a["l1"]) == runs
        L = data.hierarchy.n_levels
        rows.append(
            {
                "mechanism": m,
                "epsilon": float(epsilon),
                "runs": len(a["l1"]),
                "ok": ok,
                "l1": np.mean(a["l1"], axis=0) if a["l1"] else np.full(L, np.nan),
                "l1_std": np.std(a["l1"], axis=0) if a["l1"] else np.full(L, np.nan),
                "cv": float(np.mean(a["cv"])) if a["cv"] else float("nan"),
                "seconds": float(np.mean(a["t"])) if a["t"] else float("nan"),
            }
        )
    return rows


def comparison_table(rows: list[dict[str, Any]], level_names: Sequence[str]) -> str:
    """Markdown table: mechanism, ε, mean L1 per level, total, #CV, seconds."""
    header = ["mechanism", "ε"] + [f"L1 {n}" for n in level_names] + ["L1 total", "#CV", "seconds"]
    body = []
    for r in rows:
        if not r["ok"]:
            body.append(
                [r["mechanism"], r["epsilon"]] + ["—"] * (len(level_names) + 2) + ["time limit"]
            )
            continue
        body.append(
            [r["mechanism"], r["epsilon"]]
            + [f"{v:.0f}" for v in r["l1"]]
            + [f"{r['l1'].sum():.0f}", f"{r['cv']:.0f}", f"{r['seconds']:.3f}"]
        )
    return markdown_table(header, body)


def plot_l1_per_level(
    rows: list[dict[str, Any]], level_names: Sequence[str], path: str | Path
) -> Path:
    """Grouped bars of mean L1 error per level (log scale), one colour per mechanism."""
    fig, ax = new_figure(figsize=(7, 4))
    ok = [r for r in rows if r["ok"]]
    width = 0.8 / max(len(ok), 1)
    x = np.arange(len(level_names))
    for i, r in enumerate(ok):
        ax.bar(x + i * width, np.maximum(r["l1"], 0.5), width, label=r["mechanism"])
    ax.set_xticks(x + 0.4 - width / 2, list(level_names))
    ax.set_yscale("log")
    ax.set_ylabel("L1 error (sum over regions and sizes)")
    eps = ok[0]["epsilon"] if ok else float("nan")
    ax.set_title(f"Census group-size counts, ε = {eps:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    save_figure(fig, out, dpi=110)
    close_figure(fig)
    return out
