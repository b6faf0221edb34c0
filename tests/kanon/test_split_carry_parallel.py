"""Split & Carry in parts along the split tree, solved as tasks on an Executor (issue 17 item 4)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from privopt.kanon import anonymize, build_problem, datasets, information_loss, variance_sort
from privopt.kanon.initial import key_order
from privopt.kanon.milp import partition_objective
from privopt.kanon.split_carry import (
    DISTINCT_ROW_WORK,
    ROWS_PER_PART,
    cumulative_work,
    split_and_carry,
    split_points,
    warm_up,
)


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


def test_seams_never_increase_the_loss(census):
    _, p = census
    from privopt.kanon import split_carry as sc

    x, lo, hi, coef, _ = p.milp_columns()
    order = variance_sort(p)
    xs = x[order]
    cuts = split_points(p.x[order][:, key_order(p)], 4, 8 * 3 * 5)
    lab, _, _ = sc._run_parts(xs, lo, hi, coef, 3, 3, 10.0, "auto", cuts, None, None)
    before = partition_objective(xs, coef, lab)
    lab2, stats = sc._run_seams(xs, lo, hi, coef, 3, 10.0, "auto", lab.copy(), cuts, None)
    assert partition_objective(xs, coef, lab2) <= before + 1e-9
    assert np.unique(lab2, return_counts=True)[1].min() >= 3 and len(stats) == len(cuts) - 2


def test_seams_find_classes_beyond_the_window(monkeypatch):
    from privopt.kanon import split_carry as sc

    labels = np.array([0, 1, 2, 0, 3, 3, 1, 2, 4, 4, 0])  # class 0 reaches rows 0 and 10
    expected = [np.flatnonzero(np.isin(labels, np.unique(labels[c - 1 : c + 1]))) for c in (4, 8)]
    for window in (1, 2, 100):
        monkeypatch.setattr(sc, "SEAM_WINDOW", window)
        found = sc._seams(labels, np.array([0, 4, 8, 11]), 1)
        assert [f.tolist() for f in found] == [e.tolist() for e in expected]


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
    assert set(info1["stage_times"]) == {"sort", "parts", "seams"}
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
