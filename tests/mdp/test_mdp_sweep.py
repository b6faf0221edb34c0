"""The metric-DP trade-off sweep (privopt.mdp.sweep_epsilon) and its table (EpsilonSweep):
each point is the direct computation, the warm-started path and an executor agree, and the
figures obey what any mechanism must (the optimal loss falls as ε grows; the adversary, who may
guess the report itself, errs by at most the expected distance to the report)."""

from __future__ import annotations

import itertools
import json
from concurrent.futures import ThreadPoolExecutor

import matplotlib
import numpy as np
import pytest
from privopt.cli import main
from privopt.errors import InvalidInput
from privopt.mdp import MDPProblem, km_to_latlon, rome_grid, solve, sweep_epsilon
from privopt.perturbation import EpsilonSweep, exponential_mechanism, planar_laplace

matplotlib.use("Agg")

EPSILONS = [0.4, 1.0, 2.5]


@pytest.fixture(scope="module")
def grid() -> MDPProblem:
    return MDPProblem(
        km_to_latlon(rome_grid(4, 5)), epsilon=1.0, eta=1.5, metric="haversine", outputs=8, seed=0
    )


@pytest.fixture(scope="module")
def swept(grid) -> EpsilonSweep:
    return sweep_epsilon(grid, EPSILONS, rng=0, laplace_samples=300, progress=False)


def test_points_are_the_direct_computations(grid, swept):
    assert swept.mechanisms == ["optimal", "expmech", "laplace"]
    assert swept.epsilons == EPSILONS
    for p in swept.points:
        prob = grid.with_epsilon(p.epsilon)
        if p.mechanism == "optimal":
            pm = solve(prob)
            assert p.expected_loss == pytest.approx(pm.expected_loss, rel=1e-6)
        elif p.mechanism == "expmech":
            pm = exponential_mechanism(prob)
            assert p.expected_loss == pm.expected_loss
        else:
            pm = planar_laplace(prob, n_samples=300, rng=0)  # same seed: same draws
            assert p.expected_loss == pm.expected_loss
        seen = pm.inference_error(prob, prob.prior)
        assert p.adversary_error == pytest.approx(seen.expected_error, rel=1e-5)
        assert p.true_report_probability == pytest.approx(seen.true_report_probability, rel=1e-5)


def test_figures_obey_what_every_mechanism_must(swept):
    optimal = [p.expected_loss for p in swept.points if p.mechanism == "optimal"]
    assert all(a >= b * (1 - 1e-6) for a, b in itertools.pairwise(optimal))
    for p in swept.points:
        # guessing the report itself errs by the expected distance to it (the loss here)
        assert 0.0 <= p.adversary_error <= p.expected_loss * (1 + 1e-9)
        assert 0.0 <= p.true_report_probability <= 1.0
    for e in EPSILONS:  # the optimal matrix loses least at every ε
        at = {p.mechanism: p.expected_loss for p in swept.points if p.epsilon == e}
        assert at["optimal"] <= min(at.values()) * (1 + 1e-6)


def test_executor_gives_the_warm_path_s_figures(grid, swept):
    with ThreadPoolExecutor(2) as pool:
        cold = sweep_epsilon(
            grid, EPSILONS, rng=0, laplace_samples=300, progress=False, executor=pool
        )
    assert cold.notes["warm_start"] is False and swept.notes["warm_start"] is True
    for a, b in zip(swept.points, cold.points, strict=True):
        assert (a.mechanism, a.epsilon) == (b.mechanism, b.epsilon)
        assert a.expected_loss == pytest.approx(b.expected_loss, rel=1e-6)
        assert a.adversary_error == pytest.approx(b.adversary_error, rel=1e-5)


def test_road_table_and_baseline_choice():
    line = MDPProblem(np.arange(5.0)[:, None], epsilon=1.0, eta=1.0)
    road = 1.5 * line.distances  # every road 1.5 times the straight line
    plain = sweep_epsilon(line, [1.0], progress=False)
    assert plain.mechanisms == ["optimal", "expmech"]  # no planar points: no Laplace
    on_roads = sweep_epsilon(line, [1.0], distances=road, baselines=[], progress=False)
    assert on_roads.mechanisms == ["optimal"]
    assert on_roads.notes["adversary_loss"] == "the given table"
    assert on_roads.points[0].adversary_error == pytest.approx(
        1.5 * plain.points[0].adversary_error, rel=1e-9
    )


def test_table_outputs(swept, tmp_path):
    rows = swept.rows()
    assert len(rows) == 9 and set(rows[0]) == {
        "mechanism",
        "epsilon",
        "expected_loss",
        "adversary_error",
        "true_report_probability",
        "seconds",
    }
    text = swept.to_csv()
    assert text.splitlines()[0].startswith("mechanism,epsilon,expected_loss")
    assert len(text.splitlines()) == 10
    path = swept.write_csv(tmp_path / "tradeoff.csv")
    assert path.read_text() == text
    frame = swept.to_frame()
    assert list(frame["mechanism"][:3]) == ["optimal", "expmech", "laplace"]
    assert "km" in swept.markdown().splitlines()[0]
    left, right = swept.plot()
    assert len(left.get_lines()) == 3 and len(right.get_lines()) == 3
    assert "ε" in right.get_xlabel()
    ax = swept.plot_tradeoff()
    assert ax.get_xlabel() == swept.loss_label and ax.get_ylabel() == swept.error_label


def test_progress_goes_to_stderr_only(capsys):
    line = MDPProblem(np.arange(4.0)[:, None], epsilon=1.0, eta=1.0)
    sweep_epsilon(line, [0.5, 1.0], progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "ε sweep" in err


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"epsilons": []}, "epsilons must not be empty"),
        ({"epsilons": [0.0]}, "epsilons must be > 0"),
        ({"epsilons": [np.nan]}, "epsilons"),
        ({"epsilons": "1"}, "epsilons"),
        ({"epsilons": [1.0], "method": "expmech"}, "method must be 'lp' or 'benders'"),
        ({"epsilons": [1.0], "baselines": "x"}, "baselines must be 'auto'"),
        ({"epsilons": [1.0], "baselines": ["x"]}, "unknown baseline"),
        ({"epsilons": [1.0], "baselines": ["laplace"]}, "points of the plane"),
        ({"epsilons": [1.0], "executor": 3}, "executor"),
        ({"epsilons": [1.0], "progress": "yes"}, "progress"),
        ({"epsilons": [1.0], "laplace_samples": 0}, "laplace_samples"),
        ({"epsilons": [1.0], "distances": np.ones((2, 2))}, "distances must have shape"),
        ({"epsilons": [1.0], "bogus": 1}, "unknown keyword.*bogus"),
        ({"epsilons": [1.0], "m": 4}, "unknown keyword.*'m'"),
    ],
)
def test_bad_arguments_are_refused(kwargs, fragment):
    line = MDPProblem(np.arange(4.0)[:, None], epsilon=1.0, eta=1.0)
    with pytest.raises(InvalidInput, match=fragment):
        sweep_epsilon(line, **{"progress": False, **kwargs})


def test_the_command_line_sweep_is_the_api_sweep(tmp_path, capsys):
    """``privopt mdp --sweep-epsilon``: the points on stdout are the API's (the exact
    mechanisms' figures equal; the optimal loss to the solver's gap), the table and plots in
    --out, progress on stderr only."""
    points = np.random.default_rng(3).uniform(0.0, 4.0, (12, 2))
    src = tmp_path / "p.csv"
    np.savetxt(src, points, delimiter=",", header="x,y", comments="")
    out = tmp_path / "o"
    argv = ["mdp", str(src), "--eta", "1.5", "--sweep-epsilon", "0.5,2", "--out", str(out)]
    assert main([*argv, "--baselines", "expmech"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["mode"] == "sweep-epsilon"
    assert all((out / name).is_file() for name in summary["files"])
    prob = MDPProblem(points, epsilon=1.0, eta=1.5)
    api = sweep_epsilon(prob, [0.5, 2.0], baselines=["expmech"], progress=False)
    assert len(summary["points"]) == len(api.points) == 4
    for row, p in zip(summary["points"], api.points, strict=True):
        assert (row["mechanism"], row["epsilon"]) == (p.mechanism, p.epsilon)
        assert row["expected_loss"] == pytest.approx(p.expected_loss, rel=1e-6)
        assert row["adversary_error"] == pytest.approx(p.adversary_error, rel=1e-5)
    csv_lines = (out / "sweep.csv").read_text().splitlines()
    assert csv_lines[0].startswith("mechanism,epsilon,expected_loss,adversary_error")
    assert len(csv_lines) == 5
    assert "{" not in captured.err  # the summary is on stdout only


def test_against_the_optimal_matrix_the_report_is_the_best_guess():
    """Cost = distance, every record an output: a guess better than the report would remap the
    outputs to a lower loss than the LP optimum, so the adversary's error is the loss."""
    prob = MDPProblem(np.random.default_rng(5).uniform(0, 3, (15, 2)), epsilon=1.5, eta=1.0)
    pm = solve(prob)
    seen = pm.inference_error(prob, prob.prior)
    assert seen.expected_error == pytest.approx(pm.expected_loss, rel=1e-6)
    assert seen.expected_error <= pm.expected_loss * (1 + 1e-9)
