"""Split & Carry in parts along the split tree, solved as tasks on an Executor (issue 17 item 4)."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest
from privopt.kanon import anonymize, build_problem, datasets, information_loss, variance_sort
from privopt.kanon import split_carry as sc
from privopt.kanon.initial import key_order
from privopt.kanon.loss import normalize_labels
from privopt.kanon.milp import partition_objective
from privopt.kanon.split_carry import (
    DISTINCT_ROW_WORK,
    ROWS_PER_PART,
    cumulative_work,
    split_and_carry,
    split_points,
    warm_up,
)

from .oracles import seams_by_scanning


def parts(labels):
    return sorted(sorted(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels))


@pytest.fixture(scope="module")
def census():
    df = datasets.synthetic_census(1200, seed=7)
    return df, build_problem(df, 3)


@pytest.fixture(scope="module")
def inline_three_parts(census):
    return split_and_carry(census[1], parts=3, progress=False)[0]


def test_cuts_follow_the_split_tree():
    # the primary key changes at rows 5 and 10, the secondary at 2, 7, 12: cuts go to the
    # primary changes nearest the even shares
    keys = np.array([[a, b] for a in range(3) for b in (0, 0, 1, 1, 1)])
    assert split_points(keys, 3, 3).tolist() == [0, 5, 10, 15]
    assert split_points(keys, 3, 6).tolist() == [0, 7, 15]  # parts of >= 6 rows
    assert split_points(keys, 1, 3).tolist() == [0, 15]


def test_cuts_share_the_estimated_work():
    # 400 copies of one row, then 40 distinct rows: the distinct rows hold most of the work
    keys = np.r_[np.zeros((400, 2)), np.c_[np.ones(40), np.arange(40)]]
    work = cumulative_work(keys)
    assert work[-1] == 440 + DISTINCT_ROW_WORK * 41
    cuts = split_points(keys, 2, 10)
    assert 400 < cuts[1] < 440  # an even share of rows would cut at 220, inside the copies
    halves = np.diff(np.r_[0.0, work[cuts[1:] - 1]])
    assert abs(halves[0] - halves[1]) <= 0.25 * work[-1]


def test_parts_cover_the_sorted_rows_at_key_changes(census):
    df, p = census
    res = anonymize(df, 3, method="split_carry", parts=4, progress=False)  # verified inside
    info = res.info
    cuts = np.array(info["parts"])
    assert cuts[0] == 0 and cuts[-1] == p.n and np.all(np.diff(cuts) >= 8 * 3 * 5)
    keys = p.x[variance_sort(p)][:, key_order(p)]
    assert all(np.any(keys[c] != keys[c - 1]) for c in cuts[1:-1])  # never inside a run
    assert info["seams"] == len(cuts) - 2
    assert max(info["sub_sizes"]) <= 2 * 3 * (2 * 3 - 1)  # a seam: 2k classes of < 2k rows
    assert res.objective <= anonymize(df, 3, method="initial").objective + 1e-9
    assert res.objective == pytest.approx(information_loss(p, res.classes).objective, rel=1e-12)


def _parts_inline(p, n_parts):
    """The sorted table's MILP columns, its cuts and every part's result, solved here."""
    x, lo, hi, coef, _ = p.milp_columns()
    order = variance_sort(p)
    xs = x[order]
    cuts = split_points(p.x[order][:, key_order(p)], n_parts, 8 * p.k * (2 * p.k - 1))
    args = (lo, hi, coef, p.k, 3, 10.0, "auto", "runs")
    results = [sc._part_task(xs[a:b], *args) for a, b in itertools.pairwise(cuts)]
    return xs, coef, cuts, results


def _seams_after_the_parts(p, xs, coef, cuts, results):
    """The seams found by scanning the whole table and solved one after the other once every
    part is done: labels (n,) and the labels of the parts alone."""
    offsets = np.cumsum([0] + [int(r.labels.max()) + 1 for r in results])
    lab = np.concatenate([r.labels + o for r, o in zip(results, offsets, strict=False)])
    after = lab.copy()
    next_id = offsets[-1]
    _, lo, hi, _, _ = p.milp_columns()
    for rows in seams_by_scanning(lab, cuts, p.k):
        sub, _ = sc._sub_problem(xs[rows], lo, hi, coef, p.k, lab[rows], 10.0, "auto", False)
        after[rows] = next_id + sub
        next_id += int(sub.max()) + 1
    return lab, after


@pytest.mark.parametrize("seed", [1, 2])
def test_seams_as_parts_finish_equal_seams_after_all_parts(seed):
    # random tables: the seams started as the parts finish (threads, any order) give the
    # labels of the seams solved one after the other after all parts, bit for bit
    p = build_problem(datasets.synthetic_census(900, seed=seed), 3)
    xs, coef, cuts, results = _parts_inline(p, 5)
    before, expected = _seams_after_the_parts(p, xs, coef, cuts, results)
    assert partition_objective(xs, coef, expected) <= partition_objective(xs, coef, before) + 1e-9
    order = variance_sort(p)
    with ThreadPoolExecutor(3) as ex:
        lab, info = split_and_carry(p, parts=5, executor=ex, progress=False)
    assert info["parts"] == cuts.tolist() and info["seams"] == len(cuts) - 2
    assert np.array_equal(lab[order], expected)
    if seed == 1:  # no executor: the same seams, solved here
        inline, _ = split_and_carry(p, parts=5, progress=False)
        assert np.array_equal(inline[order], expected)


def _part(labels, k):
    return sc._part_result(np.asarray(labels), [], k, 0.0)


def test_seam_rows_match_a_scan_of_the_whole_table():
    # k = 1; class 0 of the middle part holds its first and last row: its two seams are one
    pieces = [[0, 1, 2, 1], [0, 1, 2, 0], [0, 0, 1, 1], [0, 1, 1]]
    cuts = np.cumsum([0] + [len(q) for q in pieces])
    offsets = np.cumsum([0] + [max(q) + 1 for q in pieces])
    labels = np.concatenate([np.array(q) + o for q, o in zip(pieces, offsets, strict=False)])
    parts_done = [_part(q, 1) for q in pieces]
    assert [q.linked for q in parts_done] == [False, True, False, False]
    seams = sc._ready_seams(parts_done)
    assert seams == [(1, 2), (3, 3)]
    found = [sc._seam_rows(parts_done, cuts, s)[0].tolist() for s in seams]
    assert found == [r.tolist() for r in seams_by_scanning(labels, cuts, 1)]


def test_ready_seams_wait_for_every_part_they_span():
    rng = np.random.default_rng(5)
    for _ in range(50):
        k = int(rng.integers(1, 3))
        pieces = [rng.integers(0, 3, size=int(rng.integers(2 * k, 8))) for _ in range(6)]
        done = [_part(q, k) for q in pieces]
        everything = sc._ready_seams(done)
        cuts = [c for s in everything for c in range(s[0], s[1] + 1)]
        assert cuts == list(range(1, 6))  # every cut in exactly one seam, in order
        bounds = np.cumsum([0] + [len(q) for q in pieces])
        offsets = np.cumsum([0] + [int(q.max()) + 1 for q in pieces])
        labels = np.concatenate([q + o for q, o in zip(pieces, offsets, strict=False)])
        expected = seams_by_scanning(labels, bounds, k)
        for seam, rows in zip(everything, expected, strict=True):
            found, start = sc._seam_rows(done, bounds, seam)
            assert found.tolist() == rows.tolist()  # and the same classes to start from:
            assert normalize_labels(start).tolist() == normalize_labels(labels[rows]).tolist()
        for i in range(6):  # part i missing: the seams touching it wait, the others not
            partial = sc._ready_seams([*done[:i], None, *done[i + 1 :]])
            assert partial == [s for s in everything if not s[0] - 1 <= i <= s[1]]


def test_identical_rows_and_fewer_rows_than_a_part():
    # identical rows: every class is settled at zero loss, the seams keep it so
    df = pd.DataFrame({"age": np.full(2000, 40), "hours": np.full(2000, 38)})
    p = build_problem(df, 3, bounds={"age": (0, 99), "hours": (0, 80)})
    with ThreadPoolExecutor(2) as ex:
        lab, info = split_and_carry(p, parts=4, executor=ex, progress=False)
        assert len(info["parts"]) == 5 and info["seams"] == 3
        assert information_loss(p, lab).objective == 0.0
        small = build_problem(datasets.synthetic_census(100, seed=4), 3)  # < 2 parts of 8k(2k-1)
        lab_small, info_small = split_and_carry(small, parts=4, executor=ex, progress=False)
    assert info_small["parts"] == [0, 100] and info_small["seams"] == 0
    assert parts(lab_small) == parts(split_and_carry(small, progress=False)[0])


def test_threads_give_the_same_partition(census, inline_three_parts):
    # (processes: the Dask test below runs the parts in worker processes)
    with ThreadPoolExecutor(2) as ex:
        threads, _ = split_and_carry(census[1], parts=3, executor=ex, progress=False)
    assert parts(threads) == parts(inline_three_parts)


def test_default_parts_depend_on_rows_not_workers(census):
    # the default number of parts is a count of rows, so any executor gives the same table
    _, p = census
    runs = []
    for workers in (1, 3):
        with ThreadPoolExecutor(workers) as ex:
            runs.append(split_and_carry(p, executor=ex, progress=False))
    (lab1, info1), (lab3, info3) = runs
    assert len(info1["parts"]) - 1 == max(2, -(-p.n // ROWS_PER_PART))
    assert info1["parts"] == info3["parts"] and parts(lab1) == parts(lab3)
    assert len(info1["part_times"]) == len(info1["parts"]) - 1
    assert set(info1["stage_times"]) == {"sort", "submit", "parts", "seams"}
    assert all(t >= 0 for t in [*info1["part_times"], *info1["stage_times"].values()])


def test_warm_up_runs_here():
    warm_up()  # what a Dask worker runs before timed work (client.run)


@pytest.mark.dask
@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_partition(census, inline_three_parts):
    import distributed  # in the test extra: a missing install must fail, not skip

    _, p = census
    inline = inline_three_parts
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dask_lab, info = split_and_carry(p, parts=3, executor=client.get_executor(), progress=False)
    assert parts(dask_lab) == parts(inline)
    assert info["seams"] == 2
