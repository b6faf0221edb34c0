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
from privopt.report import close_figure, format_number, markdown_table, new_figure, save_figure

__all__ = [
    "KIND",
    "METHOD_WORDS",
    "run_comparison",
    "comparison_table",
    "plot_l1_per_level",
    "l1_per_level_figure",
    "method_words",
    "checks_text",
    "ledger_table",
]

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


#: Each method's name in plain words (its short name is the one the papers and the CLI use).
METHOD_WORDS = {
    "M_H": "raw noisy counts: a baseline, neither consistent nor non-negative",
    "M_H^r": "noisy counts made consistent by a relaxed least-squares fit (not integral)",
    "M_H^dp": "noisy counts made consistent, non-negative integers by an exact optimization "
    "over the region tree",
    "M_c^r": "noisy cumulative counts made consistent by a relaxed least-squares fit",
    "M_c^dp": "noisy cumulative counts, made monotone per region, then consistent integers by "
    "an exact optimization",
    "M_c^ch": "noisy cumulative counts along a chain of levels, made consistent by an exact "
    "optimization",
    "TopDown": "noisy counts fitted level by level from the top, in the style of the US Census "
    "Bureau's TopDown algorithm",
}

#: Each method's name in a few plain words, for legends and table columns.
METHOD_SHORT_WORDS = {
    "M_H": "raw noisy counts",
    "M_H^r": "least squares",
    "M_H^dp": "exact, counts",
    "M_c^r": "least squares, cumulative",
    "M_c^dp": "exact, cumulative",
    "M_c^ch": "exact, chain of levels",
    "TopDown": "top-down by level",
}

#: The four properties :meth:`CensusRelease.check` tests, in plain words.
CHECK_WORDS = {
    "integral": "every count is a whole number",
    "nonnegative": "no count is negative",
    "consistent": "each region's counts add up to its parent's",
    "faithful": "every level adds up to the public total number of groups",
}


def method_words(method: str) -> str:
    """``method`` in plain words (the name itself when unknown)."""
    return METHOD_WORDS.get(method, method)


def method_label(method: str) -> str:
    """``method``'s short plain name with the papers' symbol beside it, e.g. "exact, counts
    (M_H^dp)" (the symbol alone when unknown)."""
    words = METHOD_SHORT_WORDS.get(method)
    return method if words is None else f"{words} ({method})"


def checks_text(checks: dict[str, bool]) -> str:
    """The release's checks as a Markdown list in plain words, each marked holds / fails."""
    lines = ["**Checks of the released counts:**", ""]
    for name, ok in checks.items():
        lines.append(f"- {CHECK_WORDS.get(name, name)}: {'yes' if ok else 'NO'}")
    return "\n".join(lines)


def ledger_table(ledger: Sequence[Any]) -> str:
    """The privacy ledger (:class:`privopt.dp.LedgerEntry` records) as a Markdown table: what
    was measured, with which noise, the ε and δ charged, and whether the noise was seeded."""
    if not ledger:
        return "_No noisy measurement was recorded._\n"
    rows = [
        [
            e.label,
            e.mechanism,
            e.epsilon,
            e.delta,
            "n/a" if e.sensitivity is None else e.sensitivity,
            "—" if e.group is None else f"{e.group} ({e.part})",
            "yes (testing only)" if e.seeded else "no",
        ]
        for e in ledger
    ]
    return markdown_table(
        ["measurement", "noise", "ε", "δ", "sensitivity", "parallel part", "seeded"], rows
    )


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
    """Markdown table: mechanism, ε, mean L1 error per level, total, consistency violations
    (#CV), seconds."""
    header = (
        ["method", "ε"]
        + [f"L1 error, {n} (groups)" for n in level_names]
        + ["L1 error, total (groups)", "consistency violations (#CV)", "time (s)"]
    )
    body = []
    for r in rows:
        if not r["ok"]:
            body.append(
                [method_label(r["mechanism"]), r["epsilon"]]
                + ["—"] * (len(level_names) + 2)
                + ["time limit"]
            )
            continue
        body.append(
            [method_label(r["mechanism"]), r["epsilon"]]
            + [f"{v:.0f}" for v in r["l1"]]
            + [f"{r['l1'].sum():.0f}", f"{r['cv']:.0f}", format_number(r["seconds"], 3)]
        )
    return markdown_table(header, body)


def plot_l1_per_level(
    rows: list[dict[str, Any]], level_names: Sequence[str], path: str | Path
) -> Path:
    """Grouped bars of mean L1 error per level (log scale), one colour per mechanism, saved to
    ``path`` (PNG)."""
    fig = l1_per_level_figure(rows, level_names)
    out = Path(path)
    save_figure(fig, out, dpi=110)
    close_figure(fig)
    return out


def l1_per_level_figure(rows: list[dict[str, Any]], level_names: Sequence[str]) -> Any:
    """The figure of :func:`plot_l1_per_level` (a matplotlib Figure, not saved)."""
    fig, ax = new_figure(figsize=(8, 4))
    ok = [r for r in rows if r["ok"]]
    width = 0.8 / max(len(ok), 1)
    x = np.arange(len(level_names))
    for i, r in enumerate(ok):
        ax.bar(x + i * width, np.maximum(r["l1"], 0.5), width, label=method_label(r["mechanism"]))
    ax.set_xticks(x + 0.4 - width / 2, list(level_names))
    ax.set_yscale("log")
    ax.set_xlabel("level of the region hierarchy")
    ax.set_ylabel("L1 error (groups, summed over regions and sizes)")
    eps = ok[0]["epsilon"] if ok else float("nan")
    ax.set_title(f"Error of the released group-size counts per level, ε = {eps:g}")
    # Outside the bars: the legend never hides one.
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="method")
    fig.tight_layout()
    return fig
