"""Reports of LR-Geo runs: baseline table, map of one user's distribution, report.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from privopt.geo.baselines import BASELINES, on_lr_rows
from privopt.geo.crtable import CostReferenceTable
from privopt.geo.geography import grid_geography
from privopt.geo.metrics import expected_cost
from privopt.geo.params import GeoParams
from privopt.geo.result import LRGeoResult, run_lrgeo
from privopt.report import Report, Section, close_figure, markdown_table

__all__ = ["BASELINES", "baseline_rows", "write_report", "plot_user", "demo_section"]


def baseline_rows(
    res: LRGeoResult, costs: Any, wanted: list[str], *, seed: int | None = None
) -> list[dict]:
    """Cost (A9, on the users' LR rows) and time of each requested baseline; ``seed`` drives
    the planar Laplace noise (an int: reproducible, for testing; None: the OS CSPRNG)."""
    rows: list[dict[str, Any]] = []
    for name, (mats, seconds) in on_lr_rows(res, costs, wanted, rng=seed).items():
        cost = expected_cost(mats, res.true_costs)
        rows.append({"method": name, "cost_km": cost, "time_s": seconds})
    return rows


def plot_user(res: LRGeoResult, m: int = 0, ax: Any = None) -> Any:
    """User m's reported-location distribution on the map, with N_m (and, when the true
    location is known, v_m and the O range): :meth:`LRGeoResult.plot_user`."""
    return res.plot_user(m, ax)


def _table(summary: dict[str, Any]) -> str:
    s = summary
    rows = [
        ["users M / locations K", f"{s['users']} / {s['K']}"],
        ["LR-Geo cost (A9, km)", s["cost_km"]],
        ["real-row cost (km)", s.get("real_row_cost_km", float("nan"))],
        ["relaxed lower bound (km, rigorous)", s.get("relaxed_lower_bound_km", float("nan"))],
        ["approximation ratio", s.get("approximation_ratio", float("nan"))],
        ["CLR-Geo status / proven gap", f"{s['status']} / {_gap(s['relative_gap'])}"],
        ["‖y*‖", s["y_norm"]],
        ["max mass on exponential entries", s["exponential_mass_max"]],
        ["LR rows without a Geo-Ind neighbour", s["rows_without_neighbours"]],
        [
            f"Bayes adversary's expected error (km, {s.get('adversary_loss', 'metric')} loss)",
            s.get("adversary_error_km", float("nan")),
        ],
        ["Pr[report = true location]", s.get("true_report_probability", float("nan"))],
        [
            "time: clients / CR / solve (s)",
            "{clients:.3f} / {cr_requests:.3f} / {solve:.3f}".format(**s["timings_s"]),
        ],
    ]
    body = markdown_table(["quantity", "value"], rows)
    if s.get("baselines"):
        body += "\n" + markdown_table(
            ["baseline", "cost on the same LR rows (km)", "time (s)"],
            [[b["method"], b["cost_km"], b["time_s"]] for b in s["baselines"]],
        )
    return body


def _gap(value: Any) -> str:
    """A relative gap for the table: "inf" (no bound proven) as it is."""
    return f"{value:.2e}" if isinstance(value, (int, float)) else str(value)


def write_report(res: LRGeoResult, costs: Any, summary: dict[str, Any], out: Path) -> Path:
    """``report.md``: the release's section, then the summary table, GV/GVE and the map of
    user 0."""
    v = res.violations()
    body = _table(summary) + (
        f"\nGeo-Ind across and within users (d ≤ γ, τ = 1e-9): GV = {v.gv_ratio:.4%} "
        f"({v.n_violated_within} within, {v.n_violated_across} across), "
        f"max GVE = {v.max_gve:.3g}.\n"
    )
    sec = Section("LR-Geo", body)
    ax = plot_user(res)
    if ax is not None:
        ax.figure.savefig(out / "geo_user0.png", dpi=110, bbox_inches="tight")
        sec.figures.append("geo_user0.png")
        close_figure("all")
    report = Report("privopt geo")
    report.add(res.report())
    report.add(sec)
    return report.write(out)


def demo_section(out_dir: Path, seed: int) -> Any:
    """LR-Geo on a generated 16 × 16 grid (0.5 km cells, roads 1.2× the straight line), M = 3
    users, ε = 5 km⁻¹, with ExpMech for comparison and a map of one user's distribution."""
    geo = grid_geography(16, 16, 0.5, metric="haversine", road_factor=1.2)
    params = GeoParams(epsilon=5.0, gamma=0.6, lr_radius=3.0, r_obf=2.0, r_exp=1.5, lr_max_size=12)
    table = CostReferenceTable(geo, 10, cell_km=0.1, rng=seed)
    users = np.random.default_rng(seed).choice(geo.n_locations, 3, replace=False)
    res = run_lrgeo(geo, params, users, table, rng=seed)
    summary = res.summary()
    summary["real_row_cost_km"] = res.real_row_cost()
    summary["baselines"] = baseline_rows(res, table, ["expmech"], seed=seed)
    summary["relaxed_lower_bound_km"] = res.relaxed_bound()
    summary["approximation_ratio"] = res.cost() / summary["relaxed_lower_bound_km"]
    body = (
        f"{geo.n_locations} locations, {len(users)} users, ε = {params.epsilon}/km, "
        f"γ = {params.gamma} km, Γ = {params.lr_radius} km, L = {params.lr_max_size}, "
        f"r_exp = {params.r_exp} km, r_obf = {params.r_obf} km, CR cells {table.cell_km} km.\n\n"
        + _table(summary)
    )
    ax = plot_user(res)
    ax.figure.savefig(Path(out_dir) / "geo_user.png", dpi=100, bbox_inches="tight")
    close_figure("all")
    return Section("LR-Geo: locally relevant geo-obfuscation", body, ["geo_user.png"])
