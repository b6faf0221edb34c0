"""
Hide a user's location in Rome
==============================

A location-based service receives a user's position. With ε-geo-indistinguishability, any two
positions :math:`d` km apart lead to the same report with probabilities within a factor
:math:`e^{ε d}`. Among the mechanisms with that guarantee, :func:`privopt.mdp.solve` finds the one
whose reports are closest, on average, to the truth; here it is compared with the exponential
mechanism, which gives the same guarantee.
"""

import matplotlib.pyplot as plt
from privopt.mdp import MDPProblem, km_to_latlon, rome_grid, solve

# 48 cells of 1 km over central Rome, (lat, lon) in degrees; 16 of them can be reported.
cells = km_to_latlon(rome_grid(6, 8))
problem = MDPProblem(cells, epsilon=2.0, eta=2.0, metric="haversine", outputs=16, seed=0)

optimal = solve(problem)
baseline = solve(problem, "expmech")
print(f"optimal: {optimal.expected_loss:.3f} km (proven gap {optimal.relative_gap:.1e})")
print(f"exponential mechanism: {baseline.expected_loss:.3f} km")
assert optimal.violations(problem).n_violated == 0

# %%
# Where does a user in cell 20 end up? One row of each mechanism, on the map.
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
optimal.plot_row(problem, 20, ax=axes[0])
axes[0].set_title(f"optimal ({optimal.expected_loss:.2f} km)")
baseline.plot_row(problem, 20, ax=axes[1])
axes[1].set_title(f"exponential mechanism ({baseline.expected_loss:.2f} km)")
fig.tight_layout()
plt.show()
