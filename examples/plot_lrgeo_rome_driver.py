"""
A driver's location in Rome, obfuscated by LR-Geo
=================================================

A ride-hailing driver reports where she is, but only an obfuscated location. LR-Geo never shows
the server the true cell: the driver's app picks its *locally relevant* set N_m (the L cells
nearest by road within Γ), asks the server for cost-reference data, and uploads distances and
estimated costs of those rows only. The server solves CLR-Geo for all drivers of the batch at
once and returns each driver's matrix Z (rows N_m, columns all of V); the app checks it is
(ε, γ)-Geo-Ind and draws the report from its true row.

Entries within r_exp of a row are the LP's free variables; farther ones decay as the
exponential mechanism's, ``g_ik y_k`` with one y shared by all drivers (Thm 4.4), and are equal
for every location beyond r_obf. O_m, the obfuscation range, is drawn here as the cells within
r_obf of the true location.

The data: the LR-Geo paper's Rome grid (1,331 cells on OpenStreetMap roads, ODbL), read from
``$PRIVOPT_DATA/rome/`` (by default the ``shared/data`` folder beside a privopt checkout); without
it, a generated 30 × 30 grid of 0.5 km cells stands in.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm
from privopt.geo import CostReferenceTable, GeoParams, grid_geography, load_rome_grid, run_lrgeo

here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
rome = Path(os.environ.get("PRIVOPT_DATA", here.parents[1] / "shared" / "data")) / "rome"
if (rome / "reget_rome_cell_node40x40.csv").is_file():
    geo = load_rome_grid(rome)
else:  # a stand-in: 0.5 km cells laid out east/north of Rome, roads 1.2× the straight line
    geo = grid_geography(30, 30, 0.5, metric="haversine", road_factor=1.2)
print(geo)

# ε = 2 per km; Geo-Ind between rows within γ = 0.5 km; LR sets of the L = 20 nearest by road
# within Γ = 20 km; free entries within r_exp = 1 km, the exponential tail capped at r_obf = 2 km.
params = GeoParams(
    epsilon=2.0, gamma=0.5, gamma_graph=50.0, lr_radius=20.0, r_exp=1.0, r_obf=2.0, lr_max_size=20
)
table = CostReferenceTable(geo, 20, cell_km=0.1, rng=0)  # the server's cost-reference table
drivers = np.random.default_rng(1).choice(geo.n_locations, 6, replace=False)
res = run_lrgeo(geo, params, drivers, table, rng=1)
s = res.solution
print(f"{len(drivers)} drivers, solver {s.method}: {s.status}, proven gap {s.relative_gap:.1e}")
print(f"expected road cost of the reports {res.cost():.3f} km; ‖y*‖ = {s.info['y_norm']:.3g}")

# %%
# One driver's matrix: the distribution of her report, given her true cell (the rows of Z
# are N_m in increasing order; ``rows_of`` finds the row of a cell). Each cell is coloured by
# the probability of being reported; the LR set N_m is circled, O_m outlined.
m = 0
pm = res.matrices[m]
lr = pm.row_index
row = pm.matrix[pm.rows_of(drivers[m : m + 1])[0]]  # (K,) probabilities over all of V
assert drivers[m] in lr and np.isclose(row.sum(), 1.0)
latlon = geo.points
d_true = geo.distance_rows([drivers[m]])[0]
in_obf = d_true <= params.r_obf

fig, ax = plt.subplots(figsize=(7, 6))
ax.scatter(latlon[:, 1], latlon[:, 0], s=4, c="0.85", label="cells of V")
shown = row > 1e-12
sc = ax.scatter(
    latlon[shown, 1],
    latlon[shown, 0],
    c=row[shown],
    s=18,
    cmap="viridis",
    norm=LogNorm(vmin=max(row[shown].min(), 1e-8), vmax=row.max()),
)
fig.colorbar(sc, ax=ax, label="probability of the report")
ax.scatter(
    latlon[lr, 1],
    latlon[lr, 0],
    s=90,
    facecolors="none",
    edgecolors="tab:red",
    label="N_m (LR set)",
)
ax.scatter(
    latlon[in_obf, 1],
    latlon[in_obf, 0],
    s=40,
    marker="s",
    facecolors="none",
    edgecolors="tab:orange",
    lw=0.6,
    label=f"O_m (≤ r_obf = {params.r_obf} km)",
)
ax.scatter(
    *latlon[drivers[m], ::-1],
    marker="*",
    s=250,
    facecolors="none",
    edgecolors="k",
    label="true location",
)
ax.set(
    xlabel="longitude (°)",
    ylabel="latitude (°)",
    title=f"one driver's report distribution ({s.status})",
)
near = d_true <= 3 * params.r_obf
ax.set_xlim(latlon[near, 1].min(), latlon[near, 1].max())
ax.set_ylim(latlon[near, 0].min(), latlon[near, 0].max())
ax.legend(loc="lower left", fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The guarantee the app checks before sampling: every pair of rows within γ satisfies
# :math:`z_{ik} \le e^{ε d_{ij}} z_{jk}` (to 1e-9), and the report is drawn from the true row
# only.
from privopt.geo import user_problem  # noqa: E402

problem = user_problem(geo, params, table.true_costs(np.arange(geo.n_locations)))
check = pm.violations(problem)
print(f"Geo-Ind check of driver {m}'s matrix: {check}")
print(f"mass within r_exp of the truth: {row[d_true <= params.r_exp].sum():.3f}")
report = pm.sample(int(drivers[m]), np.random.default_rng(0))
print(f"reported cell {report}, {d_true[report]:.2f} km from the truth")
