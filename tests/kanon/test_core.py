"""Sort, Initial Feasible Solution, Greedy Search and losses against the paper's oracles (§8)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.kanon import (
    anonymize,
    build_problem,
    class_boxes,
    greedy_search,
    information_loss,
    initial_solution,
    variance_sort,
)
from privopt.kanon.box_cost import box_cost
from privopt.kanon.greedy import greedy_search_reference
from privopt.kanon.initial import key_order, sort_by_keys

from .conftest import FARS_GREEDY_K3, FARS_SORTED, QUARTER, W_APP_A, canon


def parts(labels):
    return canon([np.flatnonzero(labels == c) for c in np.unique(labels)])


def test_variance_sort_matches_table_2b(fars):
    assert variance_sort(build_problem(fars, 3)).tolist() == FARS_SORTED
    # weighted variance Var/w² (eq. 36) gives the same key order here (§8.1)
    assert variance_sort(build_problem(fars, 3, weights=W_APP_A)).tolist() == FARS_SORTED


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.integers(1, 4), st.sampled_from([1, 3, 2**31]), st.integers(0, 99))
def test_key_order_matches_exact_variances(n, m, scale, seed):
    # ascending n²·Var/w² in Python integers, equal variances by the columns' bytes; columns
    # repeated (ties) and values past the int64 sums' range (2**31) included
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, size=(n, m)) * scale
    x[:, -1] = x[:, 0]
    df = pd.DataFrame(x, columns=[f"c{j}" for j in range(m)])
    df["spread"] = np.arange(n)  # no constant column in every table
    p = build_problem(df, 2, bounds={f"c{j}": (-4 * scale, 4 * scale) for j in range(m)})
    cols = [[int(v) for v in p.x[:, j]] for j in range(p.m)]
    var = [n * sum(v * v for v in c) - sum(c) ** 2 for c in cols]
    content = [p.x[:, j].tobytes() for j in range(p.m)]
    expected = sorted(range(p.m), key=lambda j: (var[j], content[j]))
    assert key_order(p).tolist() == expected


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 60),
    st.integers(1, 4),
    st.sampled_from([1.0, 0.5, 2.0**40, 2.0**55]),
    st.integers(0, 2**32 - 1),
)
def test_sort_by_keys_matches_lexsort(n, m, scale, seed):
    # integral columns take the packed-key sort (or its stable fall-back when the key and
    # the row index do not fit one int64); 0.5 steps the lexicographic sort
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=(n, m)) * scale
    keys = rng.permutation(m)
    for table in (x, np.asfortranarray(x)):
        expected = np.lexsort([table[:, j] for j in keys[::-1]])
        assert np.array_equal(sort_by_keys(table, keys), expected)


@pytest.mark.parametrize(
    "k, sets, loss_w1",
    [
        (
            3,
            [[12, 1, 11], [14, 7, 10], [16, 19, 13], [6, 9, 5], [8, 2, 15], [17, 0, 4, 18, 3]],
            985 / 31,
        ),
        (
            2,
            [
                [12, 1],
                [11, 14],
                [7, 10],
                [16, 19],
                [13, 6],
                [9, 5],
                [8, 2],
                [15, 17],
                [0, 4],
                [18, 3],
            ],
            592 / 31,
        ),
        (
            4,
            [[12, 1, 11, 14], [7, 10, 16, 19], [13, 6, 9, 5], [8, 2, 15, 17], [0, 4, 18, 3]],
            1044 / 31,
        ),
        (
            5,
            [[12, 1, 11, 14, 7], [10, 16, 19, 13, 6], [9, 5, 8, 2, 15], [17, 0, 4, 18, 3]],
            5025 / 124,
        ),
    ],
)
def test_initial_solution_oracles(fars, k, sets, loss_w1):
    p = build_problem(fars, k)
    lab = initial_solution(p)
    assert parts(lab) == canon(sets)
    assert information_loss(p, lab).objective == pytest.approx(loss_w1, rel=1e-12)


def test_initial_solution_quarter_weights(fars):
    res = anonymize(fars, 3, weights=QUARTER, method="initial")
    assert res.objective == pytest.approx(7.943548, abs=1e-6)


@pytest.mark.parametrize(
    "k, classes, loss_w1",
    [
        (3, FARS_GREEDY_K3, 3535 / 124),
        (
            2,
            [
                [12, 1],
                [11, 7],
                [14, 13],
                [10, 16],
                [19, 6],
                [9, 5],
                [8, 0],
                [2, 15],
                [17, 3],
                [4, 18],
            ],
            370 / 31,
        ),
        (
            4,
            [[12, 1, 11, 14], [7, 10, 16, 5], [19, 13, 6, 9], [8, 0, 17, 15], [2, 3, 18, 4]],
            970 / 31,
        ),
        (
            5,
            [[12, 1, 11, 14, 7], [10, 16, 5, 9, 6], [19, 13, 8, 17, 0], [2, 15, 3, 18, 4]],
            4315 / 124,
        ),
    ],
)
def test_greedy_oracles(fars, k, classes, loss_w1):
    p = build_problem(fars, k)
    lab = greedy_search(p)
    assert parts(lab) == canon(classes)
    assert information_loss(p, lab).objective == pytest.approx(loss_w1, rel=1e-12)
    assert parts(greedy_search_reference(p)) == canon(classes)


def test_greedy_table7_quarter_weights_and_app_a_weights(fars):
    res = anonymize(fars, 3, weights=QUARTER)
    assert res.objective == pytest.approx(7.127016, abs=1e-6)
    assert canon(res.partition()) == canon(FARS_GREEDY_K3)
    res_w = anonymize(fars, 3, weights=W_APP_A)
    assert canon(res_w.partition()) == canon(
        [[12, 1, 14], [11, 7, 5], [10, 16, 0, 8], [19, 17, 15], [13, 18, 3, 2], [6, 9, 4]]
    )
    assert res_w.objective == pytest.approx(4.201613, abs=1e-6)


def test_data_bounds_are_default_and_given_bounds_change_loss(fars):
    base = anonymize(fars, 3)
    wide = anonymize(fars, 3, bounds={"AGE": (0, 120)})
    # §8.3: GS keeps the Table 7 partition under AGE in [0, 120]; only the AGE loss shrinks
    assert canon(wide.partition()) == canon(base.partition())
    assert wide.loss.per_attribute[0] < base.loss.per_attribute[0]
    assert np.allclose(wide.loss.per_attribute[1:], base.loss.per_attribute[1:])


def test_loss_invariant_to_weight_scaling(fars):
    a = anonymize(fars, 3, weights=W_APP_A)
    b = anonymize(fars, 3, weights=[10 * w for w in W_APP_A])
    assert canon(a.partition()) == canon(b.partition())
    assert b.objective == pytest.approx(10 * a.objective)
    c = anonymize(fars, 3, weights=[10 * w for w in W_APP_A], normalize_weights=True)
    assert c.objective == pytest.approx(a.objective)


def test_result_table_passthrough_and_boxes(fars):
    df = fars.assign(note=[f"r{i}" for i in range(20)])
    df.index = df.index + 100
    res = anonymize(df, 3, quasi_identifiers=["AGE", "SEX", "INJ_SEV", "DRINKING"])
    assert res.table.index.equals(df.index)
    assert res.table["note"].tolist() == df["note"].tolist()
    assert res.table.loc[112, "AGE"] == "[25-55]"  # class {12, 1, 11}: Table 7
    lo, hi = res.lower.to_numpy(), res.upper.to_numpy()
    x = fars.to_numpy(dtype=float)
    assert np.all((lo <= x) & (x <= hi))
    # the reported objective equals the loss recomputed from the boxes (§8.5 property 4)
    recomputed = ((hi - lo) / (x.max(0) - x.min(0))).sum()
    assert res.objective == pytest.approx(recomputed)
    assert res.loss_table()["objective"].sum() == pytest.approx(res.objective)


def test_degenerate_cases():
    df = pd.DataFrame({"a": [1.0, 5.0, 3.0, 2.0], "b": [0, 1, 0, 1]})
    res = anonymize(df, 4)  # n = k: one class, loss = n Σ_j w_j
    assert res.class_sizes.tolist() == [4]
    assert res.objective == pytest.approx(8.0)
    same = pd.DataFrame({"a": [1, 1, 1, 2, 2, 2], "b": [3, 3, 3, 4, 4, 4]})
    assert anonymize(same, 3).objective == 0.0
    const = pd.DataFrame({"a": [1, 2, 3], "c": [7, 7, 7]})
    assert anonymize(const, 3, bounds={"c": (0, 10)}).loss.per_attribute[1] == 0.0


def test_categorical_output_and_losses():
    df = pd.DataFrame(
        {
            "age": [30, 31, 32, 50, 52, 55],
            "marst": ["married", "married", "single", "single", "single", "widow"],
        }
    )
    res = anonymize(df, 3, categorical=["marst"])
    p = res.problem
    assert p.categorical.tolist() == [False, True]
    assert res.table["marst"].tolist()[:3] == ["married|single"] * 3
    assert res.table["marst"].tolist()[3:] == ["single|widow"] * 3
    # one-hot objective (§1.5): c/|H| with c=2 distinct of |H|=3; NCP (c-1)/(|dom|-1) = 1/2
    assert res.loss.per_attribute[1] == pytest.approx(6 * 2 / 3)
    assert res.loss.ncp_per_attribute[1] == pytest.approx(6 * 0.5)
    paper = anonymize(df, 3, categorical=["marst"], categorical_denominator="dom")
    assert paper.loss.ncp_per_attribute[1] == pytest.approx(6 / 3)


@st.composite
def tables(draw):
    n = draw(st.integers(1, 14))
    k = draw(st.integers(1, n))
    m = draw(st.integers(1, 3))
    cols = {}
    for j in range(m):
        if draw(st.booleans()):
            vals = draw(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n))
        else:
            vals = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
        cols[f"c{j}"] = vals
    df = pd.DataFrame(cols)
    # keep only columns with a range (constant QIs are rejected by design)
    df = df.loc[:, df.nunique() > 1]
    weights = draw(st.lists(st.floats(0.1, 3.0), min_size=df.shape[1], max_size=df.shape[1]))
    return df, k, weights


@settings(max_examples=60, deadline=None)
@given(tables())
def test_greedy_equals_reference_and_is_valid(case):
    df, k, weights = case
    if df.shape[1] == 0:
        return
    p = build_problem(df, k, weights=weights)
    # the reference in the kernel's arithmetic: exact where the data allow, else float64
    fast, ref = greedy_search(p), greedy_search_reference(p, exact=box_cost(p).exact)
    assert parts(fast) == parts(ref)
    for method in ("greedy", "initial"):
        res = anonymize(df, k, weights=weights, method=method)
        assert res.class_sizes.min() >= k
        assert sorted(np.concatenate(res.partition()).tolist()) == list(range(len(df)))
        b = class_boxes(p, res.classes)
        assert information_loss(p, b).objective == pytest.approx(res.objective)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(k=0), "k must be >= 1"),
        (dict(k=21), "k must be <= number of rows"),
        (dict(k=3, quasi_identifiers=["AGE", "nope"]), "unknown columns"),
        (dict(k=3, weights=[1, 1, 1]), "one entry per quasi-identifier"),
        (dict(k=3, weights=[1, 1, 1, -1]), "weights\\[3\\] must be > 0"),
        (dict(k=3, method="magic"), "method must be one of"),
        (dict(k=3, bounds={"AGE": (20, 60)}), "contain the data range"),
        (dict(k=3, method="split_carry", chunking="rows"), "chunking must be 'runs' or 'paper'"),
    ],
)
def test_bad_input(fars, kwargs, match):
    from privopt.errors import InvalidInput

    k = kwargs.pop("k")
    with pytest.raises(InvalidInput, match=match):
        anonymize(fars, k, **kwargs)


def test_bad_tables():
    from privopt.errors import InvalidInput

    with pytest.raises(InvalidInput, match="empty"):
        anonymize(pd.DataFrame({"a": []}), 1)
    with pytest.raises(InvalidInput, match="missing values"):
        anonymize(pd.DataFrame({"a": [1.0, np.nan, 2.0]}), 1)
    with pytest.raises(InvalidInput, match="constant"):
        anonymize(pd.DataFrame({"a": [1, 2, 3], "b": [4, 4, 4]}), 2)
    with pytest.raises(InvalidInput, match="DataFrame"):
        anonymize(np.zeros((3, 2)), 2)


def test_verify_catches_a_categorical_set_missing_the_value():
    from privopt.errors import PrivacyViolation

    df = pd.DataFrame(
        {
            "age": [30, 31, 32, 50, 52, 55],
            "marst": ["married", "married", "single", "single", "single", "widow"],
        }
    )
    res = anonymize(df, 3, categorical=["marst"])
    res.verify()
    res.table.loc[5, "marst"] = "single"  # hide row 5's own value 'widow'
    res.table.loc[[3, 4], "marst"] = "single"  # class stays 3 rows, still 3-anonymous
    with pytest.raises(PrivacyViolation, match="widow"):
        res.verify()
