"""The adversary's view of LR-Geo releases (LRGeoResult.inference_error, geo.adversary) and the
LR-Geo trade-off sweep (geo.sweep_epsilon): per user against the brute-force adversary with
the map's metric and its road distances, and the sweep's points against direct runs."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from privopt.cli import main
from privopt.errors import InvalidInput
from privopt.geo import (
    CostReferenceTable,
    GeoParams,
    TravelCosts,
    grid_geography,
    run_lrgeo,
    sweep_epsilon,
)
from privopt.geo.adversary import user_inference_errors
from privopt.geo.geography import draw_indices
from privopt.geo.report import baseline_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "perturbation"))
from adversary_oracle import brute_force_adversary

PARAMS = GeoParams(epsilon=3.0, gamma=0.6, lr_radius=3.0, r_exp=1.5, r_obf=2.0, lr_max_size=10)
USERS = [6, 30, 51]


@pytest.fixture(scope="module")
def geo():
    return grid_geography(8, 8, 0.5, metric="haversine", road_factor=1.3)


@pytest.fixture(scope="module")
def table(geo):
    return CostReferenceTable(geo, 8, cell_km=0.1, rng=0)


@pytest.fixture(scope="module")
def res(geo):
    return run_lrgeo(geo, PARAMS, USERS, TravelCosts(geo), rng=0)


@pytest.mark.parametrize("loss", ["metric", "road"])
def test_each_user_against_the_brute_force_adversary(geo, res, loss):
    prior = np.random.default_rng(1).dirichlet(np.ones(geo.n_locations))
    seen = res.inference_error(prior, loss=loss)
    assert len(seen) == len(USERS)
    for m, (pm, s) in enumerate(zip(res.matrices, seen, strict=True)):
        rows = res.lr_sets[m]
        metric = geo.distance_rows(rows)
        d = metric if loss == "metric" else geo.travel_costs(geo.road_nodes[rows])
        p = prior[rows] / prior[rows].sum()
        error, true_report, _ = brute_force_adversary(pm.matrix, p, d, metric == 0)
        assert s.loss == loss
        assert s.expected_error == pytest.approx(error, rel=1e-10)
        assert s.true_report_probability == pytest.approx(true_report, rel=1e-10)


def test_road_errors_are_at_least_the_straight_line_ones(res):
    """Every road is at least as long as the straight line (road factor 1.3), so the
    road-aware adversary's least expected loss is at least the metric one's."""
    metric, road = res.inference_error(), res.inference_error(loss="road")
    for a, b in zip(metric, road, strict=True):
        assert b.expected_error >= a.expected_error * (1 - 1e-12)
        assert a.expected_error > 0


def test_a_prior_without_mass_on_a_user_is_refused(geo, res):
    prior = np.zeros(geo.n_locations)
    prior[res.lr_sets[0]] = 1.0 / res.lr_sets[0].size
    missing = next(m for m in range(3) if not np.intersect1d(res.lr_sets[m], res.lr_sets[0]).size)
    with pytest.raises(InvalidInput, match=f"no mass on user {missing}'s LR set"):
        res.inference_error(prior)


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda r: r.inference_error(loss="walk"), "loss must be one of"),
        (lambda r: r.inference_error(np.ones(3)), "prior"),
        (lambda r: r.inference_error(np.full(64, 0.5)), "prior must sum to 1"),
        (
            lambda r: user_inference_errors(r.geography, r.lr_sets[:1], [np.eye(3)]),
            "user 0's matrix must have shape",
        ),
        (lambda r: user_inference_errors("map", r.lr_sets, []), "geography"),
    ],
)
def test_bad_arguments_name_the_problem(res, call, fragment):
    with pytest.raises(InvalidInput, match=fragment):
        call(res)


def test_sweep_points_are_the_direct_runs(geo, table):
    eps = [1.5, 6.0]
    sweep = sweep_epsilon(geo, PARAMS, eps, USERS, table, rng=0, progress=False)
    assert sweep.mechanisms == ["lr-geo", "expmech", "laplace"]
    assert sweep.notes["adversary_loss"] == "metric"
    for e in eps:
        direct = run_lrgeo(geo, PARAMS.with_(epsilon=e), USERS, table, rng=0)
        at = {p.mechanism: p for p in sweep.points if p.epsilon == e}
        assert at["lr-geo"].expected_loss == pytest.approx(direct.cost(), rel=1e-9)
        seen = direct.inference_error()
        assert at["lr-geo"].adversary_error == pytest.approx(
            np.mean([s.expected_error for s in seen]), rel=1e-9
        )
        base = baseline_rows(direct, table, ["expmech"], seed=0)
        assert at["expmech"].expected_loss == pytest.approx(base[0]["cost_km"], rel=1e-12)
        for p in at.values():  # guessing the report: the mean metric distance to it
            assert p.adversary_error >= 0.0
            assert 0.0 <= p.true_report_probability <= 1.0


def test_sweep_on_an_executor_with_road_loss(geo, table):
    plain = sweep_epsilon(
        geo,
        PARAMS,
        [2.0, 4.0],
        USERS,
        table,
        rng=0,
        loss="road",
        baselines=["expmech"],
        progress=False,
    )
    with ThreadPoolExecutor(2) as pool:
        parallel = sweep_epsilon(
            geo,
            PARAMS,
            [2.0, 4.0],
            USERS,
            table,
            rng=0,
            loss="road",
            baselines=["expmech"],
            progress=False,
            executor=pool,
        )
    assert "road km" in plain.error_label
    for a, b in zip(plain.points, parallel.points, strict=True):
        assert (a.mechanism, a.epsilon) == (b.mechanism, b.epsilon)
        assert a.expected_loss == pytest.approx(b.expected_loss, rel=1e-9)
        assert a.adversary_error == pytest.approx(b.adversary_error, rel=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"epsilons": []}, "epsilons must not be empty"),
        ({"epsilons": [-1.0]}, "epsilons must be > 0"),
        ({"epsilons": [1e4]}, "epsilon \\* r_exp / 2"),
        ({"users": []}, "users must name at least one"),
        ({"users": [999]}, "users must be indices"),
        ({"loss": "walk"}, "loss must be one of"),
        ({"baselines": ["x"]}, "unknown baseline"),
        ({"rng": "x"}, "rng must be an integer"),
        ({"prior": np.ones(3)}, "prior"),
        ({"executor": "pool"}, "executor"),
        ({"laplace_samples": 0}, "laplace_samples"),
    ],
)
def test_sweep_bad_arguments_are_refused(geo, table, kwargs, fragment):
    args = {"epsilons": [1.0], "users": USERS, "progress": False, **kwargs}
    with pytest.raises(InvalidInput, match=fragment):
        sweep_epsilon(geo, PARAMS, costs=table, **args)


def test_laplace_needs_a_latlon_map():
    flat = grid_geography(4, 4, 0.5, metric="euclidean")
    sweep = sweep_epsilon(flat, PARAMS, [2.0], [3], TravelCosts(flat), rng=0, progress=False)
    assert sweep.mechanisms == ["lr-geo", "expmech"]
    with pytest.raises(InvalidInput, match="needs a \\(lat, lon\\) map"):
        sweep_epsilon(flat, PARAMS, [2.0], [3], TravelCosts(flat), baselines=["laplace"])


def test_the_command_line_sweep_with_the_road_aware_adversary(tmp_path, capsys):
    """``privopt geo --sweep-epsilon … --adversary-loss road``: seeded, the points on stdout
    are the API's for the same map, users and CR table; a single run reports the adversary's
    error too."""
    out = tmp_path / "o"
    argv = ["geo", "--grid", "6x6", "-M", "2", "--seed", "0", "--baselines", "expmech"]
    argv += ["--adversary-loss", "road", "-q"]
    assert main([*argv, "--sweep-epsilon", "2,6", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["notes"]["adversary_loss"] == "road"
    assert (out / "sweep.png").is_file() and (out / "sweep_tradeoff.png").is_file()
    geo = grid_geography(6, 6, 0.5, metric="haversine", road_factor=1.2)
    params = GeoParams(epsilon=10.0, gamma=0.5, lr_radius=20.0, r_obf=4.5, r_exp=4.0)
    table = CostReferenceTable(geo, 20, cell_km=0.1, rng=0)
    users = draw_indices(geo.n_locations, 2, 0)
    api = sweep_epsilon(
        geo,
        params,
        [2.0, 6.0],
        users,
        table,
        loss="road",
        baselines=["expmech"],
        rng=0,
        progress=False,
    )
    for row, p in zip(summary["points"], api.points, strict=True):
        assert (row["mechanism"], row["epsilon"]) == (p.mechanism, p.epsilon)
        assert row["expected_loss"] == pytest.approx(p.expected_loss, rel=1e-6)
        assert row["adversary_error"] == pytest.approx(p.adversary_error, rel=1e-6)
    assert main([*argv, "--epsilon", "10", "--out", str(tmp_path / "one")]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["adversary_loss"] == "road"
    assert one["adversary_error_km"] >= 0.0 and 0.0 <= one["true_report_probability"] <= 1.0
