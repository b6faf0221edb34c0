"""
Obfuscate locations on Rome's road network
==========================================

Crow-flight distance misleads in a city: two places across a river can be far apart by road. A
ride-hailing app that receives obfuscated pick-up points wants the guarantee stated in road
distance (:math:`e^{ε d}` with :math:`d` the shortest path along the roads), and the reported point
close to the true one by road too. :class:`privopt.mdp.MDPProblem` takes ``metric="graph"``: the
records are road nodes and distances come from the C++ Dijkstra kernel. Here 100 cells of the
LR-Geo paper's Rome grid around the centre, 25 of which may be reported.

The data: the LR-Geo Rome grid (OpenStreetMap, ODbL), ``reget_rome_cell_node40x40.csv`` and
``reget_rome_cost_thrhold_2.csv``, read from ``$PRIVOPT_DATA/rome/`` (by default the
``shared/data`` folder beside a privopt checkout; the grid comes with the LR-Geo paper's code).
Without it, a generated street grid of 0.3 km blocks stands in, so the numbers differ.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.sparse as sp
from privopt.graphs import shortest_paths
from privopt.mdp import MDPProblem, solve
from scipy.sparse.csgraph import connected_components

here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
rome = Path(os.environ.get("PRIVOPT_DATA", here.parents[1] / "shared" / "data")) / "rome"
if (rome / "reget_rome_cell_node40x40.csv").is_file():
    cells = pd.read_csv(rome / "reget_rome_cell_node40x40.csv")  # one road node per grid cell
    roads = pd.read_csv(rome / "reget_rome_cost_thrhold_2.csv")  # road links between cells, km
else:  # the generated stand-in: a 30 × 30 street grid of 0.3 km blocks near Rome
    side, block_km = 30, 0.3
    i, j = np.divmod(np.arange(side * side), side)
    cells = pd.DataFrame(
        {
            "grid_index": np.arange(side * side),
            "y": 41.85 + i * block_km / 111.32,
            "x": 12.45 + j * block_km / (111.32 * np.cos(np.radians(41.9))),
        }
    )
    right = np.flatnonzero(j < side - 1)
    up = np.flatnonzero(i < side - 1)
    roads = pd.DataFrame(
        {
            "u_index": np.concatenate([right, up]),
            "v_index": np.concatenate([right + 1, up + side]),
            "length": block_km * np.random.default_rng(0).uniform(1.0, 1.4, right.size + up.size),
        }
    )

# The road graph over the 1,331 cells, lengths in km.
position = {g: i for i, g in enumerate(cells["grid_index"])}
u = roads["u_index"].map(position).to_numpy()
v = roads["v_index"].map(position).to_numpy()
graph = sp.csr_array((roads["length"].to_numpy(), (u, v)), shape=(len(cells),) * 2)

# The 100 cells nearest, by road, to the cell closest to the centre of the map.
latlon = cells[["y", "x"]].to_numpy()
centre = int(np.argmin(((latlon - latlon.mean(axis=0)) ** 2).sum(axis=1)))
by_road = shortest_paths(graph, [centre], directed=False)[0]
area = np.argsort(by_road)[:100]

# ε = 2 per km of road; the ratio constraint is stated between cells within η = 1 km by road and
# follows along chains of such pairs, so η must connect the area (checked).
problem = MDPProblem(area, metric="graph", graph=graph, epsilon=2.0, eta=1.0, outputs=25, seed=0)
n_groups, _ = connected_components(sp.csr_array(problem.distances <= problem.eta))
assert n_groups == 1, "η leaves some cells unconnected: raise it"
optimal = solve(problem)
baseline = solve(problem, "expmech")
print(
    f"expected road distance to the report: optimal {optimal.expected_loss:.3f} km, "
    f"exponential mechanism {baseline.expected_loss:.3f} km"
)
print(
    f"certified gap {optimal.relative_gap:.1e}; violations {optimal.violations(problem).n_violated}"
)

# %%
# Where the reports of one user fall: each possible report (a cell of the area) coloured by
# its probability, over the road links of the area; the star is the user's true cell.
user = 0  # the central cell (the first of ``area``)
reports = area[problem.output_index]  # the cells that can be reported
in_area = np.isin(u, area) & np.isin(v, area)
top = max(optimal.matrix[user].max(), baseline.matrix[user].max())  # one colour scale for both
fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharey=True, layout="constrained")
for ax, mechanism, title in ((axes[0], optimal, "optimal"), (axes[1], baseline, "exponential")):
    for a, b in zip(u[in_area], v[in_area], strict=True):
        ax.plot(latlon[[a, b], 1], latlon[[a, b], 0], color="0.85", linewidth=0.8, zorder=0)
    ax.scatter(latlon[area, 1], latlon[area, 0], s=6, color="0.6", label="cells")
    shown = ax.scatter(
        latlon[reports, 1],
        latlon[reports, 0],
        c=mechanism.matrix[user],
        cmap="viridis",
        s=60,
        label="possible reports",
    )
    ax.scatter(
        *latlon[area[user], ::-1],
        marker="*",
        s=400,
        facecolors="none",
        edgecolors="red",
        linewidths=1.5,
        label="true cell",
    )
    ax.set_title(f"{title}: {mechanism.expected_loss:.2f} km by road on average")
    ax.set_xlabel("longitude")
fig.colorbar(shown, ax=axes, label="probability of the report")
axes[0].set_ylabel("latitude")
fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
plt.show()
