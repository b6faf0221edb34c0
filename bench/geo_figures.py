"""Figures of bench/geo_bench.py's sweeps (Figs. 9–13): ours with 95 % bars, the paper's
values beside them where the paper gives numbers (spec 001 §14), written atomically as PNG.

``series`` maps the LR-set cap L (0 = none) to one table row per swept value, each row
``{field: [value per repetition]}`` as ``geo_bench._child`` returns it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from harness import save_figure

#: Paper, Table 1: LR-Geo's whole time (s) at K = 100…400; Fig. 9a: 0.8–1.8 s up to K = 1,600.
PAPER_TIME_S = {100: 1.28, 200: 1.42, 300: 1.34, 400: 1.20}
PAPER_FIG9A_BAND_S = (0.8, 1.8, 1600)
#: Fig. 10a: the ratio drops 34.72 % from Γ = 10 to 20 km and 0.79 % more from 20 to 50 km.
PAPER_RADIUS_REL = {10: 1 / (1 - 0.3472), 20: 1.0, 50: 1 - 0.0079}
#: Figs. 11, 12: GV ratio ≤ 0.13 %, GVE ≤ 0.021; Fig. 13: 102.98 rows matched on average.
PAPER_GV_PCT, PAPER_GVE, PAPER_MATCHED = 0.13, 0.021, 102.98


def _mean_ci(rows: list[dict], field: str) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the mean over repetitions and 1.96 × their standard deviation (NaN if none)."""
    means, half = [], []
    for r in rows:
        v = np.asarray([x for x in r.get(field) or [] if isinstance(x, (int, float))], float)
        means.append(v.mean() if v.size else np.nan)
        half.append(1.96 * v.std() if v.size else np.nan)
    return np.asarray(means), np.asarray(half)


def _line(ax: Any, x: Any, rows: list[dict], field: str, label: str, **kw: Any) -> None:
    mean, half = _mean_ci(rows, field)
    ax.errorbar(x, mean, yerr=half, marker="o", capsize=3, label=label, **kw)


def _users(axes: Any, m: list, series: dict) -> None:
    rows = next(iter(series.values()))
    ax = axes[0]
    _line(ax, m, rows, "gv_pct", "GV ratio, ours")
    ax.axhline(PAPER_GV_PCT, ls="--", c="k", label="paper: peak 0.13 % (Fig. 11)")
    ax.set(xlabel="users M", ylabel="GV ratio (%)", title="Fig. 11: Geo-Ind violations")
    ax = axes[1]
    _line(ax, m, rows, "gve_across", "max GVE across users, ours")
    _line(ax, m, rows, "gve_within", "max GVE within a user, ours")
    ax.axhline(PAPER_GVE, ls="--", c="k", label="paper: up to 0.021 (Fig. 12)")
    ax.set(xlabel="users M", ylabel="max GVE", title="Fig. 12: violation size")
    ax = axes[2]
    _line(ax, m, rows, "per_user_ms", "whole exchange")
    _line(ax, m, rows, "solve_per_user_ms", "solve")
    ax.set(xlabel="users M", ylabel="ms per user", title="Fig. 9b: time (paper: no numbers)")


def _scaling(axes: Any, k: list, series: dict) -> None:
    rows = next(iter(series.values()))
    ax = axes[0]
    _line(ax, k, rows, "time_s", "ours, M = 4")
    ks = sorted(PAPER_TIME_S)
    ax.plot(ks, [PAPER_TIME_S[x] for x in ks], "ks--", label="paper, Table 1")
    lo, hi, kmax = PAPER_FIG9A_BAND_S
    ax.fill_between([100, kmax], lo, hi, color="0.85", label="paper, Fig. 9a (0.8–1.8 s)")
    ax.set(xscale="log", yscale="log", xlabel="K", ylabel="whole exchange (s)")
    ax.set_title("Fig. 9a: time against K")
    ax = axes[1]
    _line(ax, k, rows, "per_user_ms", "whole exchange")
    _line(ax, k, rows, "solve_per_user_ms", "solve")
    ax.set(xscale="log", yscale="log", xlabel="K", ylabel="ms per user", title="per user")


def _radius(axes: Any, gamma: list, series: dict) -> None:
    for cap, rows in series.items():
        name = f"L = {cap}" if cap else "no L cap"
        _line(axes[0], gamma, rows, "ratio", f"ours, {name}")
        mean, _ = _mean_ci(rows, "ratio")
        at20 = mean[list(gamma).index(20)] if 20 in gamma else np.nan
        axes[1].plot(gamma, mean / at20, "o-", label=f"ours, {name}")
        _line(axes[2], gamma, rows, "lr_size", name)
    axes[0].set(xlabel="Γ (km)", ylabel="ratio (bound with c̃)", title="Fig. 10a: ratio against Γ")
    g = sorted(PAPER_RADIUS_REL)
    axes[1].plot(g, [PAPER_RADIUS_REL[x] for x in g], "ks--", label="paper (−34.72 %, −0.79 %)")
    axes[1].set(xlabel="Γ (km)", ylabel="ratio / ratio at Γ = 20 km", title="relative to Γ = 20")
    axes[2].set(xlabel="Γ (km)", ylabel="mean |N_m|", title="LR-set size")


def _cell(axes: Any, s: list, series: dict) -> None:
    rows = next(iter(series.values()))
    _line(axes[0], s, rows, "ratio", "bound with c̃ (what LR-Geo proves)")
    _line(axes[0], s, rows, "ratio_exact_cost", "bound with the true c̄")
    axes[0].axvline(0.2, ls="--", c="k", label="paper: stable to 0.20 km, then rises")
    axes[0].set(xlabel="cell size s (km)", ylabel="approximation ratio", title="Fig. 10b")
    _line(axes[1], s, rows, "cr_table_s", "CR table build")
    axes[1].set(xlabel="cell size s (km)", ylabel="s", title="CR table time")


def _ambiguity(axes: Any, s: list, series: dict) -> None:
    rows = next(iter(series.values()))
    _line(axes[0], s, rows, "matched", "exact interval [ĉ − 2δ, ĉ]")
    _line(axes[0], s, rows, "matched_paper", "paper's interval ĉ ± δ")
    axes[0].axhline(PAPER_MATCHED, ls="--", c="k", label="paper: 102.98 (900-point table)")
    axes[0].set(xlabel="cell size s (km)", ylabel="CR rows per coefficient", yscale="log")
    axes[0].set_title("Fig. 13: CR rows matching an uploaded ĉ")
    share = [{"pct": [100 * x for x in r.get("matched_share") or []]} for r in rows]
    _line(axes[1], s, share, "pct", "ours (share of V̂)")
    axes[1].plot([0.1], [100 * PAPER_MATCHED / 900], "ks", label="paper (102.98 / 900)")
    axes[1].set(xlabel="cell size s (km)", ylabel="% of V̂ matched", title="share of the table")


_PANELS = {"users": 3, "scaling": 2, "radius": 3, "cell": 2, "ambiguity": 2}
_DRAW = {"users": _users, "scaling": _scaling, "radius": _radius, "cell": _cell}
_DRAW["ambiguity"] = _ambiguity


def plot_sweep(table: str, values: list, series: dict[int, list[dict]], out: str, k: int) -> Path:
    """Draw one sweep (``table`` of geo_bench) and write it to ``out`` (PNG) atomically.

    Parameters
    ----------
    table : "users", "scaling", "radius", "cell" or "ambiguity".
    values : the swept values (x axis), one per row of each series.
    series : {L cap (0 = none): [row per value]}, rows ``{field: [per repetition]}``.
    out : the PNG's path; its directory must exist.
    k : K of the sweep (titles).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = _PANELS[table]
    fig, axes = plt.subplots(1, n, figsize=(4.6 * n, 3.8), constrained_layout=True)
    _DRAW[table](axes, values, series)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    what = "generated grids above 1,331" if table == "scaling" else f"K = {k}"
    fig.suptitle(f"LR-Geo, Rome ({what}); bars: 95 % over seeded repetitions", fontsize=9)
    return save_figure(fig, out)
