"""Results do not depend on the unit of the data: metric-DP problems at 1e-300 or 1e15 times
the scale of a unit problem give its matrix, and a certificate never claims what it cannot
prove."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from privopt import certify, mdp
from privopt.errors import NumericalTrouble


def unit_problem() -> tuple[np.ndarray, mdp.PerturbationMatrix]:
    points = np.random.default_rng(0).uniform(0, 5, (14, 2))
    return points, mdp.solve(mdp.MDPProblem(points, epsilon=1.0, eta=2.0))


@pytest.mark.parametrize("scale", [1e-300, 1e-30, 1e-8, 1e15])
@pytest.mark.parametrize("method", ["lp", "benders"])
def test_a_metric_dp_problem_in_another_unit_has_the_same_solution(scale, method):
    """Coordinates × s, ε / s, η × s: the same mDP constraints, costs × s. The solver scales
    the objective itself (by a power of two), so the LP's absolute tolerances never swallow
    it; before, at 1e-30 any feasible matrix came back, certified "optimal"."""
    points, unit = unit_problem()
    prob = mdp.MDPProblem(points * scale, epsilon=1.0 / scale, eta=2.0 * scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an uncertified result would warn
        pm = mdp.solve(prob, method, **({"m": 3} if method == "benders" else {}))
    assert pm.info["status"] == "optimal"
    assert pm.expected_loss / scale == pytest.approx(unit.expected_loss, rel=2e-4)
    assert pm.lower_bound / scale == pytest.approx(unit.expected_loss, rel=2e-4)
    assert pm.lower_bound <= pm.expected_loss * (1 + 1e-9)
    for row in pm.history:  # Benders bounds in the problem's own unit
        assert row["lb"] <= pm.expected_loss * (1 + 1e-6)


def test_a_bound_above_the_value_is_not_a_certificate():
    """(value 1, bound 2) used to certify "optimal" with gap 0: one of them is wrong."""
    with pytest.raises(NumericalTrouble, match="exceeds the value"):
        certify.certify(1.0, 2.0, 1e-6)
    assert certify.certify(1.0, 1.0 + 1e-9, 1e-6).status == "optimal"  # rounding is fine


def test_an_lr_geo_map_in_tiny_units_is_not_certified_by_the_floor():
    """A 5 × 5 map in cells of 1e-20 km: the LP's tolerances leave a bound of 0 under a loss of
    2e-20, which the absolute floor 1e-12 of the gap's denominator used to certify "optimal".
    The floor scales with the map's costs now, so the result says it is not proven."""
    from privopt import geo

    cell = 1e-20
    g = geo.grid_geography(5, 5, cell)
    params = geo.GeoParams(
        epsilon=2.0 / cell,
        gamma=1.5 * cell,
        lr_radius=3.0 * cell,
        r_obf=2.0 * cell,
        r_exp=1.0 * cell,
        lr_max_size=6,
        cr_cell_km=0.1 * cell,
    )
    table = geo.CostReferenceTable(g, 4, rng=0, cell_km=0.1 * cell)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = geo.run_lrgeo(g, params, [3, 12], table, rng=0, progress=False)
    sol = res.solution
    if sol.status == "optimal":  # allowed only when the bound really proves it
        assert sol.objective - sol.lower_bound <= 1e-6 * sol.objective
    else:
        assert any(issubclass(c.category, certify.UncertifiedResultWarning) for c in caught)
