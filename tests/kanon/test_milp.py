"""Exact MILP (both formulations) and Split & Carry against the paper's oracles (§8.3–8.5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from privopt.errors import InfeasibleModel
from privopt.kanon import anonymize, build_problem, datasets
from privopt.kanon.milp import solve_rows
from privopt.kanon.split_carry import chunk_sizes

from .conftest import FARS_OPT_K3, FARS_OPT_K3_W, QUARTER, W_APP_A, canon
from .oracles import optimum_by_subset_dp


def brute_force_optimum(df, k, weights=None) -> float:
    """Minimum loss over every partition of the rows into groups of size >= k (tiny n)."""
    return optimum_by_subset_dp(build_problem(df, k, weights=weights))


def test_fars_optimum_table_4b(fars):
    res = anonymize(fars, 3, weights=QUARTER, method="milp")
    assert res.objective == pytest.approx(4.816532, abs=1e-6)
    assert canon(res.partition()) == canon(FARS_OPT_K3)  # unique optimum (§8.3)
    assert res.info["status"] == "optimal"
    assert res.info["proof"] == "exact_search" and res.info["relative_gap"] <= 1e-12


def test_fars_weighted_optimum_table_4c(fars):
    res = anonymize(fars, 3, weights=W_APP_A, method="milp")
    assert res.objective == pytest.approx(4.114516, abs=1e-6)
    assert canon(res.partition()) == canon(FARS_OPT_K3_W)


def test_optimum_depends_on_bounds(fars):
    # §8.3: with AGE in [0, 120] the equal-weight optimum changes
    res = anonymize(fars, 3, method="milp", bounds={"AGE": (0, 120)})
    assert canon(res.partition()) == canon(
        [[0, 2, 15, 17], [1, 11, 12], [3, 4, 18], [5, 8, 9], [6, 13, 19], [7, 10, 14, 16]]
    )


@pytest.mark.parametrize("formulation", ["set_partition", "paper"])
def test_table1_both_formulations(formulation):
    df = datasets.table1_ehr()
    res = anonymize(df, 3, ["Age", "Sex", "Zipcode"], method="milp", formulation=formulation)
    assert canon(res.partition()) == [[0, 1, 2], [3, 4, 5, 6]]
    assert res.objective == pytest.approx(0.955090, abs=1e-6)
    assert res.table["Disease"].tolist() == df["Disease"].tolist()  # sensitive passes through
    assert res.table.loc[0, "Age"] == "[35-37]"


def test_paper_model_cardinality_ge_vs_eq():
    # §8.5 feasibility oracle: n=5, k=4 needs one class of 5; the `==` model has no solution
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.permutation(5), "b": rng.permutation(5)})
    res = anonymize(df, 4, method="milp", formulation="paper")
    assert res.class_sizes.tolist() == [5]
    assert res.objective == pytest.approx(10.0)
    p = build_problem(df, 4)
    x, lo, hi, coef, integer = p.milp_columns()
    with pytest.raises(InfeasibleModel):
        solve_rows(x, lo, hi, coef, integer, 4, formulation="paper", equality_cardinality=True)


@pytest.mark.parametrize(
    "S, sizes, sub_objs",
    [
        (3, [9, 17], [1.324597, 4.453629]),  # Tables 5-6
        (2, [6, 9, 11], [0.925403, 1.082661, 3.491935]),
    ],
)
def test_split_and_carry_worked_example(fars, S, sizes, sub_objs):
    res = anonymize(fars, 3, weights=QUARTER, method="split_carry", S=S)
    assert res.info["sub_sizes"] == sizes
    assert res.info["sub_objectives"] == pytest.approx(sub_objs, abs=1e-6)
    assert res.objective == pytest.approx(4.816532, abs=1e-6)
    assert canon(res.partition()) == canon(FARS_OPT_K3)
    assert max(sizes) <= res.info["lemma2_bound"]


def test_split_and_carry_time_limit_keeps_output_valid():
    df = datasets.synthetic_census(300, seed=3)
    res = anonymize(df, 3, method="split_carry", S=4, sub_time_limit=1e-4)
    assert res.class_sizes.min() >= 3  # verified inside anonymize too
    ifs = anonymize(df, 3, method="initial")
    assert res.objective <= ifs.objective + 1e-9


@st.composite
def small_tables(draw):
    n = draw(st.integers(2, 8))
    k = draw(st.integers(1, min(n, 3)))
    a = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    b = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    df = pd.DataFrame({"a": a, "b": b})
    return df.loc[:, df.nunique() > 1], k


@settings(max_examples=25, deadline=None)
@given(small_tables())
def test_optimum_matches_brute_force_and_bounds_heuristics(case):
    df, k = case
    if df.shape[1] == 0:
        return
    opt = anonymize(df, k, method="milp").objective
    assert opt == pytest.approx(brute_force_optimum(df, k), abs=1e-9)
    sc = anonymize(df, k, method="split_carry", S=2).objective
    ifs = anonymize(df, k, method="initial").objective
    gs = anonymize(df, k, method="greedy").objective
    # §8.5 properties 5 and 6
    assert opt <= sc + 1e-9 and sc <= ifs + 1e-9 and opt <= gs + 1e-9
    # monotonicity: a (k+1)-anonymous partition is k-anonymous, so the optimum cannot drop
    if k + 1 <= len(df):
        assert anonymize(df, k + 1, method="milp").objective >= opt - 1e-9


def test_categorical_milp_uses_one_hot_objective():
    df = pd.DataFrame({"age": [30, 31, 32, 33, 50, 52], "ms": ["m", "s", "m", "s", "w", "w"]})
    res = anonymize(df, 2, method="milp", categorical=["ms"])
    assert res.objective == pytest.approx(brute_force_optimum(df, 2), abs=1e-9)


def test_split_and_carry_lemma2_bound_with_the_big_m_model():
    # §3.4 / Lemma 2: classes of >= 2k rows are cut along the sorted order before carrying, so
    # every sub-problem has at most k(2k-1+S) rows whatever the sub-problem solver returns
    from privopt.kanon.initial import split_large_classes

    lab = np.array([0, 0, 1, 0, 0, 0, 1, 0, 1, 2, 2])
    out = split_large_classes(lab, 2)
    assert np.bincount(out).tolist() == [2, 3, 2, 2, 2]  # 6 rows of class 0 -> 2 + 2 + 2
    assert out[[0, 1]].tolist() == [out[0]] * 2 and len(set(out[[0, 3, 5]])) == 3
    df = datasets.synthetic_census(24, seed=5)
    res = anonymize(df, 2, method="split_carry", S=2, formulation="paper", sub_time_limit=1)
    assert max(res.info["sub_sizes"]) <= res.info["lemma2_bound"] == 2 * (3 + 2)
    assert res.objective <= anonymize(df, 2, method="initial").objective + 1e-9


def test_chunks_do_not_cut_a_run_of_copies_short():
    # 7 copies of A then 7 of B, k = 3, S = 3. The paper's first chunk (rows 0-8) ends with two
    # B rows, which its optimum must put with an A; that class is carried, but the other A
    # copies are final, so the lone A it leaves pays with the B's of the next chunk. Ending
    # the first chunk after two k-sets (rows 0-5) groups every copy with its own kind.
    df = pd.DataFrame({"a": [0] * 7 + [1] * 7, "b": [5] * 7 + [9] * 7})
    paper = anonymize(df, 3, method="split_carry", S=3, chunking="paper")
    runs = anonymize(df, 3, method="split_carry", S=3)
    assert paper.info["sub_sizes"][0] == 9 and paper.objective > 0
    assert runs.info["sub_sizes"][0] == 6 and runs.objective == 0
    assert runs.info["chunking"] == "runs" and paper.info["chunking"] == "paper"


@st.composite
def run_lengths(draw):
    """Sorted rows as runs of identical rows (lengths 1..9), with k and S."""
    lengths = draw(st.lists(st.integers(1, 9), min_size=1, max_size=30))
    k, S = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    x = np.repeat(np.arange(len(lengths)), lengths)[:, None].astype(float)
    assume(len(x) >= k)
    return x, k, S


@settings(max_examples=60, deadline=None)
@given(run_lengths())
def test_chunk_sizes_cover_the_ksets_and_end_early_only_at_runs(case):
    x, k, S = case
    n_ksets = len(x) // k
    paper = chunk_sizes(x, k, S, "paper")
    assert len(paper) == -(-n_ksets // S) and sum(paper) == n_ksets  # §7.7
    sizes = chunk_sizes(x, k, S)
    assert sum(sizes) == n_ksets and all(1 <= j <= S for j in sizes)
    row = x[:, 0].astype(int)
    length = np.bincount(row)

    def cuts_a_run_short(first, end):  # fewer than k of a run of >= k rows, which goes on
        r = row[end - 1]
        return row[end] == r and length[r] >= k and np.sum(row[first:end] == r) < k

    first = np.cumsum([0, *sizes]) * k  # first row of each chunk
    for t in range(len(sizes) - 1):  # the last chunk ends at row n
        full = min(S, n_ksets - first[t] // k)
        if cuts_a_run_short(first[t], first[t + 1]):  # only when every shorter chunk would too
            assert sizes[t] == full
            assert all(cuts_a_run_short(first[t], first[t] + j * k) for j in range(1, full))
        elif sizes[t] < full:  # ended early: every longer chunk would cut a run short
            assert all(
                cuts_a_run_short(first[t], first[t] + j * k) for j in range(sizes[t] + 1, full + 1)
            )


@st.composite
def replicated_tables(draw):
    """Tables whose every distinct row appears at least 2k times, shuffled; with k and S."""
    k, S = draw(st.integers(2, 3)), draw(st.integers(2, 3))
    kinds = draw(
        st.lists(
            st.tuples(st.integers(0, 9), st.integers(0, 3)), min_size=2, max_size=8, unique=True
        )
    )
    copies = draw(st.lists(st.integers(2 * k, 3 * k + 2), min_size=len(kinds), max_size=len(kinds)))
    rows = [kind for kind, c in zip(kinds, copies, strict=True) for _ in range(c)]
    order = draw(st.permutations(range(len(rows))))
    df = pd.DataFrame([rows[i] for i in order], columns=["a", "b"])
    return df.loc[:, df.nunique() > 1], k, S


@settings(max_examples=30, deadline=None)
@given(replicated_tables())
def test_split_and_carry_reaches_zero_loss_when_every_row_has_2k_copies(case):
    # Copies grouped with their own kind cost nothing, so the optimum is 0; a run of >= 2k
    # copies can always end a chunk at a whole k-set with >= k of them on each side.
    df, k, S = case
    assert anonymize(df, k, method="split_carry", S=S).objective == 0


def test_milp_on_a_large_table_stops_at_its_time_limit_with_a_valid_answer():
    # column generation, the MILPs and the proof share the time limit; the (better of IFS and
    # Greedy) start is the floor, and the result says it is not proven optimal
    from privopt.certify import UncertifiedResultWarning

    df = datasets.synthetic_census(150, seed=2)
    with pytest.warns(UncertifiedResultWarning, match="time_limit"):
        res = anonymize(df, 3, method="milp", time_limit=1.0)
    assert res.info["status"] == "time_limit"
    assert res.info["solve_time"] < 3.0
    assert res.objective <= anonymize(df, 3).objective + 1e-9
    assert 0.0 <= res.info["lower_bound"] <= res.objective
    assert res.class_sizes.min() >= 3
