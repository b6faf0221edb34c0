"""Error messages never quote the data: a recognisable secret inside bad input stays out.

Each case hides a secret number among otherwise bad data (text, a NaN, a fraction where a count
is expected, a value outside the bounds, a 1-D array where a table is expected, ...) and
checks that the error raised does not contain it in any usual spelling. Parameters (ε, k,
bounds) may be named in messages; points, counts, records and group ids may not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from privopt import census as cen
from privopt import cli, dp, geo, graphs, kanon, mdp
from privopt.cluster import DPM
from privopt.errors import InvalidInput

SECRET = 987654.321
SECRET_INT = 987654321


def spellings(value: float) -> list[str]:
    """How a number may appear in a message: repr, str, %g forms and the leading digits."""
    return sorted(
        {repr(value), str(value), f"{value:g}", f"{value:.3g}", f"{value:.6g}", str(value)[:6]}
    )


def _dpm() -> DPM:
    return DPM(epsilon=1.0, delta=1e-5, bounds=(-5.0, 5.0), clip=False, random_state=0)


def _table(secret: Any = SECRET, rows: int = 30) -> np.ndarray:
    X = np.random.default_rng(0).uniform(-1.0, 1.0, (rows, 2))
    X[3, 1] = secret
    return X


def _with_text(X: np.ndarray) -> np.ndarray:
    out = X.astype(object)
    out[0, 0] = "abc"
    return out


def _with_nan(X: np.ndarray) -> np.ndarray:
    out = X.copy()
    out[0, 0] = math.nan
    return out


def _records_group_in_two_regions() -> pd.DataFrame:
    return pd.DataFrame(
        {"state": ["GA", "NY", "NY"], "hh": [f"hh-{SECRET_INT}", f"hh-{SECRET_INT}", "b"]}
    )


def _road_with_length(length: float) -> sp.csr_array:
    return sp.csr_array(([length, 1.0], ([0, 1], [1, 2])), shape=(3, 3))


CASES: list[tuple[str, Callable[[], Any], list[str]]] = [
    ("DPM.fit 1-D X", lambda: _dpm().fit(_table()[:, 1]), spellings(SECRET)),
    ("DPM.fit 3-D X", lambda: _dpm().fit(_table()[:, :, None]), spellings(SECRET)),
    ("DPM.fit X outside bounds", lambda: _dpm().fit(_table()), spellings(SECRET)),
    ("DPM.fit object X with text", lambda: _dpm().fit(_with_text(_table(0.5))), spellings(SECRET)),
    ("DPM.fit X with NaN", lambda: _dpm().fit(_with_nan(_table(0.5))), spellings(SECRET)),
    (
        "DPM.predict 1-D X",
        lambda: _dpm().fit(_table(0.5)).predict(_table()[:, 1]),
        spellings(SECRET),
    ),
    (
        "laplace_mechanism object text",
        lambda: dp.laplace_mechanism(np.array([SECRET, "x"], dtype=object), 1.0, rng=0),
        spellings(SECRET),
    ),
    ("cumulate fraction", lambda: cen.cumulate([1.0, SECRET]), spellings(SECRET)),
    (
        "discrete_laplace_pmf fraction",
        lambda: dp.discrete_laplace_pmf([SECRET], 1.0),
        spellings(SECRET),
    ),
    (
        "CensusCounts.from_leaf_counts negative",
        lambda: cen.CensusCounts.from_leaf_counts(
            cen.Hierarchy.from_nested({"US": ["GA", "NY"]}), [[1, -SECRET_INT], [1, 1]]
        ),
        spellings(SECRET_INT),
    ),
    (
        "CensusCounts.from_leaf_counts above 2^61",
        lambda: cen.CensusCounts.from_leaf_counts(
            cen.Hierarchy.from_nested({"US": ["GA", "NY"]}), np.array([[1.0, 2.0**62], [1, 1]])
        ),
        [*spellings(2.0**62), str(2**62)],
    ),
    (
        "CensusCounts.from_records group in two regions",
        lambda: cen.CensusCounts.from_records(_records_group_in_two_regions(), ["state"], "hh"),
        [str(SECRET_INT)],
    ),
    (
        "CensusCounts.from_records group above max_size",
        lambda: cen.CensusCounts.from_records(
            pd.DataFrame({"state": ["GA"] * 3, "hh": [f"hh-{SECRET_INT}"] * 3}),
            ["state"],
            "hh",
            max_size=2,
        ),
        [str(SECRET_INT)],
    ),
    (
        "Hierarchy.from_parents text",
        lambda: cen.Hierarchy.from_parents(np.array(["-1", str(SECRET_INT)], dtype=object)),
        [str(SECRET_INT)],
    ),
    (
        "build_problem bounds narrower than the data",
        lambda: kanon.build_problem(
            pd.DataFrame({"a": [0.0, SECRET, 1.0, 2.0], "b": [1, 2, 3, 4]}),
            2,
            bounds={"a": (0.0, 10.0)},
        ),
        spellings(SECRET),
    ),
    (
        "build_problem constant column",
        lambda: kanon.build_problem(pd.DataFrame({"a": [SECRET] * 4, "b": [1, 2, 3, 4]}), 2),
        spellings(SECRET),
    ),
    (
        "MDPProblem cost beyond the LP's infinity",
        lambda: mdp.MDPProblem(
            np.array([[0.0], [1.0]]), epsilon=1.0, eta=1.0, cost=[[0.0, SECRET * 1e20], [1, 0]]
        ),
        spellings(SECRET * 1e20 / 2) + spellings(SECRET * 1e20),
    ),
    (
        "MDPProblem coordinates whose distances overflow",
        lambda: mdp.MDPProblem(np.array([[SECRET * 1e302], [-SECRET * 1e302]]), epsilon=1, eta=1),
        spellings(SECRET * 1e302),
    ),
    (
        "Geography.locate far outside",
        lambda: geo.grid_geography(3, 3, 0.5).locate([SECRET, SECRET]),
        spellings(SECRET),
    ),
    (
        "shortest_paths negative length",
        lambda: graphs.shortest_paths(_road_with_length(-SECRET)),
        spellings(-SECRET),
    ),
]


@pytest.mark.parametrize(("call", "secrets"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_messages_do_not_quote_the_data(call, secrets):
    with pytest.raises(InvalidInput) as info:
        call()
    message = str(info.value)
    leaked = [s for s in secrets if s in message]
    assert not leaked, f"{leaked} in: {message}"
    assert len(message) < 400, message  # no array dump


def test_cli_csv_error_does_not_quote_the_cell(tmp_path: Path, capsys) -> None:
    points = tmp_path / "points.csv"
    points.write_text(f"x,y\n1,2\n{SECRET}abc,3\n4,5\n")
    assert cli.main(["mdp", "--epsilon", "1", str(points), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "line 3, column 1 is not a number" in err
    assert not [s for s in spellings(SECRET) if s in err], err
