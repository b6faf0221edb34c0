"""
Publish survey statistics under one privacy budget
==================================================

A survey team publishes three statistics of the Adult census table under a total budget of
ε = 1, with the people in the table as the unit of privacy (add or remove one person): the age
histogram, the mean weekly working hours and the most common occupation. Each statistic gets a
share of the budget, noise comes from :mod:`privopt.dp` (exact discrete samplers, no floating-point
leaks), and a :class:`privopt.dp.PrivacyAccountant` keeps the ledger and refuses any spend over
the budget.

The data: ``adult.data`` from the UCI Machine Learning Repository (CC BY 4.0), read from
``$PRIVOPT_DATA/adult/`` (by default the ``shared/data`` folder beside a privopt checkout; the
file is at https://archive.ics.uci.edu/dataset/2/adult). Without it, a generated table with the
same columns stands in (:func:`privopt.kanon.datasets.synthetic_adult`), so the numbers differ.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from privopt.dp import (
    PrivacyAccountant,
    exponential_mechanism,
    laplace_mechanism,
    sample_discrete_laplace,
)
from privopt.errors import PrivacyBudgetExceeded
from privopt.kanon import datasets

here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
data = Path(os.environ.get("PRIVOPT_DATA", here.parents[1] / "shared" / "data"))
if (data / "adult" / "adult.data").is_file():
    adult = datasets.load_adult(data / "adult" / "adult.data")  # 30,162 complete rows
else:  # the generated stand-in (see above)
    adult = datasets.synthetic_adult(30_162, seed=0)
rng = np.random.default_rng(0)  # reproducible example; a real release uses rng="secure"
budget = PrivacyAccountant(epsilon_budget=1.0)

# 1. Age histogram, 5-year bins: one person changes one bin by 1 (ℓ1-sensitivity 1).
bins = np.arange(15, 95, 5)
true_counts, _ = np.histogram(adult["age"], bins=bins)
budget.spend(0.5, label="age histogram", mechanism="discrete Laplace", sensitivity=1)
noisy_counts = true_counts + sample_discrete_laplace(0.5, size=true_counts.size, rng=rng)

# 2. Mean hours per week: a noisy clipped sum over a noisy count. Hours are clipped to
#    [0, 100], so one person moves the sum by at most 100 and the count by 1.
hours = np.clip(adult["hours-per-week"].to_numpy(dtype=float), 0, 100)
budget.spend(0.2, label="hours sum", mechanism="Laplace", sensitivity=100)
noisy_sum = laplace_mechanism(hours.sum(), 0.2, sensitivity=100, rng=rng)
budget.spend(0.1, label="people count", mechanism="discrete Laplace", sensitivity=1)
noisy_n = len(hours) + sample_discrete_laplace(0.1, rng=rng)
print(f"mean hours per week: {float(noisy_sum) / noisy_n:.2f} (true {hours.mean():.2f})")

# 3. Most common occupation: the exponential mechanism on the counts (sensitivity 1).
occupations, counts = np.unique(adult["occupation"], return_counts=True)
budget.spend(0.2, label="top occupation", mechanism="exponential", sensitivity=1)
chosen = exponential_mechanism(counts, 0.2, sensitivity=1, rng=rng)
print(f"most common occupation: {occupations[chosen]} (true {occupations[counts.argmax()]})")

# The budget is spent: one more statistic is refused before any noise is drawn.
try:
    budget.spend(0.1, label="one more", mechanism="Laplace", sensitivity=1)
except PrivacyBudgetExceeded as refused:
    print(f"refused: {refused}")
print(budget)

# %%
# The released age histogram next to the true one (which is never published).
fig, ax = plt.subplots(figsize=(7, 4))
centres = (bins[:-1] + bins[1:]) / 2
ax.bar(centres - 1, true_counts, width=2, label="true (not released)", color="0.7")
ax.bar(centres + 1, noisy_counts, width=2, label="released, ε = 0.5")
ax.set_xlabel("age")
ax.set_ylabel("people")
ax.set_title("Adult: age histogram under differential privacy")
ax.legend()
fig.tight_layout()
plt.show()
