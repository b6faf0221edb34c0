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
from privopt.report import (
    GLOSSARY_NOTE,
    Report,
    Section,
    close_figure,
    format_number,
    markdown_table,
    release_header,
    save_figure,
    status_text,
)

__all__ = ["BASELINES", "baseline_rows", "write_report", "plot_user", "demo_section"]


def baseline_rows(
    res: LRGeoResult, costs: Any, wanted: list[str], *, seed: int | None = None
) -> list[dict]:
    """Expected travel cost (km, on the users' LR rows) and time of each requested baseline;
    ``seed`` drives the planar Laplace noise (an int: reproducible, for testing; None: the OS
    CSPRNG)."""
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
    t = s["timings_s"]
    rows = [
        ["users (M) / candidate locations (K)", f"{s['users']} / {s['K']}"],
        ["expected travel cost of a report (km, LR-Geo objective)", s["cost_km"]],
        ["expected cost of each user's own row (km)", s.get("real_row_cost_km", float("nan"))],
        ["proven lower bound on the cost (km)", s.get("relaxed_lower_bound_km", float("nan"))],
        ["cost / lower bound (1 = provably optimal)", s.get("approximation_ratio", float("nan"))],
        ["solve status", status_text(s["status"], _gap_value(s["relative_gap"]))],
        ["size of the dual solution (‖y*‖, a solver diagnostic)", s["y_norm"]],
        ["largest probability mass on far-away locations", s["exponential_mass_max"]],
        ["rows with no neighbour to protect", s["rows_without_neighbours"]],
        [
            "expected error of the best (Bayes) attacker guessing the true location (km, "
            f"{'road' if s.get('adversary_loss') == 'road' else 'straight-line'} distance)",
            s.get("adversary_error_km", float("nan")),
        ],
        [
            "probability that the report is the true location",
            s.get("true_report_probability", float("nan")),
        ],
        ["time: users' side (s)", t["clients"]],
        ["time: cost-table requests (s)", t["cr_requests"]],
        ["time: server solve (s)", t["solve"]],
    ]
    body = markdown_table(["quantity", "value"], rows)
    if s.get("baselines"):
        body += "\n" + markdown_table(
            ["baseline", "expected travel cost on the same rows (km)", "time (s)"],
            [[b["method"], b["cost_km"], b["time_s"]] for b in s["baselines"]],
        )
    return body


def _gap_value(value: Any) -> float | None:
    """A relative gap as a float ("inf": no bound proven), None when there is none."""
    if value is None:
        return None
    return float(value)


def violations_text(v: Any) -> str:
    """The cross-user Geo-Ind check in plain words: what GV and max GVE measure and why a
    non-zero value across users is not a failure of any user's guarantee."""
    return (
        "**Check of the guarantee.** Each user's matrix is checked on its own: "
        f"{v.n_violated_within} of its pairs of locations within γ break (ε, γ)-Geo-Ind "
        "(0 means every user's guarantee holds). Different users solve different matrices, so "
        "two users can treat the same pair of locations differently; that is expected and does "
        "not weaken either user's guarantee. Across users, "
        f"{format_number(100 * v.gv_ratio, 3)} % of the {v.n_checked} pairs checked differ by "
        f"more than the factor e^(ε·d) ({v.n_violated_across} pairs; GV, the Geo-Ind violation "
        "ratio), and the largest excess is a probability of "
        f"{format_number(v.max_gve, 3)} (max GVE: the largest z_ik − e^(ε·d) z_jk, between 0 "
        "and 1).\n"
    )


def write_report(res: LRGeoResult, costs: Any, summary: dict[str, Any], out: Path) -> Path:
    """``report.md``: the release's section, then the summary table, GV/GVE and the map of
    user 0."""
    v = res.violations()
    body = _table(summary) + "\n" + violations_text(v) + "\n" + GLOSSARY_NOTE + "\n"
    sec = Section("LR-Geo", body)
    ax = plot_user(res)
    if ax is not None:
        save_figure(ax.figure, out / "geo_user0.png", dpi=110, bbox_inches="tight")
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
        release_header(
            f"{len(users)} users' location-obfuscation matrices over {geo.n_locations} "
            "locations of a generated 8 × 8 km grid",
            res.guarantee.describe(),
            status_text(res.status, res.relative_gap),
        )
        + f"Settings: privacy ε = {params.epsilon:g} per km, protected radius γ = "
        f"{params.gamma:g} km, locally relevant radius Γ = {params.lr_radius:g} km with at most "
        f"L = {params.lr_max_size} locations, obfuscation range r_obf = {params.r_obf:g} km, "
        f"exponential tail beyond r_exp = {params.r_exp:g} km, cost-table cells "
        f"{table.cell_km:g} km.\n\n" + _table(summary)
    )
    ax = plot_user(res)
    save_figure(ax.figure, Path(out_dir) / "geo_user.png", dpi=100, bbox_inches="tight")
    close_figure("all")
    return Section("LR-Geo: locally relevant geo-obfuscation", body, ["geo_user.png"])
