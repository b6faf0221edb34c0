"""
Cluster user embeddings under ε = 1, without choosing k
=======================================================

A platform holds one embedding vector per user and wants to publish the centres of the groups
they form, without revealing anything specific to one user. :class:`privopt.cluster.DPM` is an
(ε, δ)-differentially private clustering that does not need the number of clusters: it splits the
space recursively where the data is dense on both sides and empty in between, choosing every
split privately, then releases noisy centres. Here 50,000 generated 8-dimensional embeddings
with 8 groups are clustered under ε = 1, δ = n^-1.5, and compared with non-private k-means given
the true k.
"""

import matplotlib.pyplot as plt
import numpy as np
from privopt.cluster import DPM
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.decomposition import PCA

embeddings, _ = make_blobs(
    n_samples=50_000, n_features=8, centers=8, center_box=(-50, 50), cluster_std=2.0, random_state=0
)
n = len(embeddings)

# The bounds are public (a property of the embedding model, not of the data); points outside
# are clipped. random_state=0 makes the example reproducible; a real release uses "secure".
private = DPM(bounds=(-60, 60), epsilon=1.0, delta=1 / n**1.5, random_state=0).fit(embeddings)
baseline = KMeans(n_clusters=8, n_init=3, random_state=0).fit(embeddings)


def mean_squared_distance(centres: np.ndarray) -> float:
    """k-means objective: mean squared distance of a point to its nearest centre."""
    d2 = ((embeddings[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    return float(d2.min(axis=1).mean())


print(f"DPM found {private.n_clusters_} clusters")
print(private.accountant_)  # the privacy ledger: every spend of the fit
print(
    f"k-means objective, DPM (private):      {mean_squared_distance(private.cluster_centers_):.2f}"
)
print(
    f"k-means objective, k-means (k given):  {mean_squared_distance(baseline.cluster_centers_):.2f}"
)

# %%
# The embeddings and both sets of centres, projected on their first two principal components.
pca = PCA(n_components=2).fit(embeddings)
shown = pca.transform(embeddings[::25])
fig, ax = plt.subplots(figsize=(6, 5))
ax.scatter(shown[:, 0], shown[:, 1], s=3, c="0.75", label="embeddings (1 in 25)")
for centres, marker, label in (
    (baseline.cluster_centers_, "x", "k-means, k = 8 (not private)"),
    (private.cluster_centers_, "o", f"DPM, ε = 1 ({private.n_clusters_} clusters found)"),
):
    projected = pca.transform(centres)
    ax.scatter(projected[:, 0], projected[:, 1], marker=marker, s=80, label=label)
ax.set_xlabel("first principal component")
ax.set_ylabel("second principal component")
ax.legend(loc="best", fontsize="small")
fig.tight_layout()
plt.show()
