"""
Replace words privately: metric DP on text embeddings
=====================================================

A text-sanitisation step replaces each word of a document by a word drawn at random, so that the
output reveals little about the input word while staying close in meaning: any two words whose
embeddings are :math:`d` apart must lead to the same replacement with probabilities within a factor
:math:`e^{ε d}` (metric differential privacy). The optimal replacement matrix, computed by
:func:`privopt.mdp.solve_epsilon_path` for several ε at once, keeps words much closer to
themselves than the exponential mechanism does at the same ε. Here on 100 English words with
their MiniLM sentence-transformer embeddings.

The data: ``words2000.txt`` and ``words2000_minilm384.npy`` (unit-norm, 384-d), read from
``$PRIVOPT_DATA/text/`` (by default the ``shared/data`` folder beside a privopt checkout; the
embeddings are those of the ``all-MiniLM-L6-v2`` sentence-transformer model). Without them,
generated unit vectors named ``word0``, ``word1``, … stand in, so the numbers differ.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from privopt.mdp import MDPProblem, load_text_embeddings, solve, solve_epsilon_path
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import pdist, squareform

here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
data = Path(os.environ.get("PRIVOPT_DATA", here.parents[1] / "shared" / "data"))
if (data / "text" / "words2000_minilm384.npy").is_file():
    words, embeddings = load_text_embeddings(data / "text", n=100, seed=0)
else:  # the generated stand-in: unit vectors near a 3-dimensional subspace, 384-d like MiniLM
    gen = np.random.default_rng(0)
    embeddings = gen.normal(size=(100, 3)) @ gen.normal(size=(3, 384))
    embeddings += 0.3 * gen.normal(size=embeddings.shape) * np.abs(embeddings).mean()
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    words = [f"word{i}" for i in range(100)]

# The LP states the ratio constraint between words closer than η and lets it follow along chains
# of such pairs (with the path length as distance). A word with no neighbour within η would get
# no guarantee at all, so η must connect every word: here distances lie in [0, 2] and η = 1.15
# does (checked below).
eta = 1.15
n_groups, _ = connected_components(squareform(pdist(embeddings)) <= eta)
assert n_groups == 1, "η leaves some words unconnected: raise it"

epsilons = [4.0, 6.0, 8.0, 12.0]
problem = MDPProblem(embeddings, epsilon=epsilons[0], eta=eta)
optimal = solve_epsilon_path(problem, epsilons)  # one warm-started exact solve per ε
expmech = [solve(MDPProblem(embeddings, epsilon=e, eta=eta), "expmech") for e in epsilons]
for e, opt, em in zip(epsilons, optimal, expmech, strict=True):
    print(
        f"ε = {e:4}: optimal {opt.expected_loss:.4f} (gap {opt.relative_gap:.0e}), "
        f"exponential {em.expected_loss:.4f}"
    )

# %%
# What a word becomes at ε = 4: its most likely replacements, then one released sentence.
at_4 = optimal[0]
for word in words[::20]:
    row = at_4.matrix[words.index(word)]
    top = np.argsort(row)[::-1][:3]
    print(f"{word!r:>14} -> " + ", ".join(f"{words[k]!r} {row[k]:.2f}" for k in top))
sentence = [words[i] for i in (3, 17, 42, 71, 95)]
released = [words[at_4.sample(words.index(w), rng=0)] for w in sentence]  # rng="secure" for real
print("input:   ", " ".join(sentence))
print("released:", " ".join(released))

# %%
# Expected distance between a word's embedding and its replacement's, against ε.
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(epsilons, [m.expected_loss for m in optimal], marker="o", label="optimal")
ax.plot(epsilons, [m.expected_loss for m in expmech], marker="s", label="exponential mechanism")
ax.set_xlabel("ε (per unit of embedding distance)")
ax.set_ylabel("expected embedding distance")
ax.set_title("Word replacement under metric DP, 100 words")
ax.legend()
fig.tight_layout()
plt.show()
