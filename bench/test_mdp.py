"""Metric-DP benchmarks: the exact LP by row generation against plain HiGHS (all |E|·K rows at
once), and Benders decomposition against row generation, on the paper's data sets.

``paper`` runs the four 500-record settings of the paper's Table 3 (K = 100 random outputs as
in the authors' code, ε = 10/km, η = 2; text: MiniLM embeddings, η = 1), whose times (Benders
k-m-DV on 16 cores) are recorded beside ours. ``python bench/mdp_bench.py paper`` prints the
same comparison as a table, with each method in its own process.
"""

from __future__ import annotations

import warnings

from mdp_bench import PAPER_TABLE3, make_problem
from privopt.certify import UncertifiedResultWarning
from privopt.mdp import solve

#: The paper's Table 3 runs (N = 500, K = 100, ε = 10/km); road and text need the shared data.
PAPER = [{"id": f"{ds}-N500-K100", "dataset": ds, "n": 500, "k": 100} for ds in PAPER_TABLE3]
SETTINGS = {
    "test_rowgen": {
        "small": [
            {"id": "grid-N150-K50", "dataset": "grid", "n": 150, "k": 50},
            {"id": "synthetic-N300-K100", "dataset": "synthetic", "n": 300, "k": 100},
        ],
        "paper": PAPER,
    },
    "test_benders": {
        "small": [{"id": "grid-N150-K50", "dataset": "grid", "n": 150, "k": 50}],
        "paper": PAPER,
    },
}
#: Certified gap every exact release must reach (the solver-independent bound of the full LP).
GAP = 1e-6


#: Folders of the shared data the real data sets need (grid and synthetic are generated).
FOLDER = {"road": "rome", "text": "text"}


def _problem(setting: dict, shared_data):
    folder = FOLDER.get(setting["dataset"])
    data = shared_data(folder).parent if folder else None
    return make_problem(setting["dataset"], setting["n"], setting["k"], 0, data)


def _paper(setting: dict) -> str | None:
    if setting["n"] == 500 and setting["k"] == 100:
        return f"Table 3, Benders k-m-DV, 16 cores: {PAPER_TABLE3[setting['dataset']]}"
    return None


def plain_highs(problem):
    """The baseline: HiGHS on the whole LP. Its own duals often certify less than 1e-6 (wrong-
    sign duals of ~1e-10 on rows with coefficients up to e^20): its gap is recorded, not
    asserted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedResultWarning)
        return solve(problem, "lp", row_generation=False)


def test_rowgen(against, setting, benchmark, shared_data):
    """privopt.mdp.solve(method="lp"): lazy rows, column generation, safe dual bound."""
    problem = _problem(setting, shared_data)
    rounds = 3 if setting["n"] < 500 else 2
    pm, plain = against(
        lambda: solve(problem, "lp"),
        lambda: plain_highs(problem),
        baseline_name="plain HiGHS, all |E|·K rows",
        paper=_paper(setting),
        rounds=rounds,
        baseline_rounds=rounds if setting["n"] < 500 else 1,
        warmup=setting["n"] < 500,
        setting=setting,
    )
    assert pm.relative_gap <= GAP
    assert pm.violations(problem).ok()
    # the released loss is within the certified gap of plain HiGHS's (never above it by more)
    assert pm.expected_loss <= plain.expected_loss * (1 + GAP)
    benchmark.extra_info.update(
        loss=pm.expected_loss,
        gap=pm.relative_gap,
        plain_loss=plain.expected_loss,
        plain_gap=plain.relative_gap,
    )


def test_benders(against, setting, benchmark, shared_data):
    """Benders decomposition (default options, ξ = 1e-4) against row generation: issue 17's
    goal is convergence at the paper settings by default, within 3× of row generation."""
    problem = _problem(setting, shared_data)
    paper = setting["n"] == 500
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a time-limited Benders warns; the status is asserted
        pm, exact = against(
            lambda: solve(problem, "benders", rel_gap=1e-4, time_limit=600 if paper else 60),
            lambda: solve(problem, "lp"),
            baseline_name="row generation (privopt.mdp, method 'lp')",
            paper=_paper(setting),
            rounds=1 if paper else 3,
            warmup=not paper,
            setting=setting,
        )
    assert pm.relative_gap <= 1e-4
    assert pm.violations(problem).ok()
    assert pm.lower_bound <= exact.expected_loss * (1 + GAP)
    benchmark.extra_info.update(
        loss=pm.expected_loss, gap=pm.relative_gap, lp_loss=exact.expected_loss
    )
