"""Every public entry point × the bad inputs a user can hand it: a typed error that names them.

One table of (entry point, bad input, expected exception type, message fragment). The classes
tried everywhere they apply: NaN, ±inf, zero / negative where a positive is needed, complex
numbers, text, booleans, wrong shapes, empty input, out-of-range indices, unknown options.
Result records (``LPResult``, ``Verification``, ...) are built by privopt itself and are not
entry points.
"""

from __future__ import annotations

import dataclasses
import decimal
import math
import re
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import privopt
import pytest
import scipy.sparse as sp
from privopt import census as cen
from privopt import (
    certify,
    cli,
    demo,
    dp,
    geo,
    geometry,
    graphs,
    kanon,
    lp,
    mdp,
    perturbation,
    registry,
    release,
    report,
)
from privopt.census.synthetic import synthetic_hierarchy
from privopt.cluster import DPM, budget_schedule, nearest_centre, sklearn_expected_failed_checks
from privopt.errors import InvalidInput, NumericalTrouble, PrivacyBudgetExceeded, PrivoptError
from privopt.lp import examples as lp_examples

NAN, INF = math.nan, math.inf
CPLX = np.array([[0.0, 1.0], [1.0, 0.0]]) + 1j


@cache
def points() -> np.ndarray:
    return np.random.default_rng(0).uniform(0, 3, (6, 2))


@cache
def problem() -> mdp.MDPProblem:
    return mdp.MDPProblem(points(), epsilon=1.0, eta=1.5)


@cache
def fars() -> pd.DataFrame:
    return kanon.datasets.fars_20()


@cache
def kproblem() -> Any:
    return kanon.build_problem(fars(), 3)


@cache
def kboxes() -> Any:
    return kanon.class_boxes(kproblem(), np.zeros(len(fars()), dtype=np.int64))


@cache
def counts() -> cen.CensusCounts:
    rec = pd.DataFrame({"state": ["GA", "GA", "NY", "NY"], "hh": ["a", "a", "b", "c"]})
    return cen.CensusCounts.from_records(rec, ["state"], "hh")


@cache
def road() -> Any:
    return graphs.graph_from_edges(3, [0, 1], [1, 2], [1.0, 1.0])


@cache
def grid() -> Any:
    return geo.grid_geography(3, 3, 0.5)


def small_lp() -> lp.LinearProgram:
    prog = lp.LinearProgram(2, objective=[1.0, 1.0])
    prog.add_rows(sp.csr_array([[1.0, 1.0]]), lower=[1.0])
    return prog


CASES: list[tuple[str, Callable[[], Any], type[BaseException], str]] = []


def case(entry: str, bad: str, call: Callable[[], Any], fragment: str, exc=InvalidInput) -> None:
    CASES.append((f"{entry}: {bad}", call, exc, fragment))


def scalar_cases(entry: str, call: Callable[[Any], Any], name: str, bads=None) -> None:
    """The usual bad values of a parameter that must be a finite positive real number."""
    for value in bads or (0.0, -1.0, NAN, INF, 1 + 0j, "1", True):
        case(entry, f"{name}={value!r}", lambda v=value: call(v), name)


# ---------------------------------------------------------------------------- privopt.dp
for fn, args in [
    (dp.sample_discrete_laplace, lambda e: dp.sample_discrete_laplace(e, 3, rng=0)),
    (dp.sample_laplace, lambda e: dp.sample_laplace(e, 3, rng=0)),
    (dp.sample_gaussian, lambda e: dp.sample_gaussian(e, 3, rng=0)),
    (dp.sample_discrete_gaussian, lambda e: dp.sample_discrete_gaussian(e, 3, rng=0)),
]:
    first = (
        "sigma"
        if "gaussian" in fn.__name__
        else ("scale" if fn is dp.sample_laplace else "epsilon")
    )
    scalar_cases(fn.__name__, args, first)
    for size in (-1, 1.5, "3", (2, -1), True):
        case(fn.__name__, f"size={size!r}", lambda s=size, f=fn: f(1.0, s, rng=0), "size")
    case(fn.__name__, "rng='x'", lambda f=fn: f(1.0, 3, rng="x"), "rng")
    case(fn.__name__, "rng=-1", lambda f=fn: f(1.0, 3, rng=-1), "rng")
    case(fn.__name__, "rng=1.5", lambda f=fn: f(1.0, 3, rng=1.5), "rng")
scalar_cases(
    "sample_discrete_laplace",
    lambda s: dp.sample_discrete_laplace(1.0, sensitivity=s),
    "sensitivity",
)
scalar_cases("discrete_laplace_pmf", lambda e: dp.discrete_laplace_pmf(0, e), "epsilon")
case(
    "discrete_laplace_pmf", "k=0.5", lambda: dp.discrete_laplace_pmf(0.5, 1.0), "k must be integers"
)
case("discrete_laplace_pmf", "k=nan", lambda: dp.discrete_laplace_pmf(NAN, 1.0), "k")
case(
    "discrete_laplace_pmf", "k complex", lambda: dp.discrete_laplace_pmf(1j, 1.0), "k must be real"
)
scalar_cases("discrete_gaussian_pmf", lambda s: dp.discrete_gaussian_pmf(0, s), "sigma")
case(
    "discrete_gaussian_pmf",
    "k=[1, 2.5]",
    lambda: dp.discrete_gaussian_pmf([1, 2.5], 1.0),
    "k must be integers",
)
for fn in (dp.laplace_mechanism, dp.gaussian_mechanism):
    extra = (1e-6,) if fn is dp.gaussian_mechanism else ()
    scalar_cases(fn.__name__, lambda e, f=fn, x=extra: f(np.zeros(2), e, *x, rng=0), "epsilon")
    scalar_cases(
        fn.__name__,
        lambda s, f=fn, x=extra: f(np.zeros(2), 1.0, *x, sensitivity=s, rng=0),
        "sensitivity",
    )
    for values, frag in [
        ([NAN], "values"),
        ([INF], "values"),
        (CPLX, "values must be real"),
        (["a"], "values"),
        ([True], "values"),
    ]:
        case(
            fn.__name__,
            f"values={values!r}"[:40],
            lambda v=values, f=fn, x=extra: f(v, 1.0, *x, rng=0),
            frag,
        )
for bad in (-0.1, 1.0, NAN, "0.1"):
    case(
        "gaussian_mechanism",
        f"delta={bad!r}",
        lambda d=bad: dp.gaussian_mechanism([0.0], 1.0, d),
        "delta",
    )
for fn in (dp.analytic_gaussian_sigma, dp.classic_gaussian_sigma):
    scalar_cases(fn.__name__, lambda e, f=fn: f(e, 1e-6), "epsilon")
    for bad in (0.0, -0.1, 1.0, NAN):
        case(fn.__name__, f"delta={bad!r}", lambda d=bad, f=fn: f(1.0, d), "delta")
    scalar_cases(fn.__name__, lambda s, f=fn: f(1.0, 1e-6, s), "sensitivity")
for fn in (dp.gaussian_delta, dp.discrete_gaussian_delta):
    scalar_cases(fn.__name__, lambda s, f=fn: f(s, 1.0), "sigma")
    scalar_cases(fn.__name__, lambda e, f=fn: f(1.0, e), "epsilon", bads=(-1.0, NAN, INF, 1j, "1"))
for fn in (dp.exponential_mechanism, dp.exponential_mechanism_probabilities):
    kw = {"rng": 0} if fn is dp.exponential_mechanism else {}
    scalar_cases(f"dp.{fn.__name__}", lambda e, f=fn, k=kw: f([0.0, 1.0], e, **k), "epsilon")
    for scores, frag in [
        ([], "scores"),
        ([NAN, 1.0], "scores"),
        ([1j], "scores must be real"),
        ([[1.0]], "scores"),
    ]:
        case(
            f"dp.{fn.__name__}",
            f"scores={scores!r}",
            lambda s=scores, f=fn, k=kw: f(s, 1.0, **k),
            frag,
        )
case(
    "dp.exponential_mechanism",
    "size=-1",
    lambda: dp.exponential_mechanism([0.0, 1.0], 1.0, size=-1),
    "size",
)
for weights, frag in [
    ([], "at least one weight"),
    ([NAN, 1.0], "weights"),
    ([INF, 1.0], "weights"),
    ([1j, 1.0], "weights must be real"),
    ([[0.5, 0.5]], "weights"),
    (["0.5", "0.5"], "weights"),
    ([True, 1.0], "weights"),
    ([0.5, -0.5], "negative weight"),
    ([0.0, 0.0], "positive weight"),
]:
    case(
        "dp.sample_categorical",
        f"weights={weights!r}",
        lambda w=weights: dp.sample_categorical(w, rng=0),
        frag,
    )
case("dp.sample_categorical", "size=-1", lambda: dp.sample_categorical([1.0], -1), "size")
case("dp.sample_categorical", "rng='x'", lambda: dp.sample_categorical([1.0], rng="x"), "rng")
for bad in ("x", -1, 2.5, [1]):
    case("as_random_source", f"rng={bad!r}", lambda b=bad: dp.as_random_source(b), "rng")
case("GeneratorSource", "generator=5", lambda: dp.GeneratorSource(5), "generator")
scalar_cases(
    "PrivacyAccountant",
    dp.PrivacyAccountant,
    "epsilon_budget",
    bads=(0.0, -1.0, NAN, 1j, "1"),
)
for bad in (-0.1, 1.0, NAN):
    case(
        "PrivacyAccountant",
        f"delta_budget={bad!r}",
        lambda b=bad: dp.PrivacyAccountant(1.0, b),
        "delta_budget",
    )
scalar_cases(
    "PrivacyAccountant.spend", lambda e: dp.PrivacyAccountant().spend(e, label="x"), "epsilon"
)
case(
    "PrivacyAccountant.spend",
    "label=''",
    lambda: dp.PrivacyAccountant().spend(0.1, label=""),
    "label",
)
case(
    "PrivacyAccountant.check_plan",
    "plan=[1]",
    lambda: dp.PrivacyAccountant().check_plan([1]),
    "plan",
)
case(
    "PrivacyAccountant.spend_all",
    "PlannedSpend(nan)",
    lambda: dp.PrivacyAccountant().spend_all([dp.PlannedSpend(NAN, label="x")]),
    "epsilon",
)
case(
    "PrivacyAccountant.parallel",
    "label=3",
    lambda: dp.PrivacyAccountant().parallel(3).__enter__(),
    "label",
)
case(
    "PrivacyAccountant.spend",
    "part outside a group",
    lambda: dp.PrivacyAccountant().spend(0.1, label="x", part="north"),
    "part",
)
case(
    "PrivacyAccountant.spend",
    "seeded='yes'",
    lambda: dp.PrivacyAccountant().spend(0.1, label="x", seeded="yes"),
    "seeded",
)
case("PlannedSpend", "part=''", lambda: dp.PlannedSpend(0.1, label="x", group="g", part=""), "part")
case("is_seeded", "rng='x'", lambda: dp.is_seeded("x"), "rng")
case("is_seeded", "rng=-1", lambda: dp.is_seeded(-1), "rng")

# ---------------------------------------------------------------------------- privopt.lp
case("LinearProgram", "n_vars=-1", lambda: lp.LinearProgram(-1), "n_vars")
case(
    "LinearProgram", "objective NaN", lambda: lp.LinearProgram(2, objective=[NAN, 1.0]), "objective"
)
case(
    "LinearProgram",
    "objective complex",
    lambda: lp.LinearProgram(2, objective=[1j, 1.0]),
    "objective",
)
case(
    "LinearProgram", "lower > upper", lambda: lp.LinearProgram(1, lower=[2.0], upper=[1.0]), "lower"
)
case("LinearProgram", "sense='up'", lambda: lp.LinearProgram(1, sense="up"), "sense")
case(
    "LinearProgram.add_rows",
    "too wide",
    lambda: small_lp().add_rows(sp.csr_array([[1.0, 1.0, 1.0]]), upper=[1.0]),
    "columns",
)
case(
    "LinearProgram.add_rows",
    "NaN bound",
    lambda: small_lp().add_rows(sp.csr_array([[1.0, 1.0]]), upper=[NAN]),
    "upper",
)
case("lp.solve", "lp='x'", lambda: lp.solve("x"), "LinearProgram")
case("lp.solve", "method='fast'", lambda: lp.solve(small_lp(), method="fast"), "method")
for name, value in [
    ("time_limit", -1.0),
    ("time_limit", NAN),
    ("iteration_limit", -1),
    ("threads", 0),
    ("mip_rel_gap", -1.0),
]:
    case(
        "lp.solve",
        f"{name}={value!r}",
        lambda n=name, v=value: lp.solve(small_lp(), **{n: v}),
        name,
    )
case(
    "farkas_margin",
    "shape mismatch",
    lambda: lp.farkas_margin(
        sp.csr_array(np.eye(2)), np.zeros(3), np.zeros(3), np.zeros(2), np.ones(2), np.zeros(3)
    ),
    "y must have shape",
)
case("BendersProblem", "master='x'", lambda: lp.BendersProblem("x"), "master")
case("solve_benders", "problem='x'", lambda: lp.solve_benders("x"), "problem")
for kw, frag in [
    ({"lower": NAN}, "lower must not be NaN"),
    ({"upper": NAN}, "upper must not be NaN"),
    ({"lower": 1j}, "lower must be a real number"),
    ({"lower": "1"}, "lower must be a real number"),
    ({"lower": 2.0, "upper": 1.0}, "lower <= upper"),
    ({"coef": [1.0, NAN]}, "Cut coef"),
]:
    case("Cut", repr(kw), lambda k=kw: lp.Cut(**{"coef": [1.0, 0.0], **k}), frag)


def small_rowgen() -> lp.RowGenProblem:
    prob = lp.RowGenProblem(1)
    prob.add_block([1.0, 2.0], rows=np.ones((1, 3)), row_lower=1.0)
    return prob


case("RowGenProblem", "n_shared=-1", lambda: lp.RowGenProblem(-1), "n_shared")
case("RowGenProblem", "n_shared='2'", lambda: lp.RowGenProblem("2"), "n_shared")
case("RowGenProblem", "shared_cost NaN", lambda: lp.RowGenProblem(1, shared_cost=[NAN]), "cost")
case(
    "RowGenProblem",
    "shared_cost text",
    lambda: lp.RowGenProblem(1, shared_cost=["1"]),
    "shared_cost",
)
case(
    "RowGenProblem",
    "shared_cost of 3 for 2 columns",
    lambda: lp.RowGenProblem(2, shared_cost=[1.0, 2.0, 3.0]),
    r"shared_cost must be a number or have shape \(2,\)",
)
for kw, frag in [
    ({"cost": [NAN]}, "cost must be finite"),
    ({"cost": ["1"]}, "cost must be a numeric"),
    ({"cost": [True, 2.0]}, "cost must be numeric"),
    ({"cost": [1.0], "lower": 2.0, "upper": 1.0}, "lower > upper"),
    ({"cost": [1.0], "rows": np.ones((1, 3))}, "rows must have 1 columns"),
    ({"cost": [1.0], "rows": [["a"]]}, "rows must be a numeric"),
    ({"cost": [1.0], "rows": np.ones((1, 1)), "row_lower": NAN}, "row_lower must not be NaN"),
    ({"cost": [1.0], "rows": np.ones((1, 1)), "row_lower": [1.0, 2.0]}, "row_lower must be"),
    ({"cost": [1.0], "separate": 3}, "separate must be a callable"),
    ({"cost": [1.0], "price": "x"}, "price must be a callable"),
    ({"cost": [1.0], "initial_columns": [5]}, "initial_columns"),
    ({"cost": [1.0, 2.0], "simplex_groups": [0]}, "simplex_groups"),
    ({"cost": [1.0, 2.0], "simplex_groups": [0, 0], "simplex_rhs": -1.0}, "rhs"),
]:
    case(
        "RowGenProblem.add_block",
        repr({k: v for k, v in kw.items() if k != "cost"} or kw),
        lambda k=kw: lp.RowGenProblem().add_block(**k),
        frag,
    )
case("solve_rowgen", "problem='x'", lambda: lp.solve_rowgen("x"), "RowGenProblem")
for name, value in [
    ("rel_gap", -1.0),
    ("rel_gap", NAN),
    ("max_rounds", 0),
    ("time_limit", -1.0),
    ("method", "fast"),
    ("highs_options", {"no_such_option": 1}),
    ("highs_options", "x"),
]:
    case(
        "solve_rowgen",
        f"{name}={value!r}",
        lambda n=name, v=value: lp.solve_rowgen(small_rowgen(), progress=False, **{n: v}),
        name if name != "highs_options" else "highs_options",
    )
case("RowGenSolver", "problem='x'", lambda: lp.RowGenSolver("x"), "RowGenProblem")
case("RowGenSolver", "basis='x'", lambda: lp.RowGenSolver(small_rowgen(), basis="x"), "basis")
case(
    "RowGenSolver.add_rows",
    "block=5",
    lambda: lp.RowGenSolver(small_rowgen()).add_rows(5, np.ones((1, 3)), 0.0, 1.0),
    "block",
)
case(
    "RowGenSolver.add_rows",
    "lower NaN",
    lambda: lp.RowGenSolver(small_rowgen()).add_rows(0, np.ones((1, 3)), NAN, 1.0),
    "lower must not be NaN",
)
case(
    "RowGenSolver.add_columns",
    "local=[9]",
    lambda: lp.RowGenSolver(small_rowgen()).add_columns(0, [9]),
    "column indices",
)
case(
    "RowGenSolver.add_columns",
    "local=[0.5]",
    lambda: lp.RowGenSolver(small_rowgen()).add_columns(0, [0.5]),
    "local must hold integers",
)
case("SimplexGroups", "group id 3 of 1 group", lambda: lp.SimplexGroups([0, 3], [1.0]), "group ids")
case("SimplexGroups", "rhs NaN", lambda: lp.SimplexGroups([0, 0], [NAN]), "rhs")
case("SimplexGroups", "group text", lambda: lp.SimplexGroups(["a"], [1.0]), "group must be")
case("SimplexGroups", "group 0.5", lambda: lp.SimplexGroups([0.5], [1.0]), "group must hold")
case("SimplexGroups", "empty group", lambda: lp.SimplexGroups([1, 1], [1.0, 1.0]), "no column")
case("SimplexGroups.blocks", "n_groups=-1", lambda: lp.SimplexGroups.blocks(-1, 2), "n_groups")
for kw, frag in [
    ({"row_dual": [1.0, 2.0]}, r"row_dual must have shape \(1,\)"),
    ({"cost": np.ones(3)}, r"cost must have shape \(2,\)"),
    ({"cost": ["1", "1"]}, "cost must be a numeric"),
    ({"row_lower": [0.0, 0.0]}, "row_lower must have shape"),
    ({"col_upper": [1.0, 1.0, 1.0]}, "col_upper must be a number"),
    ({"A": "x"}, "A must be a 2-D matrix"),
    ({"simplices": "x"}, "simplices"),
]:
    args = {
        "cost": np.ones(2),
        "A": sp.csr_array(np.ones((1, 2))),
        "row_lower": [0.0],
        "row_upper": [1.0],
        "col_lower": 0.0,
        "col_upper": 1.0,
        "row_dual": [1.0],
    }
    case(
        "safe_dual_bound",
        repr(kw),
        lambda a={**args, **kw}: lp.safe_dual_bound(**a),
        frag,
    )
for kw, frag in [
    ({"target": [NAN, 1.0]}, "target must be finite"),
    ({"target": ["1", "2"]}, "target must be"),
    ({"A": np.ones((1, 3))}, "A must have 2 columns"),
    ({"A": [["a", "b"]]}, "A must be"),
    ({"row_lower": [1.0, 2.0]}, r"row_lower must have shape \(1,\)"),
    ({"row_upper": [NAN]}, "row_upper must not be NaN"),
    ({"col_lower": NAN}, "col_lower"),
    ({"time_limit": -1.0}, "time_limit"),
]:
    args = {"target": [1.0, 1.0], "A": np.ones((1, 2)), "row_lower": [1.0], "row_upper": [1.0]}
    case(
        "solve_projection_qp",
        repr(kw),
        lambda a={**args, **kw}: lp.solve_projection_qp(**a),
        frag,
    )


def loaded_model() -> lp.Model:
    model = lp.Model.configured(method="simplex")
    model.load([1.0, 1.0], sp.csr_array(np.ones((1, 2))), [1.0], [1.0])
    return model


case("Model", "options='x'", lambda: lp.Model(options="x"), "highs_options must be")
case("Model", "options unknown", lambda: lp.Model(options={"no_such_option": 1}), "rejected")
case(
    "Model.configured", "method='barrier'", lambda: lp.Model.configured(method="barrier"), "method"
)
case("Model.configured", "tol=-1", lambda: lp.Model.configured(tol=-1.0), "tol")
case("Model.configured", "threads=0", lambda: lp.Model.configured(threads=0), "threads")
case(
    "Model.load",
    "cost of 3 for 2 columns",
    lambda: lp.Model().load([1.0, 2.0, 3.0], np.ones((1, 2)), [1.0], [1.0]),
    r"cost must be a number or have shape \(2,\)",
)
case("Model.load", "A text", lambda: lp.Model().load([1.0], [["a"]], [1.0], [1.0]), "A must be")
case(
    "Model.load",
    "row_lower NaN",
    lambda: lp.Model().load([1.0], np.ones((1, 1)), [NAN], [1.0]),
    "row_lower must not be NaN",
)
case(
    "Model.add_rows",
    "lower of 2 for 1 row",
    lambda: loaded_model().add_rows([1.0, 2.0], [3.0], np.ones((1, 2))),
    r"lower must be a number or have shape \(1,\)",
)
case(
    "Model.add_cols",
    "a of 3 rows",
    lambda: loaded_model().add_cols([1.0], 0.0, 1.0, np.ones((3, 1))),
    "a must have the model's 1 rows",
)
case(
    "Model.set_row_bounds",
    "row 3 of 1",
    lambda: loaded_model().set_row_bounds([3], 0.0, 1.0),
    "rows must be indices in",
)
case(
    "Model.set_col_bounds",
    "upper NaN",
    lambda: loaded_model().set_col_bounds([0], 0.0, NAN),
    "upper must not be NaN",
)
case("Model.set_option", "unknown", lambda: loaded_model().set_option("no_such", 1), "rejected")
case("Model.set_start", "x of 1 for 2", lambda: loaded_model().set_start([1.0]), "x must be")
case("Model.set_basis", "basis='x'", lambda: loaded_model().set_basis("x"), "basis must be")

# ---------------------------------------------------------------------------- privopt.mdp
P = points()
for kw, frag in [
    ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": NAN}, "epsilon"),
    ({"epsilon": 1j}, "epsilon"),
    ({"eta": 0.0}, "eta"),
    ({"eta": NAN}, "eta"),
    ({"metric": "manhattan"}, "metric"),
    ({"prior": [0.5, 0.5]}, "prior"),
    ({"prior": np.full(6, 1 / 6) + 0j}, "prior must be real"),
    ({"outputs": 0}, "outputs"),
    ({"outputs": 7}, "outputs"),
    ({"outputs": np.array([0, 0])}, "distinct"),
    ({"outputs": np.array([9])}, "outputs"),
    ({"cost": -np.ones((6, 6))}, "cost"),
    ({"cost": np.ones((6, 5))}, "cost"),
    ({"graph": road()}, "graph"),
]:
    case(
        "MDPProblem",
        repr(kw)[:40],
        lambda k=kw: mdp.MDPProblem(P, **{"epsilon": 1.0, "eta": 1.0, **k}),
        frag,
    )
for records, frag in [
    (P + 1j, "records must be real"),
    ([[NAN, 0.0]], "records"),
    (np.zeros((0, 2)), "records"),
    ([["a", "b"]], "records"),
    (np.array([[1.5e308, 0], [-1.5e308, 0]]), "overflow"),
]:
    case(
        "MDPProblem",
        f"records={str(records)[:20]}",
        lambda r=records: mdp.MDPProblem(r, epsilon=1.0, eta=1.0),
        frag,
    )
case(
    "MDPProblem",
    "haversine lat=100",
    lambda: mdp.MDPProblem([[100.0, 0.0]], epsilon=1, eta=1, metric="haversine"),
    "latitude",
)
case(
    "MDPProblem",
    "precomputed asymmetric",
    lambda: mdp.MDPProblem([[0.0, 1.0], [2.0, 0.0]], epsilon=1, eta=1, metric="precomputed"),
    "symmetric",
)
case(
    "MDPProblem",
    "graph nodes float",
    lambda: mdp.MDPProblem([0.5, 1.0], epsilon=1, eta=1, metric="graph", graph=road()),
    "records",
)
case("mdp.solve", "method='simplex'", lambda: mdp.solve(problem(), "simplex"), "method")
case("mdp.solve", "bogus_option=3", lambda: mdp.solve(problem(), bogus_option=3), "bogus_option")
case(
    "mdp.solve",
    "benders bogus_option",
    lambda: mdp.solve(problem(), "benders", bogus_option=3),
    "bogus_option",
)
case("mdp.solve", "problem='x'", lambda: mdp.solve("x"), "problem")
case("mdp.solve", "time_limit=-1", lambda: mdp.solve(problem(), time_limit=-1.0), "time_limit")
case(
    "mdp.solve",
    "initial_rows='all'",
    lambda: mdp.solve(problem(), initial_rows="all"),
    "initial_rows",
)
case("mdp.solve", "benders m=0", lambda: mdp.solve(problem(), "benders", m=0), "m")
case(
    "mdp.solve",
    "benders rel_gap=-1",
    lambda: mdp.solve(problem(), "benders", rel_gap=-1.0),
    "rel_gap",
)
case("solve_epsilon_path", "epsilons=[]", lambda: mdp.solve_epsilon_path(problem(), []), "epsilons")
case(
    "solve_epsilon_path",
    "epsilons=[nan]",
    lambda: mdp.solve_epsilon_path(problem(), [NAN]),
    "epsilon",
)
case(
    "perturbation.exponential_mechanism",
    "problem=None",
    lambda: perturbation.exponential_mechanism(None),
    "problem",
)

# ---------------------------------------------------------------------------- privopt.release
case("Guarantee", "kind='x'", lambda: release.Guarantee("x"), "kind")
case("Guarantee", "parameters=[1]", lambda: release.Guarantee("epsilon-DP", [1]), "parameters")
case(
    "Guarantee",
    "parameter True",
    lambda: release.Guarantee("epsilon-DP", {"epsilon": True}),
    "parameters",
)
case("Guarantee", "seeded=1", lambda: release.Guarantee("epsilon-DP", seeded=1), "seeded")
case("Guarantee.from_json", "data=3", lambda: release.Guarantee.from_json(3), "guarantee")
case("load", "not a release", lambda: release.load(tempfile.mkdtemp()), "not a saved")
case("load", "missing path", lambda: release.load("/nonexistent/x"), "not a saved")
case("read_metadata", "a file", lambda: release.read_metadata(__file__), "not a saved")
case("json_number_back", "'x'", lambda: release.json_number_back("x"), "number")
case("json_number_back", "True", lambda: release.json_number_back(True), "number")
case("load", "missing path (privopt.load)", lambda: privopt.load("/nonexistent/x"), "not a saved")

# ---------------------------------------------------------------------------- privopt.registry
case("registry.mechanism", "name='x'", lambda: registry.mechanism("x"), "no mechanism")
case("register", "entry='mdp'", lambda: registry.register("mdp"), "Mechanism")
case("register", "duplicate", lambda: registry.register(registry.mechanism("mdp")), "already")
case(
    "Mechanism.release_class",
    "not a Release",
    lambda: registry.Mechanism(
        "x", "", "privopt:load", "privopt:load", "x", "privopt:load"
    ).release_class(),
    "not a privopt.release.Release",
)

# ---------------------------------------------------------------------------- privopt.perturbation
case(
    "perturbation.exponential_mechanism",
    "problem='x'",
    lambda: perturbation.exponential_mechanism("x"),
    "problem",
)
case("solve_exact", "problem=None", lambda: perturbation.solve_exact(None), "problem")
case(
    "solve_exact",
    "time_limit=-1",
    lambda: perturbation.solve_exact(problem(), time_limit=-1.0),
    "time_limit",
)
case(
    "solve_components",
    "problem='x'",
    lambda: perturbation.solve_components("x", lambda b, t: None, method="m", rel_gap=0.0),
    "problem",
)
case(
    "solve_components",
    "block_solver=3",
    lambda: perturbation.solve_components(problem(), 3, method="m", rel_gap=0.0),
    "block_solver",
)
case(
    "solve_components",
    "rel_gap=nan",
    lambda: perturbation.solve_components(problem(), lambda b, t: None, method="m", rel_gap=NAN),
    "rel_gap",
)
case(
    "verify_matrix",
    "z NaN",
    lambda: perturbation.verify_matrix(np.full((6, 6), NAN), problem().edges, 1.0),
    "",
)
case(
    "verify_matrix",
    "epsilon=-1",
    lambda: perturbation.verify_matrix(np.full((6, 6), 1 / 6), problem().edges, -1.0),
    "epsilon",
)
case(
    "scan_violations",
    "z text",
    lambda: perturbation.scan_violations(np.full((6, 6), "a"), problem().edges, 1.0),
    "",
)
case(
    "repair_shared",
    "matrices=[]",
    lambda: perturbation.repair_shared([], [], 1.0),
    "matrix",
)
case(
    "repair_shared",
    "NaN matrix",
    lambda: perturbation.repair_shared([np.full((6, 6), NAN)], [problem().edges], 1.0),
    "",
)
case(
    "restrict_edges",
    "rows out of range",
    lambda: perturbation.restrict_edges(problem().edges, np.array([0, 99]), 6),
    "",
)
case("repair", "z NaN", lambda: mdp.repair(np.full((6, 6), NAN), problem().edges, 1.0), "z")
case(
    "repair",
    "epsilon=-1",
    lambda: mdp.repair(np.full((6, 6), 1 / 6), problem().edges, -1.0),
    "epsilon",
)
case("travel_cost_loss", "NaN", lambda: mdp.travel_cost_loss([[NAN]], [[1.0]]), "record_to_dest")
case(
    "travel_cost_loss",
    "complex",
    lambda: mdp.travel_cost_loss([[1j]], [[1.0]]),
    "record_to_dest must be real",
)
case(
    "travel_cost_loss",
    "shape",
    lambda: mdp.travel_cost_loss([[1.0, 2.0]], [[1.0]]),
    "output_to_dest",
)
case("rome_grid", "rows=0", lambda: mdp.rome_grid(0), "rows")
case("rome_grid", "cell_km=nan", lambda: mdp.rome_grid(cell_km=NAN), "cell_km")
case("gaussian_3d", "n=-1", lambda: mdp.gaussian_3d(-1), "n")
case("gaussian_3d", "sigma=0", lambda: mdp.gaussian_3d(5, sigma=0.0), "sigma")
case(
    "load_rome_nodes",
    "missing file",
    lambda: mdp.load_rome_nodes("/nonexistent/nodes.csv"),
    "nodes.csv",
)
case(
    "load_text_embeddings",
    "missing dir",
    lambda: mdp.load_text_embeddings("/nonexistent"),
    "nonexistent",
)
case("km_to_latlon", "NaN", lambda: mdp.km_to_latlon(np.array([[NAN, 0.0]])), "xy_km")
case("km_to_latlon", "shape", lambda: mdp.km_to_latlon(np.zeros((2, 3))), "xy_km")
case(
    "PerturbationMatrix",
    "matrix NaN",
    lambda: mdp.PerturbationMatrix(np.full((2, 2), NAN), 1.0, 1.0, 0.0),
    "matrix",
)
case(
    "PerturbationMatrix",
    "not stochastic",
    lambda: mdp.PerturbationMatrix(np.ones((2, 2)), 1.0, 1.0, 0.0),
    "matrix",
)
case(
    "PerturbationMatrix.sample",
    "record=9",
    lambda: mdp.solve(problem(), "expmech").sample(9),
    "record",
)
case(
    "PerturbationMatrix.load",
    "missing",
    lambda: mdp.PerturbationMatrix.load("/nonexistent.npz"),
    "nonexistent",
)
for method in ("loss", "violations", "check", "inference_error"):
    case(
        f"PerturbationMatrix.{method}",
        "problem='x'",
        lambda m=method: getattr(mdp.solve(problem(), "expmech"), m)("x"),
        "problem must be a MDPProblem",
    )
for prior, frag in [
    ([0.5, 0.5], "prior must have shape \\(6,\\)"),
    (np.full(6, 0.5), "prior must sum to 1"),
    (np.full(6, NAN), "prior"),
    (["a"] * 6, "prior"),
]:
    case(
        "PerturbationMatrix.inference_error",
        f"prior={prior!r}",
        lambda p=prior: mdp.solve(problem(), "expmech").inference_error(problem(), p),
        frag,
    )
for table, frag in [
    (np.ones((5, 6)), "distances must have shape \\(6, G >= 1\\)"),
    (np.ones((6, 0)), "distances must have shape"),
    (-np.ones((6, 6)), "distances must be >= 0"),
    (np.full((6, 6), INF), "disconnected graph"),
    (np.full((6, 6), NAN), "distances"),
    ("road", "distances"),
]:
    case(
        "PerturbationMatrix.inference_error",
        f"distances={table!r:.30}",
        lambda t=table: mdp.solve(problem(), "expmech").inference_error(problem(), distances=t),
        frag,
    )
for args, frag in [
    ((np.eye(2), None, -np.eye(2)), "distances must be >= 0"),
    ((np.eye(2), None, np.eye(3)), "distances must have shape"),
    ((np.full((2, 2), NAN), None, np.eye(2)), "matrix"),
    ((np.ones((2, 2)), None, np.eye(2)), "row 0 does not sum to 1"),
    ((-np.eye(2) + 1.5 * np.eye(2)[::-1] - 0.5 * np.eye(2)[::-1], None, np.eye(2)), "negative"),
    ((np.eye(2), [1.0], np.eye(2)), "prior must have shape"),
    ((np.zeros((0, 2)), None, np.eye(2)), "non-empty"),
]:
    case(
        "perturbation.bayes_inference_error",
        f"{frag}",
        lambda a=args: perturbation.bayes_inference_error(*a),
        frag,
    )
case(
    "perturbation.bayes_inference_error",
    "same_place of another shape",
    lambda: perturbation.bayes_inference_error(np.eye(2), None, np.eye(2), same_place=np.eye(3)),
    "same_place must be a bool array",
)
case(
    "perturbation.planar_laplace",
    "a precomputed metric",
    lambda: perturbation.planar_laplace(
        mdp.MDPProblem(np.array([[0.0, 1.0], [1.0, 0.0]]), epsilon=1, eta=1, metric="precomputed")
    ),
    "points of the plane",
)
case(
    "perturbation.planar_laplace",
    "epsilon 0",
    lambda: perturbation.planar_laplace(problem().with_epsilon(0.0)),
    "epsilon",
)
case(
    "perturbation.planar_laplace",
    "n_samples=0",
    lambda: perturbation.planar_laplace(problem(), n_samples=0),
    "n_samples",
)
case(
    "perturbation.planar_laplace",
    "problem='x'",
    lambda: perturbation.planar_laplace("x"),
    "problem",
)
case("MDPProblem.with_epsilon", "epsilon=-1", lambda: problem().with_epsilon(-1.0), "epsilon")
case(
    "MDPProblem.with_epsilon",
    "epsilon overflows exp",
    lambda: problem().with_epsilon(1e300),
    "epsilon \\* d",
)
case(
    "perturbation.epsilon_path",
    "problem='x'",
    lambda: perturbation.epsilon_path("x", [1.0]),
    "problem",
)
case(
    "perturbation.epsilon_path",
    "epsilons=[]",
    lambda: perturbation.epsilon_path(problem(), []),
    "epsilons",
)
case(
    "perturbation.epsilon_path",
    "epsilons=[-1]",
    lambda: perturbation.epsilon_path(problem(), [-1.0]),
    "epsilons",
)
for kwargs, frag in [
    ({"epsilons": []}, "epsilons must not be empty"),
    ({"epsilons": [0.0]}, "epsilons must be > 0"),
    ({"epsilons": [NAN]}, "epsilons"),
    ({"epsilons": ["1"]}, "epsilons"),
    ({"epsilons": np.ones(1001)}, "more than the 1000"),
    ({"epsilons": [1.0], "method": "expmech"}, "method must be 'lp' or 'benders'"),
    ({"epsilons": [1.0], "baselines": "laplace"}, "baselines must be 'auto'"),
    ({"epsilons": [1.0], "baselines": ["gauss"]}, "unknown baseline"),
    ({"epsilons": [1.0], "executor": 3}, "executor"),
    ({"epsilons": [1.0], "progress": "no"}, "progress"),
    ({"epsilons": [1.0], "laplace_samples": 0}, "laplace_samples"),
    ({"epsilons": [1.0], "distances": np.ones((2, 2))}, "distances must have shape"),
    ({"epsilons": [1.0], "rel_gap": 0.1}, "unknown keyword"),
    ({"epsilons": [1.0], "time_limit": -1.0}, "time_limit"),
]:
    case(
        "mdp.sweep_epsilon",
        f"{kwargs}",
        lambda k=kwargs: mdp.sweep_epsilon(problem(), **{"progress": False, **k}),
        frag,
    )
case("mdp.sweep_epsilon", "problem='x'", lambda: mdp.sweep_epsilon("x", [1.0]), "problem")


def a_sweep() -> perturbation.EpsilonSweep:
    return perturbation.EpsilonSweep(
        [perturbation.TradeoffPoint("optimal", 1.0, 1.0, 0.9, 0.5, 0.1)]
    )


case("EpsilonSweep", "points=[3]", lambda: perturbation.EpsilonSweep([3]), "points")
case("EpsilonSweep.plot", "axes=3", lambda: a_sweep().plot(axes=3), "axes must be None or two")
case("EpsilonSweep.plot", "axes=[3, 4]", lambda: a_sweep().plot(axes=[3, 4]), "ax must")
case("EpsilonSweep.plot_tradeoff", "ax=3", lambda: a_sweep().plot_tradeoff(ax=3), "ax must")
case(
    "EpsilonSweep.write_csv",
    "a folder",
    lambda: a_sweep().write_csv(tempfile.mkdtemp()),
    "is a directory",
)

# ---------------------------------------------------------------------------- privopt.kanon
F = fars()
for k, frag in [(0, "k"), (21, "k must be <="), (2.5, "k"), ("3", "k"), (True, "k")]:
    case("anonymize", f"k={k!r}", lambda k=k: kanon.anonymize(F, k), frag)
case("anonymize", "df=list", lambda: kanon.anonymize([[1, 2]], 2), "df")
case("anonymize", "empty df", lambda: kanon.anonymize(F.iloc[:0], 2), "")
case("anonymize", "method='best'", lambda: kanon.anonymize(F, 3, method="best"), "method")
case("anonymize", "unknown QI", lambda: kanon.anonymize(F, 3, ["nope"]), "nope")
case("anonymize", "weights=[-1]", lambda: kanon.anonymize(F, 3, ["AGE"], weights=[-1.0]), "weights")
case("anonymize", "weights NaN", lambda: kanon.anonymize(F, 3, ["AGE"], weights=[NAN]), "weights")
case(
    "anonymize",
    "milp time_limit=-1",
    lambda: kanon.anonymize(F, 3, method="milp", time_limit=-1),
    "time_limit",
)
case(
    "anonymize",
    "milp time_limit='x'",
    lambda: kanon.anonymize(F, 3, method="milp", time_limit="x"),
    "time_limit",
)
case("anonymize", "split_carry S=0", lambda: kanon.anonymize(F, 3, method="split_carry", S=0), "S")
case(
    "anonymize",
    "k_member seed='x'",
    lambda: kanon.anonymize(F, 3, method="k_member", seed="x"),
    "seed",
)
case("anonymize", "greedy bogus option", lambda: kanon.anonymize(F, 3, bogus=1), "bogus")
# The options every mechanism shares (time_limit, rel_gap, progress, executor) follow one rule.
for method, option, value, frag in [
    ("milp", "rel_gap", -1.0, "rel_gap must be >= 0"),
    ("milp", "rel_gap", NAN, "rel_gap"),
    ("milp", "max_columns", 0, "max_columns must be >= 1"),
    ("milp", "max_columns", "a", "max_columns"),
    ("milp", "mip_start", 3, "mip_start must be True or False"),
    ("split_carry", "executor", 3, "executor must be a concurrent.futures.Executor"),
    ("split_carry", "time_limit", 0.0, "time_limit"),
    ("split_carry", "sub_time_limit", NAN, "sub_time_limit"),
    ("split_carry", "progress", "x", "progress"),
    ("greedy", "progress", 2, "progress"),
]:
    case(
        "anonymize",
        f"{method} {option}={value!r}",
        lambda m=method, o=option, v=value: kanon.anonymize(F, 3, method=m, **{o: v}),
        frag,
    )
case(
    "anonymize",
    "NaN in a QI",
    lambda: kanon.anonymize(F.assign(AGE=[NAN, *list(F.AGE[1:])]), 3),
    "AGE",
)
case(
    "anonymize",
    "inf in a QI",
    lambda: kanon.anonymize(F.assign(AGE=[INF, *list(F.AGE[1:])]), 3),
    "AGE",
)
case("anonymize", "complex QI", lambda: kanon.anonymize(F.assign(AGE=F.AGE + 1j), 3), "AGE")
case(
    "anonymize",
    "±1e308 values",
    lambda: kanon.anonymize(pd.DataFrame({"a": [1e308, -1e308] * 3}), 2),
    "a",
)
# A string is one column name, never its characters: the message names 'age', not 'a'.
case("anonymize", "quasi_identifiers='age'", lambda: kanon.anonymize(F, 3, "age"), "['age']")
case("anonymize", "categorical='age'", lambda: kanon.anonymize(F, 3, categorical="age"), "['age']")
case("anonymize", "sensitive unknown", lambda: kanon.anonymize(F, 3, sensitive="nope"), "nope")
case(
    "anonymize",
    "a column both QI and sensitive",
    lambda: kanon.anonymize(F, 3, ["AGE", "SEX"], sensitive="AGE"),
    "both in quasi_identifiers and in sensitive",
)
case(
    "anonymize",
    "every column sensitive",
    lambda: kanon.anonymize(F, 3, sensitive=list(F.columns)),
    "no quasi-identifier is left",
)
case(
    "anonymize",
    "quasi_identifiers a mapping",
    lambda: kanon.anonymize(F, 3, {"AGE": 1}),
    "quasi_identifiers must be a column name",
)
case(
    "build_problem",
    "sensitive a mapping",
    lambda: kanon.build_problem(F, 3, sensitive={"AGE": 1}),
    "sensitive must be a column name",
)
case("build_problem", "k=0", lambda: kanon.build_problem(F, 0), "k")
case(
    "build_problem",
    "bounds NaN",
    lambda: kanon.build_problem(F, 3, ["AGE"], bounds={"AGE": (NAN, 1.0)}),
    "bounds",
)
case(
    "build_problem",
    "categorical unknown",
    lambda: kanon.build_problem(F, 3, categorical=["nope"]),
    "nope",
)
case("close_figure", "fig=42", lambda: report.close_figure(42), "fig")
case("render_table", "boxes=None", lambda: kanon.render_table(F, kproblem(), None), "boxes")
case("render_table", "df=None", lambda: kanon.render_table(None, kproblem(), kboxes()), "df")
case(
    "render_table",
    "df of other rows",
    lambda: kanon.render_table(F.iloc[:5], kproblem(), kboxes()),
    "same rows",
)
case(
    "render_table",
    "df without a quasi-identifier",
    lambda: kanon.render_table(F.drop(columns=["AGE"]), kproblem(), kboxes()),
    "AGE",
)
case(
    "class_boxes",
    "labels wrong length",
    lambda: kanon.class_boxes(kproblem(), np.zeros(3, dtype=int)),
    "labels",
)
case(
    "information_loss",
    "labels wrong length",
    lambda: kanon.information_loss(kproblem(), np.zeros(3, dtype=int)),
    "labels",
)
case("k_anonymity_level", "unknown QI", lambda: kanon.k_anonymity_level(F, ["nope"]), "nope")
case("verify_k_anonymous", "k=0", lambda: kanon.verify_k_anonymous(F, ["AGE"], 0), "k")
case(
    "verify_boxes",
    "shape mismatch",
    lambda: kanon.verify_boxes(
        np.zeros((3, 2)), np.zeros((1, 2)), np.zeros((1, 3)), np.zeros(3, dtype=int), 1
    ),
    "",
)
case("variance_sort", "problem=None", lambda: kanon.variance_sort(None), "problem")
case(
    "initial_solution",
    "order wrong length",
    lambda: kanon.initial_solution(kproblem(), np.arange(3)),
    "order",
)
case(
    "greedy_search",
    "order not a permutation",
    lambda: kanon.greedy_search(kproblem(), np.zeros(20, dtype=int)),
    "order",
)

# ---------------------------------------------------------------------------- privopt.census
C = counts
scalar_cases(
    "release", lambda e: cen.release(C(), e, rng=0), "epsilon", bads=(0.0, -1.0, NAN, INF, 1j, "1")
)
case(
    "release",
    "method='best'",
    lambda: cen.release(C(), 1.0, method="best"),
    "method must be one of",
)
case("release", "data='x'", lambda: cen.release("x", 1.0), "data")
for fn in (cen.m_h_r, cen.m_c_r):
    for value in (-1.0, 0.0, NAN, "x"):
        case(
            fn.__name__,
            f"time_limit={value!r}",
            lambda f=fn, v=value: f(C(), 1.0, rng=0, time_limit=v),
            "time_limit",
        )
for fn in (cen.m_h_dp, cen.m_c_dp):
    case(
        fn.__name__,
        "executor=3",
        lambda f=fn: f(C(), 1.0, rng=0, executor=3),
        "executor must be a concurrent.futures.Executor",
    )
for fn in (cen.m_h, cen.m_h_r, cen.m_h_dp, cen.m_c_r, cen.m_c_dp, cen.m_c_ch, cen.topdown):
    case(fn.__name__, "epsilon=-1", lambda f=fn: f(C(), -1.0, rng=0), "epsilon")
    case(fn.__name__, "rng='x'", lambda f=fn: f(C(), 1.0, rng="x"), "rng")
for fn in (cen.m_h_dp, cen.m_c_dp, cen.m_c_ch):
    case(fn.__name__, "window='wide'", lambda f=fn: f(C(), 1.0, rng=0, window="wide"), "window")
case(
    "m_c_ch",
    "chain_noise_scale='x'",
    lambda: cen.m_c_ch(C(), 1.0, rng=0, chain_noise_scale="x"),
    "chain_noise_scale",
)
case("m_h_r", "qp_solver='x'", lambda: cen.m_h_r(C(), 1.0, rng=0, qp_solver="x"), "qp_solver")


def streamed(**kw: Any) -> Any:
    """m_h_dp_streamed on a small source, a thread pool and a fresh folder, with ``kw``."""
    from concurrent.futures import ThreadPoolExecutor

    source = cen.RegularSyntheticSource((2, 3), 600, N=2)
    with ThreadPoolExecutor(1) as pool:
        args = {"epsilon": 1.0, "executor": pool, "out_dir": tempfile.mkdtemp(), **kw}
        return cen.m_h_dp_streamed(source, **args)


for value in (0.0, -1.0, NAN, INF, "1"):
    case("m_h_dp_streamed", f"epsilon={value!r}", lambda v=value: streamed(epsilon=v), "epsilon")
case("m_h_dp_streamed", "executor=None", lambda: streamed(executor=None), "needs an executor")
case("m_h_dp_streamed", "executor=3", lambda: streamed(executor=3), "executor must be")
case(
    "m_h_dp_streamed",
    "out_dir not a folder",
    lambda: streamed(out_dir="/nonexistent/privopt"),
    "is not a folder",
)
case("m_h_dp_streamed", "progress='x'", lambda: streamed(progress="x"), "progress")
for kw, fragment in (
    ({"fanouts": ()}, "fanouts must name"),
    ({"fanouts": (2, 0)}, "must be >= 1, got 0"),
    ({"fanouts": (2, 1.5)}, "must be an integer, got 1.5"),
    ({"n_groups": -1}, "n_groups"),
    ({"N": 0}, "N"),
    ({"seed": "x"}, "seed"),
    ({"seed": -1}, "seed"),
):
    args = {"fanouts": (2, 3), "n_groups": 10, **kw}
    case(
        "RegularSyntheticSource",
        ", ".join(f"{k}={v!r}" for k, v in kw.items()),
        lambda a=args: cen.RegularSyntheticSource(**a),
        fragment,
    )
for fn in (cen.measure_counts, cen.measure_cumulative, cen.measure_chain):
    case(fn.__name__, "epsilon=nan", lambda f=fn: f(C(), NAN, rng=0), "epsilon")
case(
    "CensusCounts.from_records",
    "NaN group id",
    lambda: cen.CensusCounts.from_records(
        pd.DataFrame({"s": ["a", "b"], "g": ["x", None]}), ["s"], "g"
    ),
    "g",
)
case(
    "CensusCounts.from_records",
    "unknown column",
    lambda: cen.CensusCounts.from_records(pd.DataFrame({"s": ["a"]}), ["s"], "nope"),
    "nope",
)
case(
    "CensusCounts.from_leaf_counts",
    "1.5 counts",
    lambda: cen.CensusCounts.from_leaf_counts(C().hierarchy, np.full((2, C().N), 1.5)),
    "",
)
case(
    "CensusCounts.from_leaf_counts",
    "negative counts",
    lambda: cen.CensusCounts.from_leaf_counts(C().hierarchy, -np.ones((2, C().N), dtype=np.int64)),
    "",
)
case("Hierarchy.from_parents", "cycle", lambda: cen.Hierarchy.from_parents([1, 0], ["a", "b"]), "")
case("Hierarchy.from_nested", "empty", lambda: cen.Hierarchy.from_nested({}), "")
case(
    "tree_postprocess",
    "noisy wrong shape",
    lambda: cen.tree_postprocess(C().hierarchy, np.zeros((1, 1), dtype=np.int64), 3, scale=1.0),
    "noisy",
)
case(
    "tree_postprocess",
    "scale=nan",
    lambda: cen.tree_postprocess(C().hierarchy, C().counts, C().G, scale=NAN),
    "scale",
)
case(
    "chain_postprocess",
    "G=-1",
    lambda: cen.chain_postprocess(C().hierarchy, C().counts.ravel(), -1, C().N, scale=np.ones(2)),
    "G",
)
case("paper_delta", "scale=nan", lambda: cen.paper_delta(NAN), "scale")
case("cumulate", "NaN", lambda: cen.cumulate(np.array([[NAN, 1.0]])), "")
case("decumulate", "complex", lambda: cen.decumulate(np.array([[1j, 1.0]])), "")
case(
    "consistency_violations",
    "wrong shape",
    lambda: cen.consistency_violations(C().hierarchy, np.zeros((1, 1))),
    "counts",
)
case(
    "l1_per_level",
    "wrong shape",
    lambda: cen.l1_per_level(C().hierarchy, np.zeros((1, 1)), C().counts),
    "released",
)

# ---------------------------------------------------------------------------- privopt.cluster
X = np.random.default_rng(1).uniform(0, 1, (200, 2))
for kw, frag in [
    ({"bounds": (1.0, 0.0)}, "bounds"),
    ({"bounds": (0.0, NAN)}, "bounds"),
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": 1j}, "epsilon"),
    ({"epsilon": None}, "epsilon must be given: DPM has no default privacy level"),
    ({"delta": None}, "delta must be given: DPM has no default privacy level"),
    ({"epsilon": None, "delta": None}, "epsilon and delta must be given"),
    ({"delta": 1.0}, "delta"),
    ({"max_depth": 0}, "max_depth"),
    ({"max_depth": 2.5}, "max_depth"),
    ({"window": "x"}, "window"),
    ({"bounds": ([0.0, 0.0], [1.0])}, "bounds"),
    ({"bounds": ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])}, "3 features"),
    ({"bounds": ([0.0, 1.0], [1.0, 1.0])}, "feature 1"),
    ({"bounds": ([0.0, NAN], [1.0, 1.0])}, "bounds"),
    ({"bounds": (np.zeros((2, 1)), np.ones((2, 1)))}, "bounds"),
    ({"bounds": None, "clip": False}, "clip=False"),
    ({"bounds": None, "bounds_epsilon_share": 0.0}, "bounds_epsilon_share"),
    ({"bounds": None, "bounds_epsilon_share": 1.5}, "bounds_epsilon_share"),
    ({"bounds": None, "bounds_epsilon_share": "x"}, "bounds_epsilon_share"),
    ({"bounds": None, "bounds_range": (1.0, 0.0)}, "bounds_range"),
    ({"bounds": None, "bounds_range": (0.0, INF)}, "bounds_range"),
    ({"bounds": None, "bounds_range": 3.0}, "bounds_range"),
]:
    case(
        "DPM.fit",
        repr(kw),
        lambda k=kw: DPM(
            **{"bounds": (0.0, 1.0), "epsilon": 1.0, "delta": 1e-6, "random_state": 0, **k}
        ).fit(X),
        frag,
    )
for data, frag in [
    (X + 1j, "(?i)complex"),
    (np.full((3, 2), NAN), "NaN|infinity|non-finite"),
    (np.zeros((0, 2)), "at least|minimum of 2"),
    (["a", "b"], ""),
]:
    case(
        "DPM.fit",
        f"X={str(data)[:20]}",
        lambda d=data: DPM(bounds=(0.0, 1.0), epsilon=1.0, delta=1e-6, random_state=0).fit(d),
        frag,
        exc=ValueError,
    )
case(
    "DPM.predict",
    "wrong width",
    lambda: (
        DPM(bounds=(0.0, 1.0), epsilon=1.0, delta=1e-6, random_state=0)
        .fit(X)
        .predict(np.zeros((2, 3)))
    ),
    "columns|features",
    exc=ValueError,
)
case(
    "budget_schedule",
    "epsilon=-1",
    lambda: budget_schedule(-1.0, 1e-6, 3, (0.1, 0.4, 0.3, 0.2), (0.5, 0.5)),
    "epsilon",
)
case(
    "budget_schedule",
    "split sums to 2",
    lambda: budget_schedule(1.0, 1e-6, 3, (0.5, 0.5, 0.5, 0.5), (0.5, 0.5)),
    "",
)
case(
    "nearest_centre",
    "width mismatch",
    lambda: nearest_centre(np.zeros((2, 2)), np.zeros((1, 3))),
    "",
)
case("nearest_centre", "NaN", lambda: nearest_centre(np.full((2, 2), NAN), np.zeros((1, 2))), "X")
case(
    "DPM.fit",
    "progress='loud'",
    lambda: DPM(bounds=(0.0, 1.0), epsilon=1.0, delta=1e-6, progress="loud").fit(X),
    "progress",
)


def clustering(**change: Any) -> Any:
    """A valid ClusteringRelease (one centre, a one-node tree) with ``change`` applied."""
    from privopt.cluster import ClusteringRelease

    tree = (np.array([-1]), np.array([0.0]), np.array([0]), np.array([0]), np.array([0]))
    kw: dict[str, Any] = dict(
        centres=np.zeros((1, 2)),
        sizes=np.ones(1),
        bounds=(-1.0, 1.0),
        epsilon=1.0,
        delta=1e-6,
        ledger=[],
        tree=tree,
        max_depth=2,
    )
    return ClusteringRelease(**{**kw, **change})


for change, frag in [
    ({"centres": np.full((1, 2), NAN)}, "centres"),
    ({"centres": np.zeros((0, 2))}, "centres"),
    ({"sizes": np.ones(2)}, "sizes"),
    ({"bounds": (1.0, -1.0)}, "bounds"),
    ({"bounds": (0.0, INF)}, "bounds"),
    ({"epsilon": 0.0}, "epsilon"),
    ({"delta": 1.0}, "delta"),
    ({"max_depth": 0}, "max_depth"),
    ({"ledger": [3]}, "ledger"),
    ({"seeded": 1}, "seeded"),
    ({"tree": (np.zeros(1),)}, "tree"),
    ({"feature_bounds": (np.zeros(3), np.ones(3))}, "feature_bounds"),
    ({"feature_bounds": (np.ones(2), np.zeros(2))}, "feature_bounds"),
    ({"feature_bounds": (np.zeros(2), np.full(2, 0.5))}, "bounds"),
    ({"bounds_epsilon": 1.0}, "bounds_epsilon"),
    ({"bounds_epsilon": NAN}, "bounds_epsilon"),
    ({"tree": (np.array([0]), np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1))}, "tree left"),
]:
    case("ClusteringRelease", repr(change)[:40], lambda c=change: clustering(**c), frag)
for data, frag in [
    (np.zeros((2, 3)), "3 features"),
    (np.full((2, 2), NAN), "NaN"),
    (np.zeros(2), "2-dimensional"),
    (np.zeros((2, 2)) + 1j, "(?i)complex"),
]:
    case(
        "ClusteringRelease.predict",
        f"X={str(data)[:20]}",
        lambda d=data: clustering().predict(d),
        frag,
        exc=ValueError,
    )
case("ClusteringRelease.predict", "n_jobs=0", lambda: clustering().predict(X, n_jobs=0), "n_jobs")
case("ClusteringRelease.plot", "ax=3", lambda: clustering().plot(ax=3), "ax must")

# ---------------------------------------------------------------------------- privopt.graphs
case(
    "graph_from_edges",
    "negative length",
    lambda: graphs.graph_from_edges(2, [0], [1], [-1.0]),
    "length",
)
case(
    "graph_from_edges", "NaN length", lambda: graphs.graph_from_edges(2, [0], [1], [NAN]), "length"
)
case(
    "graph_from_edges", "node out of range", lambda: graphs.graph_from_edges(2, [0], [5], [1.0]), ""
)
case("graph_from_edges", "u float", lambda: graphs.graph_from_edges(2, [0.5], [1], [1.0]), "u")
case("graph_from_edges", "n_nodes=-1", lambda: graphs.graph_from_edges(-1, [], [], []), "n_nodes")
case("shortest_paths", "source out of range", lambda: graphs.shortest_paths(road(), [7]), "")
case(
    "shortest_paths", "cutoff=nan", lambda: graphs.shortest_paths(road(), [0], cutoff=NAN), "cutoff"
)
case(
    "shortest_paths", "not square", lambda: graphs.shortest_paths(sp.csr_array(np.ones((2, 3)))), ""
)
case("connected_components", "graph='x'", lambda: graphs.connected_components("x"), "graph")
case(
    "to_csr_arrays",
    "complex weights",
    lambda: graphs.to_csr_arrays(sp.csr_array(np.eye(2) * (1 + 1j))),
    "",
)
case(
    "Graph",
    "NaN weight",
    lambda: graphs.Graph(sp.csr_array(np.array([[0.0, NAN], [NAN, 0.0]]))),
    "",
)

# ---------------------------------------------------------------------------- privopt.geometry
for fn in (geometry.haversine_km, geometry.haversine_pairs_km, geometry.euclidean):
    case(fn.__name__, "NaN", lambda f=fn: f(np.array([[NAN, 0.0]]), np.array([[0.0, 0.0]])), "")
    case(fn.__name__, "complex", lambda f=fn: f(np.array([[1j, 0.0]]), np.array([[0.0, 0.0]])), "")
case(
    "pairwise",
    "metric='l1'",
    lambda: geometry.pairwise(np.zeros((1, 2)), np.zeros((1, 2)), "l1"),
    "metric",
)
case("check_points", "lat=95", lambda: geometry.check_points("p", [[95.0, 0.0]], "haversine"), "p")
case("map_km", "NaN", lambda: geometry.map_km([[NAN, 1.0]], "euclidean"), "points")
case("map_km", "lat=95", lambda: geometry.map_km([[95.0, 0.0]], "haversine"), "points")
case("map_km", "empty", lambda: geometry.map_km(np.zeros((0, 2)), "euclidean"), "points")
case(
    "check_metric_matrix",
    "negative",
    lambda: geometry.check_metric_matrix("d", [[0.0, -1.0], [-1.0, 0.0]]),
    "d",
)
case("triangle_violation", "not square", lambda: geometry.triangle_violation(np.zeros((2, 3))), "")
case(
    "nearest",
    "metric='x'",
    lambda: geometry.nearest(np.zeros((1, 2)), np.zeros((1, 2)), "x"),
    "metric",
)
case("offset_latlon", "NaN", lambda: geometry.offset_latlon(np.array([[NAN, 0.0]]), 1.0, 1.0), "")

# ---------------------------------------------------------------------------- privopt.geo
for kw, frag in [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": NAN}, "epsilon"),
    ({"epsilon": 10.0, "gamma": -1.0}, "gamma"),
    ({"epsilon": 10.0, "lr_radius": NAN}, "lr_radius"),
    ({"epsilon": 10.0, "lr_max_size": 0}, "lr_max_size"),
    ({"epsilon": 10.0, "cr_cell_km": 0.0}, "cr_cell_km"),
    # a cap that drops Geo-Ind pairs binding above the LP's tolerance (ε·γ = 4.56 > 3 < 20)
    ({"epsilon": 7.6, "gamma": 0.6, "eps_d_cap": 3.0}, r"eps_d_cap must be >= min"),
    ({"epsilon": 10.0, "gamma": INF, "eps_d_cap": 19.9}, r"eps_d_cap must be >= min"),
]:
    case("GeoParams", repr(kw), lambda k=kw: geo.GeoParams(**k), frag)
case("grid_geography", "rows=0", lambda: geo.grid_geography(0, 3), "rows")
case("grid_geography", "cell_km=nan", lambda: geo.grid_geography(3, 3, NAN), "cell_km")
case("grid_geography", "metric='x'", lambda: geo.grid_geography(3, 3, metric="x"), "metric")
case("load_rome_grid", "missing dir", lambda: geo.load_rome_grid("/nonexistent"), "missing")
case(
    "load_osm_pbf",
    "missing file",
    lambda: geo.load_osm_pbf("/nonexistent.pbf"),
    "nonexistent|pyrosm",
)
case("Geography", "road='x'", lambda: geo.Geography(road="x", road_nodes=[0]), "road")
case("GeoIndGraph", "gamma=-1", lambda: geo.GeoIndGraph(grid(), -1.0), "gamma")
case("CostReferenceTable", "targets=0", lambda: geo.CostReferenceTable(grid(), 0), "targets")
case(
    "CostReferenceTable",
    "cell_km=nan",
    lambda: geo.CostReferenceTable(grid(), 3, cell_km=NAN),
    "cell_km",
)
case(
    "TravelCosts",
    "weights NaN",
    lambda: geo.TravelCosts(grid(), [0, 1], weights=[NAN, 1.0]),
    "weights",
)
case(
    "run_lrgeo",
    "users out of range",
    lambda: geo.run_lrgeo(grid(), geo.GeoParams(epsilon=10.0), [99], geo.TravelCosts(grid())),
    "users",
)
case(
    "run_lrgeo",
    "method='x'",
    lambda: geo.run_lrgeo(
        grid(), geo.GeoParams(epsilon=10.0), [0], geo.TravelCosts(grid()), method="x"
    ),
    "method",
)
case(
    "user_problem",
    "cost NaN",
    lambda: geo.user_problem(grid(), geo.GeoParams(epsilon=10.0), np.full((9, 9), NAN)),
    "cost",
)
case("build_model", "blocks=[]", lambda: geo.build_model([], geo.GeoParams(epsilon=10.0)), "")
case("solve_uploads", "uploads=[]", lambda: geo.solve_uploads([], geo.GeoParams(epsilon=10.0)), "")
case(
    "UserBlock.from_finite",
    "asymmetric pair_distances",
    lambda: geo.UserBlock.from_finite(
        np.array([[0.0, 1.0], [2.0, 0.0]]), np.zeros((2, 3)), np.zeros((2, 3))
    ),
    "symmetric",
)
case(
    "UserBlock.from_finite",
    "cost of another shape",
    lambda: geo.UserBlock.from_finite(np.zeros((1, 1)), np.zeros((1, 3)), np.zeros((1, 2))),
    "cost",
)
case(
    "UserBlock via build_model",
    "NaN cost",
    lambda: geo.build_model(
        [geo.UserBlock(np.zeros((1, 1)), np.zeros((1, 2)), np.full((1, 2), NAN))],
        geo.GeoParams(epsilon=10.0),
    ),
    "",
)


# ------------------------------------------- privopt.geo: argument types at the boundary
# (issue 15 sweep: every public geo function checks its arguments' types before using them).
from privopt.geo import baselines as geo_baselines  # noqa: E402
from privopt.geo import messages as geo_messages  # noqa: E402
from privopt.geo import metrics as geo_metrics  # noqa: E402


@cache
def geo_model() -> Any:
    block = geo.UserBlock(np.zeros((1, 1)), np.zeros((1, 2)), np.zeros((1, 2)))
    return geo.build_model([block], geo.GeoParams(epsilon=10.0, r_exp=0.5, r_obf=1.0))


@cache
def geo_table() -> Any:
    return geo.CostReferenceTable(grid(), 2, cell_km=0.5)


class _SubmitOnly:
    """Has submit() as a Dask client does, but is no concurrent.futures.Executor."""

    def submit(self, *args: Any) -> None:
        return None


def _tc() -> Any:
    return geo.TravelCosts(grid())


@cache
def geo_result() -> Any:
    return geo.run_lrgeo(grid(), geo.GeoParams(epsilon=1.0, r_exp=0.5, r_obf=1.0), [0, 8], _tc())


@cache
def geo_loaded() -> Any:
    return privopt.load(geo_result().save(Path(tempfile.mkdtemp()) / "r"))


GEO_TYPE_CASES: list[tuple[str, str, Callable[[], Any], str]] = [
    ("solve_clr", "model='x'", lambda: geo.solve_clr("x"), "model must be a ClrModel"),
    ("solve_clr", "method=3", lambda: geo.solve_clr(geo_model(), 3), "method"),
    ("solve_clr", "rel_gap=-1", lambda: geo.solve_clr(geo_model(), rel_gap=-1), "rel_gap"),
    ("solve_clr", "abs_gap=nan", lambda: geo.solve_clr(geo_model(), abs_gap=NAN), "abs_gap"),
    ("solve_clr", "time_limit=0", lambda: geo.solve_clr(geo_model(), time_limit=0), "time_limit"),
    (
        "solve_clr",
        "max_iterations=0",
        lambda: geo.solve_clr(geo_model(), max_iterations=0),
        "max_iterations",
    ),
    ("solve_clr", "progress='x'", lambda: geo.solve_clr(geo_model(), progress="x"), "progress"),
    ("solve_clr", "executor='x'", lambda: geo.solve_clr(geo_model(), executor="x"), "executor"),
    (
        "solve_clr",
        "executor: a client, not an Executor",
        lambda: geo.solve_clr(geo_model(), executor=_SubmitOnly()),
        "get_executor",
    ),
    (
        "answer_cr_request",
        "('t', 'r', 'p')",
        lambda: geo.answer_cr_request("t", "r", "p"),
        "table must be a CostReferenceTable",
    ),
    (
        "answer_cr_request",
        "request='r'",
        lambda: geo.answer_cr_request(geo_table(), "r", geo.GeoParams(epsilon=10.0)),
        "request must be a CRRequest",
    ),
    (
        "solve_uploads",
        "uploads='x'",
        lambda: geo.solve_uploads("x", geo.GeoParams(epsilon=10.0)),
        "uploads",
    ),
    (
        "solve_uploads",
        "uploads=['x']",
        lambda: geo.solve_uploads(["x"], geo.GeoParams(epsilon=10.0)),
        "uploads",
    ),
    (
        "build_model",
        "blocks=['x']",
        lambda: geo.build_model(["x"], geo.GeoParams(epsilon=10.0)),
        "blocks",
    ),
    ("build_model", "params='p'", lambda: geo.build_model([], "p"), "params"),
    (
        "run_lrgeo",
        "geography='g'",
        lambda: geo.run_lrgeo("g", geo.GeoParams(epsilon=10.0), [0], _tc()),
        "geography",
    ),
    ("run_lrgeo", "params='p'", lambda: geo.run_lrgeo(grid(), "p", [0], _tc()), "params"),
    (
        "run_lrgeo",
        "costs='c'",
        lambda: geo.run_lrgeo(grid(), geo.GeoParams(epsilon=10.0), [0], "c"),
        "costs",
    ),
    (
        "run_lrgeo",
        "progress='x'",
        lambda: geo.run_lrgeo(grid(), geo.GeoParams(epsilon=10.0), [0], _tc(), progress="x"),
        "progress",
    ),
    (
        "run_lrgeo",
        "via_json='x'",
        lambda: geo.run_lrgeo(grid(), geo.GeoParams(epsilon=10.0), [0], _tc(), via_json="x"),
        "via_json",
    ),
    (
        "run_lrgeo",
        "rel_gap=-1",
        lambda: geo.run_lrgeo(grid(), geo.GeoParams(epsilon=10.0), [0], _tc(), rel_gap=-1),
        "rel_gap",
    ),
    (
        "run_lrgeo",
        "time_limit=0",
        lambda: geo.run_lrgeo(grid(), geo.GeoParams(epsilon=10.0), [0], _tc(), time_limit=0),
        "time_limit",
    ),
    (
        "run_lrgeo",
        "executor='x'",
        lambda: geo.run_lrgeo(grid(), geo.GeoParams(epsilon=10.0), [0], _tc(), executor="x"),
        "executor",
    ),
    (
        "run_lrgeo",
        "rng='x'",
        lambda: geo.run_lrgeo(grid(), geo.GeoParams(epsilon=10.0), [0], _tc(), rng="x"),
        "rng",
    ),
    ("LRGeoResult.plot_user", "m=2", lambda: geo_result().plot_user(2), "m"),
    (
        "LRGeoResult.inference_error",
        "loss='walk'",
        lambda: geo_result().inference_error(loss="walk"),
        "loss must be one of",
    ),
    (
        "LRGeoResult.inference_error",
        "prior of 3",
        lambda: geo_result().inference_error(np.ones(3) / 3),
        "prior must have shape",
    ),
    (
        "LRGeoResult.inference_error",
        "prior NaN",
        lambda: geo_result().inference_error(np.full(9, NAN)),
        "prior",
    ),
    (
        "geo.adversary.user_inference_errors",
        "prior without mass on a user's LR set",
        lambda: geo.adversary.user_inference_errors(
            grid(), [np.arange(2)], [np.ones((2, 9)) / 9], np.eye(9)[8]
        ),
        "no mass on user 0's LR set",
    ),
    (
        "geo.adversary.user_inference_errors",
        "geography='x'",
        lambda: geo.adversary.user_inference_errors("x", [], []),
        "geography",
    ),
    (
        "geo.adversary.user_inference_errors",
        "a matrix of another shape",
        lambda: geo.adversary.user_inference_errors(grid(), [np.arange(2)], [np.eye(2)]),
        "user 0's matrix must have shape",
    ),
    (
        "geo.adversary.user_inference_errors",
        "two LR sets, one matrix",
        lambda: geo.adversary.user_inference_errors(
            grid(), [np.arange(2)] * 2, [np.ones((2, 9)) / 9]
        ),
        "one LR set per matrix",
    ),
    (
        "geo.baselines.on_lr_rows",
        "wanted=['gauss']",
        lambda: geo.baselines.on_lr_rows(geo_result(), _tc(), ["gauss"]),
        "unknown baseline",
    ),
    (
        "geo.sweep_epsilon",
        "geography='x'",
        lambda: geo.sweep_epsilon("x", geo.GeoParams(epsilon=10.0), [1.0], [0], _tc()),
        "geography",
    ),
    (
        "geo.sweep_epsilon",
        "params='x'",
        lambda: geo.sweep_epsilon(grid(), "x", [1.0], [0], _tc()),
        "params",
    ),
    (
        "geo.sweep_epsilon",
        "costs='x'",
        lambda: geo.sweep_epsilon(grid(), geo.GeoParams(epsilon=10.0), [1.0], [0], "x"),
        "costs",
    ),
    (
        "geo.sweep_epsilon",
        "epsilons=[]",
        lambda: geo.sweep_epsilon(grid(), geo.GeoParams(epsilon=10.0), [], [0], _tc()),
        "epsilons",
    ),
    (
        "geo.sweep_epsilon",
        "epsilons=[inf]",
        lambda: geo.sweep_epsilon(grid(), geo.GeoParams(epsilon=10.0), [INF], [0], _tc()),
        "epsilons",
    ),
    (
        "geo.sweep_epsilon",
        "epsilon * r_exp too large",
        lambda: geo.sweep_epsilon(grid(), geo.GeoParams(epsilon=10.0), [1e3], [0], _tc()),
        "r_exp",
    ),
    (
        "geo.sweep_epsilon",
        "users=[]",
        lambda: geo.sweep_epsilon(grid(), geo.GeoParams(epsilon=10.0), [1.0], [], _tc()),
        "users",
    ),
    (
        "geo.sweep_epsilon",
        "users=[99]",
        lambda: geo.sweep_epsilon(grid(), geo.GeoParams(epsilon=10.0), [1.0], [99], _tc()),
        "users",
    ),
    (
        "geo.sweep_epsilon",
        "loss='walk'",
        lambda: geo.sweep_epsilon(
            grid(), geo.GeoParams(epsilon=10.0), [1.0], [0], _tc(), loss="walk"
        ),
        "loss",
    ),
    (
        "geo.sweep_epsilon",
        "prior of 2",
        lambda: geo.sweep_epsilon(
            grid(), geo.GeoParams(epsilon=10.0), [1.0], [0], _tc(), prior=[0.5, 0.5]
        ),
        "prior",
    ),
    (
        "geo.sweep_epsilon",
        "baselines=['laplace'] on a planar map",
        lambda: geo.sweep_epsilon(
            grid(), geo.GeoParams(epsilon=10.0), [1.0], [0], _tc(), baselines=["laplace"]
        ),
        "lat, lon",
    ),
    (
        "geo.sweep_epsilon",
        "rng=1.5",
        lambda: geo.sweep_epsilon(grid(), geo.GeoParams(epsilon=10.0), [1.0], [0], _tc(), rng=1.5),
        "rng",
    ),
    (
        "geo.sweep_epsilon",
        "executor='x'",
        lambda: geo.sweep_epsilon(
            grid(), geo.GeoParams(epsilon=10.0), [1.0], [0], _tc(), executor="x"
        ),
        "executor",
    ),
    (
        "geo.sweep_epsilon",
        "progress='x'",
        lambda: geo.sweep_epsilon(
            grid(), geo.GeoParams(epsilon=10.0), [1.0], [0], _tc(), progress="x"
        ),
        "progress",
    ),
    (
        "geo.sweep_epsilon",
        "rel_gap=-1",
        lambda: geo.sweep_epsilon(
            grid(), geo.GeoParams(epsilon=10.0), [1.0], [0], _tc(), rel_gap=-1.0
        ),
        "rel_gap",
    ),
    ("LRGeoResult.plot_user", "ax=3", lambda: geo_result().plot_user(0, ax=3), "ax must"),
    (
        "LRGeoResult.real_row_cost",
        "a loaded release",
        lambda: geo_loaded().real_row_cost(),
        "true locations",
    ),
    (
        "Graph.from_csr_arrays",
        "indptr not rising",
        lambda: graphs.Graph.from_csr_arrays([0, 2, 1], [1, 0], [1.0, 1.0]),
        "indptr",
    ),
    (
        "Graph.from_csr_arrays",
        "head out of range",
        lambda: graphs.Graph.from_csr_arrays([0, 1, 2], [1, 5], [1.0, 1.0]),
        "indices",
    ),
    (
        "Graph.from_csr_arrays",
        "weights short",
        lambda: graphs.Graph.from_csr_arrays([0, 1, 2], [1, 0], [1.0]),
        "weights",
    ),
    (
        "Graph.from_csr_arrays",
        "NaN length",
        lambda: graphs.Graph.from_csr_arrays([0, 1, 2], [1, 0], [NAN, 1.0]),
        "length",
    ),
    (
        "Graph.from_csr_arrays",
        "indices float",
        lambda: graphs.Graph.from_csr_arrays([0, 1, 2], [1.5, 0], [1.0, 1.0]),
        "indices",
    ),
    (
        "Graph.from_csr_arrays",
        "directed=1",
        lambda: graphs.Graph.from_csr_arrays([0, 1, 2], [1, 0], [1.0, 1.0], directed=1),
        "directed",
    ),
    (
        "run_lrgeo",
        "costs of another map",
        lambda: geo.run_lrgeo(
            grid(), geo.GeoParams(epsilon=10.0), [0], geo.TravelCosts(geo.grid_geography(2, 2))
        ),
        "same map",
    ),
    (
        "user_problem",
        "geography='g'",
        lambda: geo.user_problem("g", geo.GeoParams(epsilon=10.0)),
        "geography",
    ),
    ("user_problem", "params='p'", lambda: geo.user_problem(grid(), "p"), "params"),
    ("CostReferenceTable", "geography='g'", lambda: geo.CostReferenceTable("g"), "geography"),
    ("CostReferenceTable", "rng='x'", lambda: geo.CostReferenceTable(grid(), 2, rng="x"), "rng"),
    ("CostReferenceTable", "rng=-1", lambda: geo.CostReferenceTable(grid(), 2, rng=-1), "rng"),
    (
        "CostReferenceTable",
        "rng and seed",
        lambda: geo.CostReferenceTable(grid(), 2, rng=1, seed=1),
        "not both",
    ),
    (
        "CostReferenceTable",
        "threads=0",
        lambda: geo.CostReferenceTable(grid(), 2, threads=0),
        "threads",
    ),
    (
        "CostReferenceTable.beta",
        "rows out of range",
        lambda: geo_table().beta([10**6], [0]),
        "rows",
    ),
    ("TravelCosts", "geography='g'", lambda: geo.TravelCosts("g"), "geography"),
    ("TravelCosts", "targets out of range", lambda: geo.TravelCosts(grid(), [100]), "targets"),
    (
        "TravelCosts",
        "weights of 1 for 2",
        lambda: geo.TravelCosts(grid(), [0, 1], weights=[1.0]),
        "weights",
    ),
    ("TravelCosts.true_costs", "rows=[100]", lambda: _tc().true_costs([100]), "rows"),
    ("GeoIndGraph", "geography='g'", lambda: geo.GeoIndGraph("g", 1.0), "geography"),
    ("GeoIndGraph.lr_set", "m=100", lambda: geo.GeoIndGraph(grid(), 1.0).lr_set(100, 1.0), "m"),
    (
        "GeoIndGraph.lr_set",
        "radius=-1",
        lambda: geo.GeoIndGraph(grid(), 1.0).lr_set(0, -1.0),
        "radius",
    ),
    (
        "LRGeoClient",
        "geography='g'",
        lambda: geo.LRGeoClient("g", geo.GeoParams(epsilon=10.0), None),
        "geography",
    ),
    ("LRGeoClient", "params='p'", lambda: geo.LRGeoClient(grid(), "p", None), "params"),
    (
        "LRGeoClient",
        "snaps='s'",
        lambda: geo.LRGeoClient(grid(), geo.GeoParams(epsilon=10.0), "s"),
        "snaps",
    ),
    ("SnapTable", "text", lambda: geo.SnapTable("a", "b", "c"), "snap"),
    ("SnapTable.of", "table='x'", lambda: geo.SnapTable.of("x"), "table"),
    (
        "GeoParams.with_",
        "bogus=1",
        lambda: geo.GeoParams(epsilon=10.0).with_(bogus=1),
        "unknown parameters",
    ),
    ("Geography.sample", "seed='x'", lambda: grid().sample(2, seed="x"), "seed"),
    ("Geography.subset", "index=[100]", lambda: grid().subset([100]), "index"),
    ("Geography.subset", "index repeated", lambda: grid().subset([0, 0]), "distinct"),
    ("Geography.distance_rows", "rows=[100]", lambda: grid().distance_rows([100]), "rows"),
    ("Geography.travel_costs", "sources=[100]", lambda: grid().travel_costs([100]), "sources"),
    (
        "grid_geography",
        "origin='x'",
        lambda: geo.grid_geography(2, 2, metric="haversine", origin="x"),
        "origin",
    ),
    ("load_rome_grid", "directory=3", lambda: geo.load_rome_grid(3), "directory"),
    (
        "geo.baselines.full_lp",
        "geography='g'",
        lambda: geo_baselines.full_lp("g", geo.GeoParams(epsilon=10.0), _tc()),
        "geography",
    ),
    (
        "geo.baselines.full_lp",
        "costs='c'",
        lambda: geo_baselines.full_lp(grid(), geo.GeoParams(epsilon=10.0), "c"),
        "costs",
    ),
    (
        "geo.baselines.exp_mech",
        "costs='c'",
        lambda: geo_baselines.exp_mech(grid(), geo.GeoParams(epsilon=10.0), "c"),
        "costs",
    ),
    (
        "geo.baselines.const_opt",
        "params='p'",
        lambda: geo_baselines.const_opt(grid(), "p", _tc()),
        "params",
    ),
    (
        "geo.baselines.laplace",
        "rows='r'",
        lambda: geo_baselines.laplace(
            geo.grid_geography(3, 3, 0.5, metric="haversine"),
            geo.GeoParams(epsilon=10.0),
            _tc(),
            "r",
        ),
        "rows",
    ),
    (
        "geo.baselines.lr_geo_f_params",
        "params='p'",
        lambda: geo_baselines.lr_geo_f_params("p"),
        "params",
    ),
    (
        "geo.metrics.expected_cost",
        "text",
        lambda: geo_metrics.expected_cost(["a"], ["b"]),
        "matrices",
    ),
    (
        "geo.metrics.expected_cost",
        "shapes differ",
        lambda: geo_metrics.expected_cost([np.ones((2, 2))], [np.ones((3, 2))]),
        "do not match",
    ),
    (
        "geo.metrics.real_row_cost",
        "no matrix",
        lambda: geo_metrics.real_row_cost([], []),
        "at least one",
    ),
    (
        "geo.metrics.cross_user_violations",
        "epsilon=-1",
        lambda: geo_metrics.cross_user_violations(
            [np.full((1, 2), 0.5)], [np.array([0])], grid().distance_rows, -1.0, 1.0
        ),
        "epsilon",
    ),
    (
        "geo.metrics.prop45_bound",
        "no user",
        lambda: geo_metrics.prop45_bound([], 1.0),
        "column_distances",
    ),
    (
        "geo.metrics.prop45_bound",
        "r_exp=nan",
        lambda: geo_metrics.prop45_bound([np.ones((2, 2))], NAN),
        "r_exp",
    ),
    (
        "geo.metrics.ambiguity_counts",
        "delta_max=nan",
        lambda: geo_metrics.ambiguity_counts([1.0], [1.0], NAN),
        "delta_max",
    ),
    (
        "geo.metrics.exponential_mass",
        "text",
        lambda: geo_metrics.exponential_mass(["a"], ["b"], 1.0),
        "matrices",
    ),
    (
        "geo.messages.encode_array",
        "dtype='x'",
        lambda: geo_messages.encode_array([1], "x"),
        "dtype",
    ),
    (
        "geo.messages.ErrorMessage.from_json",
        "status='x'",
        lambda: geo_messages.ErrorMessage.from_json({"type": "error", "error": "e", "status": "x"}),
        "status",
    ),
    (
        "geo.messages.UserMatrix.from_json",
        "batch=[1]",
        lambda: geo_messages.UserMatrix.from_json(
            {
                **geo_messages.UserMatrix(
                    "u",
                    np.ones((1, 1)),
                    0.0,
                    0.0,
                    geo_messages.BatchInfo(1, 0, "lp", "optimal", 0.0, 0.0, 0.0),
                ).to_json(),
                "batch": [1],
            }
        ),
        "batch",
    ),
]
for _entry, _bad, _call, _fragment in GEO_TYPE_CASES:
    case(_entry, _bad, _call, _fragment)

# ---------------------------------------------------------------------------- certify, report
case("certify", "value NaN", lambda: certify.certify(NAN, 0.0, 1e-6), "value")
case("certify", "rel_gap=-1", lambda: certify.certify(1.0, 0.0, -1.0), "rel_gap")
case("certify", "lower_bound complex", lambda: certify.certify(1.0, 1j, 1e-6), "lower_bound")
case("proven_relative_gap", "value='x'", lambda: certify.proven_relative_gap("x", 0.0), "value")
case("warn_uncertified", "status=''", lambda: certify.warn_uncertified("x", "", 0.1), "status")
case("markdown_table", "ragged rows", lambda: report.markdown_table(["a", "b"], [[1]]), "")
case("format_number", "digits=0", lambda: report.format_number(1.5, digits=0), "digits")
case(
    "release_header", "empty guarantee", lambda: report.release_header("x", " ", "ok"), "guarantee"
)
case("status_text", "relative_gap=-1", lambda: report.status_text("optimal", -1.0), "relative_gap")
case("status_text", "relative_gap=nan", lambda: report.status_text("optimal", NAN), "relative_gap")
case("status_text", "status=3", lambda: report.status_text(3), "status")
case(
    "save_figure",
    "suffix .xyz",
    lambda: report.save_figure(report.new_figure()[0], "/tmp/privopt-test.xyz"),
    "",
)


# ------------------------------------------------- public callables the coverage test found
# without a row (test_every_public_callable_has_a_row_or_an_exemption, below)


@cache
def kanon_result() -> Any:
    return kanon.anonymize(fars(), 3)


@cache
def benders_result() -> Any:
    from privopt.lp.examples import capacity_expansion_lp

    return lp.solve_benders(capacity_expansion_lp(0, n_regions=2), progress=False)


@cache
def cluster_release() -> Any:
    return DPM((0, 3), 1.0, 1e-5, random_state=0).fit(points()).release_


@cache
def lrgeo_release() -> Any:
    g = geo.grid_geography(3, 3, 0.5, metric="euclidean")
    params = geo.GeoParams(epsilon=10.0, lr_radius=1.0)
    return geo.run_lrgeo(g, params, [0, 4], geo.TravelCosts(g), rng=0)


@cache
def census_release() -> Any:
    return cen.release(counts(), 1.0, rng=0)


@cache
def mdp_result() -> Any:
    return mdp.solve(problem())


@cache
def other_counts() -> cen.CensusCounts:
    """The shape of :func:`counts` (3 regions, N = 2), another hierarchy."""
    rec = pd.DataFrame({"state": ["GA", "GA", "TX", "TX"], "hh": ["a", "a", "b", "c"]})
    return cen.CensusCounts.from_records(rec, ["state"], "hh")


def edges(i, j, d) -> mdp.EdgeList:
    return mdp.EdgeList(np.asarray(i), np.asarray(j), np.asarray(d, dtype=float))


for fields, frag in [
    ({"epsilon": -1.0, "label": "x"}, "epsilon"),
    ({"epsilon": NAN, "label": "x"}, "epsilon"),
    ({"epsilon": 1.0, "delta": 1.0, "label": "x"}, "delta"),
    ({"epsilon": 1.0, "label": ""}, "label"),
    ({"epsilon": 1.0, "label": "x", "sensitivity": NAN}, "sensitivity"),
    ({"epsilon": 1.0, "label": "x", "group": ""}, "group"),
]:
    case("PlannedSpend", repr(fields), lambda f=fields: dp.PlannedSpend(**f), frag)
for label, call, frag in [
    ("random_words(-1)", lambda s: s.random_words(-1), "n must be >= 0"),
    ("random_bits(1.5)", lambda s: s.random_bits(1.5), "n must be an integer"),
    ("uniform(size=-1)", lambda s: s.uniform(size=-1), "size"),
    ("uniform(size='3')", lambda s: s.uniform(size="3"), "size"),
    ("integers(0)", lambda s: s.integers(0), "high"),
    ("integers(2.5)", lambda s: s.integers(2.5), "high"),
    ("integers(4, size=(2, -1))", lambda s: s.integers(4, size=(2, -1)), "size"),
]:
    case("SecureSource", label, lambda c=call: c(dp.SecureSource()), frag)
case("BendersResult.plot_bounds", "ax='x'", lambda: benders_result().plot_bounds(ax="x"), "ax must")
case(
    "KAnonResult.plot_class_sizes",
    "ax='x'",
    lambda: kanon_result().plot_class_sizes(ax="x"),
    "ax must",
)
case("KAnonResult.plot", "ax='x'", lambda: kanon_result().plot(ax="x"), "ax must")
case("CensusRelease.plot", "ax=3", lambda: census_release().plot(ax=3), "ax must")

# zCDP measurements, budget shares and per-count intervals.
for fn in (cen.m_h, cen.m_h_dp, cen.m_c_dp, cen.m_c_ch, cen.topdown, cen.measure_counts):
    scalar_cases(f"census.{fn.__name__}", lambda v, f=fn: f(counts(), rho=v, rng=0), "rho")
    case(
        f"census.{fn.__name__}",
        "epsilon and rho both given",
        lambda f=fn: f(counts(), 1.0, rho=0.5, rng=0),
        "exactly one of epsilon",
    )
    for bad, frag in [
        ([1.0], "one fraction per level"),
        ([1.5, -0.5], "fractions > 0 summing to 1"),
        ([NAN, 1.0], "shares"),
        ("even", "shares"),
    ]:
        case(
            f"census.{fn.__name__}",
            f"shares={bad!r}",
            lambda b=bad, f=fn: f(counts(), 1.0, shares=b, rng=0),
            frag,
        )
scalar_cases(
    "CensusRelease.intervals",
    lambda v: census_release().intervals(v, runs=20),
    "confidence",
    bads=(0.0, -0.5, 1.0, 1.5, NAN, INF, "0.9", True),
)
for label, kw, frag in [
    ("runs=5", {"runs": 5}, "runs must be >= 20"),
    ("runs=20.5", {"runs": 20.5}, "runs must be an integer"),
    ("random_state=-1", {"random_state": -1}, "random_state"),
    ("executor=3", {"executor": 3}, "executor must be"),
    ("progress='x'", {"progress": "x"}, "progress"),
]:
    case("CensusRelease.intervals", label, lambda k=kw: census_release().intervals(0.9, **k), frag)
for entry, label, call, frag in [
    ("plot", "ax=3", lambda iv: iv.plot(ax=3), "ax must"),
    ("plot", "level=5", lambda iv: iv.plot(level=5), "level must be <="),
    ("plot", "level='x'", lambda iv: iv.plot(level="x"), "level must be"),
    ("coverage", "truth of the wrong shape", lambda iv: iv.coverage(np.zeros((2, 2))), "truth"),
]:
    case(
        f"census.CountIntervals.{entry}",
        label,
        lambda c=call: c(census_release().intervals(0.9, runs=20, random_state=0, progress=False)),
        frag,
    )
case("census.count_intervals", "release=None", lambda: cen.count_intervals(None), "release must")
case("census.count_intervals", "release='x'", lambda: cen.count_intervals("x"), "release must")
case(
    "census.count_intervals",
    "confidence=1",
    lambda: cen.count_intervals(census_release(), 1.0),
    "confidence must lie in",
)
case(
    "census.count_intervals",
    "an inconsistent release",
    lambda: cen.count_intervals(
        cen.CensusRelease(**census_parts(counts=census_release().counts + np.eye(3, 2, dtype=int)))
    ),
    "must be integral, non-negative, consistent",
)
for label, change, frag in [
    ("rho=-1", {"epsilon": None, "noise": "gaussian", "rho": -1.0}, "rho must be > 0"),
    ("noise='x'", {"noise": "x"}, "noise must be one of"),
    ("shares=[2, 3]", {"shares": [2.0, 3.0]}, "fractions > 0 summing to 1"),
    (
        "epsilon that is not rho's conversion",
        {"noise": "gaussian", "rho": 0.5},
        "not the \\(epsilon, delta\\) statement",
    ),
]:
    case("CensusRelease", label, lambda c=change: cen.CensusRelease(**census_parts(**c)), frag)
scalar_cases("census.allocate_budget", lambda v: cen.allocate_budget(counts(), v), "epsilon")
scalar_cases("census.allocate_budget", lambda v: cen.allocate_budget(counts(), rho=v), "rho")
for label, kw, frag in [
    ("neither epsilon nor rho", {}, "exactly one of epsilon"),
    ("epsilon and rho", {"epsilon": 1.0, "rho": 0.1}, "exactly one of epsilon"),
    ("targets of the wrong length", {"epsilon": 1.0, "targets": [1.0] * 5}, "one RMSE per"),
    ("targets=[0, 1]", {"epsilon": 1.0, "targets": [0.0, 1.0]}, "targets must be > 0"),
    ("targets NaN", {"epsilon": 1.0, "targets": [NAN, 1.0]}, "targets"),
    ("targets='x'", {"epsilon": 1.0, "targets": "x"}, "targets"),
    ("method='M_X'", {"epsilon": 1.0, "method": "M_X"}, "method must be one of"),
]:
    case("census.allocate_budget", label, lambda k=kw: cen.allocate_budget(counts(), **k), frag)
case(
    "census.allocate_budget",
    "hierarchy='x'",
    lambda: cen.allocate_budget("x", 1.0),
    "hierarchy must be",
)
for label, call, frag in [
    ("data='x'", lambda p: p.simulate("x"), "data must be"),
    ("runs=0", lambda p: p.simulate(counts(), runs=0), "runs must be >= 1"),
    ("random_state=-1", lambda p: p.simulate(counts(), random_state=-1), "random_state"),
    ("executor=3", lambda p: p.simulate(counts(), executor=3), "executor must be"),
    (
        "data with another number of levels",
        lambda p: p.simulate(synthetic_hierarchy([2, 2], 100, N=2, seed=0)),
        "levels",
    ),
]:
    case(
        "census.BudgetAllocation.simulate",
        label,
        lambda c=call: c(cen.allocate_budget(counts(), 1.0)),
        frag,
    )
scalar_cases(
    "dp.zcdp_epsilon", lambda r: dp.zcdp_epsilon(r, 1e-6), "rho", bads=(-1.0, NAN, INF, "1")
)
for bad in (0.0, 1.0, -0.1, NAN):
    case("dp.zcdp_epsilon", f"delta={bad!r}", lambda d=bad: dp.zcdp_epsilon(0.5, d), "delta")
scalar_cases(  # inf is the default: no rho limit
    "PrivacyAccountant",
    lambda v: dp.PrivacyAccountant(rho_budget=v),
    "rho_budget",
    bads=(0.0, -1.0, NAN, 1 + 0j, "1", True),
)
scalar_cases(
    "PrivacyAccountant.spend",
    lambda v: dp.PrivacyAccountant().spend(0.0, label="x", rho=v),
    "rho",
    bads=(-1.0, NAN, INF, "1"),
)
case(
    "PrivacyAccountant.spend",
    "rho over rho_budget",
    lambda: dp.PrivacyAccountant(rho_budget=0.1).spend(0.0, label="x", rho=0.2),
    "rho",
    exc=PrivacyBudgetExceeded,
)


def kanon_parts(**change: Any) -> dict[str, Any]:
    """The constructor arguments of the k-anonymity release, with ``change`` applied."""
    r = kanon_result()
    parts = dict(
        table=r.table,
        classes=r.classes,
        lower=r.lower,
        upper=r.upper,
        loss=r.loss,
        method=r.method,
        k=r.k,
        quasi_identifiers=r.quasi_identifiers,
        weights=r.weights,
    )
    return {**parts, **change}


for label, change, frag in [
    ("classes of the wrong length", {"classes": np.zeros(3, dtype=int)}, "classes must have shape"),
    ("classes with a gap", {"classes": np.arange(20) * 2}, "classes must number"),
    ("classes NaN", {"classes": np.full(20, NAN)}, "classes"),
    ("k=0", {"k": 0}, "k must be >= 1"),
    ("method=''", {"method": ""}, "method"),
    ("loss='x'", {"loss": "x"}, "loss"),
    ("a QI missing from the table", {"quasi_identifiers": ["AGE", "nope"]}, "quasi-identifier"),
    ("no problem and no QIs", {"quasi_identifiers": None}, "quasi_identifiers are required"),
    ("weights of the wrong length", {"weights": [1.0]}, "weights"),
    ("lower of the wrong shape", {"lower": np.zeros((2, 2))}, "lower must be"),
    ("categorical not a QI", {"categorical": ["nope"]}, "categorical must name"),
]:
    case("KAnonResult", label, lambda c=change: kanon.KAnonResult(**kanon_parts(**c)), frag)
case(
    "KAnonResult.save",
    "column names that are not text",
    lambda: kanon.KAnonResult(
        **kanon_parts(
            table=kanon_result().table.set_axis(range(4), axis=1), quasi_identifiers=[0, 1, 2, 3]
        )
    ).save(Path(tempfile.mkdtemp()) / "r"),
    "column names must be text",
)


def census_parts(**change: Any) -> dict[str, Any]:
    """The constructor arguments of the census release, with ``change`` applied."""
    r = census_release()
    parts = dict(method=r.method, hierarchy=r.hierarchy, counts=r.counts, G=r.G, epsilon=r.epsilon)
    return {**parts, **change}


for label, change, frag in [
    ("counts of the wrong shape", {"counts": np.zeros((2, 2), dtype=int)}, "one row per region"),
    ("counts NaN", {"counts": np.full((3, 2), NAN)}, "counts"),
    ("hierarchy='x'", {"hierarchy": "x"}, "hierarchy must be a Hierarchy"),
    ("G=-1", {"G": -1}, "G must be >= 0"),
    ("epsilon=0", {"epsilon": 0.0}, "epsilon"),
    ("method=None", {"method": None}, "method"),
    ("ledger of text", {"ledger": ["spent"]}, "LedgerEntry"),
    ("seeded='yes'", {"seeded": "yes"}, "seeded must be True or False"),
    ("guarantee_details=1", {"guarantee_details": 1}, "guarantee_details"),
]:
    case("CensusRelease", label, lambda c=change: cen.CensusRelease(**census_parts(**c)), frag)


def damaged_release(release: Any, damage: Callable[[Path], None]) -> Path:
    """A saved copy of ``release`` with ``damage`` done to its folder."""
    folder = release.save(Path(tempfile.mkdtemp()) / "release")
    damage(folder)
    return folder


def _rewrite_npz(folder: Path, **change: Any) -> None:
    with np.load(folder / "data.npz") as f:
        data = {**dict(f), **change}
    np.savez(folder / "data.npz", **{k: v for k, v in data.items() if v is not None})


for label, damage, frag in [
    (
        "census counts of the wrong shape",
        lambda d: _rewrite_npz(d, counts=np.zeros((1, 2))),
        "one row per region",
    ),
    ("census region names missing", lambda d: _rewrite_npz(d, region_names=None), "region_names"),
    (
        "census parent with a cycle",
        lambda d: _rewrite_npz(d, parent=np.array([-1, 2, 1])),
        "parent",
    ),
]:
    case(
        "load",
        label,
        lambda dmg=damage: privopt.load(damaged_release(census_release(), dmg)),
        frag,
    )
for label, damage, frag in [
    ("kanon table file missing", lambda d: (d / "table.parquet").unlink(), "is missing"),
    (
        "kanon classes of the wrong length",
        lambda d: _rewrite_npz(d, classes=np.zeros(3)),
        "classes",
    ),
]:
    case(
        "load",
        label,
        lambda dmg=damage: privopt.load(damaged_release(kanon_result(), dmg)),
        frag,
    )
for i, j, d, frag in [
    ([0, 1], [1], [1.0], "one length"),
    ([0], [9], [1.0], r"edges.j\[0\] = 9"),
    ([0], [1], [NAN], "edges.d"),
    ([0.5], [1], [1.0], "edges.i must hold integers"),
    ([1], [1], [1.0], "i == j"),
    ([0], [1], [-1.0], "d < 0"),
]:
    case(
        "EdgeList (through repair)",
        f"i={i}, j={j}, d={d}",
        lambda e=(i, j, d): mdp.repair(np.full((6, 6), 1 / 6), edges(*e), 1.0),
        frag,
    )
for kw, frag in [
    ({"rtol": -1.0}, "rtol"),
    ({"rtol": "x"}, "rtol"),
    ({"row_atol": NAN}, "row_atol"),
]:
    case(
        "Verification.ok",
        repr(kw),
        lambda k=kw: mdp_result().violations(problem()).ok(**k),
        frag,
    )
case(
    "PerturbationMatrix.plot_row",
    "ax='x'",
    lambda: mdp_result().plot_row(problem(), 0, ax="x"),
    "ax",
)
case(
    "PerturbationMatrix.plot_row",
    "problem='x'",
    lambda: mdp_result().plot_row("x", 0),
    "problem",
)
case("PerturbationMatrix.plot_bounds", "ax=3", lambda: mdp_result().plot_bounds(ax=3), "ax must")
case(
    "Measurements",
    "made on another hierarchy",
    lambda: cen.m_h(other_counts(), None, measurements=cen.measure_counts(counts(), 1.0, rng=0)),
    "different hierarchy",
)
case(
    "Measurements",
    "source=None",
    lambda: cen.m_h(
        counts(),
        None,
        measurements=dataclasses.replace(cen.measure_counts(counts(), 1.0, rng=0), source=None),
    ),
    "source is None",
)
case(
    "Measurements",
    "counts given to M_c^R",
    lambda: cen.m_c_r(counts(), None, measurements=cen.measure_counts(counts(), 1.0, rng=0)),
    "'cumulative' Measurements",
)
case(
    "CensusRelease.l1_per_level",
    "truth wrong shape",
    lambda: census_release().l1_per_level(np.zeros((1, 1))),
    "truth",
)
case(
    "CensusRelease.write_table",
    "suffix .xyz",
    lambda: census_release().write_table(Path(tempfile.gettempdir()) / "privopt-release.xyz"),
    "path must end in .csv or .parquet",
)
case(
    "CensusRelease.save",
    "a .csv path",
    lambda: census_release().save(Path(tempfile.gettempdir()) / "privopt-release.csv"),
    "write_table",
)
case(
    "sklearn_expected_failed_checks",
    "estimator='x'",
    lambda: sklearn_expected_failed_checks("x"),
    "estimator must be a DPM",
)
case("emit_summary", "summary='x'", lambda: cli.emit_summary("x"), "summary must be a mapping")
case(
    "refuse_ignored_options",
    "an option the run does not read",
    lambda: cli.refuse_ignored_options(
        __import__("types").SimpleNamespace(S=5), [("--S", "S", 3, False, "--method split_carry")]
    ),
    "--S is only used with --method split_carry; here it would be ignored",
)
for seed in (-1, "x", 1.5):
    case(
        "run_demo",
        f"seed={seed!r}",
        lambda s=seed: demo.run_demo(Path(tempfile.gettempdir()) / "privopt-bad-demo", seed=s),
        "seed",
    )
case("Report", "title=3", lambda: report.Report(3), "title")
case("Report", "sections=['x']", lambda: report.Report("t", ["x"]), r"sections\[0\]")
case("Report.add", "section='x'", lambda: report.Report("t").add("x"), "section")
case("Section", "title=''", lambda: report.Section(""), "title")
case("Section", "figures='a.png'", lambda: report.Section("s", figures="a.png"), "figures")
case("Section", "body=None", lambda: report.Section("s", None), "body")
case(
    "new_figure",
    "figsize=(-1, 2)",
    lambda: report.new_figure(figsize=(-1, 2)),
    "figure size",
    exc=ValueError,  # matplotlib's own, already clear
)


# ------------------------------------------------- numeric inputs: one rule for every entry point
# What numpy would silently turn into numbers (privopt._validation.numeric_array): text, in an
# object array or a pandas column, a bool inside a list of numbers or an object array, None,
# Decimal, and a missing value (pd.NA) in a nullable pandas column.


def non_numeric(template: Any) -> list[tuple[str, Any]]:
    """Bad versions of the numeric array ``template`` (1-D or 2-D), each named."""
    t = np.asarray(template, dtype=float)
    first = (0,) * t.ndim

    def objects(value: Any) -> np.ndarray:
        out = t.astype(object)
        out[first] = value
        return out

    as_list = t.tolist()
    if t.ndim == 1:
        as_list[0] = True
        text_frame: Any = pd.Series(t.astype(str), dtype="string")
        missing: Any = pd.Series(t, dtype="Float64")
    else:
        as_list[0][0] = True
        text_frame = pd.DataFrame(t.astype(str)).astype("string")
        missing = pd.DataFrame(t).astype("Float64")
    missing.iloc[first] = pd.NA
    return [
        ("object text", t.astype(str).astype(object)),
        ("pandas string", text_frame),
        ("bool in a list", as_list),
        ("object bool", objects(True)),
        ("None element", objects(None)),
        ("Decimal element", objects(decimal.Decimal("1.5"))),
        ("pandas NA", missing),
    ]


def numeric_cases(entry: str, call: Callable[[Any], Any], name: str, template: Any) -> None:
    for bad, value in non_numeric(template):
        fragment = re.escape(name) + r" (must be (a )?numeric|has a missing value)"
        case(entry, f"{name} {bad}", lambda v=value: call(v), fragment)


_PTS = np.random.default_rng(0).uniform(0, 3, (6, 2))
_X = np.random.default_rng(0).normal(size=(30, 2))


@cache
def _fitted() -> DPM:
    return DPM(epsilon=1.0, delta=1e-5, bounds=(-5, 5), random_state=0).fit(_X)


@cache
def _hier() -> Any:
    return cen.Hierarchy.from_nested({"US": ["GA", "NY"]})


_TREE_COUNTS = [[4.0, 6.0], [1.0, 2.0], [3.0, 4.0]]
for entry, call, name, template in [
    ("laplace_mechanism", lambda v: dp.laplace_mechanism(v, 1.0, rng=0), "values", [1.5, 2.0]),
    (
        "gaussian_mechanism",
        lambda v: dp.gaussian_mechanism(v, 1.0, 1e-5, rng=0),
        "values",
        [1.5, 2.0],
    ),
    (
        "dp.exponential_mechanism",
        lambda v: dp.exponential_mechanism(v, 1.0, rng=0),
        "scores",
        [1, 2],
    ),
    (
        "exponential_mechanism_probabilities",
        lambda v: dp.exponential_mechanism_probabilities(v, 1.0),
        "scores",
        [1, 2],
    ),
    ("discrete_laplace_pmf", lambda v: dp.discrete_laplace_pmf(v, 1.0), "k", [1, 2]),
    ("discrete_gaussian_pmf", lambda v: dp.discrete_gaussian_pmf(v, 1.0), "k", [1, 2]),
    ("euclidean", lambda v: geometry.euclidean(v, _PTS), "a", _PTS),
    ("haversine_km", lambda v: geometry.haversine_km(v, _PTS), "a", _PTS),
    ("haversine_pairs_km", lambda v: geometry.haversine_pairs_km(v, _PTS), "a", _PTS),
    ("geometry.pairwise", lambda v: geometry.pairwise(v, _PTS, "euclidean"), "a", _PTS),
    ("geometry.nearest", lambda v: geometry.nearest(v, _PTS, "euclidean"), "points", _PTS),
    ("geometry.check_points", lambda v: geometry.check_points("p", v, "euclidean"), "p", _PTS),
    ("check_metric_matrix", lambda v: geometry.check_metric_matrix("d", v), "d", np.zeros((2, 2))),
    ("triangle_violation", geometry.triangle_violation, "d", np.zeros((2, 2))),
    ("offset_latlon", lambda v: geometry.offset_latlon(v, [1.0], [1.0]), "latlon", [[1.0, 2.0]]),
    ("offset_latlon", lambda v: geometry.offset_latlon([[1.0, 2.0]], v, [1.0]), "east_km", [1.0]),
    ("graph_from_edges", lambda v: graphs.graph_from_edges(3, [0, 1], [1, 2], v), "length", [1, 1]),
    ("graph_from_edges", lambda v: graphs.graph_from_edges(3, v, [1, 2], [1, 1]), "u", [0, 1]),
    ("Graph.from_edges", lambda v: graphs.Graph.from_edges(3, [0, 1], [1, 2], v), "length", [1, 1]),
    ("Graph.many", lambda v: graphs.Graph(road()).many(v), "sources", [0, 1]),
    ("Graph.kernel_seconds", lambda v: graphs.Graph(road()).kernel_seconds(v), "sources", [0, 1]),
    ("LinearProgram", lambda v: lp.LinearProgram(2, objective=v), "objective", [1.0, 2.0]),
    ("LinearProgram", lambda v: lp.LinearProgram(2, lower=v), "lower", [0.0, 0.0]),
    ("LinearProgram.add_rows", lambda v: small_lp().add_rows(v), "A", [[1.0, 1.0]]),
    (
        "LinearProgram.add_rows",
        lambda v: small_lp().add_rows(([0, 0], [0, 1], v), n_rows=1),
        "A vals",
        [1.0, 1.0],
    ),
    (
        "LinearProgram.add_rows",
        lambda v: small_lp().add_rows([[1.0, 1.0]], upper=v),
        "upper",
        [1.0],
    ),
    ("LinearProgram.with_objective", lambda v: small_lp().with_objective(v), "objective", [1, 1]),
    (
        "farkas_margin",
        lambda v: lp.farkas_margin(np.ones((1, 2)), [1.0], [1.0], [0.0, 0.0], [1.0, 1.0], v),
        "y",
        [1.0],
    ),
    ("MDPProblem", lambda v: mdp.MDPProblem(v, epsilon=1.0, eta=1.5), "records", _PTS),
    (
        "MDPProblem",
        lambda v: mdp.MDPProblem(_PTS, epsilon=1.0, eta=1.5, cost=v),
        "cost",
        np.ones((6, 6)),
    ),
    (
        "MDPProblem",
        lambda v: mdp.MDPProblem(_PTS, epsilon=1.0, eta=1.5, prior=v),
        "prior",
        np.full(6, 1 / 6),
    ),
    (
        "MDPProblem",
        lambda v: mdp.MDPProblem(_PTS, epsilon=1.0, eta=1.5, outputs=v),
        "outputs",
        [0, 1],
    ),
    (
        "MDPProblem",
        lambda v: mdp.MDPProblem(v, epsilon=1.0, eta=1.5, metric="graph", graph=road()),
        "records",
        [0, 1],
    ),
    ("solve_epsilon_path", lambda v: mdp.solve_epsilon_path(problem(), v), "epsilons", [1.0, 2.0]),
    ("km_to_latlon", mdp.km_to_latlon, "xy_km", _PTS),
    ("repair", lambda v: mdp.repair(v, problem().edges, 1.0), "z", np.eye(6)),
    ("cumulate", cen.cumulate, "n", [1, 2]),
    ("decumulate", cen.decumulate, "c", [1, 2]),
    (
        "CensusCounts.from_leaf_counts",
        lambda v: cen.CensusCounts.from_leaf_counts(_hier(), v),
        "leaf_counts",
        [[1, 2], [3, 4]],
    ),
    (
        "CensusCounts.from_region_counts",
        lambda v: cen.CensusCounts.from_region_counts(_hier(), v),
        "counts",
        _TREE_COUNTS,
    ),
    ("Hierarchy.from_parents", cen.Hierarchy.from_parents, "parent", [-1, 0, 0]),
    (
        "tree_postprocess",
        lambda v: cen.tree_postprocess(_hier(), v, 10, scale=1.0),
        "noisy",
        _TREE_COUNTS,
    ),
    (
        "chain_postprocess",
        lambda v: cen.chain_postprocess(_hier(), v, 4, 2, scale=np.ones(2)),
        "noisy_chain",
        np.ones(6),
    ),
    (
        "consistency_violations",
        lambda v: cen.consistency_violations(_hier(), v),
        "counts",
        _TREE_COUNTS,
    ),
    (
        "l1_per_level",
        lambda v: cen.l1_per_level(_hier(), v, np.array(_TREE_COUNTS)),
        "released",
        _TREE_COUNTS,
    ),
    ("DPM.fit", lambda v: DPM(epsilon=1.0, delta=1e-5, bounds=(-5, 5)).fit(v), "X", _X),
    ("DPM.predict", lambda v: _fitted().predict(v), "X", _X),
    ("nearest_centre", lambda v: nearest_centre(v, _X[:2]), "X", _X),
    ("nearest_centre", lambda v: nearest_centre(_X, v), "centres", _X[:2]),
    ("Geography.locate", lambda v: grid().locate(v), "point", [0.1, 0.1]),
    (
        "UserBlock",
        lambda v: geo.UserBlock(v, np.zeros((1, 9)), np.zeros((1, 9))),
        "pair_distances",
        np.zeros((1, 1)),
    ),
]:
    numeric_cases(entry, call, name, template)
case(
    "DPM.fit",
    "X bool (X > 0)",
    lambda: DPM(epsilon=1.0, delta=1e-5, bounds=(-5, 5)).fit(_X > 0),
    "X must be a numeric array, got dtype bool",
)
case(
    "DPM.fit",
    "X 1-D",
    lambda: DPM(epsilon=1.0, delta=1e-5, bounds=(-5, 5)).fit(_X[:, 0]),
    "X must be 2-dimensional",
)
case(
    "DPM.fit",
    "X sparse",
    lambda: DPM(epsilon=1.0, delta=1e-5, bounds=(-5, 5)).fit(sp.csr_array(_X)),
    "X must be a dense array, got the sparse",
)
case(
    "build_problem",
    "text column not listed as categorical",
    lambda: kanon.build_problem(
        pd.DataFrame({"a": ["x", "y", "x", "y"], "b": [1, 2, 3, 4]}), 2, categorical=[]
    ),
    "quasi-identifier 'a' must be numeric.*or list it in categorical",
)
case(
    "shortest_paths",
    "graph bool dense",
    lambda: graphs.shortest_paths(np.array([[False, True], [True, False]])),
    "graph must be a numeric array, got dtype bool",
)
case(
    "Graph",
    "graph complex sparse",
    lambda: graphs.Graph(sp.csr_array(np.array([[0, 1 + 1j], [1, 0]]))),
    "graph arc lengths must be real",
)
for value, frag in [("1", "the str"), (True, "the bool"), (decimal.Decimal(1), "Decimal")]:
    case("LinearProgram", f"offset={value!r}", lambda v=value: lp.LinearProgram(1, offset=v), frag)
    case(
        "shortest_paths",
        f"cutoff={value!r}",
        lambda v=value: graphs.shortest_paths(road(), [0], cutoff=v),
        f"cutoff must be a real number, got {frag}",
    )
    case(
        "DPM.fit",
        f"bounds=({value!r}, 5)",
        lambda v=value: DPM(epsilon=1.0, delta=1e-5, bounds=(v, 5)).fit(_X),
        f"bounds\\[0\\] must be a real number, got {frag}",
    )
    case(
        "Cut",
        f"lower={value!r}",
        lambda v=value: lp.Cut([1.0, 0.0], lower=v),
        f"Cut lower must be a real number, got {frag}",
    )

# ----------------------------------------------- sizes beyond an array, exp overflow, huge lengths
_HUGE_SHAPES = [(2**40, 2**40), (2**32, 2**31), (2**62, 4, 0)]
for fn in (
    dp.sample_discrete_laplace,
    dp.sample_laplace,
    dp.sample_gaussian,
    dp.sample_discrete_gaussian,
):
    for shape in _HUGE_SHAPES:
        case(
            fn.__name__,
            f"size={shape}",
            lambda s=shape, f=fn: f(1.0, s, rng=0),
            "size .* has more values than an array can hold",
        )
for shape in _HUGE_SHAPES:
    case(
        "SecureSource.uniform",
        f"size={shape}",
        lambda s=shape: dp.SecureSource().uniform(s),
        "size .* more values than an array",
    )
    case(
        "GeneratorSource.integers",
        f"size={shape}",
        lambda s=shape: dp.GeneratorSource(np.random.default_rng(0)).integers(5, s),
        "size .* more values than an array",
    )
case(
    "SecureSource.random_bits",
    "n=2**70",
    lambda: dp.SecureSource().random_bits(2**70),
    "n must be <=",
)
case(
    "GeneratorSource.random_words",
    "n=2**70",
    lambda: dp.GeneratorSource(np.random.default_rng(0)).random_words(2**70),
    "n must be <=",
)
case(
    "grid_geography",
    "rows, cols = 2**40",
    lambda: geo.grid_geography(2**40, 2**40),
    r"\(rows, cols\) .* more values than an array",
)
case(
    "rome_grid",
    "rows, cols = 2**40",
    lambda: mdp.rome_grid(2**40, 2**40),
    r"\(rows, cols\) .* more values than an array",
)
case(
    "lp.examples.random_packing_lp",
    "n_cols, n_rows = 2**40",
    lambda: lp_examples.random_packing_lp(2**40, 2**40),
    r"\(n_rows, n_cols\) .* more values than an array",
)
_HUGE = [1e308, 1e308]  # each finite; their path sum is not
for entry, call in [
    ("graph_from_edges", lambda: graphs.graph_from_edges(3, [0, 1], [1, 2], _HUGE)),
    ("Graph.from_edges", lambda: graphs.Graph.from_edges(3, [0, 1], [1, 2], _HUGE)),
    ("Graph", lambda: graphs.Graph(sp.csr_array((_HUGE, ([0, 1], [1, 2])), shape=(3, 3)))),
    (
        "shortest_paths",
        lambda: graphs.shortest_paths(sp.csr_array((_HUGE, ([0, 1], [1, 2])), shape=(3, 3))),
    ),
    (
        "connected_components",
        lambda: graphs.connected_components(sp.csr_array((_HUGE, ([0, 1], [1, 2])), shape=(3, 3))),
    ),
    (
        "to_csr_arrays",
        lambda: graphs.to_csr_arrays(sp.csr_array((_HUGE, ([0, 1], [1, 2])), shape=(3, 3))),
    ),
    (
        "MDPProblem",
        lambda: mdp.MDPProblem(
            [0, 2],
            epsilon=1.0,
            eta=1.0,
            metric="graph",
            graph=sp.csr_array((_HUGE, ([0, 1], [1, 2])), shape=(3, 3)),
        ),
    ),
]:
    case(entry, "lengths 1e308 (sum overflows)", call, "arc lengths add up to more than")
for entry, call, frag in [
    ("GeoParams", lambda: geo.GeoParams(epsilon=1e3, r_exp=4.0), r"epsilon \* r_exp / 2 = 2000"),
    (
        "GeoParams.with_",
        lambda: geo.GeoParams(epsilon=10.0).with_(epsilon=400.0),
        r"epsilon \* r_exp / 2 = 800 exceeds",
    ),
    (
        "run_lrgeo",
        lambda: geo.run_lrgeo(
            grid(),
            geo.GeoParams(epsilon=1e3, gamma=INF, r_exp=0.5, r_obf=1.0, lr_radius=2.0),
            [0],
            geo.TravelCosts(grid()),
        ),
        r"epsilon \* d of a Geo-Ind pair",
    ),
    (
        "MDPProblem",
        lambda: mdp.MDPProblem(points(), epsilon=800.0, eta=1.5),
        r"epsilon \* d of a neighbour pair \(d <= eta\) exceeds",
    ),
    (
        "repair",
        lambda: mdp.repair(np.eye(6), problem().edges, 800.0),
        r"epsilon \* d of an edge exceeds",
    ),
]:
    case(entry, "epsilon so large that exp(epsilon * d) overflows", call, frag)


# ------------------------------------------------------------- flags: True or False, never text
#: Every public parameter annotated ``bool`` (test_every_bool_parameter_has_a_row checks the
#: list is complete): a flag given as text ("no") would read as true.
BOOL_FLAGS: list[tuple[str, str, Callable[[Any], Any]]] = [
    (
        "dp.exponential_mechanism",
        "monotonic",
        lambda v: dp.exponential_mechanism([1.0, 2.0], 1.0, rng=0, monotonic=v),
    ),
    (
        "dp.exponential_mechanism_probabilities",
        "monotonic",
        lambda v: dp.exponential_mechanism_probabilities([1.0, 2.0], 1.0, monotonic=v),
    ),
    (
        "dp.PrivacyAccountant.spend",
        "seeded",
        lambda v: dp.PrivacyAccountant().spend(0.1, label="x", seeded=v),
    ),
    (
        "dp.PlannedSpend",
        "seeded",
        lambda v: dp.PrivacyAccountant().spend_all([dp.PlannedSpend(0.1, label="x", seeded=v)]),
    ),
    ("mdp.solve", "row_generation", lambda v: mdp.solve(problem(), row_generation=v)),
    (
        "perturbation.solve_epsilon_path",
        "warm_start",
        lambda v: mdp.solve_epsilon_path(problem(), [1.0], warm_start=v),
    ),
    (
        "geo.GeoParams",
        "haversine_correction",
        lambda v: geo.GeoParams(epsilon=1.0, haversine_correction=v),
    ),
    (
        "geo.CostReferenceTable",
        "anchor_locations",
        lambda v: geo.CostReferenceTable(grid(), 2, rng=0, anchor_locations=v),
    ),
    (
        "geo.run_lrgeo",
        "via_json",
        lambda v: geo.run_lrgeo(
            grid(), geo.GeoParams(epsilon=10.0), [0], geo.TravelCosts(grid()), via_json=v
        ),
    ),
    (
        "kanon.anonymize",
        "normalize_weights",
        lambda v: kanon.anonymize(fars(), 3, normalize_weights=v),
    ),
    (
        "kanon.build_problem",
        "normalize_weights",
        lambda v: kanon.build_problem(fars(), 3, normalize_weights=v),
    ),
    ("kanon.greedy_search", "exact", lambda v: kanon.greedy_search(kproblem(), exact=v)),
    (
        "census.CensusRelease",
        "seeded",
        lambda v: cen.CensusRelease(
            "M_H^dp", census_release().hierarchy, census_release().counts, 4, 1.0, seeded=v
        ),
    ),
    (
        "graphs.Graph.from_csr_arrays",
        "directed",
        lambda v: graphs.Graph.from_csr_arrays([0, 1, 2], [1, 0], [1.0, 1.0], directed=v),
    ),
    ("release.Guarantee", "seeded", lambda v: release.Guarantee("epsilon-DP", seeded=v)),
    (
        "cluster.ClusteringRelease",
        "seeded",
        lambda v: dataclasses.replace(cluster_release(), seeded=v),
    ),
    ("geo.LRGeoResult", "seeded", lambda v: dataclasses.replace(lrgeo_release(), seeded=v)),
    ("geo.LRGeoResult.relaxed_bound", "exact", lambda v: lrgeo_release().relaxed_bound(exact=v)),
    (
        "geo.LRGeoResult.violations",
        "all_pairs",
        lambda v: lrgeo_release().violations(all_pairs=v),
    ),
    (
        "perturbation.bayes_inference_error",
        "check_input",
        lambda v: perturbation.bayes_inference_error(np.eye(2), None, np.eye(2), check_input=v),
    ),
    (
        "perturbation.epsilon_path",
        "warm_start",
        lambda v: perturbation.epsilon_path(problem(), [1.0], warm_start=v),
    ),
    (
        "geometry.pairwise",
        "check_input",
        lambda v: geometry.pairwise(np.zeros((1, 2)), np.ones((1, 2)), "euclidean", check_input=v),
    ),
    (
        "geometry.euclidean",
        "check_input",
        lambda v: geometry.euclidean(np.zeros((1, 2)), np.ones((1, 2)), check_input=v),
    ),
    (
        "geometry.haversine_km",
        "check_input",
        lambda v: geometry.haversine_km(np.zeros((1, 2)), np.ones((1, 2)), check_input=v),
    ),
    (
        "perturbation.verify_matrix",
        "check_input",
        lambda v: perturbation.verify_matrix(np.eye(6), problem().edges, 1.0, check_input=v),
    ),
    (
        "perturbation.scan_violations",
        "check_input",
        lambda v: perturbation.scan_violations(np.eye(6), problem().edges, 1.0, check_input=v),
    ),
    (
        "perturbation.scan_violations",
        "collect",
        lambda v: perturbation.scan_violations(np.eye(6), problem().edges, 1.0, collect=v),
    ),
    (
        "perturbation.restrict_edges",
        "check_input",
        lambda v: perturbation.restrict_edges(problem().edges, np.arange(3), 6, check_input=v),
    ),
    (
        "perturbation.repair",
        "check_input",
        lambda v: perturbation.repair(np.eye(6), problem().edges, 1.0, check_input=v),
    ),
    (
        "perturbation.repair_shared",
        "check_input",
        lambda v: perturbation.repair_shared([np.eye(6)], [problem().edges], 1.0, check_input=v),
    ),
    (
        "perturbation.solve_exact",
        "row_generation",
        lambda v: perturbation.solve_exact(problem(), row_generation=v),
    ),
    (
        "perturbation.solve_epsilon_path",
        "warm_start",
        lambda v: perturbation.solve_epsilon_path(problem(), [1.0], warm_start=v),
    ),
    (
        "cluster.DPM",
        "strict_termination",
        lambda v: DPM((0, 3), 1.0, 1e-5, strict_termination=v).fit(points()),
    ),
    ("cluster.DPM", "clip", lambda v: DPM((0, 3), 1.0, 1e-5, clip=v).fit(points())),
    ("lp.LinearProgram.to_highs", "verbose", lambda v: small_lp().to_highs(verbose=v)),
    ("lp.LinearProgram.to_model", "verbose", lambda v: small_lp().to_model(verbose=v)),
    ("lp.Model", "verbose", lambda v: lp.Model(verbose=v)),
    ("lp.Model.configured", "verbose", lambda v: lp.Model.configured(verbose=v)),
    ("lp.Model.configured", "presolve", lambda v: lp.Model.configured(presolve=v)),
    ("lp.Model.solve", "feasible", lambda v: small_lp().to_model().solve(feasible=v)),
    ("lp.RowGenSolver", "feasible", lambda v: lp.RowGenSolver(small_rowgen(), feasible=v)),
    ("lp.RowGenSolver.run", "warn", lambda v: lp.RowGenSolver(small_rowgen()).run(warn=v)),
    ("lp.solve", "fallbacks", lambda v: lp.solve(small_lp(), fallbacks=v)),
    ("lp.solve", "presolve", lambda v: lp.solve(small_lp(), presolve=v)),
    ("lp.solve", "verbose", lambda v: lp.solve(small_lp(), verbose=v)),
    (
        "lp.solve_benders",
        "multi_cut",
        lambda v: lp.solve_benders(lp_examples.capacity_expansion_lp(0, n_regions=2), multi_cut=v),
    ),
    (
        "lp.solve_benders",
        "keep_solutions",
        lambda v: lp.solve_benders(
            lp_examples.capacity_expansion_lp(0, n_regions=2), keep_solutions=v
        ),
    ),
    (
        "lp.solve_benders",
        "raise_on_limit",
        lambda v: lp.solve_benders(
            lp_examples.capacity_expansion_lp(0, n_regions=2), raise_on_limit=v
        ),
    ),
    (
        "lp.solve_benders",
        "core_round",
        lambda v: lp.solve_benders(lp_examples.capacity_expansion_lp(0, n_regions=2), core_round=v),
    ),
    ("graphs.Graph", "directed", lambda v: graphs.Graph(road(), directed=v)),
    (
        "graphs.Graph.from_edges",
        "directed",
        lambda v: graphs.Graph.from_edges(3, [0], [1], [1.0], directed=v),
    ),
    ("graphs.shortest_paths", "directed", lambda v: graphs.shortest_paths(road(), [0], directed=v)),
    (
        "graphs.connected_components",
        "directed",
        lambda v: graphs.connected_components(road(), directed=v),
    ),
    (
        "graphs.graph_from_edges",
        "directed",
        lambda v: graphs.graph_from_edges(3, [0], [1], [1.0], directed=v),
    ),
    ("graphs.to_csr_arrays", "directed", lambda v: graphs.to_csr_arrays(road(), directed=v)),
    (
        "geometry.check_metric_matrix",
        "allow_inf",
        lambda v: geometry.check_metric_matrix("D", np.zeros((1, 1)), allow_inf=v),
    ),
    ("certify.certify", "warn", lambda v: certify.certify(1.0, 0.5, 1e-6, warn=v)),
    (
        "census.Hierarchy.from_parents",
        "pad_leaves",
        lambda v: cen.Hierarchy.from_parents([-1, 0], ["US", "GA"], pad_leaves=v),
    ),
    (
        "census.Hierarchy.from_nested",
        "pad_leaves",
        lambda v: cen.Hierarchy.from_nested({"US": ["GA"]}, pad_leaves=v),
    ),
    (
        "census.Hierarchy.from_frame",
        "pad_leaves",
        lambda v: cen.Hierarchy.from_frame(pd.DataFrame({"s": ["GA"]}), ["s"], pad_leaves=v),
    ),
    (
        "census.CensusCounts.from_records",
        "pad_leaves",
        lambda v: cen.CensusCounts.from_records(
            pd.DataFrame({"s": ["GA"], "hh": [1]}), ["s"], "hh", pad_leaves=v
        ),
    ),
    (
        "demo.run_demo",
        "verbose",
        lambda v: demo.run_demo(Path(tempfile.gettempdir()) / "privopt-bad-demo", verbose=v),
    ),
]
for entry, flag, call in BOOL_FLAGS:
    for text in ("no", "False", 0, None):
        case(
            entry, f"{flag}={text!r}", lambda c=call, t=text: c(t), f"{flag} must be True or False"
        )


# ------------------------------------ coordinates, contradictory certificates, files of saves
for entry, call in [
    ("haversine_km", lambda: geometry.haversine_km([[95.0, 0.0]], [[0.0, 0.0]])),
    ("haversine_km", lambda: geometry.haversine_km([[0.0, 0.0]], [[0.0, 400.0]])),
    ("haversine_pairs_km", lambda: geometry.haversine_pairs_km([[0.0, 200.0]], [[0.0, 0.0]])),
    ("pairwise", lambda: geometry.pairwise([[-91.0, 0.0]], [[0.0, 0.0]], "haversine")),
    ("nearest", lambda: geometry.nearest([[0.0, 0.0]], [[100.0, 0.0]], "haversine")),
    ("offset_latlon", lambda: geometry.offset_latlon([[0.0, 181.0]], 1.0, 1.0)),
]:
    case(
        entry,
        "(lat, lon) out of range (a swapped column)",
        call,
        r"latitudes must lie in \[-90, 90\]",
    )
case(
    "offset_latlon",
    "east at the pole",
    lambda: geometry.offset_latlon([[90.0, 0.0]], 1.0, 0.0),
    "pole",
)
case(
    "offset_latlon",
    "offsets (3,) for 2 rows",
    lambda: geometry.offset_latlon([[0.0, 0.0]] * 2, [1.0] * 3, 0.0),
    "east_km must be one number or one per row",
)
case(
    "certify",
    "lower bound above the value",
    lambda: certify.certify(1.0, 2.0, 1e-6),
    "exceeds the value",
    NumericalTrouble,
)
case(
    "proven_relative_gap",
    "lower bound above the value",
    lambda: certify.proven_relative_gap(1e-300, 1.0),
    "exceeds the value",
    NumericalTrouble,
)
for scale in (0.0, -1.0, NAN, INF, "1"):
    case(
        "certify.certify",
        f"scale={scale!r}",
        lambda v=scale: certify.certify(1.0, 0.5, 1e-6, scale=v),
        "scale",
    )
case(
    "certify.Certificate",
    "status='great'",
    lambda: certify.Certificate("great", 0.0, 1.0, 1.0),
    "status must be",
)
case(
    "certify.Certificate",
    "relative_gap=-0.5",
    lambda: certify.Certificate("optimal", -0.5, 1.0, 1.0),
    "relative_gap",
)
case(
    "certify.Certificate",
    "relative_gap=NaN",
    lambda: certify.Certificate("feasible", NAN, 1.0, 1.0),
    "relative_gap",
)


#: Files the rows below write, removed when the test session ends.
_SCRATCH = tempfile.TemporaryDirectory(prefix="privopt-bad-")


def _scratch() -> Path:
    return Path(tempfile.mkdtemp(dir=_SCRATCH.name))


def _file(name: str, data: bytes) -> Path:
    path = _scratch() / name
    path.write_bytes(data)
    return path


def _npz(name: str, **arrays: Any) -> Path:
    path = _scratch() / name
    np.savez(path, **arrays)
    return path


def _npy(name: str) -> Path:
    path = _scratch() / name
    with open(path, "wb") as f:  # np.save(path) would add ".npy" to the name
        np.save(f, np.ones(2))
    return path


def _folder_holding(name: str) -> Path:
    path = _scratch() / name
    path.mkdir()
    return path


load = mdp.PerturbationMatrix.load
case(
    "PerturbationMatrix.load",
    "garbage bytes",
    lambda: load(_file("m.npz", b"PK\x03\x04junk" * 9)),
    "is not a valid .npz archive",
)
case("PerturbationMatrix.load", "an .npy array", lambda: load(_npy("m.npz")), "single .npy array")
case(
    "PerturbationMatrix.load",
    "archive without the matrix",
    lambda: load(_npz("m.npz", a=np.ones(2))),
    "is an .npz file but not a privopt release",
)
case(
    "PerturbationMatrix.load",
    "epsilon stored as text",
    lambda: load(
        _npz(
            "m.npz",
            **{
                **{k: np.array(0.0) for k in ("eta", "expected_loss", "lower_bound")},
                "matrix": np.eye(2),
                "epsilon": np.array("x"),
                "method": np.array("lp"),
                "output_index": np.arange(2),
                "has_output_index": np.array(False),
                "history": np.array("[]"),
                "summary": np.array("{}"),
            },
        )
    ),
    "not a privopt release",  # the layout before releases carried their description
)
case(
    "PerturbationMatrix.save",
    "path is a folder",
    lambda: mdp.solve(problem()).save(_folder_holding("m.npz")),
    "is a directory; give a file name",
)
case(
    "CensusRelease.save",
    "path is a folder",
    lambda: census_release().save(_folder_holding("r.csv")),
    "save writes the release as a directory",
)
case(
    "Report.write",
    "out_dir is a file",
    lambda: report.Report("t").write(_file("report", b"mine")),
    "exists and is not a directory",
)
case(
    "load_rome_nodes",
    "binary file",
    lambda: mdp.load_rome_nodes(_file("nodes.csv", bytes(range(256)))),
    "not a UTF-8 text",
)
case(
    "load_rome_nodes",
    "text in the y column",
    lambda: mdp.load_rome_nodes(_file("nodes.csv", b"osmid,y,x\n1,41.9,12.5\n2,north,12.6\n")),
    "must be numeric",
)


def _embeddings_folder(npy: bytes) -> Path:
    folder = _folder_holding("text")
    (folder / "words2000.txt").write_text("a b c")
    (folder / "words2000_minilm384.npy").write_bytes(npy)
    return folder


case(
    "load_text_embeddings",
    "garbled .npy",
    lambda: mdp.load_text_embeddings(_embeddings_folder(b"junk"), 2),
    "is not a valid .npy array file",
)
case(
    "CensusCounts.from_records",
    "no rows",
    lambda: cen.CensusCounts.from_records(pd.DataFrame({"state": [], "hh": []}), ["state"], "hh"),
    "has no rows",
)


@pytest.mark.parametrize(
    ("call", "exc", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_raises_a_clear_typed_error(call, exc, fragment):
    with pytest.raises(exc) as info:
        call()
    assert isinstance(info.value, (PrivoptError, exc))
    assert re.search(fragment, str(info.value)), str(info.value)


# ----------------------------------------------------------- every public callable is covered
#: Public callables that take no user input worth a row, each with the reason. Exception and
#: warning types are exempt by rule (raised by privopt, never called with user data).
EXEMPT: dict[str, str] = {
    "privopt.get_include": "takes no arguments",
    "privopt.get_cmake_dir": "takes no arguments",
    "privopt.show_versions": "takes no arguments",
    "privopt.cli.build_parser": "takes no arguments",
    "privopt.cli.main": "the command line has its own table: tests/reliability/test_cli_errors.py",
    "privopt.cli.reserve_outputs": "takes a subcommand's parsed arguments; the output paths it "
    "checks have their rows in tests/reliability/test_cli_errors.py and test_atomic.py",
    "privopt.cluster.BudgetSchedule": "a record budget_schedule() returns (it has rows)",
    "privopt.dp.LedgerEntry": "a record the accountant writes from a checked PlannedSpend",
    "privopt.dp.RandomSource": "abstract base: its shared methods have rows through SecureSource",
    "privopt.graphs.Settled": "a record the bounded shortest-path search returns",
    "privopt.kanon.KAnonProblem": "built and checked by build_problem (it has rows); every "
    "function taking one checks its type",
    "privopt.kanon.LossBreakdown": "a record information_loss() returns (it has rows)",
    "privopt.lp.LPResult": "a record lp.solve() returns; it has no methods",
    "privopt.lp.LPSolution": "a record Model.solve() returns, read from HiGHS",
    "privopt.lp.RowGenResult": "a record solve_rowgen() returns; it has no methods",
    "privopt.lp.RowGenBasis": "a record RowGenSolver.basis() returns (RowGenSolver checks it)",
    "privopt.lp.BendersIteration": "a record of BendersResult.history; it has no methods",
    "privopt.geo.ClrModel": "built by build_model (it has rows); solve_clr checks its type",
    "privopt.geo.ClrSolution": "a record solve_clr() returns (it has rows)",
    "privopt.perturbation.MatrixBlock": "a record MDPProblem.subproblem() builds from a checked "
    "problem",
    "privopt.perturbation.ViolationScan": "a record scan_violations() returns (it has rows)",
    "privopt.perturbation.InferenceError": "a record inference_error() returns (it has rows)",
    "privopt.perturbation.TradeoffPoint": "a record of EpsilonSweep.points, built by the sweeps",
    "privopt.census.StreamedRelease": "a record m_h_dp_streamed() returns (it has rows); its "
    "check() reads the files that run wrote",
    "privopt.Release": "the abstract base of every release; its subclasses have rows",
    "privopt.release.Release": "the abstract base of every release; its subclasses have rows",
    "privopt.mechanisms": "takes no arguments",
    "privopt.registry.mechanisms": "takes no arguments",
}

#: Public modules left out of the coverage check (none).
EXEMPT_MODULES: set[str] = set()


def public_callables() -> dict[str, dict[str, Any]]:
    """``{"dp": {name: object}, ...}``: the callables in ``__all__`` of privopt and of each of
    its public modules (as the API reference lists them), less submodules."""
    import importlib
    import pkgutil
    import types

    import privopt

    modules = {"privopt": privopt}
    for info in pkgutil.iter_modules(privopt.__path__):
        if not info.name.startswith("_"):
            modules[info.name] = importlib.import_module(f"privopt.{info.name}")
    return {
        short: {
            name: getattr(module, name)
            for name in module.__all__
            if callable(getattr(module, name))
            and not isinstance(getattr(module, name), types.ModuleType)
        }
        for short, module in modules.items()
    }


def covered_names(public: dict[str, dict[str, Any]]) -> set[str]:
    """Qualified names (``privopt.lp.solve``) that the table's entries name.

    An entry is ``name``, ``Class.method``, ``module.name`` or either followed by a note
    (``"EdgeList (through repair)"``). A bare name public in two modules as different objects
    is ambiguous and must be qualified."""
    covered = set()
    for entry in {c[0].split(":")[0].split()[0] for c in CASES}:
        head, _, rest = entry.partition(".")
        if head in public and head != "privopt" and rest:
            name = rest.split(".")[0]
            if name not in public[head] and _in_submodule(head, rest):
                continue  # e.g. geo.baselines.laplace: a function of a public submodule
            assert name in public[head], f"entry {entry!r}: privopt.{head} has no public {name}"
            covered.add(f"privopt.{head}.{name}")
            continue
        owners = [short for short, names in public.items() if head in names]
        assert owners, f"entry {entry!r} names no public callable"
        objects = {id(public[short][head]) for short in owners}
        assert len(objects) == 1, (
            f"entry {entry!r} is ambiguous: {head} is public in {owners}; qualify it"
        )
        covered |= {("privopt" if s == "privopt" else f"privopt.{s}") + f".{head}" for s in owners}
    return covered


def _in_submodule(package: str, path: str) -> bool:
    """Whether ``privopt.<package>.<path>`` names a callable of a public submodule, listed in
    that submodule's ``__all__`` (``baselines.laplace``, ``messages.UserMatrix.from_json``)."""
    import importlib

    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            module = importlib.import_module(f"privopt.{package}." + ".".join(parts[:cut]))
        except ImportError:
            continue
        if parts[cut] not in getattr(module, "__all__", ()):
            return False
        obj: Any = module
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
        return callable(obj)
    return False


def test_every_public_callable_has_a_row_or_an_exemption():
    public = public_callables()
    covered = covered_names(public)
    qualified = {
        ("privopt" if short == "privopt" else f"privopt.{short}") + f".{name}": obj
        for short, names in public.items()
        for name, obj in names.items()
    }
    to_check = {
        q: obj
        for q, obj in qualified.items()
        if q.rsplit(".", 1)[0] not in EXEMPT_MODULES
        and not (isinstance(obj, type) and issubclass(obj, BaseException))  # exception types
    }
    missing = sorted(q for q in to_check if q not in covered and q not in EXEMPT)
    assert not missing, f"public callables with no bad-input row and no exemption: {missing}"
    both = sorted(q for q in EXEMPT if q in covered)
    assert not both, f"exempt yet in the table (drop the exemption): {both}"
    stale = sorted(q for q in EXEMPT if q not in to_check)
    assert not stale, f"exemptions of names that are not public callables: {stale}"


def test_every_bool_parameter_has_a_row():
    """Each public parameter annotated ``bool`` is in BOOL_FLAGS, so text for a flag is refused
    everywhere (a new flag without a row fails here)."""
    import inspect

    listed = {(entry.split(".", 1)[1], flag) for entry, flag, _ in BOOL_FLAGS}
    found = set()
    for short, names in public_callables().items():
        for name, obj in names.items():
            if f"privopt.{short}.{name}" in EXEMPT:
                continue
            members = [(name, obj)]
            if isinstance(obj, type):
                members += [
                    (f"{name}.{attr}", getattr(obj, attr))
                    for attr in vars(obj)
                    if not attr.startswith("_") and callable(getattr(obj, attr))
                ]
            for label, fn in members:
                try:
                    params = inspect.signature(fn).parameters.values()
                except (TypeError, ValueError):
                    continue
                found |= {(label, p.name) for p in params if p.annotation in ("bool", bool)}
    assert found <= listed, f"bool parameters without a row: {sorted(found - listed)}"
