"""Issue 12 defect 4: Greedy Search ties follow the spec's rule (earliest row, oldest class) in
exact arithmetic, not float rounding; checked against a rational-arithmetic reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.kanon import anonymize, build_problem, greedy_search
from privopt.kanon.baselines import k_member
from privopt.kanon.box_cost import box_cost, exact_weights
from privopt.kanon.greedy import greedy_search_reference


def parts(labels):
    return sorted(sorted(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels))


def test_rounding_no_longer_breaks_a_tie():
    # Candidates that tie exactly (7/5·... sums over ranges 5, 9 and 5) compare unequal in
    # float64; the float kernel then picks by rounding noise, the exact one by the tie rule.
    df = pd.DataFrame(
        {"c0": [2, 3, 0, 5, 3, 1], "c1": [1, 10, 10, 3, 6, 2], "c2": [2, 5, 1, 5, 5, 6]}
    )
    p = build_problem(df, 3, weights=[7, 3, 7])
    assert box_cost(p).exact
    reference = parts(greedy_search_reference(p, exact=True))
    assert parts(greedy_search(p)) == reference
    assert parts(greedy_search(p, exact=False)) != reference  # the defect, kept visible


def test_exact_mode_needs_integers_and_rational_weights():
    df = pd.DataFrame({"a": [1, 2, 3, 4], "b": [0.5, 1.5, 2.5, 0.0]})
    assert not box_cost(build_problem(df, 2)).exact  # a non-integer column
    assert box_cost(build_problem(df[["a"]], 2, weights=[0.25])).exact
    assert not box_cost(build_problem(df[["a"]], 2, bounds={"a": (0.5, 4)})).exact
    assert exact_weights(np.array([0.1, 0.2])).tolist() == [1, 2]


@st.composite
def tie_heavy_tables(draw):
    n = draw(st.integers(2, 16))
    k = draw(st.integers(1, min(n, 4)))
    m = draw(st.integers(1, 4))
    cols = {}
    for j in range(m):
        if draw(st.integers(0, 3)) == 0:
            cols[f"c{j}"] = draw(st.lists(st.sampled_from("xyz"), min_size=n, max_size=n))
        else:
            hi = draw(st.sampled_from([1, 2, 3, 5, 6, 9]))
            cols[f"c{j}"] = draw(st.lists(st.integers(0, hi), min_size=n, max_size=n))
    df = pd.DataFrame(cols)
    df = df.loc[:, df.nunique() > 1]
    weights = draw(
        st.lists(
            st.sampled_from([1, 2, 3, 7, 0.5, 0.25]), min_size=df.shape[1], max_size=df.shape[1]
        )
    )
    return df, k, weights


@settings(max_examples=80, deadline=None)
@given(tie_heavy_tables(), st.randoms(use_true_random=False))
def test_greedy_equals_the_exact_reference_and_ignores_column_order(case, rnd):
    df, k, weights = case
    if df.shape[1] == 0:
        return
    p = build_problem(df, k, weights=weights)
    assert box_cost(p).exact
    labels = greedy_search(p)
    assert parts(labels) == parts(greedy_search_reference(p, exact=True))
    perm = list(range(df.shape[1]))
    rnd.shuffle(perm)
    permuted = build_problem(df.iloc[:, perm], k, weights=[weights[j] for j in perm])
    assert parts(greedy_search(permuted)) == parts(labels)
    assert parts(k_member(permuted, seed=3)) == parts(k_member(p, seed=3))


def test_leftovers_go_to_the_oldest_class_on_exact_ties():
    # n = 7, k = 3: the classes {0,1,2} and {3,4,5} cost exactly 3/2 per record with row 6
    # added to either; the rule sends it to the class created first (class 0)
    from privopt.kanon.greedy import _reference_cost

    df = pd.DataFrame({"a": [0, 0, 0, 2, 2, 2, 1], "b": [0, 1, 2, 0, 1, 2, 1]})
    p = build_problem(df, 3)
    g = _reference_cost(p, exact=True)
    assert g([0, 1, 2, 6]) == g([3, 4, 5, 6])
    assert greedy_search(p).tolist() == [0, 0, 0, 1, 1, 1, 0]
    assert parts(anonymize(df, 3).classes) == parts(greedy_search_reference(p, exact=True))
